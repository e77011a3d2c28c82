"""The latest folder's faults (issue 58, "The latest folder"), each a real ``kedro run`` on a copy of the project.

A run is complete when its record is written and its list published under
``data/latest``; when either cannot be done, both are undone with every
version the run wrote, and one line says why. The switch never follows a
link it did not make and never deletes a file it did not write. Also here: a
stage rerun after the folder a refusal named was deleted ("The tests
themselves"), and the run summary's line for members that agree only weakly.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import mlflow
import pytest
from kedro.io import DataCatalog, MemoryDataset

from tests.pipelines.test_faults import RECORDS, artifact, latest_list, published, read_only, the_line, versions
from tests.pipelines.test_trust import GENES, data_files, environment, kedro, project_at, table

slow = pytest.mark.slow


def latest(project: Path) -> Path:
    return project / "data" / "latest" / "t" / "iclfs"


def complete(project: Path) -> str:
    """A complete select run on t.csv (data source t); its version."""
    done = kedro(project, f"input={project / 't.csv'}")
    assert done.code == 0, done.output[-3000:]
    return versions(project, RECORDS)[-1]


def outside_latest(project: Path) -> set[str]:
    return {path for path in data_files(project) if not path.startswith("latest/")}


def mlflow_statuses(project: Path) -> list[str]:
    mlflow.set_tracking_uri(f"sqlite:///{project / 'mlflow.db'}")
    try:
        runs = mlflow.search_runs(experiment_names=["iclfs"], output_format="list", order_by=["start_time ASC"])
    finally:
        mlflow.set_tracking_uri(None)
    return [run.info.status for run in runs]


@pytest.fixture
def project(tmp_path) -> Path:
    root = project_at(tmp_path / "project")
    table(root / "t.csv", GENES, n=20, seed=1)
    return root


@slow
def test_a_planted_link_is_never_followed_and_later_runs_still_switch(project, tmp_path, caplog):
    """data/latest/t/iclfs planted as a link to a folder outside the project whose name sorts after every version:
    the run replaces the link with its own, never writes through it, and says so; the next run switches again."""
    outside = tmp_path / "elsewhere" / "9999-12-31T23.59.59.999Z"
    outside.mkdir(parents=True)
    (outside / "feature_list.csv").write_text("rank,feature_name\n1,planted\n")
    latest(project).parent.mkdir(parents=True)
    os.symlink(outside, latest(project))

    done = kedro(project, f"input={project / 't.csv'}")
    assert done.code == 0, done.output[-3000:]
    first = versions(project, RECORDS)[-1]
    assert os.readlink(latest(project)) == os.path.join(".iclfs", first)
    assert latest_list(project) == published(project, first)
    assert (outside / "feature_list.csv").read_text() == "rank,feature_name\n1,planted\n"  # never written through
    assert sorted(p.name for p in outside.iterdir()) == ["feature_list.csv"]
    said = [r.getMessage() for r in caplog.records if "did not make" in r.getMessage()]
    assert said == [f"{latest(project)} was a symbolic link iclfs did not make (to {outside}): it was never followed, "
                    "and is replaced by the latest list's link; what it pointed to is untouched"]

    second = complete(project)
    assert os.readlink(latest(project)) == os.path.join(".iclfs", second)
    assert latest_list(project) == published(project, second)


@slow
def test_a_users_notes_in_a_folder_the_project_did_not_make_are_kept_and_the_run_refused(project):
    folder = latest(project)
    folder.mkdir(parents=True)
    (folder / "NOTES.txt").write_text("my notes\n")
    before = data_files(project)

    done = kedro(project, f"input={project / 't.csv'}")
    assert done.code == 1
    line = the_line(done.output, r"^Error: ")
    assert line == (f"Error: the latest list: {folder} is a folder iclfs did not make, and it holds 'NOTES.txt': move "
                    f"it out of {folder.parent} (iclfs publishes each run's list there, and deletes nothing it did "
                    "not write); the run was not started")
    assert (folder / "NOTES.txt").read_text() == "my notes\n"
    assert data_files(project) == before  # nothing written
    assert mlflow_statuses(project) == []  # refused before tracking started a run

    (folder / "NOTES.txt").rename(project / "NOTES.txt")  # as the message says: then the run goes through
    complete(project)
    assert latest(project).is_symlink()


WRAPPER = textwrap.dedent("""
    import os, signal, sys
    import iclfs.project._runs as runs

    real, number = runs.publish, getattr(signal, sys.argv[2])

    def publish(*args, **kwargs):  # the run record is written: the signal, as a scheduler's timeout sends it
        os.kill(os.getpid(), number)
        return real(*args, **kwargs)

    runs.publish = publish
    from kedro.framework.cli import main
    sys.argv = ["kedro", "run", "--pipelines", "select", "--params", sys.argv[1]]
    main()
