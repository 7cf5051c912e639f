"""A PostgreSQL server of the test's own, to crash and restart: never the shared one.

The fault tests kill the database under load. The shared server (``TEST_DATABASE_URL``) serves
every other test and engineer, so these tests ``initdb`` a cluster into a temporary directory with
the Debian binaries (``/usr/lib/postgresql/<version>/bin``), start it on a free port of 127.0.0.1,
and crash it themselves: SIGKILL of the postmaster (its backends notice and exit, as after a real
crash) or an immediate shutdown (no checkpoint: the next start replays the WAL). PostgreSQL refuses
to run as root, so under root it runs as the ``postgres`` user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg

#: How long a start (crash recovery included) or a stop may take on a loaded machine.
DEADLINE = 60.0


def binaries() -> Path | None:
    """The newest installed PostgreSQL's bin directory, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivatePostgres:
    """One cluster in a temporary directory; :meth:`start`, :meth:`crash`, :meth:`stop`."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="survey-faults-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.user: str | None = None
        if os.geteuid() == 0:  # initdb refuses root
            self.user = "postgres"
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self._run(
            [
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ]
        )

    def _run(self, args: list[str]) -> None:
        subprocess.run(args, check=True, capture_output=True, timeout=DEADLINE, user=self.user)

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def database_url(self, name: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{name}"

    def connect(self, dbname: str = "postgres", timeout: float = 2) -> psycopg.Connection:
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=dbname, autocommit=True, connect_timeout=timeout
        )

    def start(self) -> None:
        """Start the server (replaying the WAL after a crash) and return once it takes connections.

        After SIGKILL of the postmaster its backends live on until they notice; a start before they
        have gone is refused ("shared memory block is still in use") and tried again."""
        deadline = time.monotonic() + DEADLINE
        while True:
            with self.log.open("a") as out:
                self.process = subprocess.Popen(
                    [
                        str(self.bin / "postgres"),
                        "-D",
                        str(self.data),
                        "-p",
                        str(self.port),
                        "-k",
                        str(self.root),
                        "-c",
                        "listen_addresses=127.0.0.1",
                        # A crashed process loses nothing the kernel was given; fsync only guards
                        # against power loss, which no test here simulates, and costs the shared disk.
                        "-c",
                        "fsync=off",
                        "-c",
                        "max_connections=60",
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    user=self.user,
                    start_new_session=True,
                )
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    break  # refused to start: its old backends are still there
                try:
                    self.connect(timeout=1).close()
                    return
                except psycopg.OperationalError:
                    time.sleep(0.05)
            if time.monotonic() >= deadline:
                raise RuntimeError(f"PostgreSQL did not start:\n{self.log.read_text()[-2000:]}")
            time.sleep(0.2)

    def crash(self, how: str = "kill") -> None:
        """``kill``: SIGKILL the postmaster; ``immediate``: SIGQUIT, PostgreSQL's immediate shutdown
        (every backend quits at once, nothing is checkpointed). Returns once the postmaster and
        every process it had started are gone (after SIGKILL, its backends notice and quit)."""
        assert self.process is not None
        children = self._children()
        self.process.send_signal(signal.SIGKILL if how == "kill" else signal.SIGQUIT)
        self.process.wait(timeout=DEADLINE)
        deadline = time.monotonic() + DEADLINE
        while any(_alive(pid) for pid in children):
            if time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL's processes {children} outlived their postmaster")
            time.sleep(0.02)

    def _children(self) -> list[int]:
        """The processes the postmaster started (from /proc: their parent is the postmaster)."""
        assert self.process is not None
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == self.process.pid:
                    found.append(int(stat.parent.name))
        return found

    def accepts_connections(self) -> bool:
        try:
            self.connect(timeout=1).close()
        except psycopg.OperationalError:
            return False
        return True

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.process.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=DEADLINE)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting for its new parent counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A started private cluster, stopped and removed afterwards."""
    bin_dir = binaries()
    if bin_dir is None:
        import pytest

        pytest.skip("PostgreSQL's server binaries are not installed (apt-get install postgresql)")
    server = PrivatePostgres(bin_dir)
    try:
        server.start()
        yield server
    finally:
        server.remove()
