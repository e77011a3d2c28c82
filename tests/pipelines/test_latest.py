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
    assert sorted(p.name for p in link.iterdir()) == ["feature_list.csv", "run_record.json"]
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
    assert sorted(p.name for p in link.iterdir()) == [".version", "feature_list.csv", "run_record.json"]
    assert (link / "feature_list.csv").read_text() == content("feature_list.csv", VERSIONS[0])
    assert (link / "feature_list.csv").stat().st_ino != first["feature_list"].stat().st_ino  # a copy
    with (link / "feature_list.csv").open() as opened_before:
        assert publish(data, "expr", "iclfs", VERSIONS[1], run_files(tmp_path, VERSIONS[1])) == link
        assert opened_before.read() == content("feature_list.csv", VERSIONS[0])  # replaced, not rewritten
    assert (link / "feature_list.csv").read_text() == content("feature_list.csv", VERSIONS[1])
    assert (link / "run_record.json").read_text() == content("run_record.json", VERSIONS[1])
    assert sorted(p.name for p in link.iterdir()) == [".version", "feature_list.csv", "run_record.json"]  # no .partial left
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
    assert sorted(p.name for p in link.iterdir()) == [".version", "feature_list.csv", "run_record.json"]


def test_with_symlinks_the_latest_holds_only_the_newest_runs_files(tmp_path, data):
    publish(data, "expr", "iclfs", VERSIONS[0],
            run_files(tmp_path, VERSIONS[0], ("feature_list.csv", "evaluation_table.csv", "run_record.json")))
    link = publish(data, "expr", "iclfs", VERSIONS[1], run_files(tmp_path, VERSIONS[1]))
    assert sorted(p.name for p in link.iterdir()) == ["feature_list.csv", "run_record.json"]


def test_a_file_the_run_did_not_write_is_left_out(tmp_path, data):
    files = run_files(tmp_path, VERSIONS[0])
    files["report"] = tmp_path / "runs" / "never_written.html"
    link = publish(data, "expr", "iclfs", VERSIONS[0], files)
    assert sorted(p.name for p in link.iterdir()) == ["feature_list.csv", "run_record.json"]
