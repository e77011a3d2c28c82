"""Scheduled refreshes that carry their members: through `select`, node by node (Airflow), and two at once."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
from pathlib import Path

import mlflow
import numpy as np
import pytest

from iclfs.io.datasets import CSVDataset, MemberHistoryView
from iclfs.method._ranking import member_seed
from tests.pipelines.test_faults import kill_all, launch, stopped_now, waits_on_the_history
from tests.pipelines.test_trust import FAST, Outcome, kedro, project_at, wait_for

pytestmark = pytest.mark.slow  # whole Kedro runs: seconds each

CARRY = {**FAST, "members": {"carry": True, "half_life": 4.0}}
GENES = [f"g{j}" for j in range(12)]


def refresh(project: Path, name: str, names: list[str], draw: int, source: str = "t") -> Path:
    """A refresh's file: 90 % of a fixed 30-sample table, rows drawn by ``draw``."""
    full = np.random.default_rng(0).normal(size=(30, len(names)))
    rows = np.sort(np.random.default_rng(draw).choice(30, size=27, replace=False))
    path = project / name
    import csv

    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        writer.writerows(full[rows].round(5).tolist())
    return path


def head(project: Path, source: str = "t"):
    return MemberHistoryView(filepath=str(project / f"data/07_model_output/{source}/member_history.npz"),
                             data_source=source).load().of("iclfs")


def latest(project: Path, artifact: str) -> Path:
    return Outcome(0, "", project).latest(artifact)


def listing(project: Path) -> list[str]:
    return CSVDataset(filepath=str(latest(project, "07_model_output/t/iclfs/feature_list.csv"))).load()[
        "feature_name"].tolist()


def test_refreshes_carry_their_members_each_with_its_own_seed_and_replay_to_the_same_lists(tmp_path):
    lists = {}
    for copy in ("first", "replay"):
        project = project_at(tmp_path / copy, CARRY)
        lists[copy] = []
        for r in range(3):
            done = kedro(project, f"input={refresh(project, f'r{r}.csv', GENES, r)}", "data_source=t")
            assert done.code == 0, done.output[-3000:]
            lists[copy].append(listing(project))
    assert lists["first"] == lists["replay"]  # the same refreshes from an empty history: the same lists

    history = head(project)
    assert [m.seed for m in history.members] == [member_seed(42, i) for i in range(3)]
    assert [m.index for m in history.members] == [0, 1, 2] and history.runs == 3
    assert len({m.fingerprint for m in history.members}) == 3  # three tables
    starts = sorted((project / "data/07_model_output/t/iclfs/history_start.json").glob("*/history_start.json"))
    assert [json.loads(p.read_text())["seed"] for p in starts] == [member_seed(42, i) for i in range(3)]

    ranking = CSVDataset(filepath=str(latest(project, "07_model_output/t/iclfs/feature_ranking.csv"))).load()
    assert {"member_0_rank", "member_1_rank", "member_2_rank", "members_seen", "selection_frequency_5"} <= set(ranking)
    assert ranking["score_name"].iloc[0] == "carried mean rank of z_norm (3 members), Laplacian weight 0.5"
    chosen = CSVDataset(filepath=str(latest(project, "07_model_output/t/iclfs/feature_list.csv"))).load()
    frequency = chosen["selection_frequency"].to_numpy()
    assert ((0 <= frequency) & (frequency <= 1)).all() and frequency.max() > 0

    stability = json.loads(latest(project, "08_reporting/t/iclfs/selection_stability.json").read_text())
    assert stability["history"] == {"carry": True, "members": 3, "note": None, "kept": 64, "method": "iclfs",
                                    "new_features": 0}
    assert stability["nogueira"]["lists"]["selections"] == 3 and stability["nogueira"]["members"]["selections"] == 3
    for key in ("lists", "members"):
        value = stability["nogueira"][key]
        assert value["lower"] <= value["phi"] <= value["upper"]
    mlflow.set_tracking_uri(f"sqlite:///{project / 'mlflow.db'}")
    run = mlflow.search_runs(experiment_names=["iclfs"], output_format="list", order_by=["start_time DESC"])[0]
    assert {"nogueira_lists", "nogueira_members", "members"} <= set(run.data.metrics)
    assert run.data.metrics["members"] == 3
    mlflow.set_tracking_uri(None)
    report = latest(project, "08_reporting/t/iclfs/run_report.html").read_text()
    assert "Nogueira" in report and "member history (iclfs): 3 member(s) combined" in report


