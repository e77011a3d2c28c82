"""Hand the selection to the next job: the k, the named list, the reduced data, what changed, the report."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclfs.method._config import SelectionConfig
from iclfs.method import _k_choice as k_choice
from iclfs.method._preprocessing import DataValidationError, FeatureTable, as_numeric_matrix
from iclfs.method._stability import compare_selections, nogueira, nogueira_of
from iclfs.pipelines._figures import score_distribution_figure
from iclfs.pipelines._frames import frequencies, indices_by_k
from iclfs.pipelines.publish import _report as report


def choose_k(selections: pd.DataFrame, feature_ranking: pd.DataFrame, selection: dict) -> dict:
    """k, the size of the list handed on: ``selection.k``, or with ``auto`` the largest k the members agree on.

    Returns
    -------
    k_choice : dict
        ``k``, ``reason`` (a sentence saying why) and, for ``auto``, the
        members' ``agreement`` at every k.
    """
    config = SelectionConfig.from_dict(selection)
    chosen = indices_by_k(selections)
    freq = frequencies(feature_ranking)
    if config.k == "auto" and not freq:
        raise ValueError("selection.k 'auto' needs several members (members.per_run 2 or more)")
    chosen_k = k_choice.choose_k(chosen, freq, config, len(feature_ranking))
    choice = {"k": chosen_k.k, "reason": chosen_k.reason}
    if config.k == "auto":
        choice["agreement"] = {str(k): value for k, value in chosen_k.agreement.items()}
    return choice


def list_at_k(selections: pd.DataFrame, k_choice: dict) -> pd.DataFrame:
    """The list: the selection at k, best first: rank, feature name, column index, score, Laplacian score."""
    k = int(k_choice["k"])
    chosen = selections[selections["k"] == k]
    if chosen.empty:
        raise ValueError(f"k = {k} was not selected; selected k: {sorted(selections['k'].unique())}")
    columns = ["rank", "feature_name", "feature_index", "score", "laplacian_score"]
    columns += ["member_frequency"] if "member_frequency" in chosen else []
    return chosen[columns].reset_index(drop=True)


def reduce_data(raw_data: FeatureTable, feature_list: pd.DataFrame, ground_truth: dict) -> pd.DataFrame:
    """The input table restricted to the selected columns: original values, names kept, best first.

    The sample id column, when the input has one, comes first, so the table
    joins back to anything keyed by sample. The input is read again here and
    must be the table the run selected from (same source, same fingerprint):
    a file replaced during the run is refused rather than mixed with a
    selection made from the old one.
    """
    selected_from = ground_truth.get("source")
    if selected_from is not None and raw_data.source != selected_from:
        raise DataValidationError(
            f"this run's list was selected from {selected_from}, and reduce_data reads that table again, but the "
            f"input now is {raw_data.source}. Give the run's input: --params input={selected_from}")
    expected = ground_truth.get("fingerprint")
    if expected is not None and raw_data.fingerprint() != expected:
        raise DataValidationError(
            f"{raw_data.source}: the input changed while this run was training (its values, feature names or "
            "sample ids differ from what was read at the start), so the selection no longer matches it. "
            "Run again on the new file.")
    X = as_numeric_matrix(raw_data.X, raw_data.source)
    columns = feature_list["feature_index"].to_numpy()
    reduced = pd.DataFrame(X[:, columns], columns=feature_list["feature_name"].tolist())
    if raw_data.sample_ids is not None:
        reduced.insert(0, raw_data.sample_id_name or "sample_id", list(raw_data.sample_ids))
    return reduced


def compare_with_previous(selections: pd.DataFrame, previous_selections: pd.DataFrame,
                          feature_list: pd.DataFrame, previous_lists: pd.DataFrame,
                          feature_ranking: pd.DataFrame, history_start: dict) -> dict:
    """How steady the selection is: against the previous run, between the last lists, between the members.

    Returns
    -------
    selection_stability : dict
        ``previous_version`` and ``per_k`` (Jaccard overlap, rank correlation,
        entered and left features per k against the previous run; a
        ``message`` instead on the first run); ``nogueira`` with Nogueira's
        Phi and its 95 % interval between the ``lists`` handed on by this run
        and the last complete runs, and between the ``members``' first k of
        the list's k (each None with fewer than two; the interval's bounds
        None with two, see :func:`~iclfs.method._stability.nogueira`); ``history`` (carrying,
        the members combined, why a stored history was set aside).
    """
    summary: dict = {"previous_version": None}
    if previous_selections.empty:
        summary["message"] = "first run for this data source: nothing to compare"
    else:
        per_k = {}
        for k, group in selections.groupby("k"):
            before = previous_selections[previous_selections["k"] == k]
            if before.empty:
                per_k[int(k)] = {"message": f"k = {k} was not selected in the previous run"}
                continue
            per_k[int(k)] = compare_selections(before.sort_values("rank")["feature_name"].astype(str).tolist(),
                                               group.sort_values("rank")["feature_name"].astype(str).tolist())
        summary.update(previous_version=previous_selections.attrs.get("version"), per_k=per_k)
    k = len(feature_list)
    names = feature_ranking["feature_name"].astype(str).tolist()
    lists = list_stability(feature_list, previous_lists, names)
    members = member_stability(feature_ranking, k)
    summary["nogueira"] = {"k": k, "lists": lists, "members": members}
    summary["history"] = {"carry": bool(history_start.get("carry")), "members": _members_in(feature_ranking),
                          "note": history_start.get("note")}
    return summary


def _members_in(feature_ranking: pd.DataFrame) -> int:
    columns = [c for c in feature_ranking.columns if c.startswith("member_") and c.endswith("_rank")]
    return max(len(columns), 1)


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
                     selection_stability: dict) -> str:
    """The run's self-contained HTML report (:mod:`iclfs.pipelines.publish._report`).

    The source and shape, the k and why, the selected features, the loss, the
    score distribution, what LGRC swapped, accuracy against k (when labels
    exist), a PCA of the samples and the stability against the previous run:
    one page, figures and CSS inline, nothing fetched.
    """
    return report.run_report(ground_truth, standardized_data, labels, k_choice, feature_list,
                             training_log, feature_ranking, laplacian_scores, evaluation_table,
                             selection_stability)
