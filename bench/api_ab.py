"""`POST /api/v1/jobs/` under gunicorn, A/B: the same load as `make bench`'s API figure
(bench/ours.py: the demo's gunicorn configuration, `hey` with 32 connections, one client
allowed JOB_CREATE_RATE=100000000/min, so the creation throttle counts but never refuses),
with the CPU a request costs measured per process from /proc: gunicorn's master and workers,
and every process of the database server (its postmaster and backends). Load from other
processes on the machine distorts req/s and latency much more than that CPU figure.

    python bench/api_ab.py --checkout DIR [--checkout DIR2 ...] [--rounds 3] [--seconds 10]

A checkout may carry settings for its server: `--checkout DIR,JOB_LISTEN_NOTIFY=false`.

Each checkout (this repository, or an export of an older commit: `git archive <commit> |
tar -x -C /tmp/before`) gets a database of its own on the server of DATABASE_URL (default:
the embedded one), migrated by that checkout; the rounds interleave the checkouts (A B B A
...). Every figure printed is a median over the rounds, with its range."""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CLK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float, float] | None:
    """(parent pid, own CPU seconds, reaped children's CPU seconds) of `pid`, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[1]), (int(fields[11]) + int(fields[12])) / CLK,
            (int(fields[13]) + int(fields[14])) / CLK)


def tree_cpu(root: int) -> dict[int, float]:
    """CPU seconds of `root` and each of its descendants (its reaped children's included)."""
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (s := _stat(int(name))) is not None:
            stats[int(name)] = s
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            out[pid] = stats[pid][1] + stats[pid][2]
            todo.extend(p for p, s in stats.items() if s[0] == pid)
    return out


def cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(v - before.get(pid, 0.0) for pid, v in after.items())


def hey(args: list[str]) -> dict:
    out = subprocess.run([shutil.which("hey"), *args], capture_output=True, text=True,
                         check=True).stdout
    pct = {int(m[0]): float(m[1]) * 1000 for m in re.findall(r"(\d+)%+ in ([\d.]+) secs", out)}
    codes = {m[0]: int(m[1]) for m in re.findall(r"\[(\d{3})\]\s+(\d+) responses", out)}
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "p50": pct.get(50), "p95": pct.get(95), "p99": pct.get(99), "codes": codes,
            "requests": sum(codes.values())}


def postmaster_pid(url: str) -> int:
    out = subprocess.run(["psql", url, "-Atc", "SELECT pg_postmaster_start_time(), "
                          "(SELECT pid FROM pg_stat_activity WHERE backend_type = "
                          "'checkpointer')"], capture_output=True, text=True, check=True).stdout
    checkpointer = int(out.strip().split("|")[1])
    return _stat(checkpointer)[0]