def test_members_are_aligned_by_name_when_features_come_and_go(tmp_path):
    project = project_at(tmp_path / "project", CARRY)
    assert kedro(project, f"input={refresh(project, 'r0.csv', GENES, 0)}", "data_source=t").code == 0
    renamed = GENES[1:] + ["new"]  # g0 dropped, 'new' arrives
    done = kedro(project, f"input={refresh(project, 'r1.csv', renamed, 1)}", "data_source=t")
    assert done.code == 0, done.output[-3000:]
    ranking = CSVDataset(filepath=str(latest(project, "07_model_output/t/iclfs/feature_ranking.csv"))).load()
    assert set(ranking["feature_name"]) == set(renamed)
    seen = dict(zip(ranking["feature_name"], ranking["members_seen"], strict=True))
    assert seen["new"] == 1 and all(seen[name] == 2 for name in GENES[1:])
    assert ranking.loc[ranking["feature_name"] == "new", "member_0_rank"].isna().all()  # the old member never saw it
    history = head(project)
    assert history.members[0].feature_names == tuple(GENES) and history.members[1].feature_names == tuple(renamed)


def test_reset_and_unusable_histories_start_afresh_with_one_message(tmp_path, caplog):
    project = project_at(tmp_path / "project", CARRY)
    first = refresh(project, "r0.csv", GENES, 0)
    assert kedro(project, f"input={first}", "data_source=t").code == 0

    def note_of(outcome: Outcome) -> str:
        assert outcome.code == 0, outcome.output[-3000:]
        return json.loads(latest(project, "07_model_output/t/iclfs/history_start.json").read_text())["note"]

    assert "members.reset" in note_of(kedro(project, f"input={first}", "data_source=t", "members.reset=true"))
    assert [m.seed for m in head(project).members] == [42]  # afresh: the run's own seed, alone

    other = refresh(project, "other.csv", [f"h{j}" for j in range(12)], 1)
    caplog.clear()
    outcome = kedro(project, f"input={other}", "data_source=t")
    assert "shares no feature name" in note_of(outcome)
    said = [(r.name, r.levelname) for r in caplog.records if "shares no feature name" in r.getMessage()]
    assert [level for _, level in said if level == "WARNING"] == ["WARNING"]  # one warning, and the summary's line
    assert ("iclfs.summary", "INFO") in said
    assert [m.feature_names[0] for m in head(project).members] == ["h0"]

    store = project / "data/07_model_output/t/member_history.npz/iclfs"  # the iclfs members' versions
    newest = sorted(p.name for p in store.iterdir() if p.is_dir() and not p.name.startswith("."))[-1]
    (store / newest / "member_history.npz").write_bytes(b"\x00 a truncated file")
    outcome = kedro(project, f"input={first}", "data_source=t")
    assert "cannot be read" in note_of(outcome) and "Traceback" not in outcome.output

    elsewhere = project / "data/07_model_output/u"  # another data source's history copied in
    elsewhere.mkdir(parents=True)
    os.rename(project / "data/07_model_output/t/member_history.npz", elsewhere / "member_history.npz")
    outcome = kedro(project, f"input={first}", "data_source=u")
    assert outcome.code == 0, outcome.output[-3000:]
    assert "belongs to the data source 't', not 'u'" in json.loads(
        latest(project, "07_model_output/u/iclfs/history_start.json").read_text())["note"]


