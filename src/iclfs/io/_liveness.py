"""Whether a run finished, is running, or died: its run record, else its lease.

A run that ends well writes its run record (``run_record.json/<version>/``);
while it runs it holds a lease, ``run_record.json/.running/<version>``, an
exclusive lock on a file that the kernel lets go when the process ends, however
it ends. So a version of an artifact belongs to a run that is

``complete``
    its run record exists;
``running``
    no record yet, and its lease is held;
``dead``
    no record, and its lease is left behind with no holder: killed (``kill
    -9``, a lost machine) before it could clean up. What it left is never
    read, and the next run on the data source removes it;
``unknown``
    neither a record nor a lease: written before runs held leases, copied in
    from elsewhere, or its record was deleted. What it left is not read
    either, but nothing removes it: only a run seen to die loses its files.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

RUNNING = ".running"
COMPLETE, ALIVE, DEAD, UNKNOWN = "complete", "running", "dead", "unknown"


def record_file(records: Path, version: str) -> Path:
    return records / version / records.name


def lease_file(records: Path, version: str) -> Path:
    return records / RUNNING / version


def state(records: Path, version: str) -> str:
    """``complete``, ``running``, ``dead`` or ``unknown``: the run that wrote ``version`` (module docstring)."""
    if record_file(records, version).is_file():
        return COMPLETE
    if not lease_file(records, version).exists():
        return UNKNOWN
    return ALIVE if lease_held(records, version) else DEAD


def lease_held(records: Path, version: str) -> bool:
    """Whether the run ``version`` still holds its lease (it runs, or finishes: its record may exist already)."""
    lease = lease_file(records, version)
    if not lease.exists():
        return False
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        return True
    try:
        with open(lease, "rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
    except OSError:
        return False
    return False


class Lease:
    """The lease of the run ``version`` on the data source whose run records are at ``records``."""

    def __init__(self, records: Path, version: str) -> None:
        self.path = lease_file(records, version)
        self._handle = None

    def take(self) -> None:
        """Hold the lease. The file appears whole: written (the pid) and locked under a name of its own, then
        renamed into place, so no reader ever finds it empty or unlocked (it would read a running run as dead)."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover
            fcntl = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        making = self.path.with_name(f".{self.path.name}.{os.getpid()}.taking")
        self._handle = open(making, "w")  # noqa: SIM115  (held until release: that is the lease)
        if fcntl is not None:
            fcntl.flock(self._handle, fcntl.LOCK_EX)
        self._handle.write(f"{os.getpid()}\n")
        self._handle.flush()
        os.replace(making, self.path)  # the lock is the open file's: it moves with the name

    def release(self) -> None:
        if self._handle is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        self._handle.close()
        self._handle = None


def dead_versions(records: Path, versions: list[str], own: str | None = None) -> list[str]:
    """The ``versions`` (of an artifact) whose runs died: no record, and a lease left with no holder; never
    ``own``."""
    return [v for v in versions if v != own and not v.startswith(".") and state(records, v) == DEAD]
