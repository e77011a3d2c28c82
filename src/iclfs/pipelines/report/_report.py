"""The run report: one self-contained HTML page per run.

Everything is inline: the CSS, the tables, the figures (matplotlib, base64 PNG
in ``<img src="data:...">``). The page loads nothing from disk or the network,
so it can be mailed, attached to an MLflow run or opened offline.

The page is the Jinja2 template ``iclfs/templates/run_report.html.j2``,
rendered with autoescape on: this module hands it plain data (text, table
cells, figures' PNG bytes), never markup, so every string that comes from the
data (feature names, class names, the source's path) is escaped by the
template, wherever it appears.

Small pure functions, one per section, each returning the section's blocks;
:func:`run_report` puts them together.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from functools import cache
from typing import NamedTuple

import jinja2
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclfs.baselines import REGISTRY
from iclfs.project._figures import (
    HOLD,
    LGRC,
    MAX_POINTS,
    MEMBERS,
    UNKNOWN,
    ListChanges,
    accuracy_figure,
    list_changes,
    pca_figure,
    score_distribution_figure,
    score_vs_laplacian_figure,
    swapped_features,
    training_loss_figure,
)

# Section id -> title, in page order.
SECTIONS = {
    "selected": "Selected features",
    "loss": "Training loss",
    "scores": "Score distribution",
    "lgrc": "Network score vs Laplacian score",
    "accuracy": "Accuracy vs k",
    "pca": "PCA of the samples",
    "stability": "Stability against the previous run",
}
TEMPLATE = "run_report.html.j2"
NO_LABELS = "no labels: the k-means accuracy was not evaluated"
NAMES_LISTED = 20  # names a sentence lists of the features or samples that came or went
NAMES_A_CELL = 10  # names a cell of the per-k table lists of those that entered or left the list
EVERY_NAME = " (selection_stability.json)"  # where the names a list leaves out are
#: Nogueira's Phi below which members that agree more than chance still agree only weakly ("slight" agreement on
#: the Landis-Koch scale of kappa statistics, which Phi is one of).
WEAK_AGREEMENT = 0.2

Block = dict  # one element of a section, as the template draws it: {"kind": "p" | "note" | "figure" | "table", ...}


class Marked(NamedTuple):
    """A table cell drawn in a coloured span: ``mark`` is ``in`` (green) or ``out`` (red)."""

    text: str
    mark: str


# --- text, tables, figures -----------------------------------------------------------


@cache
def environment() -> jinja2.Environment:
    """The report's Jinja2 environment: the package's templates, autoescape on, an unknown name an error."""
    return jinja2.Environment(loader=jinja2.PackageLoader("iclfs", "templates"), autoescape=True,
                              undefined=jinja2.StrictUndefined)


def format_value(value: object, digits: int = 4) -> str:
    """A table cell's text: floats to ``digits`` significant digits, empty for missing."""
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        if np.isnan(value):
            return ""
        return f"{value:.{digits}g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def table(frame: pd.DataFrame, digits: int = 4) -> Block:
    """``frame`` as a table block: text cells left-aligned, :class:`Marked` cells in their span."""
    rows = []
    for record in frame.itertuples(index=False, name=None):
        row = []
        for value in record:
            if isinstance(value, Marked):
                row.append({"text": value.text, "css": "text", "mark": value.mark})
            else:
                row.append({"text": format_value(value, digits), "css": "text" if isinstance(value, str) else "",
                            "mark": ""})
        rows.append(row)
    return {"kind": "table", "columns": [str(column) for column in frame.columns], "rows": rows}


def figure(fig: plt.Figure, alt: str, caption: str = "") -> Block:
    """``fig`` as an inline base64 PNG figure block (the figure is closed)."""
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=100)
    finally:
        plt.close(fig)
    return {"kind": "figure", "alt": alt, "caption": caption,
            "png": base64.b64encode(buffer.getvalue()).decode("ascii")}


def paragraph(text: str) -> Block:
    return {"kind": "p", "text": text}


def note(text: str) -> Block:
    return {"kind": "note", "text": text}


