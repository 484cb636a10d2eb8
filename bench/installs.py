"""Where the peers come from, installed on first use and again when their pins change:
bench/.venv-peers (the Python peers, bench/requirements-peers.txt, on Python 3.12 or newer as
Oban for Python needs) and bench/peers/graphile/ (graphile-worker, `npm ci` from its own lock
file). Neither is ever a dependency of the project. Used by bench/run.py and bench/pressure.py."""
import glob
import os
import shutil
import subprocess
import sys

from bench.common import log

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS_VENV = os.path.join(HERE, ".venv-peers")
PEERS_PY = os.path.join(PEERS_VENV, "bin", "python")
PEERS_MIN_PYTHON = (3, 12)
GRAPHILE_DIR = os.path.join(HERE, "peers", "graphile")


def _version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    return tuple(int(x) for x in out.stdout.split()) if out.returncode == 0 else None


def peers_python() -> str:
    """PEERS_PYTHON, else the first Python >= 3.12 of: this one, python3.12 / 3.13 on PATH,
    pyenv's installs."""
    chosen = os.environ.get("PEERS_PYTHON")
    if chosen:
        return chosen
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = [sys.executable, *(shutil.which(p) for p in ("python3.12", "python3.13")),
                  *sorted(glob.glob(os.path.join(pyenv, "versions", "3.1[2-9]*", "bin",
                                                 "python3")))]
    for python in filter(None, candidates):
        if (_version(python) or (0, 0)) >= PEERS_MIN_PYTHON:
            return python
    raise SystemExit("the peers need Python 3.12 or newer (Oban for Python): none found; "
                     "install one (pyenv install 3.12) or set PEERS_PYTHON")


def ensure_peers_venv() -> None:
    """bench/.venv-peers as bench/requirements-peers.txt pins it; a virtualenv on an older
    Python than 3.12 (made before Oban joined) is made anew."""
    req = os.path.join(HERE, "requirements-peers.txt")
    stamp = os.path.join(PEERS_VENV, ".installed")
    wanted = open(req).read()
    have = _version(PEERS_PY) if os.path.exists(PEERS_PY) else None
    if have and have >= PEERS_MIN_PYTHON and os.path.exists(stamp) \
            and open(stamp).read() == wanted:
        return
    if have and have < PEERS_MIN_PYTHON:
        log(f"bench/.venv-peers runs Python {have[0]}.{have[1]}; making it anew on 3.12+")
        shutil.rmtree(PEERS_VENV)
    if not os.path.exists(PEERS_PY):
        python = peers_python()
        log(f"making bench/.venv-peers with {python}")
        subprocess.run([python, "-m", "venv", PEERS_VENV], check=True)
    log("installing the peers into bench/.venv-peers")
    subprocess.run([PEERS_PY, "-m", "pip", "install", "-q", "-r", req], check=True)
    with open(stamp, "w") as f:
        f.write(wanted)


def ensure_graphile() -> str | None:
    """graphile-worker in bench/peers/graphile/node_modules (`npm ci`, again whenever the lock
    file changes); returns why it cannot be had (no Node.js, npm failed), or None."""
    if not shutil.which("node") or not shutil.which("npm"):
        return "Node.js (node and npm) not on PATH"
    lock = os.path.join(GRAPHILE_DIR, "package-lock.json")
    stamp = os.path.join(GRAPHILE_DIR, "node_modules", ".bench-installed")
    if os.path.exists(stamp) and open(stamp).read() == open(lock).read():
        return None
    log("installing graphile-worker into bench/peers/graphile (npm ci)")
    proc = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                          cwd=GRAPHILE_DIR, capture_output=True, text=True)
    if proc.returncode != 0:
        return f"npm ci in bench/peers/graphile failed: {proc.stderr.strip()[-300:]}"
    shutil.copyfile(lock, stamp)
    return None