""")


def stopped_between_record_and_switch(project: Path, signal_name: str) -> tuple[int, str]:
    """A select run in a process of its own, sent ``signal_name`` by itself the moment its record is written."""
    log = project / f"{signal_name}.log"
    with log.open("w") as out:
        done = subprocess.run([sys.executable, "-c", WRAPPER, f"input={project / 't.csv'}", signal_name],
                              cwd=project, env=environment(), stdout=out, stderr=subprocess.STDOUT, timeout=300)
    return done.returncode, log.read_text()


@slow
def test_sigterm_between_the_record_and_the_switch_undoes_the_run_whole(project):
    """SIGTERM the moment the run record is written, before the latest switch: the stopped line, no record without
    its latest, no .partial folder; the next run compares with, and holds to, the list that is the latest."""
    first = complete(project)
    before = data_files(project)
    code, output = stopped_between_record_and_switch(project, "SIGTERM")
    assert code == 1, output[-3000:]
    said = [line for line in output.splitlines() if "is read by a later run (" in line]
    assert len(said) == 1 and "WARNING" in said[0] and "the run was stopped (SIGTERM)" in said[0], output[-3000:]
    the_line(output, r"^Error: the run was stopped \(SIGTERM\)")
    assert data_files(project) == before, sorted(data_files(project) ^ before)  # no record, no .partial
    assert os.readlink(latest(project)) == os.path.join(".iclfs", first)
    assert mlflow_statuses(project) == ["FINISHED", "FAILED"]

    after = complete(project)
    stability = json.loads(artifact(project, "selection_stability.json", after).read_text())
    assert stability["previous_version"] == first
    assert os.readlink(latest(project)) == os.path.join(".iclfs", after)


@slow
def test_kill_9_between_the_record_and_the_switch_is_published_by_the_next_run(project, caplog):
    """kill -9 cannot be caught: the run's record is written and its list not switched. The run is complete, so the
    next run on the data source publishes its list first, says so, and then compares with it and becomes the
    latest itself."""
    first = complete(project)
    code, output = stopped_between_record_and_switch(project, "SIGKILL")
    assert code == -9, output[-3000:]
    killed = versions(project, RECORDS)[-1]
    assert killed != first and os.readlink(latest(project)) == os.path.join(".iclfs", first)  # the half state

    caplog.set_level(logging.INFO, logger="iclfs")
    done = kedro(project, f"input={project / 't.csv'}")
    assert done.code == 0, done.output[-3000:]
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and killed in r.getMessage()]
    assert said == [f"The run {killed} on data source 't' completed but was stopped before its list was published: "
                    "it is published now, as the latest list (iclfs)"]
    after = versions(project, RECORDS)[-1]
    stability = json.loads(artifact(project, "selection_stability.json", after).read_text())
    assert stability["previous_version"] == killed  # the list it compares with is one that reached data/latest
    assert sorted(p.name for p in (latest(project).parent / ".iclfs").iterdir()) == [first, killed, after]
    assert os.readlink(latest(project)) == os.path.join(".iclfs", after)


@pytest.fixture
def small_disk_at_latest(project):
    """A 64 KiB tmpfs mounted at data/latest: the run's own files fit on the project's disk, its copies there do
    not (hard links cannot cross to it). Needs root to mount; skipped elsewhere."""
    folder = project / "data" / "latest"
    folder.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({mounted.stderr.decode().strip() or 'not root'})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


@slow
def test_a_full_disk_under_latest_names_latest_and_keeps_nothing_of_the_run(project, small_disk_at_latest):
    """A real full disk (tmpfs) under data/latest, on a wider table whose report and figures do not fit."""
    table(project / "t.csv", [f"g{j}" for j in range(300)], n=40, seed=1)
    done = kedro(project, f"input={project / 't.csv'}")
    assert done.code == 1, done.output[-3000:]
    line = the_line(done.output, r"^Error: ")
    store = small_disk_at_latest / "t" / ".iclfs"
    assert line.startswith(f"Error: the disk is full writing {store}/."), line  # a file under data/latest
    assert line.endswith(f"(under {store.parent}); the latest list stays on the previous run. The run's versions "
                         "were removed: nothing of this run was kept"), line
    assert outside_latest(project) == set()  # no record, no version of the run
    assert list(store.iterdir()) == []  # no .partial folder
    assert not latest(project).exists() and not latest(project).is_symlink()
    assert mlflow_statuses(project) == ["FAILED"], done.output[-6000:]


@slow
def test_a_read_only_latest_folder_is_refused_before_the_run(project):
    complete(project)
    before = data_files(project)
    folder = project / "data" / "latest" / "t"
    with read_only(folder, 0o555):
        done = kedro(project, f"input={project / 't.csv'}")
    assert done.code == 1
    line = the_line(done.output, r"^Error: ")
    assert line.startswith(f"Error: the latest list: {folder} is not writable (")
    assert line.endswith(f"iclfs publishes the latest list under {folder}; make it writable; the run was not "
                         "started")
    assert data_files(project) == before
    assert mlflow_statuses(project) == ["FINISHED"]  # the refused run started none


@slow
def test_a_stage_rerun_after_deleting_the_folder_the_message_names_does_not_name_it_again(project):
    complete(project)
    ranking = project / "data" / "07_model_output" / "t" / "iclfs" / "feature_ranking.csv"
    version = sorted(p.name for p in ranking.iterdir())[-1]
    damaged = ranking / version / "feature_ranking.csv"
    damaged.write_text(damaged.read_text()[:100])
    refused = kedro(project, "data_source=t", pipeline="selection")
    assert refused.code == 1
    first = the_line(refused.output, r"^Error: ")
    assert f"Delete the folder {damaged.parent} " in first
    import shutil

    shutil.rmtree(damaged.parent)  # as the message says
    again = kedro(project, "data_source=t", pipeline="selection")
    assert again.code == 1
    second = the_line(again.output, r"^Error: ")
    assert str(damaged.parent) not in second and second != first
    assert second == (f"Error: data source 't': feature_ranking is deleted from every complete run that wrote it (the "
                      f"newest: {version}), and this pipeline reads it. Run the stage that writes feature_ranking "
                      "first (or kedro run --pipelines select)")
    ranked = kedro(project, "data_source=t", pipeline="ranking")
    assert ranked.code == 0, ranked.output[-3000:]
    done = kedro(project, "data_source=t", f"input={project / 't.csv'}", pipeline="selection")
    assert done.code == 0, done.output[-3000:]


# -- the run summary: members that agree only weakly (issue 61) --------------------------------------------------------


def summary_of(signal: dict) -> list[str]:
    from iclfs.project._hooks import summary_lines

    import pandas as pd

    stability = {"previous_version": "2026-01-01T00.00.00.000Z", "per_k": {}, "signal": signal}
    catalog = DataCatalog({"feature_list": MemoryDataset(pd.DataFrame({"rank": [1], "feature_name": ["g0"]})),
                           "selection_stability": MemoryDataset(stability)})
    return summary_lines({"feature_list", "selection_stability"}, catalog)


def test_the_summary_says_plainly_when_the_members_agree_only_weakly():
    lines = summary_of({"phi": 0.12, "lower": 0.05, "upper": 0.19, "members": 8, "above_chance": True})
    assert ("WARNING: the 8 members agree only weakly (Phi 0.12, below 0.2; 95 % interval 0.05 to 0.19): more than "
            "chance, but their lists share little, so the list may move much from one refresh to the next. More "
            "members (members.per_run) steady it") in lines
    assert not any("no more than chance" in line for line in lines)


def test_the_summary_says_nothing_of_agreement_at_phi_02_and_above():
    lines = summary_of({"phi": 0.2, "lower": 0.1, "upper": 0.3, "members": 8, "above_chance": True})
    assert not any("agree" in line for line in lines)


def test_members_no_better_than_chance_get_that_warning_not_the_weak_one():
    lines = summary_of({"phi": 0.01, "lower": -0.05, "upper": 0.07, "members": 8, "above_chance": False})
    assert sum("no more than chance" in line for line in lines) == 1
    assert not any("only weakly" in line for line in lines)


# -- the closing note's table ---------------------------------------------------------------------------------------

ROWS = {
    "a symbolic link planted at data/latest/<source>/iclfs pointing outside":
        "test_a_planted_link_is_never_followed_and_later_runs_still_switch",
    "the user's own NOTES.txt in data/latest/<source>/iclfs/ (a real folder)":
        "test_a_users_notes_in_a_folder_the_project_did_not_make_are_kept_and_the_run_refused",
    "SIGTERM between the run record and the latest switch":
        "test_sigterm_between_the_record_and_the_switch_undoes_the_run_whole",
    "kill -9 in the same window": "test_kill_9_between_the_record_and_the_switch_is_published_by_the_next_run",
    "a full disk under data/latest during the switch":
        "test_a_full_disk_under_latest_names_latest_and_keeps_nothing_of_the_run",
    "data/latest/<source> read-only": "test_a_read_only_latest_folder_is_refused_before_the_run",
    "a stage rerun after deleting the folder the message says to delete":
        "test_a_stage_rerun_after_deleting_the_folder_the_message_names_does_not_name_it_again",
    "the leases() helper read a lease file before its pid was written (tests/io/test_lease.py)":
        "test_the_lease_file_appears_written_and_locked",
    "tests read the developer's own conf/local (tests/test_conf_of_their_own.py)":
        "test_what_reads_conf_from_the_working_folder_reads_the_copy",
}


def test_every_row_of_the_latest_folder_has_its_test():
    import importlib

    modules = [importlib.import_module(name) for name in (
        __name__, "tests.io.test_lease", "tests.test_conf_of_their_own")]
    for row, test in ROWS.items():
        assert any(callable(getattr(module, test, None)) for module in modules), row