def render(title: str, facts: Sequence[tuple[str, str]], header: Sequence[Block],
           sections: Mapping[str, Sequence[Block]]) -> str:
    """The whole page from the template: the title, the facts, the header's blocks and each section's.

    Pure ASCII (any other character as a numeric reference), so the file reads
    the same whatever encoding it is saved or opened with.
    """
    page = environment().get_template(TEMPLATE).render(
        title=title, facts=list(facts), header_blocks=list(header),
        sections=[{"id": key, "title": SECTIONS[key], "blocks": list(blocks)} for key, blocks in sections.items()])
    return page.encode("ascii", "xmlcharrefreplace").decode("ascii")


# --- sections --------------------------------------------------------------------


def header(ground_truth: Mapping, shape: tuple[int, int], labels: Mapping,
           k_choice: Mapping) -> tuple[list[tuple[str, str]], list[Block]]:
    """The facts (the table read, its shape, labels, the chosen k and why) and the members' agreement per k."""
    n_samples, n_features = shape
    classes = list(labels.get("classes") or []) if labels else []
    facts = [("table", str(ground_truth.get("source") or "unknown")),  # the file read (the source is a folder)
             ("shape", f"{n_samples} samples \N{MULTIPLICATION SIGN} {n_features} features"),
             ("labels", f"{len(classes)} classes" if labels and labels.get("codes") else "no labels"),
             ("chosen k", str(k_choice.get("k"))),
             ("why", str(k_choice.get("reason", "")))]
    agreement = k_choice.get("agreement")
    if not agreement:
        return facts, []
    frame = pd.DataFrame({"k": [int(k) for k in agreement], "member agreement": list(agreement.values())})
    return facts, [paragraph("Agreement of the members at every k:"), table(frame.sort_values("k"))]


def selected_section(feature_list: pd.DataFrame, feature_ranking: pd.DataFrame, changes: ListChanges) -> list[Block]:
    """The selected features: rank, name, index, score and what it is, Laplacian score, member frequency when
    present, and what brought in each feature not among the ranking's first k (LGRC or the hold)."""
    columns = ["rank", "feature_name", "feature_index", "score"]
    columns += [c for c in ("score_name", "laplacian_score", "selection_frequency", "stable") if c in feature_list]
    frame = feature_list[columns].copy()
    frame["feature_name"] = frame["feature_name"].astype(str)
    outside, _ = swapped_features(feature_ranking, feature_list)
    by = changes.came_in
    frame["swapped in by"] = [Marked(by[i], "in") if i in outside else ""
                              for i in frame["feature_index"].astype(int)]
    count = f"{len(frame)} feature" + ("s" if len(frame) != 1 else "")
    return [paragraph(f"{count}, best first."), table(frame)]


def loss_section(training_log: pd.DataFrame) -> list[Block]:
    if "method" in training_log and len(training_log):
        method = training_log["method"].iloc[0]
        seconds = float(training_log["member_seconds"].iloc[0]) if "member_seconds" in training_log else 0
        if training_log["loss"].isna().all():
            return [note(f"{method} (selection.method) trains no network: it selected in {seconds:.1f} s")]
        caption = (f"{method} (selection.method): one network per k, "
                   f"{training_log.groupby('member')['epoch'].count().max()} epochs at most; {seconds:.1f} s")
        return [figure(training_loss_figure(training_log), "training loss per k", caption)]
    members = training_log["member"].nunique() if "member" in training_log else 1
    epochs = int(training_log["epoch"].max()) if len(training_log) else 0
    caption = f"{members} member(s), {epochs} epoch(s)"
    if "schedule" in training_log and len(training_log):
        caption += f"; schedule {training_log['schedule'].iloc[0]}"
    if "device" in training_log and len(training_log):
        caption += f" on {training_log['device'].iloc[0]}"
    return [figure(training_loss_figure(training_log), "training loss per network", caption)]


def scores_section(feature_ranking: pd.DataFrame, feature_list: pd.DataFrame) -> list[Block]:
    fig = score_distribution_figure(feature_ranking, feature_list)
    return [figure(fig, "score distribution with the top-k cut",
                   f"{len(feature_ranking)} features; the red line is the top-{len(feature_list)} cut of the ranking")]


