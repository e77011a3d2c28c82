"""Faults a scheduled job meets (issue 53): one test for every case, each with its message and what it leaves.

Every case asserts (a) the message it must say, whole on one line and never
with a traceback; (b) that nothing half-written of a refused or stopped run
is left (the files under data/ before and after, as ``data_files`` in
test_trust); and, for the concurrent and killed runs, (c) the members the
member history holds afterwards and the list each run published.

The groups follow the issue: 1 concurrent refreshes, 2 killed and stopped
runs, 3 a damaged member history, 4 checks that are the whole truth, 5 a
tracking store that cannot take a run, 6 entry points, 7 big tables (their
checks called with the issue's sizes, never a run of that size). The last
test lists every case by group, for the closing note's count.
"""

from __future__ import annotations

import contextlib
import fcntl
import http.server
import json
import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from iclfs.io.datasets import CSVDataset, MemberHistoryView
from iclfs.method._ranking import member_seed
from tests.pipelines.test_trust import (GENES, Outcome, data_files, environment, kedro, project_at, start,
                                        table, wait_for)

PYTHON = sys.executable
slow = pytest.mark.slow
HISTORY = "07_model_output/t/member_history.npz"
RECORDS = "08_reporting/t/run_record.json"
OTHER = [f"h{j}" for j in range(12)]  # a table that shares no feature name with GENES


# -- helpers ------------------------------------------------------------------------------------------------------


def the_line(output: str, pattern: str) -> str:
    """The one line of ``output`` that matches ``pattern`` (the message is whole on one line); no traceback."""
    assert "Traceback" not in output, output[-4000:]
    lines = [line for line in output.splitlines() if re.search(pattern, line)]
    assert len(lines) >= 1, f"no line matches {pattern!r} in:\n{output[-4000:]}"
    return lines[0]


def head(project: Path):
    """Every member the iclfs history of data source t stores (complete or not: no run records given)."""
    return MemberHistoryView(filepath=str(project / "data" / HISTORY), data_source="t").load().of("iclfs")


def versions(project: Path, artifact: str) -> list[str]:
    return Outcome(0, "", project).versions(artifact)


def history_versions(project: Path) -> list[str]:
    folder = project / "data" / HISTORY / "iclfs"
    return sorted(p.parent.name for p in folder.glob("*/member_history.npz")) if folder.is_dir() else []


def artifact(project: Path, name: str, version: str) -> Path:
    """``data/<layer>/t/iclfs/<name>/<version>/<name>`` (the run records: ``data/08_reporting/t/...``)."""
    layer = "08_reporting" if name.split(".")[0] in ("run_record", "selection_stability", "table_changes",
                                                      "evaluation_summary") else "07_model_output"
    folder = project / "data" / layer / "t" / ("" if name == "run_record.json" else "iclfs")
    return folder / name / version / name


def published(project: Path, version: str) -> list[str]:
    """The list the run ``version`` published (its feature_list.csv version)."""
    return CSVDataset(filepath=str(artifact(project, "feature_list.csv", version))).load()["feature_name"].tolist()


def computed(project: Path, version: str) -> list[str]:
    """The list the run ``version`` computed: its selections at its k."""
    k = json.loads(artifact(project, "k_choice.json", version).read_text())["k"]
    selections = CSVDataset(filepath=str(artifact(project, "selections.csv", version))).load()
    return selections.loc[selections["k"] == k].sort_values("rank")["feature_name"].tolist()


def latest_list(project: Path) -> list[str]:
    return CSVDataset(filepath=str(project / "data/latest/t/iclfs/feature_list.csv")).load()["feature_name"].tolist()


def launch(project: Path, *params: str) -> subprocess.Popen:
    """``kedro run --pipelines select`` in a process of its own (a session of its own); ``.log`` is its output."""
    log = project / f"select-{len(list(project.glob('*.log')))}.log"
    process = start(project, *params)
    process.log = log
    return process


def log_of(process: subprocess.Popen) -> str:
    return process.log.read_text()


def kill_all(*processes: subprocess.Popen) -> None:
    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGCONT)
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


WAITING = "Waiting for the lock of the member history"


def waits_on_the_history(process: subprocess.Popen, before: int) -> bool:
    """Whether ``process`` waits for the member history's lock: it said so again since it had said so ``before``
    times (a waiter polls the lock, :mod:`iclfs.io._lock`, so no kernel list shows it waiting)."""
    return log_of(process).count(WAITING) > before


