"""The members combined into one order: this run's, and every member the data source keeps (docs/members.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iclfs.baselines import REGISTRY as BASELINES
from iclfs.chain import as_members
from iclfs.io.datasets import MemberHistories
from iclfs.method._config import MembersConfig, RankingConfig, SelectionConfig
from iclfs.method._ranking import MemberHistory, Ranking, fusion_label, rank, resume
from iclfs.project._frames import evidence_at, k_grid, laplacian_vector


def rank_features(member_scores: dict[str, np.ndarray], feature_names: list[str], laplacian_scores: pd.DataFrame,
                  ground_truth: dict, history_start: dict, previous_member_history: MemberHistories, ranking: dict,
                  members: dict, selection: dict) -> tuple[pd.DataFrame, MemberHistory]:
    """The ranking step (:func:`iclfs.method._ranking.rank`): this run's members, and those of the stored member
    history its start chose (``history_start``, read as it was then: :func:`iclfs.method._ranking.resume`),
    combined into one order.

    Returns
    -------
    feature_ranking : DataFrame
        One row per feature, best first: ``rank`` (1 = best), ``feature_index``,
        ``feature_name``, ``score`` (what orders them), ``score_name``, ``members`` (how many members the
        order combines, on every row),
        ``laplacian_gate`` (the Laplacian score LGRC gates by: the kept members' mean for a carrying ICLFS run,
        else this run's), and ``selection_frequency_<k>`` (the weighted share of the members whose first k
        include it, for every k of the grid; for another method run once, 1
        for the features it selects at k); with ``selection.k`` a number,
        ``stable`` (selected by at least ``members.threshold`` of the members
        at that k: docs/method.md §10). With two members or more also
        ``member_<i>_rank`` (member i's rank of the feature; for kept
        members i is the member's number in the history, and a member that
        did not see a feature leaves it empty) and, when carrying,
        ``members_seen`` (how many members saw the feature).
    member_history : MemberHistory
        The history with this run's members; saved only when carrying.
    """
    config = MembersConfig.from_dict(members)
    ranking_config = RankingConfig.from_dict(ranking)
    selection_config = SelectionConfig.from_dict(selection)
    method = selection_config.method
    grid = k_grid(ground_truth)
    scores = np.asarray(member_scores[ranking_config.score if method == "iclfs" else method])
    seconds = member_scores.get("seconds", np.zeros(len(scores)))
    new = as_members(scores, member_scores["seed"], seconds, feature_names, method)
    own = {k: member_scores[f"selected_{k}"] for k in grid if f"selected_{k}" in member_scores}
    continuation = resume(history_start, previous_member_history, method)
    laplacian = laplacian_vector(laplacian_scores)
    fingerprint = str(ground_truth.get("fingerprint") or "") if continuation.history is not None else ""
    combined, kept = rank(new, feature_names, laplacian, config, grid, continuation.history, own, fingerprint)
    score_name = ranking_config.score if method == "iclfs" else f"{BASELINES[method].name} score"
    if continuation.holds:
        score_name = f"carried mean rank of {score_name} ({len(kept.members)} members)"
        if method == "iclfs":
            score_name += fusion_label(config)
        orders = {m.index: o for m, o in zip(kept.members, combined.member_orders, strict=True)}
    else:
        if method == "iclfs" and len(scores) > 1:
            score_name = f"mean rank of {score_name} ({len(scores)} members)"
        orders = dict(enumerate(combined.member_orders))
    table = ranking_table(feature_names, combined, score_name, orders, combined.gate, grid)
    k = selection_config.k
    if k in grid:  # the list's k, when it is a number
        table["stable"] = evidence_at(table, k, history_start, members, method).stable_mask()[table["feature_index"]]
    if kept is None:
        return table, MemberHistory()
    table["members_seen"] = combined.seen[combined.order] if continuation.holds else len(new)
    return table, kept


def ranking_table(feature_names: list[str], ranking: Ranking, score_name: str, orders: dict[int, np.ndarray],
                  gate: np.ndarray, grid: list[int]) -> pd.DataFrame:
    """The ``feature_ranking`` artifact."""
    order = ranking.order
    d = len(order)
    table = pd.DataFrame({
        "rank": np.arange(1, d + 1),
        "feature_index": order,
        "feature_name": np.asarray(feature_names, dtype=object)[order],
        "score": np.asarray(ranking.scores)[order],
        "score_name": score_name,
        "members": len(ranking.members),  # the members the order combines: this run's, or every member kept
        "laplacian_gate": np.asarray(gate, dtype=np.float64)[order],
    })
    for k in grid:
        table[f"selection_frequency_{k}"] = ranking.selection_frequency[k][order]
    if len(orders) > 1:
        for i, member_order in orders.items():
            table[f"member_{i}_rank"] = _rank_column(member_order, order)  # a member's rank among what it saw
    return table


def _rank_column(ranked: np.ndarray, order: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """The rank (1 = first) of each feature of ``order`` within ``ranked`` (feature indices best first), empty for
    a feature not in it; a column of the table ``order`` lays out."""
    ranks = np.full(len(order), np.nan)
    ranks[ranked] = np.arange(1, len(ranked) + 1)
    return pd.array(ranks[order], dtype="Int64")
