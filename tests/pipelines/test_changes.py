"""What changed since the previous run: the table (compare_tables), the list (compare_with_previous), whether the
members found a signal (signal), and how the report and MLflow say it (stability_sentences, run_metrics)."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from iclfs.project._tracked import run_metrics
from iclfs.pipelines.report._report import change_sentences, stability_sentences
from iclfs.pipelines.report.nodes import compare_tables, compare_with_previous, member_stability, signal

V1, V2, V3 = "2026-01-01T03.00.00.000Z", "2026-01-02T03.00.00.000Z", "2026-01-03T03.00.00.000Z"


def previous_json(*versions: tuple[str, str, object]) -> pd.DataFrame:
    """A PreviousVersionDataset's load of a JSON artifact: one row a version, its content in ``content``."""
    return pd.DataFrame({"content": [content for _, _, content in versions],
                         "version": [version for version, _, _ in versions],
                         "method": [method for _, method, _ in versions]})


def truth(samples: int, fingerprint: str, ids: list[str] | None) -> dict:
    return {"samples": samples, "fingerprint": fingerprint, "sample_ids": ids, "source": "data/01_raw/expr.csv"}


# --- compare_tables ----------------------------------------------------------------------------------------


def test_the_first_run_on_a_source_has_nothing_to_compare():
    assert compare_tables(["a", "b", "c"], truth(4, "f1", None), pd.DataFrame(), pd.DataFrame()) == {
        "previous_version": None, "features": 3, "samples": 4,
        "message": "first run on this data source: nothing to compare"}


def test_features_dropped_and_added_and_samples_in_and_out_by_id():
    before = previous_json((V1, "iclfs", ["a", "b", "c", "d"]))
    truth_before = previous_json((V1, "iclfs", truth(4, "f1", ["s1", "s2", "s3", "s4"])))
    changes = compare_tables(["a", "c", "e", "f"], truth(4, "f2", ["s2", "s3", "s4", "s5"]), before, truth_before)
    assert changes == {
        "previous_version": V1, "features": 4, "samples": 4, "features_before": 4, "samples_before": 4,
        "features_dropped": 2, "features_added": 2, "dropped": ["b", "d"], "added": ["e", "f"],
        "samples_added": 1, "samples_removed": 1, "samples_in": ["s5"], "samples_out": ["s1"],
        "same_table": False}
    assert change_sentences(changes) == [
        "since the previous run: 2 feature(s) dropped from the table: b, d; 2 feature(s) new to the table: e, f; "
        "1 sample(s) added: s5; 1 sample(s) removed: s1"]


def test_names_are_capped_at_20_with_the_counts():
    before_names = [f"g{j:02d}" for j in range(30)]
    now_names = [f"g{j:02d}" for j in range(25, 80)]  # 25 dropped, 50 added
    ids_before = [f"s{i}" for i in range(40)]
    ids_now = [f"s{i}" for i in range(30, 60)]  # 30 removed, 20 in... and 10 kept
    changes = compare_tables(now_names, truth(30, "f2", ids_now), previous_json((V1, "ls", before_names)),
                             previous_json((V1, "ls", truth(40, "f1", ids_before))))
    assert (changes["features_dropped"], changes["features_added"]) == (25, 50)
    assert changes["dropped"] == [f"g{j:02d}" for j in range(20)]
    assert changes["added"] == [f"g{j:02d}" for j in range(30, 50)]
    assert (changes["samples_added"], changes["samples_removed"]) == (20, 30)
    assert changes["samples_out"] == [f"s{i}" for i in range(20)]
    assert len(changes["samples_in"]) == 20
    line = change_sentences(changes)[0]
    assert "25 feature(s) dropped from the table: g00, g01," in line and "g19 and 5 more;" in line
    assert "50 feature(s) new to the table: g30," in line and "g49 and 30 more;" in line
    assert "30 sample(s) removed: s0, s1," in line and "s19 and 10 more" in line


