"""The lock of the member history and of a fresh tracking store: a timeout that names the holder, let go always."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from kedro.io.core import DatasetError, Version

from iclfs.io._lock import LockTimeoutError, held, holder_file
from iclfs.io.datasets import MemberHistoryDataset
from iclfs.io.datasets import _member_history_dataset as history_module
from iclfs.method._ranking import Member, MemberHistory


def hold_in_another_process(lock: Path, run: str = "other-run") -> subprocess.Popen:
    """A real second process that holds ``lock`` (as a run does) until it is killed."""
    script = (f"import time; from pathlib import Path; from iclfs.io._lock import held\n"
              f"with held(Path({str(lock)!r}), 'a test lock', 60, run={run!r}):\n"
              f"    print('held', flush=True); time.sleep(120)\n")
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    return process


def stop(process: subprocess.Popen) -> None:
    process.kill()
    process.wait()


def free(lock: Path) -> bool:
    """Whether ``lock`` can be taken at once (a hold in this process conflicts like another process's)."""
    try:
        with held(lock, "a test lock", 0):
            return True
    except LockTimeoutError:
        return False


def test_a_second_process_holding_the_lock_stops_this_one_after_the_timeout_naming_its_pid(tmp_path, caplog):
    lock = tmp_path / "folder" / ".lock"
    holder = hold_in_another_process(lock)
    try:
        started = time.monotonic()
        with caplog.at_level(logging.INFO, logger="iclfs.io._lock"), pytest.raises(LockTimeoutError) as caught:
            with held(lock, "the thing", 1):
                pass
        waited = time.monotonic() - started
    finally:
        stop(holder)
    assert 1 <= waited < 10
    message = str(caught.value)
    assert message.startswith(f"the lock of the thing ({lock}) is held by process {holder.pid} on "), message
    assert "run other-run" in message and "-c" in message and "for more than 1 s" in message
    assert caught.value.holder.startswith(f"process {holder.pid} on ")
    # a run that waits says so once, naming the holder, before it waits
    assert [r.getMessage() for r in caplog.records] == [
        f"Waiting for the lock of the thing, held by {caught.value.holder} (up to 1 s)"]
    assert free(lock)  # the holder is gone: its lock with it


def test_the_lock_is_let_go_after_a_normal_block_and_after_an_exception(tmp_path):
    lock = tmp_path / ".lock"
    with held(lock, "the thing", 1, run="mine"):
        note = json.loads(holder_file(lock).read_text())
        assert note["pid"] == os.getpid() and note["run"] == "mine"
        assert not free(lock)
    assert not holder_file(lock).exists() and free(lock)
    with pytest.raises(RuntimeError, match="the block failed"):
        with held(lock, "the thing", 1):
            raise RuntimeError("the block failed")
    assert not holder_file(lock).exists() and free(lock)


def test_a_holder_that_left_no_note_is_unknown_and_one_that_ended_is_said_to_have_ended(tmp_path):
    lock = tmp_path / ".lock"
    holder = hold_in_another_process(lock)
    try:
        holder_file(lock).unlink()
        with pytest.raises(LockTimeoutError, match=r"is held by unknown, for more than 0 s"):
            with held(lock, "the thing", 0):
                pass
        ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                               text=True, check=True)
        gone = int(ended.stdout)
        holder_file(lock).write_text(json.dumps({"pid": gone, "host": os.uname().nodename, "since": "then"}))
        with pytest.raises(LockTimeoutError, match=rf"held by unknown \(the last holder noted, process {gone}, has "):
            with held(lock, "the thing", 0):
                pass
    finally:
        stop(holder)


def _history(root: Path, version: str) -> MemberHistoryDataset:
    return MemberHistoryDataset(filepath=str(root / "member_history.npz"), data_source="t",
                                version=Version(None, version))


def _one_member(seed: int) -> MemberHistory:
    member = Member(seed, ["a", "b"], np.array([0.2, 0.1]), 1.0, "f")
    return MemberHistory(data_source="t").add_run([member], 64)


def test_a_history_save_stops_after_the_timeout_naming_the_process_that_holds_its_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(history_module, "LOCK_TIMEOUT", 1.0)
    lock = tmp_path / "member_history.npz" / "iclfs" / history_module.LOCK
    holder = hold_in_another_process(lock, run="2026-01-01T00.00.00.000Z")
    try:
        with pytest.raises(DatasetError, match=rf"the lock of the member history of 't' \(iclfs\) \({lock}\) is held "
                                               rf"by process {holder.pid} on .*run 2026-01-01T00.00.00.000Z"):
            _history(tmp_path, "2026-01-02T00.00.00.000Z").save(_one_member(1))
    finally:
        stop(holder)
    assert not (lock.parent / "2026-01-02T00.00.00.000Z").exists()  # nothing was written
    _history(tmp_path, "2026-01-02T00.00.00.000Z").save(_one_member(1))  # the holder is gone: the lock too
    assert not holder_file(lock).exists() and free(lock)
    # a save that fails under the lock (a version is never overwritten) lets it go too
    with pytest.raises(DatasetError, match="a version is never overwritten"):
        _history(tmp_path, "2026-01-02T00.00.00.000Z").save(_one_member(2))
    assert not holder_file(lock).exists() and free(lock)