def stopped_now(pid: int) -> bool:
    """Whether process ``pid`` is stopped (state T in /proc/<pid>/stat), not only sent SIGSTOP."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "T"


def leases(project: Path) -> dict[int, str]:
    """``{pid: run version}`` of the runs that hold a lease on data source t (the lease file holds its pid)."""
    folder = project / "data" / RECORDS / ".running"
    found = {}
    for path in folder.glob("[!.]*") if folder.is_dir() else []:  # not a lease being taken (.<version>.<pid>.taking)
        with contextlib.suppress(OSError, ValueError, IndexError):  # gone meanwhile, or (before 0.3) not yet written
            found[int(path.read_text().split()[0])] = path.name
    return found


def summary(log: str) -> list[str]:
    lines = log.splitlines()
    assert "Run summary" in lines, log[-3000:]
    return lines[lines.index("Run summary") + 1:]


def complete(project: Path, *params: str) -> str:
    """A complete select run in this process on data source t; its version."""
    done = kedro(project, "data_source=t", *params)
    assert done.code == 0, done.output[-3000:]
    return versions(project, RECORDS)[-1]


def set_tracking_uri(project: Path, uri: str) -> None:
    mlflow_yml = project / "conf/local/mlflow.yml"
    conf = yaml.safe_load(mlflow_yml.read_text())
    conf["server"]["mlflow_tracking_uri"] = uri
    mlflow_yml.write_text(yaml.safe_dump(conf))


@contextlib.contextmanager
def read_only(path: Path, mode: int):
    """``path`` made read-only: chmod ``mode``; as root (where chmod does not stop writes) also ``chattr +i``.
    Skips the test where neither stops a write here."""
    original = path.stat().st_mode & 0o7777
    immutable = False
    os.chmod(path, mode)
    try:
        if os.geteuid() == 0:
            done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
            immutable = done.returncode == 0
        probe = path / ".probe" if path.is_dir() else path
        try:
            with open(probe, "a"):
                pass
        except OSError:
            pass
        else:
            if path.is_dir():
                probe.unlink()
            pytest.skip(f"{path} is still writable after chmod {mode:o} (running as root, and chattr +i is not "
                        "available on this filesystem)")
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(path)], check=False)
        os.chmod(path, original)


# == 1. concurrent refreshes =======================================================================================

MERGED = ("another run on this data source stored the member history while this one ran (version {other}): this "
          "run's members were added to it, and both runs' are kept")
STILL_RUNNING = ("1 other run(s) on this data source still run ({other}): their members join the member history "
                 "when they publish")


def two_refreshes_at_once(project: Path, first: tuple[str, ...], second: tuple[str, ...]) -> tuple:
    """Two select runs on data source t started together. The barrier: each run is stopped the moment it holds
    its reservation (its member numbers), before it trains, until both hold one; then the test holds the
    history's lock until both have ranked, so each reads the history before either stores it. Then ``second``
    is held still while ``first`` stores and completes, and goes on after: it stores last, onto ``first``'s
    history. Returns both processes and their versions."""
    if not Path("/proc/self/stat").is_file():
        pytest.skip("the barrier reads whether a run is stopped from Linux's /proc/<pid>/stat")
    folder = project / "data" / HISTORY / "iclfs"
    rankings = len(versions(project, "07_model_output/t/iclfs/feature_ranking.csv"))
    runs = [launch(project, "data_source=t", *params) for params in (first, second)]
    try:
        stopped: dict[int, str] = {}
        deadline = time.monotonic() + 300
        while len(stopped) < 2:
            for run in runs:
                assert run.poll() is None, "the run ended before the barrier: " + log_of(run)[-3000:]
            held = leases(project)
            for run in runs:
                version = held.get(run.pid)
                if run.pid not in stopped and version and (folder / ".reserved" / version).exists():
                    os.killpg(run.pid, signal.SIGSTOP)
                    stopped[run.pid] = version
            assert time.monotonic() < deadline, "the runs did not reserve their member numbers in 300 s"
            time.sleep(0.005)
        run_versions = [stopped[run.pid] for run in runs]
        waited = {run.pid: log_of(run).count(WAITING) for run in runs}  # for its reservation, maybe
        with open(folder / ".lock", "a+") as lock:
            for run in runs:
                os.killpg(run.pid, signal.SIGCONT)
            # a run stopped in the last instant of its reservation still held the lock: continued, it lets go at
            # once, long before either has trained and ranked
            fcntl.flock(lock, fcntl.LOCK_EX)
            for run in runs:  # each saved its ranking (it read the history) and waits to store the history
                wait_for(lambda: len(versions(project, "07_model_output/t/iclfs/feature_ranking.csv")) == rankings + 2
                         and waits_on_the_history(run, waited[run.pid]), run, timeout=300)
            # stopped where it waits on this lock, never in the middle of a write to the tracking store (whose
            # lock, held by a stopped process, would hold the other run still too)
            os.killpg(runs[1].pid, signal.SIGSTOP)
            # stopped before the lock is let go: a run woken with the lock free takes it before it stops
            wait_for(lambda: stopped_now(runs[1].pid), runs[1], timeout=60, poll=0.01)
            fcntl.flock(lock, fcntl.LOCK_UN)
        assert runs[0].wait(timeout=300) == 0, log_of(runs[0])[-3000:]
        os.killpg(runs[1].pid, signal.SIGCONT)
        assert runs[1].wait(timeout=300) == 0, log_of(runs[1])[-3000:]
    finally:
        kill_all(*runs)
    return runs, run_versions


def each_published_what_it_computed(project: Path, run_versions: list[str]) -> None:
    for version in run_versions:
        assert published(project, version) == computed(project, version), version
    # the newest run's: a run that completes after a newer one never moves the latest back
    assert latest_list(project) == published(project, max(run_versions))


@slow
def test_1a_two_refreshes_of_one_file_at_once_keep_both_members(tmp_path):
    """The same file, training.epochs=2 and training.epochs=3, started at the same moment on an empty history."""
    project = project_at(tmp_path / "project")
    table(project / "t.csv", GENES, n=20, seed=1)
    source = f"input={project / 't.csv'}"
    runs, (a, b) = two_refreshes_at_once(project, (source, "training.epochs=2"), (source, "training.epochs=3"))

    history = head(project)
    assert sorted(m.version for m in history.members) == sorted([a, b]) and history.runs == 2
    seeds = [m.seed for m in history.members]
    assert len(set(seeds)) == 2 and sorted(seeds) == sorted([member_seed(42, 0), member_seed(42, 1)])
    starts = [json.loads(artifact(project, "history_start.json", v).read_text())["seed"] for v in (a, b)]
    assert starts[0] != starts[1]  # the two runs trained two distinct members
    each_published_what_it_computed(project, [a, b])

    first, second = log_of(runs[0]), log_of(runs[1])
    assert "Traceback" not in first + second
    assert "  " + STILL_RUNNING.format(other=b) in summary(first)  # it stored first: the other still ran
    assert "  " + MERGED.format(other=a) in summary(second)  # it stored last, onto the first's history
    the_line(second, rf"WARNING .*Another run on data source 't' stored the member history \(version {a}\) after "
                     r"this run read none: this run's 1 member\(s\) are added to it\.")


@slow
@pytest.mark.parametrize("afresh", ["stores second", "stores first"])
def test_1b_two_refreshes_of_tables_that_share_no_name(tmp_path, afresh):
    """After a complete run on GENES, A refreshes GENES while B (a table that shares no feature name) starts the
    history afresh, both at once: A's member stays in the history whichever stores first."""
    project = project_at(tmp_path / "project")
    table(project / "t.csv", GENES, n=20, seed=1)
    table(project / "u.csv", OTHER, n=20, seed=2)
    base = complete(project, f"input={project / 't.csv'}")
    a_params, b_params = (f"input={project / 't.csv'}",), (f"input={project / 'u.csv'}",)
    order = (a_params, b_params) if afresh == "stores second" else (b_params, a_params)
    runs, (first, second) = two_refreshes_at_once(project, *order)
    a, b = (first, second) if afresh == "stores second" else (second, first)
    log_a, log_b = (log_of(r) for r in (runs if afresh == "stores second" else runs[::-1]))

    history = head(project)
    by_version = {m.version: m for m in history.members}
    assert set(by_version) == {a, b}  # A's member stays; the member B set aside (the first run's) is gone ...
    assert by_version[a].feature_names == tuple(GENES) and by_version[b].feature_names == tuple(OTHER)
    # ... and B says why, once
    the_line(log_b, r"WARNING .*the member history \(1 member\(s\)\) shares no feature name with this table's 12; "
                    r"this run starts the member history afresh")
    assert base not in by_version
    assert len({m.seed for m in history.members}) == len(history.members)
    each_published_what_it_computed(project, [first, second])
    assert set(published(project, a)) <= set(GENES) and set(published(project, b)) <= set(OTHER)

    first_log, second_log = (log_a, log_b) if afresh == "stores second" else (log_b, log_a)
    assert "Traceback" not in first_log + second_log
    assert "  " + STILL_RUNNING.format(other=second) in summary(first_log)
    assert "  " + MERGED.format(other=first) in summary(second_log)


