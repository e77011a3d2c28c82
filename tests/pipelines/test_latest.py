"""data/latest/<source>/<method>/: the newest complete run's files behind one path that never changes."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from iclfs.project import _latest
from iclfs.project._latest import latest_folder, publish

VERSIONS = [f"2026-01-0{day}T03.00.00.000Z" for day in range(1, 7)]


def run_files(tmp_path: Path, version: str, names: tuple[str, ...] = ("feature_list.csv", "run_record.json"),
              ) -> dict[str, Path]:
    """The files one run wrote, each in its own version folder as Kedro writes them; their content names the
    version."""
    files = {}
    for name in names:
        path = tmp_path / "runs" / name / version / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content(name, version))
        files[name.split(".")[0]] = path
    return files


def content(name: str, version: str) -> str:
    return f"{name} of the run {version}\n" + "rank,feature_name\n" * 50


def listed(folder: Path) -> list[str]:
    """The files a reader of the latest sees: not the project's own bookkeeping (dot files)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


@pytest.fixture
def data(tmp_path) -> Path:
    return tmp_path / "data"


def test_the_link_points_to_the_newest_versions_folder_with_the_runs_files(tmp_path, data):
    files = run_files(tmp_path, VERSIONS[0])
    link = publish(data, "expr", "iclfs", VERSIONS[0], files)
    assert link == data / "latest" / "expr" / "iclfs" == latest_folder(data, "expr", "iclfs")
    assert link.is_symlink()
    assert os.readlink(link) == os.path.join(".iclfs", VERSIONS[0])
    assert link.resolve() == (data / "latest" / "expr" / ".iclfs" / VERSIONS[0]).resolve()
    assert listed(link) == ["feature_list.csv", "run_record.json"]
    assert (link / "feature_list.csv").read_text() == content("feature_list.csv", VERSIONS[0])
    # hard links to the run's own files, not copies
    assert (link / "feature_list.csv").stat().st_ino == files["feature_list"].stat().st_ino


def test_a_second_publish_switches_the_link(tmp_path, data):
    publish(data, "expr", "iclfs", VERSIONS[0], run_files(tmp_path, VERSIONS[0]))
    link = publish(data, "expr", "iclfs", VERSIONS[1], run_files(tmp_path, VERSIONS[1]))
    assert os.readlink(link) == os.path.join(".iclfs", VERSIONS[1])
    assert (link / "feature_list.csv").read_text() == content("feature_list.csv", VERSIONS[1])
    assert sorted(p.name for p in link.parent.iterdir()) == [".iclfs", "iclfs"]  # no swap link left behind


def test_an_older_version_published_afterwards_leaves_the_link(tmp_path, data):
    publish(data, "expr", "iclfs", VERSIONS[2], run_files(tmp_path, VERSIONS[2]))
    assert publish(data, "expr", "iclfs", VERSIONS[1], run_files(tmp_path, VERSIONS[1])) is None
    link = latest_folder(data, "expr", "iclfs")
    assert os.readlink(link) == os.path.join(".iclfs", VERSIONS[2])
    assert (link / "feature_list.csv").read_text() == content("feature_list.csv", VERSIONS[2])
    assert sorted(p.name for p in (link.parent / ".iclfs").iterdir()) == [VERSIONS[2]]


def test_methods_and_sources_have_links_of_their_own(tmp_path, data):
    publish(data, "expr", "iclfs", VERSIONS[1], run_files(tmp_path, VERSIONS[1]))
    assert publish(data, "expr", "ls", VERSIONS[0], run_files(tmp_path, VERSIONS[0])) is not None
    assert publish(data, "other", "iclfs", VERSIONS[0], run_files(tmp_path, VERSIONS[0])) is not None
    assert (data / "latest/expr/ls/feature_list.csv").read_text() == content("feature_list.csv", VERSIONS[0])
    assert (data / "latest/expr/iclfs/feature_list.csv").read_text() == content("feature_list.csv", VERSIONS[1])
    assert (data / "latest/other/iclfs/feature_list.csv").read_text() == content("feature_list.csv", VERSIONS[0])


def test_at_most_three_version_folders_are_kept(tmp_path, data):
    for version in VERSIONS[:5]:
        publish(data, "expr", "iclfs", version, run_files(tmp_path, version))
    store = data / "latest" / "expr" / ".iclfs"
    assert sorted(p.name for p in store.iterdir()) == VERSIONS[2:5]
    assert (latest_folder(data, "expr", "iclfs") / "feature_list.csv").read_text() == content(
        "feature_list.csv", VERSIONS[4])
    # the runs' own files are untouched by the pruning
    assert (tmp_path / "runs" / "feature_list.csv" / VERSIONS[0] / "feature_list.csv").read_text() == content(
        "feature_list.csv", VERSIONS[0])


