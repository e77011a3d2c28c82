"""The run report: what changed in the table, how steady the list is, and the HTML page that shows it all."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclfs.method._config import MembersConfig, SelectionConfig
from iclfs.method._stability import compare_selections, nogueira, nogueira_of
from iclfs.project._figures import score_distribution_figure
from iclfs.project._frames import evidence_at, previous_of
from iclfs.pipelines.report import _report as report

LISTS = 9  # Nogueira's Phi over this run's list and the last lists of its method


def compare_tables(feature_names: list[str], ground_truth: dict, previous_feature_names: pd.DataFrame,
                   previous_ground_truth: pd.DataFrame) -> dict:
    """What changed in the table since the previous complete run on this data source (of any method).

    Returns
    -------
    table_changes : dict
        ``previous_version`` (None on the first run, with a ``message``); the
        counts ``features_dropped``, ``features_added``, and ``samples_added``,
        ``samples_removed`` (by sample id; None where either table has none);
        the names, up to 20 of each (``dropped``, ``added``, ``samples_in``,
        ``samples_out``); the shapes before and now, and whether the values
        changed at all (``same_table``).
    """
    names_before = previous_of(previous_feature_names, None)
    truth_before = previous_of(previous_ground_truth, None)
    now = {"features": len(feature_names), "samples": ground_truth.get("samples")}
    if names_before.empty:
        return {"previous_version": None, **now, "message": "first run on this data source: nothing to compare"}
    before = [str(n) for n in names_before["content"].iloc[0]]
    truth = truth_before["content"].iloc[0] if not truth_before.empty else {}
    present, earlier = set(map(str, feature_names)), set(before)
    dropped = [n for n in before if n not in present]
    added = [str(n) for n in feature_names if str(n) not in earlier]
    shown = report.NAMES_LISTED  # the names kept of those that came or went; the counts are whole
    changes = {"previous_version": names_before.attrs.get("version"), **now,
               "features_before": len(before), "samples_before": truth.get("samples"),
               "features_dropped": len(dropped), "features_added": len(added),
               "dropped": dropped[:shown], "added": added[:shown],
               "samples_added": None, "samples_removed": None,
               "same_table": truth.get("fingerprint") == ground_truth.get("fingerprint")}
    ids, ids_before = ground_truth.get("sample_ids"), truth.get("sample_ids")
    if ids is not None and ids_before is not None:
        now_ids, earlier_ids = set(ids), set(ids_before)
        came = [s for s in ids if s not in earlier_ids]
        went = [s for s in ids_before if s not in now_ids]
        changes.update(samples_added=len(came), samples_removed=len(went), samples_in=came[:shown],
                       samples_out=went[:shown])
    return changes


def compare_with_previous(selections: pd.DataFrame, previous_selections: pd.DataFrame,
                          feature_list: pd.DataFrame, previous_lists: pd.DataFrame,
                          feature_ranking: pd.DataFrame, history_start: dict, table_changes: dict,
                          selection: dict, members: dict) -> dict:
    """How steady the list is: against the previous run of the same method, between its last lists, between the
    members; what changed in the table; and whether the members agree more than chance.

    Returns
    -------
    selection_stability : dict
        ``method``; ``previous_version`` and ``per_k`` (Jaccard overlap, rank
        correlation, entered and left features per k against the previous run
        of this method, and which of those that left are no longer in the
        table, ``left_table``; a ``message`` instead on the first run);
        ``nogueira`` with Nogueira's Phi and its 95 % interval between the
        ``lists`` handed on by this run and the last complete runs of this
        method, and between the ``members``' first k of the list's k (each None
        with fewer than two; the interval's bounds None with two, see
        :func:`~iclfs.method._stability.nogueira`); ``history`` (carrying, the
        method whose history was used, the members combined and kept at most,
        the features new to the members, why a stored history was set aside);
        ``changes`` (:func:`compare_tables`); ``signal`` (with three members or
        more: whether their agreement's interval is above 0, chance);
        ``evidence`` (docs/method.md §10: the members, the stable features at
        ``members.threshold``, the bound on their expected false selections or
        why there is none, and the summary's sentence).
    """
    method = SelectionConfig.from_dict(selection).method  # lists of this method only
    previous_selections = previous_of(previous_selections, method)
    previous_lists = previous_of(previous_lists, method, count=LISTS)
    present = set(feature_ranking["feature_name"].astype(str))
    summary: dict = {"previous_version": None, "method": method}
    if previous_selections.empty:
        summary["message"] = f"first run of {method} on this data source: nothing to compare"
    else:
        per_k = {}
        for k, group in selections.groupby("k"):
            before = previous_selections[previous_selections["k"] == k]
            if before.empty:
                per_k[int(k)] = {"message": f"k = {k} was not selected in the previous run"}
                continue
            per_k[int(k)] = compare_selections(before.sort_values("rank")["feature_name"].astype(str).tolist(),
                                               group.sort_values("rank")["feature_name"].astype(str).tolist())
            per_k[int(k)]["left_table"] = [n for n in per_k[int(k)]["left"] if n not in present]
        summary.update(previous_version=previous_selections.attrs.get("version"), per_k=per_k)
    k = len(feature_list)
    names = feature_ranking["feature_name"].astype(str).tolist()
    lists = list_stability(feature_list, previous_lists, names)
    agreement = member_stability(feature_ranking, k)
    summary["nogueira"] = {"k": k, "lists": lists, "members": agreement}
    combined = int(feature_ranking["members"].iloc[0])
    seen = feature_ranking["members_seen"] if "members_seen" in feature_ranking else None
    summary["history"] = {"carry": bool(history_start.get("carry")), "method": method, "members": combined,
                          "kept": MembersConfig.from_dict(members).kept, "note": history_start.get("note"),
                          "new_features": 0 if seen is None else int((seen < combined).sum())}
    summary["changes"] = table_changes
    summary["signal"] = signal(agreement)
    if f"selection_frequency_{k}" in feature_ranking and "feature_index" in feature_list:
        found = evidence_at(feature_ranking, k, history_start, members, method)
        by_index = feature_ranking.sort_values("feature_index")["feature_name"].astype(str).tolist()
        summary["evidence"] = {**found.as_dict(by_index), "summary": found.summary(feature_list["feature_index"])}
    return summary


def signal(agreement: dict | None) -> dict | None:
    """Whether the members agree more than chance: Nogueira's Phi over their first k is 0 for selections no
    more alike than random ones, so an interval that reaches 0 says the members found no stable signal."""
    if agreement is None or agreement.get("lower") is None:
        return None  # an interval needs three members or more
    return {"phi": agreement["phi"], "lower": agreement["lower"], "upper": agreement["upper"],
            "members": agreement["selections"], "above_chance": bool(agreement["lower"] > 0)}


def list_stability(feature_list: pd.DataFrame, previous_lists: pd.DataFrame,
                   feature_names: list[str]) -> dict | None:
    """Nogueira's Phi between this run's list and the lists the last complete runs handed on, oldest first."""
    current = feature_list["feature_name"].astype(str).tolist()
    if previous_lists.empty:
        return None
    earlier = [(version, group.sort_values("rank")["feature_name"].astype(str).tolist())
               for version, group in previous_lists.groupby("version", sort=True)]
    selections = [names for _, names in earlier] + [current]
    universe = list(dict.fromkeys([*feature_names, *(n for names in selections for n in names)]))
    return {**nogueira_of(selections, universe).as_dict(), "versions": [v for v, _ in earlier]}


def member_stability(feature_ranking: pd.DataFrame, k: int) -> dict | None:
    """Nogueira's Phi between the members' first k (their ``member_<i>_rank`` columns), None with one member."""
    columns = [c for c in feature_ranking.columns if c.startswith("member_") and c.endswith("_rank")]
    if len(columns) < 2:
        return None
    ranks = feature_ranking[columns].to_numpy(dtype=np.float64, na_value=np.nan)
    return nogueira((ranks <= k).T).as_dict()  # a member that did not see a feature never selected it


def plot_score_distribution(feature_ranking: pd.DataFrame, feature_list: pd.DataFrame) -> plt.Figure:
    """Histogram of the ordering score, the top-k cut, and where the selected features fall."""
    return score_distribution_figure(feature_ranking, feature_list)


def build_run_report(ground_truth: dict, standardized_data: np.ndarray, labels: dict, k_choice: dict,
                     feature_list: pd.DataFrame, training_log: pd.DataFrame,
                     feature_ranking: pd.DataFrame, laplacian_scores: pd.DataFrame, evaluation_table: pd.DataFrame,
                     selection_stability: dict, selection: dict) -> str:
    """The run's self-contained HTML report (:mod:`iclfs.pipelines.report._report`).

    The source and shape, the k and why, the selected features, the loss, the
    score distribution, what LGRC swapped and, apart, what the hold to the last
    list swapped (``selection``: the gate's settings), accuracy against k (when
    labels exist), a PCA of the samples and the stability against the previous
    run: one page, figures and CSS inline, nothing fetched.
    """
    return report.run_report(ground_truth, standardized_data, labels, k_choice, feature_list,
                             training_log, feature_ranking, laplacian_scores, evaluation_table,
                             selection_stability, selection)