def test_without_sample_ids_only_the_counts_are_compared():
    changes = compare_tables(["a", "b"], truth(5, "f2", None), previous_json((V1, "iclfs", ["a", "b"])),
                             previous_json((V1, "iclfs", truth(4, "f1", ["s1", "s2", "s3", "s4"]))))
    assert changes["samples_added"] is None and changes["samples_removed"] is None
    assert "samples_in" not in changes and "samples_out" not in changes
    assert (changes["samples_before"], changes["samples"]) == (4, 5)
    assert change_sentences(changes) == [
        "since the previous run: samples: 4 before, 5 now (the table has no sample ids to say which)"]


def test_the_same_fingerprint_is_the_same_table():
    changes = compare_tables(["a", "b"], truth(4, "f1", None), previous_json((V1, "iclfs", ["a", "b"])),
                             previous_json((V1, "iclfs", truth(4, "f1", None))))
    assert changes["same_table"] is True
    assert (changes["features_dropped"], changes["features_added"]) == (0, 0)
    assert change_sentences(changes) == [f"the table: the same as the previous run's ({V1})"]


def test_values_changed_alone_is_said_so():
    changes = compare_tables(["a", "b"], truth(4, "f2", None), previous_json((V1, "iclfs", ["a", "b"])),
                             previous_json((V1, "iclfs", truth(4, "f1", None))))
    assert changes["same_table"] is False
    assert change_sentences(changes) == [
        "since the previous run: the table's features and samples are the previous run's; its values changed"]


def test_the_previous_run_is_the_newest_of_any_method():
    names = previous_json((V1, "iclfs", ["a", "b"]), (V2, "ls", ["a", "b", "z"]))
    truths = previous_json((V1, "iclfs", truth(4, "f1", None)), (V2, "ls", truth(4, "f0", None)))
    changes = compare_tables(["a", "b"], truth(4, "f0", None), names, truths)
    assert changes["previous_version"] == V2
    assert (changes["dropped"], changes["same_table"]) == (["z"], True)


def test_sample_ids_in_and_out_are_counted_over_a_large_table():
    ids = [f"cell{i}" for i in range(4000)]
    before = previous_json((V1, "iclfs", ["a"]))
    truth_before = previous_json((V1, "iclfs", truth(4000, "f1", ids)))
    changes = compare_tables(["a"], truth(4000, "f2", ids[1:] + ["new"]), before, truth_before)
    assert (changes["samples_added"], changes["samples_removed"]) == (1, 1)
    assert (changes["samples_in"], changes["samples_out"]) == (["new"], ["cell0"])


def test_no_sentence_on_the_first_run():
    assert change_sentences(None) == []
    assert change_sentences({"previous_version": None, "message": "first run"}) == []


# --- compare_with_previous and signal ------------------------------------------------------------------------


def ranking(orders: list[list[int]], seen: list[int] | None = None) -> pd.DataFrame:
    """A feature_ranking whose member i orders the features ``orders[i]`` (best first): its member_<i>_rank."""
    d = len(orders[0])
    table = pd.DataFrame({"feature_name": [f"f{j}" for j in range(d)], "feature_index": np.arange(d),
                          "rank": np.arange(1, d + 1), "members": len(orders)})
    for i, order in enumerate(orders):
        ranks = np.empty(d, dtype=int)
        ranks[np.asarray(order)] = np.arange(1, d + 1)
        table[f"member_{i}_rank"] = ranks
    if seen is not None:
        table["members_seen"] = seen
    return table


def planted(d: int, k: int, members: int, seed: int) -> list[list[int]]:
    """Members whose first k are the same planted features 0..k-1 (every other member swaps one out)."""
    rng = np.random.default_rng(seed)
    orders = []
    for i in range(members):
        top, rest = list(range(k)), [int(j) for j in rng.permutation(np.arange(k, d))]
        if i % 2:
            top[-1], rest[0] = rest[0], top[-1]
        orders.append(top + rest)
    return orders


