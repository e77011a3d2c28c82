"""The stored member history: exact names, versions never rewritten, HEAD, merges, unusable versions."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kedro.io.core import DatasetError, Version

from iclfs.io.datasets import MemberHistoryDataset, MemberHistoryView
from iclfs.io.datasets._member_history_dataset import _encode, from_file, to_bytes
from iclfs.method._ranking import Member, MemberHistory

NAMES = ["042", "NA", "", "ünïcode ☃", "x" * 5000, " padded ", "=1+1", "1.0", "01", "tab\there"]


def dataset(folder, version, source="t"):
    return MemberHistoryDataset(filepath=str(folder / "member_history.npz"), data_source=source,
                                version=Version(None, version))


def view(folder, source="t"):
    return MemberHistoryView(filepath=str(folder / "member_history.npz"), data_source=source)


def grown(history: MemberHistory, seed: int, names=NAMES, fingerprint="f") -> MemberHistory:
    scores = np.random.default_rng(seed).normal(size=len(names))
    return history.add_run([Member(seed, names, scores, 2.5, fingerprint)], 64)


def member(seed, names, scores, fingerprint="f", laplacian=None) -> Member:
    return Member(seed, names, np.asarray(scores, dtype=float), 1.0, fingerprint, laplacian=laplacian)


def test_a_history_reads_back_exactly(tmp_path):
    history = grown(grown(view(tmp_path).load().of('iclfs'), 1), 2, names=NAMES[::-1])
    dataset(tmp_path, "2026-01-01T00.00.00.000Z").save(history)
    back = view(tmp_path).load().of('iclfs')
    assert back.version == "2026-01-01T00.00.00.000Z" and back.problem is None
    assert back.runs == 2 and back.next_index == 2 and back.data_source == "t" and back.own == ()
    assert back.kept == 64
    for stored, read in zip(history.members, back.members, strict=True):
        assert read.feature_names == stored.feature_names  # every name, byte for byte
        np.testing.assert_array_equal(read.scores, stored.scores)
        assert (read.seed, read.run, read.index, read.seconds, read.fingerprint, read.method) == \
            (stored.seed, stored.run, stored.index, stored.seconds, stored.fingerprint, stored.method)


def test_nothing_is_written_without_a_new_member_and_versions_are_never_rewritten(tmp_path):
    dataset(tmp_path, "v1").save(view(tmp_path).load().of('iclfs'))  # nothing carried: no version
    assert not (tmp_path / "member_history.npz").exists()
    dataset(tmp_path, "v1").save(grown(view(tmp_path).load().of('iclfs'), 1))
    read = view(tmp_path).load().of('iclfs')
    dataset(tmp_path, "v2").save(read)  # a ranking stage run on members already carried
    assert sorted(p.name for p in (tmp_path / "member_history.npz" / "iclfs").iterdir() if p.is_dir()) == ["v1"]
    with pytest.raises(DatasetError, match="never overwritten"):
        dataset(tmp_path, "v1").save(grown(MemberHistory(afresh=True), 5))


def test_the_head_is_the_version_that_holds_the_most_runs_whatever_its_name(tmp_path):
    dataset(tmp_path, "v2").save(grown(view(tmp_path).load().of('iclfs'), 1))
    dataset(tmp_path, "v1").save(grown(view(tmp_path).load().of('iclfs'), 2))  # an older run id that saved later
    head = view(tmp_path).load().of('iclfs')
    assert head.version == "v1" and [m.seed for m in head.members] == [1, 2]
    assert not (tmp_path / "member_history.npz" / "iclfs" / ".head").exists()  # no pointer to go stale


@pytest.mark.parametrize("pointer", ["binary", "folder", "older", "missing"])
def test_a_damaged_pointer_an_earlier_version_wrote_never_blocks_and_is_named(tmp_path, pointer):
    """.head, written by earlier versions: not UTF-8, a folder, naming an older or a missing version."""
    from iclfs.io.datasets._member_history_dataset import HEAD

    dataset(tmp_path, "v1").save(grown(view(tmp_path).load().of('iclfs'), 1))
    dataset(tmp_path, "v2").save(grown(view(tmp_path).load().of('iclfs'), 2))
    head = tmp_path / "member_history.npz" / "iclfs" / HEAD
    {"binary": lambda: head.write_bytes(b"\xff\xfe\x00garbage"), "folder": lambda: head.mkdir(),
     "older": lambda: head.write_text("v1"), "missing": lambda: head.write_text("v9")}[pointer]()
    history = view(tmp_path).load().of('iclfs')
    assert history.version == "v2" and [m.seed for m in history.members] == [1, 2]  # the newest, whole
    assert any(str(head) in note and "not used" in note for note in history.notes)
    dataset(tmp_path, "v3").save(grown(history, 3))  # and a run stores past it
    assert [m.seed for m in view(tmp_path).load().of('iclfs').members] == [1, 2, 3]


def test_an_unreadable_version_or_another_sources_history_is_a_problem_not_a_crash(tmp_path):
    dataset(tmp_path, "v1").save(grown(view(tmp_path).load().of('iclfs'), 1))
    assert "belongs to the data source 't', not 'u'" in view(tmp_path, source="u").load().of('iclfs').problem
    (tmp_path / "member_history.npz" / "iclfs" / "v1" / "member_history.npz").write_bytes(b"not a history")
    broken = view(tmp_path).load().of('iclfs')
    assert broken.members == () and "cannot be read" in broken.problem and "v1" in broken.problem


def test_a_run_that_starts_afresh_does_not_merge_and_becomes_head(tmp_path):
    dataset(tmp_path, "v1").save(grown(view(tmp_path).load().of('iclfs'), 1))
    dataset(tmp_path, "v2").save(grown(MemberHistory(data_source="t", afresh=True, version="v1"), 9))  # set v1 aside
    head = view(tmp_path).load().of('iclfs')
    assert head.version == "v2" and [m.seed for m in head.members] == [9]


def test_a_run_that_starts_afresh_keeps_what_another_run_stored_since_it_read(tmp_path):
    """Two overlapping runs on tables that share no name: the second sets the history aside, the first's member
    (stored after the second read) stays."""
    dataset(tmp_path, "v1").save(grown(view(tmp_path).load().of('iclfs'), 1))
    aside = view(tmp_path).load().of('iclfs')  # the second run reads v1, then sets it aside
    dataset(tmp_path, "v2").save(grown(view(tmp_path).load().of('iclfs'), 2))  # the first run stores meanwhile
    dataset(tmp_path, "v3").save(grown(MemberHistory(data_source="t", afresh=True, version=aside.version), 9,
                                       names=["p", "q"]))
    head = view(tmp_path).load().of('iclfs')
    assert head.version == "v3" and [m.seed for m in head.members] == [2, 9]


def test_the_later_writer_merges(tmp_path):
    dataset(tmp_path, "v1").save(grown(view(tmp_path).load().of('iclfs'), 1))
    base = view(tmp_path).load().of('iclfs')
    first, second = grown(base, 2, fingerprint="a"), grown(base, 3, fingerprint="b")  # both read v1
    dataset(tmp_path, "v2").save(first)
    dataset(tmp_path, "v3").save(second)
    head = view(tmp_path).load().of('iclfs')
    assert head.version == "v3" and [m.seed for m in head.members] == [1, 2, 3]
    assert [m.index for m in head.members] == [0, 1, 2] and head.runs == 3


def test_a_remote_filepath_is_refused_by_name():
    with pytest.raises(DatasetError, match="local or mounted disk"):
        MemberHistoryView(filepath="s3://bucket/member_history.npz")


WRITER = textwrap.dedent("""
    import sys, time
    import numpy as np
    from kedro.io.core import Version
    from iclfs.io.datasets import MemberHistoryDataset, MemberHistoryView
    from iclfs.method._ranking import Member
    folder, version, seed, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    path = folder + "/member_history.npz"
    history = MemberHistoryView(filepath=path, data_source="t").load().of("iclfs")
    open(folder + "/read_" + version, "w").close()
    while not __import__("os").path.exists(go):  # both have read before either writes
        time.sleep(0.01)
    names = ["a", "b", "c"]
    history = history.add_run([Member(seed, names, np.random.default_rng(seed).normal(size=3), 1.0, str(seed))], 64)
    MemberHistoryDataset(filepath=path, data_source="t", version=Version(None, version)).save(history)
