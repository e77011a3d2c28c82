"""A lock held by one process at a time (:mod:`filelock`), whose timeout names who holds it.

The holder writes who it is beside the lock, in ``<lock>.holder`` (its pid, host, command, run and since when),
once it holds the lock, and removes it before it lets go. A process that waits logs once who holds the lock, and
one that waits past its timeout stops with :class:`LockTimeoutError`, naming the holder; a holder that left no
note (killed before it wrote one, or an older release) is "unknown". The kernel lets go of the lock itself when
its holder ends, however it ends, so a note a killed holder left is only ever read while someone else holds the
lock, and is then overwritten.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

LOGGER = logging.getLogger(__name__)
HOLDER = ".holder"  # the suffix of the holder's note, beside the lock


class LockTimeoutError(TimeoutError):
    """A lock stayed held past the timeout. ``holder`` names who held it (its pid first), or is ``unknown``."""

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message)
        self.holder = holder


def holder_file(lock: Path) -> Path:
    return lock.with_name(lock.name + HOLDER)


def holder(lock: Path) -> str:
    """Who holds ``lock``, as its note says: ``process <pid> on <host> (<command>, run <run>), since <time>``."""
    try:
        note = json.loads(holder_file(lock).read_text(encoding="utf-8"))
        pid, host = int(note["pid"]), str(note["host"])
    except (OSError, ValueError, KeyError, TypeError):
        return "unknown"
    if host == socket.gethostname() and not _alive(pid):
        return f"unknown (the last holder noted, process {pid}, has ended)"
    what = ", ".join(filter(None, [note.get("command"), note.get("run") and f"run {note['run']}"]))
    return f"process {pid} on {host}" + (f" ({what})" if what else "") + f", since {note.get('since', '?')}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: it exists
        return True
    return True


def _note(run: str | None) -> str:
    command = shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv and sys.argv[0] else ""
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "command": command[:300],
                       "run": run, "since": time.strftime("%Y-%m-%d %H:%M:%S %Z")})


@contextlib.contextmanager
def held(lock: Path, what: str, timeout: float, run: str | None = None) -> Iterator[None]:
    """Hold ``lock`` (made with its folder if missing) for the ``with`` block, waiting at most ``timeout`` s.

    ``what`` names what the lock guards, for the messages; ``run`` is the holder's run, for its note. The lock is
    let go when the block ends, by an exception too. A folder removed while this waits (the history's last
    version discarded) is made again, and the wait goes on to the same deadline.
    """
    from filelock import FileLock, Timeout

    deadline = time.monotonic() + timeout
    told = False
    while True:
        # one FileLock per hold: a second hold of the same lock in this process waits (and times out) like
        # another process's, never re-entering a hold it does not know about
        file_lock = FileLock(lock, thread_local=False)
        try:
            try:
                file_lock.acquire(blocking=False)
            except Timeout:
                if not told:
                    LOGGER.info("Waiting for the lock of %s, held by %s (up to %g s)", what, holder(lock), timeout)
                    told = True
                file_lock.acquire(timeout=max(0.0, deadline - time.monotonic()))
            break
        except FileNotFoundError:  # the folder went while this waited: make it again
            if time.monotonic() >= deadline:
                raise
        except Timeout:
            who = holder(lock)
            raise LockTimeoutError(f"the lock of {what} ({lock}) is held by {who}, for more than {timeout:g} s; "
                                   "nothing was written under it. If that process hangs, stop it, and run again",
                                   who) from None
    try:
        with contextlib.suppress(OSError):
            holder_file(lock).write_text(_note(run), encoding="utf-8")
        yield
    finally:
        try:
            with contextlib.suppress(OSError):
                holder_file(lock).unlink(missing_ok=True)  # before the lock goes: the next holder writes its own
        finally:
            file_lock.release()