def independent(d: int, members: int, seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [[int(j) for j in rng.permutation(d)] for _ in range(members)]


def test_members_that_agree_on_the_planted_top_k_are_above_chance():
    found = signal(member_stability(ranking(planted(60, 6, 5, seed=0)), 6))
    assert found["above_chance"] is True
    assert found["members"] == 5
    assert found["phi"] == pytest.approx(0.8703704, abs=1e-6)
    assert 0.5 < found["lower"] < found["phi"] < found["upper"] <= 1.0


def test_independent_random_orders_are_not_above_chance():
    found = signal(member_stability(ranking(independent(200, 10, seed=0)), 10))
    assert found["above_chance"] is False
    assert found["members"] == 10
    assert found["lower"] <= 0
    assert abs(found["phi"]) < 0.05
    above = [signal(member_stability(ranking(independent(200, 10, seed=s)), 10))["above_chance"] for s in range(20)]
    assert sum(above) <= 2  # an interval at 95 %: chance alone puts it above 0 rarely


def test_with_two_members_there_is_no_signal():
    agreement = member_stability(ranking(planted(60, 6, 2, seed=0)), 6)
    assert agreement["lower"] is None and agreement["selections"] == 2
    assert signal(agreement) is None
    assert signal(None) is None
    assert member_stability(ranking(planted(60, 6, 1, seed=0)), 6) is None


def selections(names: list[str], k: int, version: str | None = None, method: str = "iclfs") -> pd.DataFrame:
    index = {f"f{j}": j for j in range(100)}
    table = pd.DataFrame({"k": k, "rank": np.arange(1, len(names) + 1), "feature_name": names,
                          "feature_index": [index.get(n, 99) for n in names]})
    return table if version is None else table.assign(version=version, method=method)


TABLE_CHANGES = {"previous_version": V1, "features": 6, "samples": 20, "features_before": 6, "samples_before": 20,
                 "features_dropped": 1, "features_added": 1, "dropped": ["gone"], "added": ["f5"],
                 "samples_added": None, "samples_removed": None, "same_table": False}


def stability(orders: list[list[int]], seen: list[int] | None, previous: list[str], current: list[str],
              method: str = "iclfs", carry: bool = True) -> dict:
    """compare_with_previous of a run whose list is ``current`` after one whose list was ``previous``."""
    feature_ranking = ranking(orders, seen)
    now = selections(current, len(current))
    return compare_with_previous(
        now, selections(previous, len(previous), V1, method), now, selections(previous, len(previous), V1, method),
        feature_ranking, {"carry": carry}, TABLE_CHANGES, {"method": method, "k": len(current), "k_values": [len(current)]}, {"kept": 64})


def test_features_that_left_the_list_and_the_table_are_flagged_and_new_features_counted():
    orders = [[0, 1, 2, 3, 4, 5], [0, 1, 3, 2, 5, 4], [1, 0, 2, 4, 3, 5]]
    summary = stability(orders, seen=[3, 3, 3, 3, 1, 2], previous=["f0", "gone", "f4"], current=["f0", "f1", "f2"])
    assert summary["previous_version"] == V1
    row = summary["per_k"][3]
    assert row["left"] == ["gone", "f4"]
    assert row["left_table"] == ["gone"]  # f4 left the list but is still in the table
    assert row["entered"] == ["f1", "f2"]
    assert summary["history"] == {"carry": True, "method": "iclfs", "members": 3, "kept": 64, "note": None,
                                  "new_features": 2}
    assert summary["changes"] is TABLE_CHANGES
    assert summary["nogueira"]["members"]["selections"] == 3
    assert summary["signal"]["members"] == 3


def test_only_the_runs_own_method_is_compared():
    orders = [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5]]
    summary = stability(orders, None, previous=["f3", "f4", "f5"], current=["f0", "f1", "f2"], method="ls")
    assert summary["previous_version"] == V1
    other = compare_with_previous(
        selections(["f0", "f1", "f2"], 3), selections(["f3", "f4", "f5"], 3, V1, "ls"), selections(["f0"], 1),
        pd.DataFrame(), ranking(orders), {}, {}, {"method": "iclfs"}, {})
    assert other["previous_version"] is None
    assert other["message"] == "first run of iclfs on this data source: nothing to compare"
    assert other["history"]["new_features"] == 0  # no members_seen column
    assert other["signal"] is None  # two members: no interval