""")


@pytest.mark.slow
def test_two_processes_writing_at_once_lose_no_member(tmp_path):
    go = tmp_path / "go"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    writers = [subprocess.Popen([sys.executable, str(script), str(tmp_path), f"v{i}", str(10 + i), str(go)])
               for i in range(4)]
    import time

    deadline = time.time() + 120
    while len(list(tmp_path.glob("read_*"))) < len(writers) and time.time() < deadline:
        time.sleep(0.05)
    go.touch()
    assert [w.wait(timeout=120) for w in writers] == [0] * len(writers)
    head = view(tmp_path).load().of('iclfs')
    assert sorted(m.seed for m in head.members) == [10, 11, 12, 13]
    assert sorted(m.index for m in head.members) == [0, 1, 2, 3] and head.runs == 4


def test_discarding_a_failed_runs_version_reads_the_version_before_it(tmp_path):
    from iclfs.io.datasets._member_history_dataset import LOCK

    root = tmp_path / "member_history.npz"
    folder = root / "iclfs"  # one folder per method
    first = MemberHistoryDataset(filepath=str(root), data_source="t",
                                 version=Version(None, "2026-01-01T00.00.00.000Z"))
    first.save(MemberHistory(data_source="t").add_run([member(1, ["a", "b"], [0.2, 0.1])], 64))
    failed = MemberHistoryDataset(filepath=str(root), data_source="t",
                                  version=Version(None, "2026-01-02T00.00.00.000Z"))
    failed.save(first.load().of('iclfs').add_run([member(2, ["a", "b"], [0.1, 0.2])], 64))
    assert first.load().of('iclfs').version == "2026-01-02T00.00.00.000Z"
    assert failed.discard("2026-01-02T00.00.00.000Z") and not (folder / "2026-01-02T00.00.00.000Z").exists()
    back = first.load().of('iclfs')
    assert back.version == "2026-01-01T00.00.00.000Z" and len(back.members) == 1
    assert first.discard("2026-01-01T00.00.00.000Z")
    assert not folder.exists()  # no version left: no lock, no folder
    assert not failed.discard("2026-01-02T00.00.00.000Z")
    first.save(MemberHistory(data_source="t").add_run([member(3, ["a"], [0.5])], 64))
    assert (folder / LOCK).exists() and len(first.load().of('iclfs').members) == 1  # the lock is made again when needed


def test_the_members_laplacian_scores_read_back_exactly(tmp_path):
    laplacian = np.random.default_rng(0).random(len(NAMES))
    laplacian[3] = np.inf
    history = view(tmp_path).load().of('iclfs').add_run([member(1, NAMES, np.arange(len(NAMES)), laplacian=laplacian)], 64)
    dataset(tmp_path, "v1").save(history)
    back = view(tmp_path).load().of('iclfs')
    np.testing.assert_array_equal(back.members[0].laplacian, laplacian)
    assert back.members[0].feature_names == tuple(NAMES)


def test_a_history_stored_without_laplacian_scores_still_reads(tmp_path):
    dataset(tmp_path, "v1").save(grown(view(tmp_path).load().of('iclfs'), 1))  # recorded without them
    back = view(tmp_path).load().of('iclfs')
    assert back.problem is None and back.members[0].laplacian is None


def test_a_history_an_earlier_version_stored_with_its_lists_still_reads_and_the_lists_are_set_aside(tmp_path):
    dataset(tmp_path, "v1").save(grown(view(tmp_path).load().of('iclfs'), 1))
    path = tmp_path / "member_history.npz" / "iclfs" / "v1" / "member_history.npz"
    with np.load(path) as content:
        arrays = {key: content[key] for key in content.files}
    for k, names in ((5, tuple(NAMES[:5])), (3, (NAMES[4], NAMES[0], NAMES[2]))):  # the earlier layout's lists
        arrays[f"list_{k}"], arrays[f"list_{k}_ends"] = _encode(names)
    (tmp_path / "old").mkdir()
    np.savez_compressed(tmp_path / "old" / "member_history.npz", **arrays)
    old = from_file(tmp_path / "old" / "member_history.npz", "old")
    new = from_file(path, "v1")
    assert [m.seed for m in old.members] == [m.seed for m in new.members] == [1]
    assert old.members[0].feature_names == tuple(NAMES)
    assert (old.runs, old.next_index, old.kept, old.problem) == (new.runs, new.next_index, new.kept, None)
    np.testing.assert_array_equal(old.members[0].scores, new.members[0].scores)
    assert not any(key.startswith("list_") for key in np.load(io.BytesIO(to_bytes(old))).files)


def test_a_merge_keeps_this_runs_laplacian_scores(tmp_path):
    dataset(tmp_path, "v1").save(grown(view(tmp_path).load().of('iclfs'), 1))
    mine = view(tmp_path).load().of('iclfs')
    dataset(tmp_path, "v2").save(grown(view(tmp_path).load().of('iclfs'), 2))  # another run stores first
    laplacian = np.linspace(0, 1, len(NAMES))
    mine = mine.add_run([member(3, NAMES, np.ones(len(NAMES)), laplacian=laplacian)], 64)
    dataset(tmp_path, "v3").save(mine)
    back = view(tmp_path).load().of('iclfs')
    assert [m.seed for m in back.members] == [1, 2, 3] and [m.run for m in back.members] == [0, 1, 2]
    np.testing.assert_array_equal(back.members[-1].laplacian, laplacian)


def test_one_runs_laplacian_scores_are_stored_once_and_a_history_with_them_per_member_still_reads(tmp_path):
    first, second = (np.random.default_rng(s).random(len(NAMES)) for s in (0, 1))
    history = view(tmp_path).load().of('iclfs').add_run(
        [member(s, NAMES, np.arange(len(NAMES)), laplacian=first) for s in (1, 2, 3)], 64)
    history = history.add_run([member(4, NAMES, np.ones(len(NAMES)), "g", laplacian=second)], 64)
    dataset(tmp_path, "v1").save(history)
    with np.load(tmp_path / "member_history.npz" / "iclfs" / "v1" / "member_history.npz") as content:
        stored = sorted(key for key in content.files if key.startswith("laplacian"))
    assert stored == ["laplacian_run_0", "laplacian_run_1"]  # three members of run 0, one array
    back = view(tmp_path).load().of('iclfs')
    for member_read, expected in zip(back.members, (first, first, first, second), strict=True):
        np.testing.assert_array_equal(member_read.laplacian, expected)
    # the earlier layout, one array per member, reads the same
    with np.load(tmp_path / "member_history.npz" / "iclfs" / "v1" / "member_history.npz") as content:
        arrays = {key: content[key] for key in content.files if not key.startswith("laplacian")}
    arrays.update({f"laplacian_{i}": m.laplacian for i, m in enumerate(history.members)})
    (tmp_path / "old").mkdir()
    np.savez_compressed(tmp_path / "old" / "member_history.npz", **arrays)
    old = from_file(tmp_path / "old" / "member_history.npz", "old")
    for member_read, expected in zip(old.members, (first, first, first, second), strict=True):
        np.testing.assert_array_equal(member_read.laplacian, expected)
    assert len(to_bytes(old)) < (tmp_path / "old" / "member_history.npz").stat().st_size  # written anew: once per run


def test_each_method_keeps_its_own_history_and_an_earlier_versions_folder_is_its_methods(tmp_path):
    """A data source keeps one history per method: running NDFS on it neither sets ICLFS's aside nor mixes."""
    dataset(tmp_path, "v1").save(grown(view(tmp_path).load().of("iclfs"), 1))
    ndfs = MemberHistory(data_source="t", method="ndfs").add_run([Member(7, NAMES, np.arange(10.0), 1.0, "f",
                                                                         method="ndfs")], 64)
    dataset(tmp_path, "v2").save(ndfs)
    histories = view(tmp_path).load()
    assert histories.methods() == ["iclfs", "ndfs"]
    assert [m.seed for m in histories.of("iclfs").members] == [1] and histories.of("iclfs").method == "iclfs"
    assert [m.seed for m in histories.of("ndfs").members] == [7] and histories.of("ndfs").method == "ndfs"
    assert histories.of("ls").members == () and histories.of("ls").method == "ls"
    assert (tmp_path / "member_history.npz" / "iclfs" / "v1").is_dir()
    assert (tmp_path / "member_history.npz" / "ndfs" / "v2").is_dir()