def test_a_reader_holding_the_link_path_reads_a_complete_file(tmp_path, data):
    publish(data, "expr", "iclfs", VERSIONS[0], run_files(tmp_path, VERSIONS[0]))
    path = latest_folder(data, "expr", "iclfs") / "feature_list.csv"
    with path.open() as opened_before:
        head = opened_before.readline()
        for version in VERSIONS[1:5]:  # switched four times: the version it opened is pruned meanwhile
            publish(data, "expr", "iclfs", version, run_files(tmp_path, version))
        assert head + opened_before.read() == content("feature_list.csv", VERSIONS[0])
    assert path.read_text() == content("feature_list.csv", VERSIONS[4])


def test_readers_during_switches_only_ever_see_complete_files(tmp_path, data):
    versions = [f"2026-02-{day:02d}T03.00.00.000Z" for day in range(1, 25)]
    expected = {content("feature_list.csv", v) for v in versions}
    prepared = [run_files(tmp_path, v) for v in versions]
    publish(data, "expr", "iclfs", versions[0], prepared[0])
    path = latest_folder(data, "expr", "iclfs") / "feature_list.csv"
    seen, problems, done = [], [], threading.Event()

    def reader():
        while not done.is_set():
            try:
                seen.append(path.read_text())
            except OSError as err:  # pragma: no cover - what the test is there to catch
                problems.append(repr(err))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for version, files in zip(versions[1:], prepared[1:]):
            publish(data, "expr", "iclfs", version, files)
    finally:
        done.set()
        thread.join()
    assert problems == []
    assert seen and set(seen) <= expected
    assert path.read_text() == content("feature_list.csv", versions[-1])


@pytest.fixture
def no_symlinks(monkeypatch):
    """A file system without symbolic links (some Windows setups): os.symlink fails."""
    def refuse(*args, **kwargs):
        raise OSError("symbolic links are not supported here")

    monkeypatch.setattr(_latest.os, "symlink", refuse)


def test_without_symlinks_the_latest_is_a_folder_of_copies_replaced_file_by_file(tmp_path, data, no_symlinks):
    first = run_files(tmp_path, VERSIONS[0])
    link = publish(data, "expr", "iclfs", VERSIONS[0], first)
    assert link.is_dir() and not link.is_symlink()
    assert listed(link) == ["feature_list.csv", "run_record.json"] and (link / ".version").is_file()
    assert (link / "feature_list.csv").read_text() == content("feature_list.csv", VERSIONS[0])
    assert (link / "feature_list.csv").stat().st_ino != first["feature_list"].stat().st_ino  # a copy
    with (link / "feature_list.csv").open() as opened_before:
        assert publish(data, "expr", "iclfs", VERSIONS[1], run_files(tmp_path, VERSIONS[1])) == link
        assert opened_before.read() == content("feature_list.csv", VERSIONS[0])  # replaced, not rewritten
    assert (link / "feature_list.csv").read_text() == content("feature_list.csv", VERSIONS[1])
    assert (link / "run_record.json").read_text() == content("run_record.json", VERSIONS[1])
    assert sorted(p.name for p in link.iterdir()) == [".published", ".version", "feature_list.csv",
                                                      "run_record.json"]  # no .partial left
    # the first run's own file was never written through the copy
    assert first["feature_list"].read_text() == content("feature_list.csv", VERSIONS[0])


def test_a_folder_of_copies_becomes_a_link_once_symlinks_work(tmp_path, data, monkeypatch):
    real = os.symlink
    monkeypatch.setattr(_latest.os, "symlink", lambda *a, **k: (_ for _ in ()).throw(OSError("no links")))
    publish(data, "expr", "iclfs", VERSIONS[0], run_files(tmp_path, VERSIONS[0]))
    monkeypatch.setattr(_latest.os, "symlink", real)
    link = publish(data, "expr", "iclfs", VERSIONS[1], run_files(tmp_path, VERSIONS[1]))
    assert link.is_symlink()
    assert (link / "feature_list.csv").read_text() == content("feature_list.csv", VERSIONS[1])