# == 2. killed and stopped runs ====================================================================================


@slow
def test_2a_a_run_killed_right_after_it_stored_its_history(tmp_path):
    """kill -9 right after rank_features stored B's history: the next run C reads A's members and lists only,
    removes B's versions with one WARNING naming them, and stores A's member and its own."""
    project = project_at(tmp_path / "project")
    table(project / "t.csv", GENES, n=20, seed=1)
    source = f"input={project / 't.csv'}"
    a = complete(project, source)
    killed = launch(project, "data_source=t", source)
    try:
        wait_for(lambda: len(history_versions(project)) == 2, killed, poll=0.01)
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
    finally:
        kill_all(killed)
    b = history_versions(project)[-1]
    assert b != a and not artifact(project, "run_record.json", b).exists()  # B did not complete
    assert len(head(project).members) == 2  # B's member is stored, B being dead
    assert any(b in path for path in data_files(project))

    after = launch(project, "data_source=t", source)
    assert after.wait(timeout=300) == 0, log_of(after)[-3000:]
    log = log_of(after)
    c = versions(project, RECORDS)[-1]
    removed = [line for line in log.splitlines() if "left when they were killed" in line]
    assert len(removed) == 1 and re.search(
        rf"WARNING .*Removed what 1 run\(s\) on data source 't' left when they were killed \(no run record, not "
        rf"running\): {b}$", removed[0]), removed
    assert not any(b in path for path in data_files(project))  # nothing of B is left, its lease neither

    history = head(project)
    assert [m.version for m in history.members] == [a, c]  # B's member was never used, and is not kept
    assert len({m.seed for m in history.members}) == 2
    assert any(line.startswith("  member history (iclfs): 2 member(s) combined") for line in summary(log))
    stability = json.loads(artifact(project, "selection_stability.json", c).read_text())
    assert stability["previous_version"] == a  # it compares with, and holds to, A's list, never B's
    assert b not in json.dumps(stability)
    assert published(project, c) == computed(project, c) == latest_list(project)
    assert "Traceback" not in log


