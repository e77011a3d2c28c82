"""Issue 58's member-history rows, and the one orchestration of issue 57: a run's start decides once what it builds
on; its ranking reads exactly that, whatever another run stores meanwhile.

Each run here is the nodes ``select`` runs (``start_history``, ``rank_features``, ``select_every_k``) on a real
member history on disk (:class:`~iclfs.io.datasets.MemberHistoryView` and
:class:`~iclfs.io.datasets.MemberHistoryDataset`, as the catalog declares them), so that another run's store can
be placed exactly between two nodes of this one.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from kedro.io.core import Version

from iclfs.io.datasets import MemberHistoryDataset, MemberHistoryView
from iclfs.method._config import MembersConfig, ParameterError, RankingConfig, Settings
from iclfs.method._ranking import HistoryError, MemberHistory
from iclfs.pipelines.ranking.nodes import rank_features
from iclfs.pipelines.selection.nodes import select_every_k
from iclfs.pipelines.training.nodes import start_history

GRID = [2, 4]
SELECTION = {"k": 2, "k_values": GRID}


class Run:
    """One refresh of data source ``t``: version ``version`` of every artifact, on a table of ``names``."""

    def __init__(self, folder: Path, version: str, names: list[str], draw: int, **members) -> None:
        self.folder, self.version, self.names = folder, version, names
        self.members = {**MembersConfig().to_dict(), "carry": True, **members}
        rng = np.random.default_rng(draw)
        self.scores = {"z_norm": rng.random((1, len(names))), "seed": np.array([draw]), "seconds": np.ones(1)}
        d = len(names)
        self.laplacian = pd.DataFrame({"feature_index": np.arange(d), "laplacian_score": rng.random(d)})
        self.truth = {"fingerprint": f"table {draw}", "k_values": GRID}

    def dataset(self, kind: type) -> MemberHistoryView | MemberHistoryDataset:
        return kind(filepath=str(self.folder / "member_history.npz"), data_source="t",
                    version=Version(None, self.version))

    def start(self) -> dict:
        """The training stage's first node: the run's decision, made once."""
        self.histories = self.dataset(MemberHistoryView).load()
        self.record = start_history(self.histories, self.names, self.members, SELECTION, 42)
        return self.record

    def rank(self) -> tuple[pd.DataFrame, MemberHistory]:
        return rank_features(self.scores, self.names, self.laplacian, self.truth, self.record, self.histories,
                             RankingConfig().to_dict(), self.members, SELECTION)

    def select(self, table: pd.DataFrame, previous: pd.DataFrame) -> pd.DataFrame:
        return select_every_k(table, self.laplacian, self.truth, previous, self.record, SELECTION)

    def store(self, kept: MemberHistory) -> None:
        self.dataset(MemberHistoryDataset).save(kept)

    def whole(self) -> tuple[pd.DataFrame, MemberHistory]:
        self.start()
        table, kept = self.rank()
        self.store(kept)
        return table, kept


def stored(folder: Path) -> MemberHistory:
    """The history a next run reads: the newest stored version."""
    return MemberHistoryView(filepath=str(folder / "member_history.npz"), data_source="t").load().of("iclfs")


def versions(n: int) -> list[str]:
    return [f"2026-11-27T0{i}.00.00.000Z" for i in range(n)]


GENES = [f"g{j}" for j in range(8)]


def test_a_history_stored_between_this_runs_training_and_ranking_changes_neither_its_order_nor_its_hold(
        tmp_path, caplog):
    v = versions(3)
    Run(tmp_path, v[0], GENES, draw=0).whole()  # an earlier run keeps one member
    this = Run(tmp_path, v[1], GENES, draw=1)
    record = this.start()
    assert record["carry"] and record["holds"] and record["version"] == v[0] and record["members"] == 1
    last = pd.DataFrame({"k": [2, 2], "rank": [1, 2], "feature_name": ["g0", "g1"], "feature_index": [0, 1],
                         "version": v[0], "method": "iclfs"})
    table, _ = this.rank()
    selected = this.select(table, last)
    # another refresh, started after this one, stores its history while this one trains
    other = Run(tmp_path, v[2], GENES, draw=2)
    other.whole()
    assert stored(tmp_path).version == v[2] and len(stored(tmp_path).members) == 2
    # this run's ranking reads the version its start named, as it was: the same order, the same hold
    again, kept = this.rank()
    pd.testing.assert_frame_equal(again, table)
    pd.testing.assert_frame_equal(this.select(again, last), selected)
    assert [m.seed for m in kept.members] == [m.seed for m in stored(tmp_path).members[:1]] + [1]
    # and its store adds its member to the other run's, saying so: all three runs' members are kept
    with caplog.at_level(logging.WARNING):
        this.store(kept)
    assert "Another run on data source 't' stored the member history" in caplog.text
    assert sorted(m.seed for m in stored(tmp_path).members) == [0, 1, 2]


def test_a_reset_stays_reset_the_next_refresh_builds_on_the_reset_runs_version(tmp_path):
    """Issue 58: the newest version was the one with the most runs, so the refresh after members.reset built on
    the history from before it ("8 member(s) combined") and the reset run's member was in neither."""
    v = versions(6)
    for i in range(4):
        Run(tmp_path, v[i], GENES, draw=i).whole()
    assert stored(tmp_path).runs == 4
    reset = Run(tmp_path, v[4], GENES, draw=4, reset=True)
    record = reset.start()
    assert record["afresh"] and not record["holds"] and record["note"].startswith("members.reset")
    table, kept = reset.rank()
    reset.store(kept)
    assert [m.seed for m in stored(tmp_path).members] == [4] and stored(tmp_path).version == v[4]
    after = Run(tmp_path, v[5], GENES, draw=5)
    record = after.start()
    assert record["version"] == v[4] and record["members"] == 1
    table, kept = after.rank()
    assert table["score_name"].iloc[0].startswith("carried mean rank of z_norm (2 members)")
    after.store(kept)
    assert [m.seed for m in stored(tmp_path).members] == [4, 5]