def test_without_symlinks_an_older_version_published_afterwards_leaves_the_latest(tmp_path, data, no_symlinks):
    publish(data, "expr", "iclfs", VERSIONS[2], run_files(tmp_path, VERSIONS[2]))
    assert publish(data, "expr", "iclfs", VERSIONS[1], run_files(tmp_path, VERSIONS[1])) is None
    assert (latest_folder(data, "expr", "iclfs") / "feature_list.csv").read_text() == content(
        "feature_list.csv", VERSIONS[2])


def test_without_symlinks_the_latest_holds_only_the_newest_runs_files(tmp_path, data, no_symlinks):
    publish(data, "expr", "iclfs", VERSIONS[0],
            run_files(tmp_path, VERSIONS[0], ("feature_list.csv", "evaluation_table.csv", "run_record.json")))
    link = publish(data, "expr", "iclfs", VERSIONS[1], run_files(tmp_path, VERSIONS[1]))
    assert listed(link) == ["feature_list.csv", "run_record.json"] and (link / ".version").is_file()


def test_with_symlinks_the_latest_holds_only_the_newest_runs_files(tmp_path, data):
    publish(data, "expr", "iclfs", VERSIONS[0],
            run_files(tmp_path, VERSIONS[0], ("feature_list.csv", "evaluation_table.csv", "run_record.json")))
    link = publish(data, "expr", "iclfs", VERSIONS[1], run_files(tmp_path, VERSIONS[1]))
    assert listed(link) == ["feature_list.csv", "run_record.json"]


def test_a_file_the_run_did_not_write_is_left_out(tmp_path, data):
    files = run_files(tmp_path, VERSIONS[0])
    files["report"] = tmp_path / "runs" / "never_written.html"
    link = publish(data, "expr", "iclfs", VERSIONS[0], files)
    assert listed(link) == ["feature_list.csv", "run_record.json"]


# -- what the switch did not make: never followed, never deleted (issue 58, the latest folder) ----------------------


def test_a_planted_link_is_never_followed_and_is_replaced_by_the_projects(tmp_path, data, caplog):
    """A link at data/latest/expr/iclfs to a folder outside, whose name sorts after every version: not taken for a
    newer run; replaced by the project's own link, its target untouched; later runs switch too."""
    outside = tmp_path / "outside" / "9999-zz"
    outside.mkdir(parents=True)
    (outside / "feature_list.csv").write_text("planted\n")
    link = latest_folder(data, "expr", "iclfs")
    link.parent.mkdir(parents=True)
    os.symlink(outside, link)
    assert publish(data, "expr", "iclfs", VERSIONS[0], run_files(tmp_path, VERSIONS[0])) == link
    assert os.readlink(link) == os.path.join(".iclfs", VERSIONS[0])
    assert (outside / "feature_list.csv").read_text() == "planted\n" and listed(outside) == ["feature_list.csv"]
    assert any(f"{link} was a symbolic link iclfs did not make (to {outside})" in r.getMessage()
               for r in caplog.records)
    publish(data, "expr", "iclfs", VERSIONS[1], run_files(tmp_path, VERSIONS[1]))
    assert (link / "feature_list.csv").read_text() == content("feature_list.csv", VERSIONS[1])


def test_a_planted_link_in_place_of_the_versions_folder_is_refused(tmp_path, data):
    outside = tmp_path / "outside"
    outside.mkdir()
    (data / "latest" / "expr").mkdir(parents=True)
    os.symlink(outside, data / "latest" / "expr" / ".iclfs")
    with pytest.raises(_latest.LatestError, match=r"\.iclfs is a symbolic link .* that iclfs did not make: remove it"):
        publish(data, "expr", "iclfs", VERSIONS[0], run_files(tmp_path, VERSIONS[0]))
    assert listed(outside) == []


def test_a_folder_the_project_did_not_make_is_refused_and_its_files_kept(tmp_path, data):
    link = latest_folder(data, "expr", "iclfs")
    link.mkdir(parents=True)
    (link / "NOTES.txt").write_text("mine\n")
    assert _latest.latest_problem(data, "expr", "iclfs") == (
        f"{link} is a folder iclfs did not make, and it holds 'NOTES.txt': move it out of {link.parent} (iclfs "
        "publishes each run's list there, and deletes nothing it did not write)")
    with pytest.raises(_latest.LatestError, match="NOTES.txt"):
        publish(data, "expr", "iclfs", VERSIONS[0], run_files(tmp_path, VERSIONS[0]))
    assert (link / "NOTES.txt").read_text() == "mine\n" and listed(link) == ["NOTES.txt"]