def change_lines(changes: ListChanges, method: str) -> list[str]:
    """What changed the list from the ranking's first k, one sentence per cause."""
    k = changes.k
    lines = []
    if LGRC in changes.by:
        came, went = changes.by[LGRC]
        lines.append(f"LGRC swapped {len(came)} feature(s) in and {len(went)} out of the ranking's first {k}"
                     + (f": a feature goes out when its Laplacian score (laplacian_gate) is above the gate, "
                        f"{changes.gate:.4g}" if went and changes.gate is not None else ""))
    came, went = changes.by.get(HOLD, ([], []))
    if came or went:
        against = f"LGRC's {k}" if LGRC in changes.by else f"the ranking's first {k}"
        lines.append(f"The hold to the last list (a carried run keeps a listed feature while it stays near the top) "
                     f"brought {len(came)} feature(s) in and took {len(went)} out, against {against}")
    if MEMBERS in changes.by:
        came, _ = changes.by[MEMBERS]
        lines.append(f"{method} is not corrected by LGRC: its list is the {k} features its members chose most, "
                     f"{len(came)} of them not among the ranking's first {k}")
    if UNKNOWN in changes.by:
        came, went = changes.by[UNKNOWN]
        lines.append(f"{len(came)} listed feature(s) are not among the ranking's first {k}, and {len(went)} of "
                     "those are not listed (the run's selection settings were not given, to say what swapped them)")
    return lines


def lgrc_section(feature_ranking: pd.DataFrame, laplacian_scores: pd.DataFrame, feature_list: pd.DataFrame,
                 changes: ListChanges, method: str = "iclfs") -> list[Block]:
    """The scatter, and the features LGRC and the hold swapped in and out, each named with its cause."""
    ls = laplacian_scores.set_index("feature_index")["laplacian_score"].astype(float)
    not_finite = int((~np.isfinite(ls)).sum())
    caption = "grey: every feature; blue: selected; the swapped in and out are marked by what swapped them"
    if not_finite:
        caption += f"; {not_finite} feature(s) with an infinite Laplacian score (constant) are not drawn"
    fig = score_vs_laplacian_figure(feature_ranking, laplacian_scores, feature_list, changes)
    blocks = [figure(fig, "network score against Laplacian score", caption)]
    if not changes:
        blocks.append(note(f"The list is the first {changes.k} features of the ranking: nothing swapped."))
        return blocks
    blocks += [paragraph(line + ".") for line in change_lines(changes, method)]
    by_index = feature_ranking.set_index("feature_index")
    gated = "laplacian_gate" if "laplacian_gate" in by_index else None
    rows = [{"change": Marked(f"swapped {side}", side), "by": cause,
             "feature_name": str(by_index.loc[i, "feature_name"]), "feature_index": int(i),
             "ranking rank": int(by_index.loc[i, "rank"]), "score": float(by_index.loc[i, "score"]),
             **({gated: float(by_index.loc[i, gated])} if gated else {}),
             "laplacian_score": float(ls.get(i, np.nan))}
            for cause, sides in changes.by.items() for side, indices in zip(("in", "out"), sides) for i in indices]
    blocks.append(table(pd.DataFrame(rows)))
    return blocks


def accuracy_section(evaluation_table: pd.DataFrame | None, k: int) -> list[Block]:
    """The accuracy curve and table with labels; "no labels" (and any recall columns) without."""
    if evaluation_table is None or "accuracy_mean" not in evaluation_table:
        blocks = [note(NO_LABELS)]
        if evaluation_table is not None and "informative_recall" in evaluation_table:
            blocks += [paragraph("Known informative features recovered:"), table(evaluation_table)]
        return blocks
    best = evaluation_table.sort_values(["accuracy_mean", "k"], ascending=[False, True]).iloc[0]
    return [figure(accuracy_figure(evaluation_table, k), "k-means accuracy against k",
                   "mean +- std over the k-means runs"),
            paragraph(f"Best k by mean accuracy: {int(best['k'])} ({100 * float(best['accuracy_mean']):.1f} %); "
                      f"chosen k: {k}."),
            table(evaluation_table)]