def test_two_runs_at_once_on_tables_sharing_no_feature_name_keep_both_members_and_say_so(tmp_path, caplog):
    """Issue 58: the second run's ranking re-read the first run's history, stored meanwhile, found no shared name
    and set it aside, so its store started afresh and dropped the first run's member, with no word in either log.
    Now the second run ranks on what its start read (nothing), and its store adds its member beside the first's."""
    v = versions(2)
    first = Run(tmp_path, v[0], GENES, draw=0)
    second = Run(tmp_path, v[1], [f"h{j}" for j in range(8)], draw=1)
    first.start()
    second.start()
    assert second.record["version"] is None and second.record["next_index"] == 1  # a number past the first's
    first.store(first.rank()[1])
    table, kept = second.rank()
    assert set(table["feature_name"]) == set(second.names) and not second.record["holds"]
    with caplog.at_level(logging.WARNING):
        second.store(kept)
    assert "Another run on data source 't' stored the member history" in caplog.text
    history = stored(tmp_path)
    assert sorted(m.seed for m in history.members) == [0, 1]
    assert {m.feature_names for m in history.members} == {tuple(GENES), tuple(second.names)}


def test_an_old_key_beside_its_new_one_is_refused_naming_the_new_name():
    """Issue 58: conf/local set history.max_members: 3 and members.kept: 9, and the old key won silently."""
    with pytest.raises(ParameterError, match=r"^parameter history.max_members is now members.kept: rename it"):
        Settings.from_parameters({"members": {"kept": 9}, "history": {"max_members": 3}})


def test_a_history_start_an_earlier_version_wrote_is_refused_in_one_line_by_ranking_and_selection(tmp_path):
    run = Run(tmp_path, versions(1)[0], GENES, draw=0)
    run.start()
    table, _ = run.rank()
    run.record = {"carry": True, "seed": 42, "members": 0, "runs": 0, "version": None, "note": None}  # before 0.3
    message = r"^history_start lacks afresh, holds, next_index, used: an earlier version of iclfs wrote it. Run the"
    with pytest.raises(HistoryError, match=message):
        run.rank()
    with pytest.raises(HistoryError, match=message):
        run.select(table, pd.DataFrame())


#: Issue 58's member-history rows, each with its test (the reset through real kedro runs is also
#: test_a_reset_stays_reset_through_real_kedro_runs, and the old key in a real Kedro session's conf
#: tests/pipelines/test_integration.py::test_an_old_key_in_local_parameters_is_refused_naming_its_new_name).
ROWS = {
    "members.reset: true on a refresh, then an ordinary refresh":
        test_a_reset_stays_reset_the_next_refresh_builds_on_the_reset_runs_version,
    "two runs at once on two tables that share no feature name":
        test_two_runs_at_once_on_tables_sharing_no_feature_name_keep_both_members_and_say_so,
    "conf/local/parameters.yml sets both the old history.max_members: 3 and the new members.kept: 9":
        test_an_old_key_beside_its_new_one_is_refused_naming_the_new_name,
}


def test_every_member_history_row_of_issue_58_has_its_test():
    assert len(ROWS) == 3 and all(test.__name__.startswith("test_") for test in ROWS.values())


@pytest.mark.slow
def test_a_reset_stays_reset_through_real_kedro_runs(tmp_path):
    """The reset row as the issue's probe ran it: kedro runs on one data source, members.reset on the third."""
    import json

    from iclfs.method._ranking import member_seed
    from tests.pipelines.test_carry import CARRY, GENES, head, latest, refresh
    from tests.pipelines.test_trust import kedro, project_at

    project = project_at(tmp_path / "project", CARRY)

    def run(draw: int, *params: str) -> dict:
        done = kedro(project, f"input={refresh(project, f'r{draw}.csv', GENES, draw)}", "data_source=t", *params)
        assert done.code == 0, done.output[-3000:]
        return json.loads(latest(project, "07_model_output/t/iclfs/history_start.json").read_text())

    run(0)
    run(1)
    assert head(project).runs == 2
    reset = run(2, "members.reset=true")
    assert reset["afresh"] and [m.seed for m in head(project).members] == [42]
    reset_version = head(project).version
    after = run(3)
    assert after["version"] == reset_version and after["members"] == 1  # built on the reset run's history
    assert [m.seed for m in head(project).members] == [42, member_seed(42, 1)]