def test_a_history_an_earlier_version_stored_without_a_method_folder_is_read_as_its_methods(tmp_path):
    from iclfs.io.datasets._member_history_dataset import HEAD, _write_atomically

    root = tmp_path / "member_history.npz"
    history = grown(MemberHistory(data_source="t"), 3)
    _write_atomically(root / "v0" / "member_history.npz", to_bytes(history))  # versions straight under the root
    _write_atomically(root / HEAD, b"v0")
    assert [m.seed for m in view(tmp_path).load().of("iclfs").members] == [3]
    assert view(tmp_path).load().of("ndfs").members == ()
    dataset(tmp_path, "v1").save(grown(view(tmp_path).load().of("iclfs"), 4))  # carries on in the same folder
    assert [m.seed for m in view(tmp_path).load().of("iclfs").members] == [3, 4]


def test_a_run_that_read_another_running_runs_version_keeps_that_runs_member(tmp_path):
    """B (started second) stores first; A then reads B's version without B's member (B still runs) and stores:
    B's member stays, and A's is added to it."""
    from iclfs.io._liveness import Lease, record_file

    records = tmp_path / "run_record.json"

    def at(version):
        return MemberHistoryDataset(filepath=str(tmp_path / "member_history.npz"), data_source="t",
                                    version=Version(None, version), records={"filepath": str(records)})

    first, a, b = "2026-01-01T00.00.00.000Z", "2026-01-02T00.00.00.000Z", "2026-01-02T00.00.01.000Z"
    at(first).save(at(first).load().of("iclfs").add_run([member(1, ["x", "y"], [0.1, 0.2])], 64))
    record_file(records, first).parent.mkdir(parents=True)
    record_file(records, first).write_text("{}")  # the first run completed
    leases = [Lease(records, a), Lease(records, b)]
    for lease in leases:
        lease.take()  # both run now
    try:
        at(b).save(at(b).load().of("iclfs").add_run([member(3, ["x", "y"], [0.3, 0.1])], 64))
        read_by_a = at(a).load().of("iclfs")
        assert read_by_a.version == b and [m.seed for m in read_by_a.members] == [1]  # B's is not read: B runs
        at(a).save(read_by_a.add_run([member(2, ["x", "y"], [0.2, 0.3])], 64))
        stored = at(first).load()._stores.of("iclfs").read(for_use=False)
        assert sorted(m.seed for m in stored.members) == [1, 2, 3] and stored.runs == 3
        assert {m.version for m in stored.members} == {first, a, b}
    finally:
        for lease in leases:
            lease.release()