@slow
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT"])
def test_2b_a_run_stopped_while_training_removes_its_versions(tmp_path, stop):
    """SIGTERM (a scheduler's timeout) or SIGINT (Ctrl-C) to the run's process group while it trains."""
    project = project_at(tmp_path / "project")
    table(project / "t.csv", GENES, n=20, seed=1)
    source = f"input={project / 't.csv'}"
    complete(project, source)
    before = data_files(project)
    run = launch(project, "data_source=t", source, "training.epochs=100000")
    try:
        wait_for(lambda: "Running node: train_members" in log_of(run), run)
        wait_for(lambda: bool(leases(project)), run)
        threading.Event().wait(1.5)  # well inside the 100000 epochs
        os.killpg(run.pid, getattr(signal, stop))
        code = run.wait(timeout=120)
    finally:
        kill_all(run)
    log = log_of(run)
    assert code != 0
    assert "Traceback" not in log, log[-4000:]
    said = [line for line in log.splitlines() if "is read by a later run (" in line]
    assert len(said) == 1 and re.search(
        rf"WARNING .*the run was stopped \({stop}\): the versions it had written were removed, and nothing of it "
        r"is read by a later run \(feature_names, .*inverted_data.*\)$", said[0]), said
    the_line(log, rf"^Error: the run was stopped \({stop}\)")
    assert data_files(project) == before, sorted(data_files(project) ^ before)


@slow
def test_2c_a_timeout_of_the_packaged_job_removes_its_versions(tmp_path):
    """The packaged job under coreutils' ``timeout`` (which sends SIGTERM when the time is up), well inside its
    100000 epochs: the same one line, and nothing of it left."""
    project = project_at(tmp_path / "project")
    table(project / "t.csv", GENES, n=20, seed=1)
    source = f"input={project / 't.csv'}"
    complete(project, source)
    before = data_files(project)
    log = project / "job.log"
    with log.open("w") as out:
        done = subprocess.run(["timeout", "45", PYTHON, "-m", "iclfs", "--params",
                               f"data_source=t,{source},training.epochs=100000"],
                              cwd=project, env=environment(), stdout=out, stderr=subprocess.STDOUT, timeout=300)
    output = log.read_text()
    assert done.returncode == 124, output[-3000:]  # timeout's own code: the time was up
    assert "Running node: train_members" in output, output[-3000:]  # it was stopped while training
    assert "Traceback" not in output, output[-4000:]
    said = [line for line in output.splitlines() if "is read by a later run (" in line]
    assert len(said) == 1 and re.search(r"WARNING .*the run was stopped \(SIGTERM\): the versions it had written "
                                        r"were removed, and nothing of it is read by a later run \(feature_names, "
                                        r".*inverted_data.*\)$", said[0]), said
    the_line(output, r"^Error: the run was stopped \(SIGTERM\)")
    assert data_files(project) == before, sorted(data_files(project) ^ before)


# == 3. a damaged member history ===================================================================================


POINTERS = {
    "not UTF-8": lambda pointer, older: pointer.write_bytes(b"\xff\xfe\x00garbage"),
    "a folder": lambda pointer, older: pointer.mkdir(),
    "naming the older version": lambda pointer, older: pointer.write_text(older),
    "naming a missing version": lambda pointer, older: pointer.write_text("2020-01-01T00.00.00.000Z"),
}


@slow
@pytest.mark.parametrize("damage", list(POINTERS))
def test_3a_a_stale_head_file_is_named_once_and_the_newest_version_is_read(tmp_path, caplog, damage):
    """``.head``, which earlier versions wrote and nothing now reads, damaged: the run succeeds, one WARNING names
    the file, and it reads the newest version (both members, and the next member number's seed)."""
    project = project_at(tmp_path / "project")
    table(project / "t.csv", GENES, n=20, seed=1)
    older = complete(project, "input=t.csv")
    newer = complete(project, "input=t.csv")
    pointer = project / "data" / HISTORY / "iclfs" / ".head"
    POINTERS[damage](pointer, older)
    before = data_files(project)
    caplog.clear()
    done = kedro(project, "data_source=t", "input=t.csv")
    assert done.code == 0, done.output[-3000:]
    assert "Traceback" not in done.output
    third = versions(project, RECORDS)[-1]
    named = [r for r in caplog.records if str(pointer) in r.getMessage() and r.levelno >= logging.WARNING]
    assert len(named) == 1 and "it is not used" in named[0].getMessage(), [r.getMessage() for r in named]
    start = json.loads(artifact(project, "history_start.json", third).read_text())
    assert start["version"] == newer and start["members"] == 2  # the newest version, whole
    assert start["seed"] == member_seed(42, 2)  # the next number's seed, not a re-used one
    history = head(project)
    assert [m.version for m in history.members] == [older, newer, third]
    assert [m.seed for m in history.members] == [member_seed(42, i) for i in range(3)]
    new = data_files(project) - before
    assert new and all(third in path for path in new), sorted(new)  # the run wrote its own versions only