def test_stability_sentences_say_the_changes_what_left_the_early_churn_and_the_warning_below_chance():
    orders = independent(200, 3, seed=1)
    summary = stability(orders, seen=None, previous=["f0", "gone", "f4"], current=["f0", "f1", "f2"])
    summary["signal"] = {"phi": -0.02, "lower": -0.1, "upper": 0.06, "members": 3, "above_chance": False}
    lines = stability_sentences(summary)
    assert lines[0] == ("member history (iclfs): 3 member(s) combined; the list steadies as members accumulate: 3 of "
                        "64 so far, and early refreshes still move it")
    assert lines[1] == ("since the previous run: 1 feature(s) dropped from the table: gone; 1 feature(s) new to the "
                        "table: f5")
    # (the sentence names the list's k since a change made while these tests were written; either form says it)
    assert lines[2] == "left the table, and so the list of 3: gone"
    assert lines[-1] == ("WARNING: the 3 members agree no more than chance (Phi -0.02, 95 % interval -0.10 to 0.06): "
                         "ICLFS finds no stable signal in this table, and the list's steadiness comes from the "
                         "Laplacian score it fuses in. Try selection.method=ls (or another method, "
                         "docs/guides/methods.md)")
    assert any(line.startswith("Nogueira's Phi over the 3 members' first k: ") for line in lines)


def test_stability_sentences_without_a_warning_above_chance_and_without_churn_past_ten_members():
    summary = {"history": {"carry": True, "method": "iclfs", "members": 12, "kept": 64, "new_features": 4},
               "signal": {"phi": 0.8, "lower": 0.7, "upper": 0.9, "members": 12, "above_chance": True},
               "nogueira": {"members": {"phi": 0.8, "lower": 0.7, "upper": 0.9, "selections": 12}}}
    assert stability_sentences(summary) == [
        "member history (iclfs): 12 member(s) combined; 4 feature(s) are new to some members (members_seen in "
        "feature_ranking.csv): they are ordered by the members that saw them",
        "Nogueira's Phi over the 12 members' first k: 0.80 (95 % interval 0.70 to 0.90)"]


# --- run_metrics --------------------------------------------------------------------------------------------


def test_run_metrics_logs_the_table_changes_and_whether_members_are_above_chance():
    saved = {"k_choice": {"k": 3},
             "selection_stability": {
                 "per_k": {3: {"jaccard": 0.5, "rank_correlation": 1.0}},
                 "changes": {**TABLE_CHANGES, "samples_added": 2, "samples_removed": 0},
                 "history": {"new_features": 4},
                 "signal": {"phi": -0.02, "lower": -0.1, "upper": 0.06, "members": 3, "above_chance": False},
                 "nogueira": {"members": {"phi": -0.02, "lower": -0.1, "upper": 0.06}, "lists": None}}}
    metrics, per_k = run_metrics(saved.get)
    assert metrics == {"k": 3.0, "jaccard": 0.5, "rank_correlation": 1.0,
                       "table.features_dropped": 1.0, "table.features_added": 1.0, "table.samples_added": 2.0,
                       "table.samples_removed": 0.0, "table.features_new_to_members": 4.0,
                       "members_above_chance": 0.0, "nogueira_members": -0.02, "nogueira_members_lower": -0.1,
                       "nogueira_members_upper": 0.06}
    assert per_k.to_dict("records") == [{"k": 3, "jaccard": 0.5, "rank_correlation": 1.0}]


def test_run_metrics_leave_out_what_was_not_measured():
    saved = {"k_choice": {"k": 3}, "selection_stability": {
        "changes": {"previous_version": None, "features": 6, "samples": 20, "message": "first run"},
        "history": {"new_features": 0}, "signal": None}}
    metrics, per_k = run_metrics(saved.get)
    assert metrics == {"k": 3.0, "table.features_new_to_members": 0.0}
    assert per_k is None
    sample_counts_unknown = {"k_choice": {"k": 3}, "selection_stability": {"changes": TABLE_CHANGES,
                                                                            "signal": {"above_chance": True}}}
    metrics, _ = run_metrics(sample_counts_unknown.get)
    assert metrics == {"k": 3.0, "table.features_dropped": 1.0, "table.features_added": 1.0,
                       "members_above_chance": 1.0}