def test_an_empty_folder_in_place_of_the_link_is_replaced(tmp_path, data):
    latest_folder(data, "expr", "iclfs").mkdir(parents=True)
    link = publish(data, "expr", "iclfs", VERSIONS[0], run_files(tmp_path, VERSIONS[0]))
    assert link.is_symlink()


def test_a_users_file_written_through_the_link_is_kept_when_its_folder_is_pruned(tmp_path, data, caplog):
    link = publish(data, "expr", "iclfs", VERSIONS[0], run_files(tmp_path, VERSIONS[0]))
    (link / "NOTES.txt").write_text("mine\n")  # lands in .iclfs/<first version>/
    for version in VERSIONS[1:5]:
        publish(data, "expr", "iclfs", version, run_files(tmp_path, version))
    kept = data / "latest" / "expr" / ".iclfs" / VERSIONS[0]
    assert listed(kept) == ["NOTES.txt"] and (kept / "NOTES.txt").read_text() == "mine\n"
    assert [r.getMessage() for r in caplog.records if "which iclfs did not write" in r.getMessage()] == [
        f"kept {kept}: it holds NOTES.txt, which iclfs did not write"]  # named once, then left alone
    assert sorted(p.name for p in kept.parent.iterdir()) == [VERSIONS[0], *VERSIONS[2:5]]


def test_without_symlinks_a_users_file_in_the_folder_of_copies_is_kept(tmp_path, data, no_symlinks):
    link = publish(data, "expr", "iclfs", VERSIONS[0], run_files(tmp_path, VERSIONS[0]))
    (link / "NOTES.txt").write_text("mine\n")
    publish(data, "expr", "iclfs", VERSIONS[1], run_files(tmp_path, VERSIONS[1], ("feature_list.csv",)))
    assert listed(link) == ["NOTES.txt", "feature_list.csv"]  # the first run's record went, the note stays


def test_a_read_only_source_folder_is_named_before_the_run(tmp_path, data):
    publish(data, "expr", "iclfs", VERSIONS[0], run_files(tmp_path, VERSIONS[0]))
    folder = data / "latest" / "expr"
    from tests.pipelines.test_faults import read_only

    with read_only(folder, 0o555):
        problem = _latest.latest_problem(data, "expr", "iclfs")
    assert problem is not None and problem.startswith(f"{folder} is not writable (")
    assert problem.endswith(f"iclfs publishes the latest list under {folder}; make it writable")


def test_a_stop_before_the_switch_leaves_the_latest_and_no_folder(tmp_path, data):
    publish(data, "expr", "iclfs", VERSIONS[0], run_files(tmp_path, VERSIONS[0]))

    class Stopped(Exception):
        pass

    def stop():
        raise Stopped

    with pytest.raises(Stopped):
        publish(data, "expr", "iclfs", VERSIONS[1], run_files(tmp_path, VERSIONS[1]), before_switch=stop)
    link = latest_folder(data, "expr", "iclfs")
    assert os.readlink(link) == os.path.join(".iclfs", VERSIONS[0])
    assert sorted(p.name for p in (data / "latest" / "expr" / ".iclfs").iterdir()) == [VERSIONS[0]]  # no .partial


def test_a_write_that_fails_names_the_file_under_latest_and_leaves_nothing(tmp_path, data, monkeypatch):
    """ENOSPC injected into the copy (a disk without hard links, then full): the file named is the one written
    under data/latest, not the run's own that was read."""
    import errno

    publish(data, "expr", "iclfs", VERSIONS[0], run_files(tmp_path, VERSIONS[0]))
    monkeypatch.setattr(_latest.os, "link", lambda *a: (_ for _ in ()).throw(OSError(errno.EXDEV, "cross-device")))

    def full(source, target, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(source), None, str(target))

    monkeypatch.setattr(_latest.shutil, "copy2", full)
    with pytest.raises(_latest.LatestError) as raised:
        publish(data, "expr", "iclfs", VERSIONS[1], run_files(tmp_path, VERSIONS[1]))
    store = data / "latest" / "expr" / ".iclfs"
    assert str(raised.value) == (f"the disk is full writing {store / f'.{VERSIONS[1]}.partial' / 'feature_list.csv'} "
                                 f"(under {store.parent}); the latest list stays on the previous run")
    assert sorted(p.name for p in store.iterdir()) == [VERSIONS[0]]
    assert os.readlink(latest_folder(data, "expr", "iclfs")) == os.path.join(".iclfs", VERSIONS[0])