def pca_section(standardized_data: np.ndarray, feature_list: pd.DataFrame, labels: Mapping) -> list[Block]:
    indices = feature_list.sort_values("rank")["feature_index"].astype(int).tolist()
    coloured = "coloured by label" if labels and labels.get("codes") else "no labels: one colour"
    caption = f"{len(standardized_data)} samples, standardized; {coloured}"
    if len(standardized_data) > MAX_POINTS:
        caption += f"; {MAX_POINTS} of them drawn (the projection uses all)"
    fig = pca_figure(standardized_data, indices, labels)
    return [figure(fig, "PCA of the samples on all and on the selected features", caption)]


def shown_name(name: object) -> str:
    """A feature's name as a sentence shows it: as it is, or quoted (its Python literal) where its edges are blank,
    it holds a character that does not print, or it is empty, so 'h10 ' is not read as 'h10'."""
    text = str(name)
    return text if text and text == text.strip() and text.isprintable() else repr(text)


def _names(names: Sequence, total: int | None = None, where: str = "") -> str:
    """``names`` joined, then how many of ``total`` (all of them: ``len(names)``) are not, and ``where`` they
    are."""
    names = [shown_name(name) for name in names]
    more = (len(names) if total is None else total) - len(names)
    return ", ".join(names) + (f" and {more} more{where}" if more > 0 else "")


def change_sentences(changes: Mapping | None) -> list[str]:
    """What changed in the table since the previous run, one sentence each (empty on the first run)."""
    if not changes or changes.get("previous_version") is None:
        return []
    lines = []
    if changes.get("same_table"):
        return [f"the table: the same as the previous run's ({changes.get('previous_version')})"]
    for key, names, what in (("features_dropped", "dropped", "feature(s) dropped from the table"),
                             ("features_added", "added", "feature(s) new to the table")):
        if changes.get(key):
            lines.append(f"{changes[key]} {what}: {_names(changes.get(names) or [], changes[key])}")
    for key, names, what in (("samples_added", "samples_in", "sample(s) added"),
                             ("samples_removed", "samples_out", "sample(s) removed")):
        if changes.get(key):
            lines.append(f"{changes[key]} {what}: {_names(changes.get(names) or [], changes[key])}")
    if changes.get("samples_added") is None and changes.get("samples_before") != changes.get("samples"):
        lines.append(f"samples: {changes.get('samples_before')} before, {changes.get('samples')} now (the table has "
                     "no sample ids to say which)")
    if not lines:
        lines.append("the table's features and samples are the previous run's; its values changed")
    return ["since the previous run: " + "; ".join(lines)]
def stability_sentences(selection_stability: Mapping) -> list[str]:
    """The member history, the table's changes, Nogueira's Phi with its interval and whether the members found
    a signal: one sentence each (the run summary's too)."""
    lines = []
    history = selection_stability.get("history") or {}
    if history.get("carry"):
        members, kept = history.get("members"), history.get("kept")
        method = history.get("method", "iclfs")
        line = f"member history ({method}): {members} member(s) combined"
        # a deterministic method's members repeat one list: more of them steady nothing
        seeded = method == "iclfs" or getattr(REGISTRY.get(method), "seeded", False)
        if seeded and kept and members and members < min(kept, 10):
            line += (f"; the list steadies as members accumulate: {members} of {kept} so far, and early refreshes "
                     "still move it")
        if history.get("new_features"):
            line += (f"; {history['new_features']} feature(s) are new to some members (members_seen in "
                     "feature_ranking.csv): they are ordered by the members that saw them")
        lines.append(line + (f"; {history['note']}" if history.get("note") else ""))
    lines.extend(change_sentences(selection_stability.get("changes")))
    evidence = selection_stability.get("evidence") or {}
    if evidence.get("summary"):
        lines.append(f"evidence: {evidence['summary']}")
    per_k = selection_stability.get("per_k") or {}
    found = selection_stability.get("nogueira") or {}
    row = per_k.get(found.get("k")) or per_k.get(str(found.get("k"))) or {}  # the list at the run's own k
    gone = list(row.get("left_table") or [])
    if gone:
        lines.append(f"left the table, and so the list of {found['k']}: "
                     f"{_names(gone[:NAMES_LISTED], len(gone), EVERY_NAME)}")
    for key, what in (("lists", "the last {n} lists"), ("members", "the {n} members' first k")):
        value = found.get(key)
        if value and value.get("phi") is not None and value["phi"] == value["phi"]:  # nan: no spread
            interval = (f"95 % interval {value['lower']:.2f} to {value['upper']:.2f}"
                        if value.get("lower") is not None and value.get("upper") is not None
                        else "an interval needs 3 or more")
            lines.append(f"Nogueira's Phi over {what.format(n=value['selections'])}: {value['phi']:.2f} ({interval})")
    signal = selection_stability.get("signal")
    if signal is not None and not signal.get("above_chance"):
        lines.append(f"WARNING: the {signal['members']} members agree no more than chance (Phi {signal['phi']:.2f}, "
                     f"95 % interval {signal['lower']:.2f} to {signal['upper']:.2f}): ICLFS finds no stable signal in "
                     "this table, and the list's steadiness comes from the Laplacian score it fuses in. Try "
                     "selection.method=ls (or another method, docs/guides/methods.md)")
    elif signal is not None and signal.get("phi") is not None and signal["phi"] < WEAK_AGREEMENT:
        lines.append(f"WARNING: the {signal['members']} members agree only weakly (Phi {signal['phi']:.2f}, below "
                     f"{WEAK_AGREEMENT}; 95 % interval {signal['lower']:.2f} to {signal['upper']:.2f}): more than "
                     "chance, but their lists share little, so the list may move much from one refresh to the next. "
                     "More members (members.per_run) steady it")
    return lines