class Side:
    def __init__(self, spec: str, server_url: str, index: int):
        checkout, *settings = spec.split(",")
        self.label = spec
        self.checkout = os.path.abspath(checkout)
        self.db = f"bench_api_ab_{index}"
        self.py_spy = None
        self.url = server_url.rsplit("/", 1)[0] + "/" + self.db
        self.env = {**os.environ, "DATABASE_URL": self.url, "DEBUG": "false",
                    "DJANGO_SETTINGS_MODULE": "bench.settings",
                    "JOB_CREATE_RATE": "100000000/min",
                    "PYTHONPATH": os.pathsep.join([self.checkout,
                                                   os.path.join(self.checkout, "backend")]),
                    **dict(s.split("=", 1) for s in settings)}

    def prepare(self, server_url: str) -> None:
        subprocess.run(["psql", server_url, "-qc", f"DROP DATABASE IF EXISTS {self.db}"],
                       check=True)
        subprocess.run(["psql", server_url, "-qc", f"CREATE DATABASE {self.db}"], check=True)
        py = sys.executable
        subprocess.run([py, "manage.py", "migrate", "-v", "0"], cwd=self.checkout,
                       env=self.env, check=True)
        self.token = subprocess.run([py, "-c", (
            "import django; django.setup()\n"
            "from django.contrib.auth import get_user_model\n"
            "from rest_framework.authtoken.models import Token\n"
            "u, _ = get_user_model().objects.get_or_create(username='bench', defaults="
            "{'is_superuser': True, 'is_staff': True})\n"
            "print(Token.objects.get_or_create(user=u)[0].key)")],
            cwd=self.checkout, env=self.env, capture_output=True, text=True,
            check=True).stdout.strip()

    def run(self, seconds: int, concurrency: int, pg_pid: int) -> dict:
        subprocess.run(["psql", self.url, "-qc",
                        "TRUNCATE jobs, job_events, job_throttle_windows RESTART IDENTITY "
                        "CASCADE"], check=False, capture_output=True)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen(
            [os.path.join(os.path.dirname(sys.executable), "gunicorn"), "config.wsgi",
             "--chdir", os.path.join(self.checkout, "backend"),
             "-c", os.path.join(self.checkout, "backend/config/gunicorn.py"),
             "--bind", f"127.0.0.1:{port}"], env=self.env, cwd=self.checkout,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if urllib.request.urlopen(base + "/api/health/", timeout=1).status == 200:
                        break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("gunicorn did not come up")
                time.sleep(0.2)
            args = ["-c", str(concurrency), "-m", "POST", "-H",
                    f"Authorization: Token {self.token}", "-T", "application/json",
                    "-d", '{"type": "noop", "payload": {}}', base + "/api/v1/jobs/"]
            hey(["-z", "2s", *args])  # every worker thread connected and warm
            load0 = open("/proc/loadavg").read().split()[0]
            spy = None
            if self.py_spy:  # samples the workers while they serve the measured run
                spy = subprocess.Popen(
                    [os.path.join(os.path.dirname(sys.executable), "py-spy"), "record",
                     "--pid", str(server.pid), "--subprocesses", "--nonblocking", "--gil", "-r", "250",
                     "-d", str(seconds), "-f", "raw", "-o", self.py_spy],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            g0, p0 = tree_cpu(server.pid), tree_cpu(pg_pid)
            result = hey(["-z", f"{seconds}s", *args])
            if spy is not None:
                spy.wait(timeout=60)
            g1, p1 = tree_cpu(server.pid), tree_cpu(pg_pid)
            load1 = open("/proc/loadavg").read().split()[0]
        finally:
            server.terminate()
            server.wait(timeout=30)
        n = result["requests"]
        result.update(gunicorn_us=cpu_delta(g0, g1) / n * 1e6,
                      postgres_us=cpu_delta(p0, p1) / n * 1e6, load=f"{load0}-{load1}")
        result["cpu_us"] = result["gunicorn_us"] + result["postgres_us"]
        return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", action="append", required=True,
                    help="DIR or DIR,NAME=VALUE,...: a checkout and its server's environment")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--py-spy", metavar="FILE",
                    help="sample the workers of the first checkout's runs with py-spy into FILE "
                         "(collapsed stacks of the threads holding the GIL; pip install py-spy; the "
                         "figures then include py-spy's pauses)")
    args = ap.parse_args()
    if not shutil.which("hey"):
        sys.exit("the load generator `hey` is not installed (apt-get install hey)")
    server_url = os.environ.get("DATABASE_URL")
    if not server_url:
        sys.path.insert(0, os.path.join(REPO, "backend"))
        from config import embedded_pg

        server_url = embedded_pg.ensure_running()
    pg_pid = postmaster_pid(server_url)
    sides = [Side(c, server_url, i) for i, c in enumerate(args.checkout)]
    for side in sides:
        side.prepare(server_url)
    sides[0].py_spy = args.py_spy
    results: dict[str, list[dict]] = {s.label: [] for s in sides}
    for r in range(args.rounds):
        for side in (sides if r % 2 == 0 else sides[::-1]):
            res = side.run(args.seconds, args.concurrency, pg_pid)
            results[side.label].append(res)
            print(f"round {r + 1} {side.label}: {json.dumps(res)}", flush=True)
    for checkout, runs in results.items():
        print(f"\n{checkout}, median (range) of {len(runs)} runs:")
        for key, unit in (("rps", "req/s"), ("p50", "ms"), ("p95", "ms"), ("p99", "ms"),
                          ("cpu_us", "us CPU/request"), ("gunicorn_us", "us gunicorn"),
                          ("postgres_us", "us postgres")):
            vals = [x[key] for x in runs]
            print(f"  {key:12} {statistics.median(vals):8.1f} ({min(vals):.1f}-{max(vals):.1f})"
                  f" {unit}")
        print("  load        ", ", ".join(x["load"] for x in runs))
        print("  codes       ", runs[-1]["codes"])


if __name__ == "__main__":
    main()