@slow
@pytest.mark.parametrize("what", ["member_history.npz", "member_history.npz/iclfs", "member_history.npz/iclfs/.lock"])
def test_3b_a_read_only_member_history_is_refused_before_training(tmp_path, what):
    """A member history folder (or its lock) this user cannot write: refused before any node, naming it and its
    owner; nothing written."""
    project = project_at(tmp_path / "project")
    table(project / "t.csv", GENES, n=20, seed=1)
    complete(project, "input=t.csv")
    path = project / "data/07_model_output/t" / what
    before = data_files(project)
    with read_only(path, 0o444 if path.is_file() else 0o555):
        done = kedro(project, "data_source=t", "input=t.csv")
        after = data_files(project)
    assert done.code != 0
    if path.name == ".lock":
        pattern = rf"^Error: member_history \(.*\): the member history's lock {re.escape(str(path))} cannot be " \
                  r"opened \(owner: [^)]+\); the run was not started$"
    else:
        pattern = rf"^Error: member_history \(.*\): the member history folder {re.escape(str(path))} cannot be " \
                  r"written \(owner: [^)]+\); the run was not started$"
    the_line(done.output, pattern)  # one problem: one line
    assert after == before, sorted(after ^ before)


# == 4. checks that are the whole truth ============================================================================


REFUSED_PARAMETERS = {
    "members.hold=.inf (no such key)": (("members.hold=.inf",),
                                        r"unknown parameter\(s\) members\.hold\b.*; known keys of members: .*half_life"),
    "history.hold=.inf (removed: always 3)": (("history.hold=.inf",),
                                              r"parameter history\.hold is no longer a setting: the method "
                                              r"always uses 3\.0 .*Remove it"),
    "members.half_life=.nan": (("members.half_life=.nan",),
                               r"parameter members\.half_life = nan is invalid: expected a number > 0"),
    "ndfs with 1000 clusters on 60 samples": (("selection.method=ndfs", "selection.n_clusters=1000"),
                                              r"parameter selection\.n_clusters = 1000 is invalid: NDFS needs fewer "
                                              r"clusters than the 60 samples"),
}


@pytest.mark.parametrize("case", list(REFUSED_PARAMETERS))
def test_4a_settings_refused_up_front(tmp_path, case):
    params, pattern = REFUSED_PARAMETERS[case]
    project = project_at(tmp_path / "project")
    table(project / "t.csv", GENES, n=60, seed=1)
    done = kedro(project, "input=t.csv", *params)
    assert done.code != 0
    the_line(done.output, pattern)
    assert data_files(project) == set(), sorted(data_files(project))


def test_4b_a_baseline_selector_with_auto_names_the_python_fix():
    from iclfs import BaselineSelector

    X = np.random.default_rng(0).normal(size=(20, 12))
    with pytest.raises(ValueError) as refused:
        BaselineSelector("ls", "auto").fit(X)
    message = str(refused.value)
    assert "\n" not in message
    assert re.search(r"n_features_to_select='auto' chooses k from ICLFS members' agreement; "
                     r"BaselineSelector\('ls'\) needs an int or a fraction: e\.g\. BaselineSelector\('ls', 50\)",
                     message), message


NON_FINITE = {
    "members.half_life nan": ({"members": {"half_life": float("nan")}},
                              r"settings=\{'members': \{'half_life': \.\.\.\}\}: the value nan is invalid: expected a "
                              r"number > 0 \(\.inf allowed\)"),
    "members.half_life -inf": ({"members": {"half_life": float("-inf")}},
                               r"settings=\{'members': \{'half_life': \.\.\.\}\}: the value -inf is invalid"),
    "training.learning_rate inf": ({"training": {"learning_rate": float("inf")}},
                                   r"settings=\{'training': \{'learning_rate': \.\.\.\}\}: the value inf is invalid: "
                                   r"expected a finite number > 0"),
    "members.laplacian_weight nan": ({"members": {"laplacian_weight": float("nan")}},
                                     r"settings=\{'members': \{'laplacian_weight': \.\.\.\}\}: the value nan is "
                                     r"invalid"),
}


