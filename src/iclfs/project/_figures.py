"""Every figure of a run, drawn once: the plot nodes save them as artifacts, the HTML report inlines them.

Each takes the run's artifacts as the catalog holds them and returns a
matplotlib figure; text that comes from the data is passed through
:func:`plain`, so a feature name is never read as mathtext.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from iclfs.method._config import SelectionConfig
from iclfs.method._lgrc import laplacian_gate, select_features

MAX_POINTS = 5000  # samples drawn in a PCA plot (the projection uses every sample)
MAX_NAMED = 12  # swapped features named in the LGRC plot, per side
MAX_LEGEND_CLASSES = 12


def plain(value: object) -> str:
    """``value`` as matplotlib text that is never read as mathtext (``$`` escaped)."""
    return str(value).replace("$", r"\$")


def swapped_features(feature_ranking: pd.DataFrame,
                     feature_list: pd.DataFrame) -> tuple[list[int], list[int]]:
    """How the list differs from the ranking's first k (k = the list's length), by feature index, whatever changed
    it (:func:`list_changes` says what: LGRC, the hold to the last list or another method's members).

    Returns
    -------
    swapped_in : list of int
        Selected but not among the first k of the ranking, in selection order.
    swapped_out : list of int
        Among the first k of the ranking but not selected, in ranking order.
    """
    k = len(feature_list)
    first_k = feature_ranking.sort_values("rank")["feature_index"].head(k).astype(int).tolist()
    return _differences(first_k, feature_list.sort_values("rank")["feature_index"].astype(int).tolist())


#: What made a listed feature differ from the ranking's first k.
LGRC = "LGRC"  # the Laplacian gate at the list's k
HOLD = "the hold"  # a carried run's list held to the last list handed on (iclfs.method._lgrc.hold)
MEMBERS = "the members"  # another method's list: the k features its members chose most
UNKNOWN = "not the first k"  # the run's selection settings not given: no cause is named


@dataclass(frozen=True)
class ListChanges:
    """How the list at k differs from the ranking's first k, by what changed it.

    Attributes
    ----------
    k : int
        The list's length.
    by : dict of str to (list of int, list of int)
        For each cause (:data:`LGRC`, :data:`HOLD`, :data:`MEMBERS` or
        :data:`UNKNOWN`), the feature indices it brought in (in list order)
        and took out (in its reference's order). LGRC is measured against the
        ranking's first k; the hold against LGRC's selection at k.
    gate : float or None
        LGRC's gate gamma (the Laplacian score above which it swaps a feature
        out), when LGRC ran.
    """

    k: int
    by: dict[str, tuple[list[int], list[int]]]
    gate: float | None = None

    @property
    def came_in(self) -> dict[int, str]:
        """Each listed feature not among the ranking's first k, by feature index: what brought it in."""
        return {i: cause for cause, (came, _) in self.by.items() for i in came}

    def __bool__(self) -> bool:
        return any(came or went for came, went in self.by.values())


def _differences(reference: Sequence[int], chosen: Sequence[int]) -> tuple[list[int], list[int]]:
    """(in ``chosen``, not in ``reference``), (in ``reference``, not in ``chosen``), each in its own order."""
    kept, listed = set(reference), set(chosen)
    return [i for i in chosen if i not in kept], [i for i in reference if i not in listed]


def list_changes(feature_ranking: pd.DataFrame, feature_list: pd.DataFrame,
                 selection: Mapping | None = None) -> ListChanges:
    """What changed the list at k from the ranking's first k: LGRC, the hold to the last list, or another
    method's members.

    LGRC's part is its own selection at k (:func:`~iclfs.method._lgrc.select_features` on the ranking's order and
    its ``laplacian_gate`` scores, with ``selection``'s alpha and quantile) against the first k; the hold's is
    the list against that selection: a carried run's list is held to the last one and chosen from a wider
    selection, and neither is LGRC's doing. Without ``selection`` (or the ``laplacian_gate`` column) no cause is
    named (:data:`UNKNOWN`).

    Parameters
    ----------
    feature_ranking : DataFrame
        The ``feature_ranking`` artifact, one row per feature (``rank``, ``feature_index``, ``laplacian_gate``).
    feature_list : DataFrame
        The list, k rows (``rank``, ``feature_index``).
    selection : mapping, optional
        The run's ``selection`` parameters.

    Returns
    -------
    ListChanges
    """
    order = feature_ranking.sort_values("rank")["feature_index"].astype(int).to_numpy()
    k = len(feature_list)
    chosen = feature_list.sort_values("rank")["feature_index"].astype(int).tolist()
    first = order[:k].tolist()
    if selection is None or "laplacian_gate" not in feature_ranking:
        return ListChanges(k, {UNKNOWN: _differences(first, chosen)})
    config = SelectionConfig.from_dict(selection)
    if config.method != "iclfs":  # LGRC corrects ICLFS only (iclfs.method._lgrc.gate)
        return ListChanges(k, {MEMBERS: _differences(first, chosen)})
    if not config.use_lgrc:
        return ListChanges(k, {HOLD: _differences(first, chosen)})
    gated_by = np.full(len(order), np.inf)
    gated_by[order] = feature_ranking.sort_values("rank")["laplacian_gate"].to_numpy(dtype=np.float64)
    gated = select_features(order, gated_by, k, alpha=config.alpha, quantile=config.quantile).tolist()
    return ListChanges(k, {LGRC: _differences(first, gated), HOLD: _differences(gated, chosen)},
                       gate=laplacian_gate(gated_by, config.quantile))


def _subplots(*grid: int, figsize: tuple[float, float]) -> tuple[Figure, Any]:
    """A figure pyplot does not keep. The catalog saves a node's figure and nothing closes it, so pyplot would hold
    every figure a long-lived process made (a notebook, a Dask worker, a test session)."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(*grid)


def training_loss_figure(training_log: pd.DataFrame) -> plt.Figure:
    """The loss per epoch and its two terms; one line per network (member, feature block)."""
    fig, ax = _subplots(figsize=(6.4, 3.6))
    history = training_log
    if "block" not in history:
        history = history.assign(block=0)
    if "member" not in history:
        history = history.assign(member=0)
    networks = history.groupby(["member", "block"])
    for (member, block), group in networks:
        first = (member, block) == (0, 0)
        alpha = 1.0 if networks.ngroups == 1 else 0.6
        for column, colour in (("loss", "C0"), ("contrastive", "C1"), ("decorrelation", "C2")):
            if column in group:
                ax.plot(group["epoch"], group[column], color=colour, alpha=alpha, label=column if first else None)
    ax.set_xlabel("epoch")
    ax.set_ylabel("value")
    members = history["member"].nunique()
    if "schedule" in history and "device" in history and len(history):
        title = f"ICLFS training ({history['schedule'].iloc[0]}, {history['device'].iloc[0]}"
        ax.set_title(title + (f", {members} members)" if members > 1 else ")"), fontsize="medium")
    if "method" in history and len(history):
        ax.set_title(f"{history['method'].iloc[0]} training", fontsize="medium")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def score_distribution_figure(feature_ranking: pd.DataFrame, feature_list: pd.DataFrame) -> plt.Figure:
    """Histogram of the ranking score, the top-k cut, and the selected features' scores."""
    k = len(feature_list)
    scores = feature_ranking.sort_values("rank")["score"].to_numpy(dtype=float)
    finite = scores[np.isfinite(scores)]
    fig, ax = _subplots(figsize=(6.4, 3.6))
    ax.hist(finite, bins=min(80, max(10, len(finite) // 20)), color="0.7", label="all features")
    if k and len(scores):
        ax.axvline(scores[min(k, len(scores)) - 1], color="red", label=f"top-{k} cut")
    ax.plot(feature_list["score"].to_numpy(dtype=float), np.zeros(k), "|", color="navy", markersize=14,
            label=f"selected (k = {k}, after LGRC)")
    name = feature_ranking["score_name"].iloc[0] if "score_name" in feature_ranking and len(feature_ranking) else ""
    ax.set_xlabel(plain(f"feature score ({name})" if name else "feature score"))
    ax.set_ylabel("features")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


#: How the LGRC figure marks what each cause brought in and took out: (marker, colour) per side.
CHANGE_MARKS = {LGRC: (("^", "#1a7f37"), ("x", "#b42318")), HOLD: (("D", "#1c7ed6"), ("+", "#e8590c")),
                MEMBERS: (("^", "#1a7f37"), ("x", "#b42318")), UNKNOWN: (("^", "#1a7f37"), ("x", "#b42318"))}


def score_vs_laplacian_figure(feature_ranking: pd.DataFrame, laplacian_scores: pd.DataFrame,
                              feature_list: pd.DataFrame, changes: ListChanges | None = None) -> plt.Figure:
    """Network score against Laplacian score; the selection, and what LGRC and the hold swapped in and out,
    marked apart (``changes``; without it, every difference from the ranking's first k, no cause named)."""
    frame = feature_ranking[["feature_index", "feature_name", "score"]].merge(
        laplacian_scores[["feature_index", "laplacian_score"]], on="feature_index").set_index("feature_index")
    frame = frame[np.isfinite(frame["laplacian_score"].astype(float)) & np.isfinite(frame["score"].astype(float))]
    changes = changes if changes is not None else list_changes(feature_ranking, feature_list)
    selected = [i for i in feature_list["feature_index"].astype(int) if i in frame.index]
    fig, ax = _subplots(figsize=(6.4, 4.4))
    ax.scatter(frame["laplacian_score"], frame["score"], s=8, color="0.75", label="all features")
    ax.scatter(frame.loc[selected, "laplacian_score"], frame.loc[selected, "score"], s=28, color="navy",
               label="selected")
    for cause, sides in changes.by.items():
        for indices, (marker, colour), side in zip(sides, CHANGE_MARKS[cause], ("in", "out")):
            shown = [i for i in indices if i in frame.index]
            if not shown:
                continue
            label = f"swapped {side}" + ("" if cause == UNKNOWN else f" by {cause}")
            ax.scatter(frame.loc[shown, "laplacian_score"], frame.loc[shown, "score"], s=70, marker=marker,
                       color=colour, label=label, zorder=3)
            for i in shown[:MAX_NAMED]:
                ax.annotate(plain(frame.loc[i, "feature_name"]),
                            (frame.loc[i, "laplacian_score"], frame.loc[i, "score"]),
                            textcoords="offset points", xytext=(4, 4), fontsize=7, color=colour)
    k = len(feature_list)
    ranked = feature_ranking.sort_values("rank")["score"].to_numpy(dtype=float)
    if 0 < k <= len(ranked):
        ax.axhline(ranked[k - 1], color="red", linewidth=0.8, linestyle="--", label=f"top-{k} cut")
    ax.set_xlabel("Laplacian score (lower: more local structure)")
    ax.set_ylabel("network score")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def accuracy_figure(evaluation_table: pd.DataFrame, k: int | None = None) -> plt.Figure:
    """Mean k-means accuracy (+- std) against k, the chosen k marked; a note when there are no labels."""
    fig, ax = _subplots(figsize=(6.4, 3.6))
    if "accuracy_mean" in evaluation_table:
        std = evaluation_table["accuracy_std"] if "accuracy_std" in evaluation_table else None
        ax.errorbar(evaluation_table["k"], evaluation_table["accuracy_mean"], yerr=std, marker="o", capsize=3,
                    label="selection")
        if k is not None:
            ax.axvline(k, color="red", linewidth=0.8, linestyle="--", label=f"chosen k = {k}")
        ax.set_ylabel("k-means clustering accuracy")
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "no labels: accuracy not evaluated", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("number of selected features k")
    fig.tight_layout()
    return fig


def pca_2d(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The samples' first two principal components (n, 2) and their explained variance ratios (2,).

    With one column the second coordinate is 0; with fewer than two samples both are.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    coords = np.zeros((n, 2))
    ratios = np.zeros(2)
    if n < 2 or d == 0:
        return coords, ratios
    centred = X - X.mean(axis=0)
    if d == 1:
        coords[:, 0] = centred[:, 0]
        ratios[0] = 1.0 if centred.any() else 0.0
        return coords, ratios
    from sklearn.decomposition import PCA

    pca = PCA(n_components=2, random_state=0)
    coords = pca.fit_transform(centred)
    return coords, np.nan_to_num(pca.explained_variance_ratio_)


def pca_figure(standardized_data: np.ndarray, selected_indices: Sequence[int], labels: Mapping) -> plt.Figure:
    """Two panels: the samples' 2-D PCA on every feature and on the selected ones, coloured by label if any."""
    X = np.asarray(standardized_data)
    codes = np.asarray(labels.get("codes") or [], dtype=int) if labels else np.array([], dtype=int)
    classes = list(labels.get("classes") or []) if labels else []
    shown = np.arange(len(X))
    if len(X) > MAX_POINTS:
        shown = np.sort(np.random.default_rng(0).choice(len(X), MAX_POINTS, replace=False))
    fig, axes = _subplots(1, 2, figsize=(10, 4.2))
    panels = ((axes[0], X, f"all {X.shape[1]} features"),
              (axes[1], X[:, list(selected_indices)], f"the {len(selected_indices)} selected features"))
    for ax, data, title in panels:
        coords, ratios = pca_2d(data)
        coords = coords[shown]
        if len(codes) == len(X):
            cmap = plt.get_cmap("tab10" if len(classes) <= 10 else "tab20" if len(classes) <= 20 else "viridis")
            for code in np.unique(codes[shown]):
                mask = codes[shown] == code
                name = classes[code] if 0 <= code < len(classes) else code
                colour = cmap(code % cmap.N) if cmap.N < 256 else cmap(code / max(1, len(classes) - 1))
                ax.scatter(coords[mask, 0], coords[mask, 1], s=10, color=colour, label=plain(name))
            if len(classes) <= MAX_LEGEND_CLASSES:
                ax.legend(fontsize="x-small", title="label", title_fontsize="x-small")
        else:
            ax.scatter(coords[:, 0], coords[:, 1], s=10, color="C0")
        ax.set_title(plain(title), fontsize="medium")
        ax.set_xlabel(f"PC1 ({100 * ratios[0]:.1f} %)")
        ax.set_ylabel(f"PC2 ({100 * ratios[1]:.1f} %)")
    fig.tight_layout()
    return fig