def stability_section(selection_stability: Mapping, k: int) -> list[Block]:
    """Nogueira's Phi, and the overlap with the previous run's selection per k (the chosen k first)."""
    blocks = [paragraph(f"{line}.") for line in stability_sentences(selection_stability)]
    previous = selection_stability.get("previous_version")
    if previous is None:
        return blocks + [note(selection_stability.get("message") or "first run for this data source: nothing to "
                                                                     "compare")]
    per_k = {int(kk): value for kk, value in (selection_stability.get("per_k") or {}).items()}
    rows = []
    for kk in sorted(per_k, key=lambda value: (value != k, value)):
        value = per_k[kk]
        rows.append({"k": kk, "jaccard": value.get("jaccard"), "overlap": value.get("overlap"),
                     "rank_correlation": value.get("rank_correlation"),
                     **{key: _names(value.get(key, [])[:NAMES_A_CELL], len(value.get(key, [])), EVERY_NAME)
                        for key in ("entered", "left")},
                     "note": value.get("message", "")})
    return blocks + [paragraph(f"Compared with the selection of version {previous}."), table(pd.DataFrame(rows))]


def run_report(ground_truth: Mapping, standardized_data: np.ndarray, labels: Mapping, k_choice: Mapping,
               feature_list: pd.DataFrame, training_log: pd.DataFrame, feature_ranking: pd.DataFrame,
               laplacian_scores: pd.DataFrame, evaluation_table: pd.DataFrame | None,
               selection_stability: Mapping, selection: Mapping | None = None) -> str:
    """The run's report as one HTML string (see the module docstring).

    ``selection`` (the run's ``selection`` parameters) lets the report tell what LGRC swapped from what the hold
    to the last list did (:func:`~iclfs.project._figures.list_changes`); without it the swaps name no cause.
    """
    k = int(k_choice["k"])
    method = str((selection or {}).get("method") or "iclfs")
    changes = list_changes(feature_ranking, feature_list, selection)
    sections = {
        "selected": selected_section(feature_list, feature_ranking, changes),
        "loss": loss_section(training_log),
        "scores": scores_section(feature_ranking, feature_list),
        "lgrc": lgrc_section(feature_ranking, laplacian_scores, feature_list, changes, method),
        "accuracy": accuracy_section(evaluation_table, k),
        "pca": pca_section(standardized_data, feature_list, labels),
        "stability": stability_section(selection_stability, k),
    }
    facts, blocks = header(ground_truth, tuple(np.shape(standardized_data)), labels, k_choice)
    return render(f"ICLFS run report: {ground_truth.get('source') or 'unknown'}", facts, blocks, sections)
