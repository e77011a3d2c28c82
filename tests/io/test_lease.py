"""A run's lease appears whole (issue 58, "The tests themselves": a reader found a lease file before its pid)."""

from __future__ import annotations

import os

from iclfs.io import _liveness
from iclfs.io._liveness import ALIVE, UNKNOWN, Lease, lease_file, state

VERSION = "2026-01-01T00.00.00.000Z"


def test_the_lease_file_appears_written_and_locked(tmp_path, monkeypatch):
    records = tmp_path / "run_record.json"
    seen = []
    real = os.replace

    def watched(source, target):  # the moment the lease takes its name
        seen.append((lease_file(records, VERSION).exists(), open(source).read(), state(records, VERSION)))
        return real(source, target)

    monkeypatch.setattr(_liveness.os, "replace", watched)
    lease = Lease(records, VERSION)
    lease.take()
    try:
        assert seen == [(False, f"{os.getpid()}\n", UNKNOWN)]  # no file under its name until written and locked
        assert lease_file(records, VERSION).read_text() == f"{os.getpid()}\n"
        assert state(records, VERSION) == ALIVE
        assert sorted(p.name for p in (records / ".running").iterdir()) == [VERSION]  # nothing else left
    finally:
        lease.release()
    assert state(records, VERSION) == UNKNOWN