def test_node_by_node_sessions_as_airflow_runs_them_carry_the_history(tmp_path):
    """Every node in a session of its own (`kedro run --nodes`, or a scheduler running a task per node): the
    history still grows."""
    from kedro.framework.session import KedroSession
    from kedro.framework.startup import bootstrap_project

    from iclfs.pipeline_registry import register_pipelines

    project = project_at(tmp_path / "project", CARRY)
    nodes = [node.name for node in register_pipelines()["select"].nodes]  # topological order
    cwd = Path.cwd()
    os.chdir(project)
    try:
        bootstrap_project(project)
        for r in range(2):
            params = {"input": str(refresh(project, f"r{r}.csv", GENES, r)), "data_source": "t"}
            for name in nodes:
                with KedroSession.create(project_path=project, runtime_params=params) as session:
                    session.run(pipeline_names=["select"], node_names=[name])
                while mlflow.active_run() is not None:
                    mlflow.end_run()
    finally:
        os.chdir(cwd)
    assert [m.seed for m in head(project).members] == [42, member_seed(42, 1)]


def test_two_runs_on_one_data_source_at_once_lose_no_member(tmp_path):
    """Two runs read the history before either stores it, and both runs' members are kept.

    The order is forced, not hoped for: the test holds the history's lock while run A waits to store, stops A
    there, lets run B reserve, train and rank, and only then lets both store. Started side by side, a fast A
    could finish before B reserved its numbers, and the test would wait for a moment that never comes.
    """
    project = project_at(tmp_path / "project", CARRY)
    assert kedro(project, f"input={refresh(project, 'r0.csv', GENES, 0)}", "data_source=t").code == 0
    folder = project / "data/07_model_output/t/member_history.npz/iclfs"  # the iclfs members' store
    rankings = "07_model_output/t/iclfs/feature_ranking.csv"

    def reservations() -> int:
        return len(list((folder / ".reserved").glob("*")))

    def ranked_and_waits(run: subprocess.Popen, count: int) -> bool:  # it read the history, and waits to store
        return len(Outcome(0, "", project).versions(rankings)) == count and waits_on_the_history(run, 0)

    runs: list[subprocess.Popen] = []
    try:
        with open(folder / ".lock", "a+") as lock:
            runs.append(launch(project, f"input={refresh(project, 'r1.csv', GENES, 1)}", "data_source=t"))
            # A reserved its numbers and let the lock go; the lock is taken long before A, training, needs it
            wait_for(lambda: reservations() == 1, runs[0], poll=0.01)
            fcntl.flock(lock, fcntl.LOCK_EX)
            wait_for(lambda: ranked_and_waits(runs[0], 2), runs[0])
            # stopped where it waits on this lock, never in a write to the tracking store, which would hold B
            os.killpg(runs[0].pid, signal.SIGSTOP)
            wait_for(lambda: stopped_now(runs[0].pid), runs[0], timeout=60, poll=0.01)  # before the lock goes
            fcntl.flock(lock, fcntl.LOCK_UN)
            runs.append(launch(project, f"input={refresh(project, 'r2.csv', GENES, 2)}", "data_source=t"))
            wait_for(lambda: reservations() == 2, runs[1], poll=0.01)
            fcntl.flock(lock, fcntl.LOCK_EX)
            wait_for(lambda: ranked_and_waits(runs[1], 3), runs[1])  # B read the history A has not stored
            os.killpg(runs[0].pid, signal.SIGCONT)
            fcntl.flock(lock, fcntl.LOCK_UN)  # both store now, one after the other
    except BaseException:
        kill_all(*runs)
        raise
    assert [run.wait(timeout=300) for run in runs] == [0, 0]
    history = head(project)
    assert len(history.members) == 3 and history.runs == 3  # the first run's member and both of theirs
    assert len({m.fingerprint for m in history.members}) == 3
    logs = " ".join(" ".join(p.read_text().split()) for p in project.glob("select-*.log"))  # unwrap rich's lines
    assert "stored the member history" in logs and "member(s) are added to it" in logs