@pytest.mark.parametrize("case", list(NON_FINITE))
def test_4c_a_non_finite_selector_setting_is_refused_in_python_spelling(case):
    from iclfs import ICLFSSelector

    settings, pattern = NON_FINITE[case]
    X = np.random.default_rng(0).normal(size=(20, 12))
    with pytest.raises(ValueError) as refused:
        ICLFSSelector(5, epochs=1, settings=settings).fit(X)
    message = str(refused.value)
    assert "\n" not in message and re.search(pattern, message), message
    section, key = next((s, k) for s, keys in settings.items() for k in keys)
    assert f"{section}.{key}" not in message  # the Kedro spelling is not the selector user's


# == 5. a tracking store that cannot take the run ==================================================================


class _NotFound(http.server.BaseHTTPRequestHandler):
    def _answer(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_HEAD = do_PUT = do_PATCH = do_DELETE = _answer

    def log_message(self, *args) -> None:  # quiet
        pass


@contextlib.contextmanager
def a_server_that_answers_404():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def sqlite_file(path: Path) -> Path:
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("create table t (x)")
        db.commit()
    return path


TRACKING = {
    "an HTTP server answering 404 to everything": r"answers 404 Not Found at /health: it is not an MLflow server, or "
                                                  r"not at this address",
    "a read-only SQLite file": r"is read-only \(\S+mlflow\.db or its folder cannot be written\)",
    "a corrupt SQLite file": r"is not a SQLite database \(\S+mlflow\.db is damaged or another kind of file\)",
    "sqlite:/// of a folder": r"is a folder \(\S+store\), not a SQLite file",
}


@pytest.mark.parametrize("fault", list(TRACKING))
def test_5_a_tracking_store_fault_is_one_message_and_nothing_is_written(tmp_path, fault):
    project = project_at(tmp_path / "project")
    table(project / "t.csv", GENES, n=20, seed=1)
    with contextlib.ExitStack() as stack:
        if fault.startswith("an HTTP"):
            uri = stack.enter_context(a_server_that_answers_404())
        elif fault == "a read-only SQLite file":
            path = sqlite_file(project / "mlflow.db")
            stack.enter_context(read_only(path, 0o444))
            uri = f"sqlite:///{path}"
        elif fault == "a corrupt SQLite file":
            path = project / "mlflow.db"
            path.write_bytes(np.random.default_rng(0).bytes(4096))
            uri = f"sqlite:///{path}"
        else:
            (project / "store").mkdir()
            uri = f"sqlite:///{project / 'store'}"
        set_tracking_uri(project, uri)
        done = kedro(project, "input=t.csv")
    assert done.code != 0
    line = the_line(done.output, rf"^Error: the MLflow tracking store {re.escape(uri)} \(server\.mlflow_tracking_uri in "
                                 r"mlflow\.yml\) " + TRACKING[fault])
    assert line.endswith("Nothing was run. Fix it, or track in a local file: server: {mlflow_tracking_uri: "
                         "sqlite:///mlflow.db} in conf/local/mlflow.yml (docs/guides/tracking.md)."), line
    assert data_files(project) == set(), sorted(data_files(project))


# == 6. entry points ===============================================================================================

# `kedro viz run --pipeline nosuch` is kedro-viz's own command, which this project's `run` cannot intercept: it has
# no case here.
ENTRIES = {
    "python -m iclfs --env nosuchenv": ([PYTHON, "-m", "iclfs", "--env", "nosuchenv"],
                                        r"environment 'nosuchenv' is not in conf: the environments are (.+)$"),
    "kedro run --env nosuchenv": ([PYTHON, "-m", "kedro", "run", "--env", "nosuchenv"],
                                  r"environment 'nosuchenv' is not in conf: the environments are (.+)$"),
    "python -m iclfs --pipelines nosuch": ([PYTHON, "-m", "iclfs", "--pipelines", "nosuch"],
                                           r"pipeline 'nosuch' does not exist: the pipelines are .*\bselect\b"),
    "kedro run --pipelines nosuch": ([PYTHON, "-m", "kedro", "run", "--pipelines", "nosuch"],
                                     r"pipeline 'nosuch' does not exist: the pipelines are .*\bselect\b"),
}


@slow
@pytest.mark.parametrize("entry", list(ENTRIES))
def test_6_an_entry_point_names_what_exists(tmp_path, entry):
    command, pattern = ENTRIES[entry]
    project = project_at(tmp_path / "project")
    done = subprocess.run(command, cwd=project, env=environment(), capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-3000:]
    line = the_line(output, pattern)
    if "pipelines" in entry:
        from iclfs.pipeline_registry import register_pipelines

        names = sorted(register_pipelines())
        assert line.endswith(", ".join(names)), line
    else:  # every folder of the project's conf/: base, local, scikit_feature
        folders = sorted(p.name for p in (project / "conf").iterdir() if p.is_dir())
        assert re.search(pattern, line).group(1) == ", ".join(folders) and "base" in folders, line
    assert data_files(project) == set()


# == 7. big tables =================================================================================================

GIB = 2**30


def test_7a_the_memory_message_of_20000_samples_names_them_and_a_subsample_that_fits(monkeypatch):
    """20,000 samples x 50 features on a machine with 8 GiB: the samples cost it (the attention's n x n weights);
    the first remedy subsamples them, with its setting, and that setting fits; training.regime: small (which does
    not shrink the attention) is not offered."""
    from iclfs import chain
    from iclfs.method import _runtime
    from iclfs.method._config import MembersConfig, RuntimeConfig, Settings

    monkeypatch.setattr(_runtime, "available_memory", lambda device: 8 * GIB)
    settings = Settings(runtime=RuntimeConfig(device="cpu"))
    with pytest.raises(_runtime.ResourceLimitError) as refused:
        chain.check_for_data(settings, 20_000, 50)
    message = str(refused.value)
    assert "\n" not in message
    assert re.search(r"training on 50 features x 20,000 samples \(large regime, fast schedule\) needs about "
                     r"[\d.]+ GiB on cpu, but only 8\.0 GiB is available; the samples cost it: the attention over "
                     r"the 20,000 samples holds 20,000 x 20,000 weights", message), message
    options = message.split("Options: ", 1)[1].split("; ")
    found = re.match(r"members of a subsample of the samples \(members\.per_run: 2 or more with members\.subsample: "
                     r"([\d.]+): each trains on \d+% of them\)", options[0])
    assert found, options
    assert "training.regime: small" not in message
    share = float(found.group(1))
    chain.check_for_data(Settings(runtime=RuntimeConfig(device="cpu"),
                                  members=MembersConfig(per_run=2, subsample=share)), 20_000, 50)  # it fits


def test_7b_a_lowered_address_space_refuses_10000_samples_up_front(tmp_path, monkeypatch):
    """``ulimit -v`` (RLIMIT_AS) leaving 2 GiB: a 10,000 x 50 table is refused before training, nothing written."""
    from iclfs.method import _runtime

    monkeypatch.setattr(_runtime, "_address_space_left", lambda: 2 * GIB)
    project = project_at(tmp_path / "project")
    table(project / "t.csv", [f"g{j}" for j in range(50)], n=10_000, seed=1)
    done = kedro(project, "input=t.csv")
    assert done.code != 0
    the_line(done.output, r"^Error: training on 50 features x 10,000 samples \(large regime, fast schedule\) needs "
                          r"about [\d.]+ GiB on cpu, but only 2\.0 GiB is available; the samples cost it")
    assert data_files(project) == set(), sorted(data_files(project))


RLIMIT = textwrap.dedent("""
    import resource, sys
    from pathlib import Path
    from iclfs import chain
    from iclfs.method._config import RuntimeConfig, Settings
    from iclfs.method._runtime import ResourceLimitError
    status = Path("/proc/self/status").read_text().splitlines()
    held = int(next(line for line in status if line.startswith("VmSize:")).split()[1]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (held + 2 * 2**30, resource.getrlimit(resource.RLIMIT_AS)[1]))
    try:
        chain.check_for_data(Settings(runtime=RuntimeConfig(device="cpu")), 10_000, 50)
    except ResourceLimitError as err:
        print(err)
        sys.exit(3)
""")


@slow
def test_7b_a_real_rlimit_as_is_read(tmp_path):
    """The same through the process's own RLIMIT_AS (resource.setrlimit), not a patched reader."""
    done = subprocess.run([PYTHON, "-c", RLIMIT], env=environment(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(r"training on 50 features x 10,000 samples .* but only [12]\.\d GiB is available; the samples "
                     r"cost it", done.stdout), done.stdout


class _NoTraining(Exception):
    pass


@pytest.mark.parametrize("epoch_seconds, level, said", [(60.0, "WARNING", "1.7 h"), (10.0, "INFO", "16.7 min")])
def test_7c_a_table_of_10_samples_by_100000_features_is_timed_before_training(monkeypatch, caplog, epoch_seconds,
                                                                              level, said):
    """The time estimate, from a (patched) timed epoch, before the first epoch; past an hour a WARNING with the
    remedies."""
    from iclfs.method import _members
    from iclfs.method._config import MembersConfig, RuntimeConfig, TrainingConfig, ViewConfig

    probed, said_before = [], []
    monkeypatch.setattr(_members, "probe_epoch_seconds",
                        lambda A, training, views, runtime, d: probed.append((A.shape, d)) or epoch_seconds)

    def no_training(*args, **kwargs):
        said_before.extend(r for r in caplog.records if r.name == "iclfs.training")
        raise _NoTraining

    monkeypatch.setattr(_members, "train_member", no_training)
    inverted = np.zeros((100_000, 10), dtype=np.float32)  # the inverted map: features x samples
    with caplog.at_level(logging.INFO, logger="iclfs.training"), pytest.raises(_NoTraining):
        _members.train_members(inverted, TrainingConfig(), ViewConfig(), RuntimeConfig(device="cpu", progress=True),
                               MembersConfig(), 42)
    assert probed == [((100_000, 10), 100_000)]
    assert len(said_before) == 1 and said_before[0].levelname == level
    message = said_before[0].getMessage()
    assert "\n" not in message
    assert message.startswith(f"ICLFS fast d=100000 n=10: the 100 epochs will take about {said} (one epoch timed on "
                              "2,048 of the 100,000 features, scaled by the square of their count)"), message
    remedies = ("fewer features (filter them first", "members.feature_blocks", "a GPU (runtime.device=cuda)")
    assert all((remedy in message) == (level == "WARNING") for remedy in remedies), message


def test_7c_the_timed_epoch_of_a_wide_table_runs(monkeypatch):
    """The probe itself on a 10 x 100,000 table: one epoch on 2,048 of the features, a positive finite time."""
    from iclfs.method._config import RuntimeConfig, TrainingConfig, ViewConfig
    from iclfs.method._members import probe_epoch_seconds

    inverted = np.random.default_rng(0).normal(size=(100_000, 10)).astype(np.float32)
    seconds = probe_epoch_seconds(inverted, TrainingConfig(), ViewConfig(), RuntimeConfig(device="cpu",
                                                                                          num_threads=1), 100_000)
    assert np.isfinite(seconds) and seconds > 0


# == the issue's cases ==============================================================================================

#: Issue 53's cases by group: the test (and parameter) that holds each. Group 8 (the serial `threads` run) is
#: covered elsewhere.
ISSUE_53 = {
    1: {"same file, epochs 2 and 3": "test_1a_two_refreshes_of_one_file_at_once_keep_both_members",
        "no shared feature name, the afresh run stores second": "test_1b_two_refreshes_of_tables_that_share_no_name"
                                                                "[stores second]",
        "no shared feature name, the afresh run stores first": "test_1b_two_refreshes_of_tables_that_share_no_name"
                                                               "[stores first]"},
    2: {"kill -9 after the history was stored": "test_2a_a_run_killed_right_after_it_stored_its_history",
        "SIGTERM while training": "test_2b_a_run_stopped_while_training_removes_its_versions[SIGTERM]",
        "SIGINT while training": "test_2b_a_run_stopped_while_training_removes_its_versions[SIGINT]",
        "a timeout of the packaged job": "test_2c_a_timeout_of_the_packaged_job_removes_its_versions"},
    3: {**{f".head {damage}": f"test_3a_a_stale_head_file_is_named_once_and_the_newest_version_is_read[{damage}]"
           for damage in POINTERS},
        **{f"read-only {what}": f"test_3b_a_read_only_member_history_is_refused_before_training[{what}]"
           for what in ("member_history.npz", "member_history.npz/iclfs", "member_history.npz/iclfs/.lock")}},
    4: {**{case: f"test_4a_settings_refused_up_front[{case}]" for case in REFUSED_PARAMETERS},
        "BaselineSelector('ls', 'auto')": "test_4b_a_baseline_selector_with_auto_names_the_python_fix",
        **{f"ICLFSSelector {case}": f"test_4c_a_non_finite_selector_setting_is_refused_in_python_spelling[{case}]"
           for case in NON_FINITE}},
    5: {fault: f"test_5_a_tracking_store_fault_is_one_message_and_nothing_is_written[{fault}]" for fault in TRACKING},
    6: {entry: f"test_6_an_entry_point_names_what_exists[{entry}]" for entry in ENTRIES},
    7: {"memory of 20,000 x 50": "test_7a_the_memory_message_of_20000_samples_names_them_and_a_subsample_that_fits",
        "RLIMIT_AS, 10,000 x 50, through kedro run": "test_7b_a_lowered_address_space_refuses_10000_samples_up_front",
        "RLIMIT_AS, 10,000 x 50, a real setrlimit": "test_7b_a_real_rlimit_as_is_read",
        "10 x 100,000: the estimate past an hour": "test_7c_a_table_of_10_samples_by_100000_features_is_timed_before_"
                                                   "training[60.0-WARNING-1.7 h]",
        "10 x 100,000: the estimate under an hour": "test_7c_a_table_of_10_samples_by_100000_features_is_timed_before_"
                                                    "training[10.0-INFO-16.7 min]",
        "10 x 100,000: the timed epoch": "test_7c_the_timed_epoch_of_a_wide_table_runs"},
}


def test_the_file_holds_every_case_of_issue_53(request):
    """Every case names a test of this file (and its parameter); the counts by group go in the closing note."""
    collected = {item.name for item in request.session.items if item.module is request.module}
    module = sys.modules[__name__]
    for group, cases in ISSUE_53.items():
        for case, test in cases.items():
            name = test.split("[")[0]
            assert callable(getattr(module, name, None)), (group, case, test)
            ran = {c for c in collected if c == name or c.startswith(name + "[")}
            assert not ran or test in ran, (group, case, test, sorted(ran))  # (-k or -m may leave a test out)
    counts = {group: len(cases) for group, cases in ISSUE_53.items()}
    assert list(counts) == [1, 2, 3, 4, 5, 6, 7]
    assert counts == {1: 3, 2: 4, 3: 7, 4: 9, 5: 4, 6: 4, 7: 6}, counts
