"""Throwaway PostgreSQL clusters for the tests that need more than the test database: a
primary of their own and its streaming replica, each on its own port and data directory,
started with the embedded server's binaries (backend/config/embedded_pg.py, the same
PostgreSQL 18 `make test` runs on, whatever server DATABASE_URL names) and stopped and deleted
by the test that started them.

    with throwaway_primary() as primary, streaming_replica(primary) as replica:
        primary.url("jobs")  # postgres://postgres@127.0.0.1:<port>/jobs
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backend" / "config"))
import embedded_pg  # noqa: E402

from .utils import wait_for  # noqa: E402

START_TIMEOUT = 60


@dataclass
class Cluster:
    port: int
    data: Path
    log: Path

    def url(self, dbname: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"

    def stop(self) -> None:
        """Stop the server now (immediate shutdown); the data directory stays until the end."""
        bindir, home, user = _tools()
        embedded_pg._run([bindir / "pg_ctl", "stop", "-D", self.data, "-m", "immediate", "-w",
                          "-t", "30", "-s"], home, user)

    def execute(self, statement: str, dbname: str = "postgres") -> list[tuple]:
        with psycopg.connect(self.url(dbname), autocommit=True, connect_timeout=5) as conn:
            cur = conn.execute(statement)
            return cur.fetchall() if cur.description else []


def _tools():
    user = embedded_pg._pg_user()
    home = embedded_pg._home_dir()
    embedded_pg._prepare_home(home, user)
    return embedded_pg._bin_dir(home), home, user


def _scratch(home: Path, user, kind: str) -> Path:
    root = home / "test-clusters"
    root.mkdir(exist_ok=True)
    embedded_pg._chown(root, user)
    path = Path(tempfile.mkdtemp(prefix=f"{kind}-{uuid.uuid4().hex[:6]}-", dir=root))
    embedded_pg._chown(path, user)
    return path


def _free_port() -> int:
    for port in embedded_pg._candidate_ports(set()):
        return port
    raise RuntimeError("no free port for a throwaway cluster")


def _configure(data: Path, port: int, user, extra: str = "") -> None:
    conf = data / "throwaway.conf"
    conf.write_text(f"port = {port}\nlisten_addresses = '127.0.0.1'\n"
                    "unix_socket_directories = ''\nmax_connections = 60\n"
                    "fsync = off\nfull_page_writes = off\n" + extra)
    embedded_pg._chown(conf, user)
    with open(data / "postgresql.conf", "a") as f:
        f.write("\ninclude_if_exists = 'throwaway.conf'\n")


def _start(bindir: Path, home: Path, user, cluster: Cluster) -> None:
    result = embedded_pg._run([bindir / "pg_ctl", "start", "-D", cluster.data, "-l", cluster.log,
                               "-w", "-t", str(START_TIMEOUT), "-s"], home, user,
                              start_new_session=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        tail = cluster.log.read_text()[-3000:] if cluster.log.exists() else ""
        raise RuntimeError(f"pg_ctl start failed: {result.stderr}\n{tail}")


def _stop(cluster: Cluster, scratch: Path) -> None:
    cluster.stop()
    shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def throwaway_primary():
    """A new, empty cluster (superuser postgres, trust on loopback, replication allowed)."""
    bindir, home, user = _tools()
    scratch = _scratch(home, user, "primary")
    data = scratch / "data"
    result = embedded_pg._run([bindir / "initdb", "-D", data, "-U", "postgres", "-A", "trust",
                               "-E", "UTF8", "--locale=C", "--no-instructions"], home, user)
    if result.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {result.stdout}\n{result.stderr}")
    cluster = Cluster(_free_port(), data, scratch / "postgres.log")
    _configure(data, cluster.port, user, "wal_level = replica\nmax_wal_senders = 4\n")
    try:
        _start(bindir, home, user, cluster)
        yield cluster
    finally:
        _stop(cluster, scratch)


@contextmanager
def streaming_replica(primary: Cluster):
    """A hot standby of `primary` (pg_basebackup), streaming from it."""
    bindir, home, user = _tools()
    scratch = _scratch(home, user, "replica")
    data = scratch / "data"
    result = embedded_pg._run([bindir / "pg_basebackup", "-h", "127.0.0.1", "-p", primary.port,
                               "-U", "postgres", "-D", data, "-X", "stream",
                               "-c", "fast"], home, user)
    if result.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise RuntimeError(f"pg_basebackup failed: {result.stdout}\n{result.stderr}")
    cluster = Cluster(_free_port(), data, scratch / "postgres.log")
    # The copied throwaway.conf names the primary's port: this one overrides it. The
    # connection string is written here, not by `pg_basebackup -R`, whose options (such as
    # sslnegotiation) an older libpq the server may load for its WAL receiver refuses.
    _configure(data, cluster.port, user, "hot_standby = on\nprimary_conninfo = "
               f"'host=127.0.0.1 port={primary.port} user=postgres'\n")
    (data / "standby.signal").touch()
    embedded_pg._chown(data / "standby.signal", user)
    try:
        _start(bindir, home, user, cluster)
        # pg_ctl -w returned: the standby accepts (read-only) connections, so it is in recovery.
        assert cluster.execute("SELECT pg_is_in_recovery()")[0][0], "not a standby"
        yield cluster
    finally:
        _stop(cluster, scratch)


def wait_replayed(primary: Cluster, replica: Cluster, timeout: float = 30.0) -> None:
    """Until the replica has replayed everything the primary has written so far."""
    [(lsn,)] = primary.execute("SELECT pg_current_wal_insert_lsn()::text")
    wait_for(lambda: replica.execute(f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn")[0][0],
             timeout=timeout, message=f"the replica did not replay up to {lsn}")


def two_shard_settings(b_port: int, c_port: int, shards: dict) -> str:
    """A settings module for the demo with two shards, `shard_b` and `shard_c`, on throwaway
    primaries listening on `b_port` and `c_port` (the default database's other settings),
    and JOB_SHARDS `shards`."""
    return f"""
from config.settings import *  # noqa: F403

DATABASES = {{**DATABASES,  # noqa: F405
             "shard_b": {{**DATABASES["default"], "PORT": {b_port}}},  # noqa: F405
             "shard_c": {{**DATABASES["default"], "PORT": {c_port}}}}}  # noqa: F405
DATABASE_ROUTERS = ["django_pg_jobqueue.routers.JobQueueRouter"]
JOB_SHARDS = {shards!r}
"""
