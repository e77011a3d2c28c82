"""The run report: one self-contained HTML page per run.

Everything is inline: the CSS, the tables (HTML), the figures (matplotlib,
base64 PNG in ``<img src="data:...">``). The page loads nothing from disk or
the network, so it can be mailed, attached to an MLflow run or opened
offline. Every string that comes from the data (feature names, class names,
the source's path) is HTML-escaped.

Small pure functions, one per part; :func:`run_report` puts them together.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Iterable, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclfs.baselines import REGISTRY
from iclfs.project._figures import (
    MAX_POINTS,
    accuracy_figure,
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
NO_LABELS = "no labels: the k-means accuracy was not evaluated"
NAMES_LISTED = 20  # names a sentence lists of the features or samples that came or went
NAMES_A_CELL = 10  # names a cell of the per-k table lists of those that entered or left the list
EVERY_NAME = " (selection_stability.json)"  # where the names a list leaves out are

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1100px;
padding:1.5rem;color:#222;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.3rem}h2{font-size:1.25rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;
margin-top:2rem}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}dl.facts dt{font-weight:600}
dl.facts dd{margin:0}
nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.4rem 1rem}
table{border-collapse:collapse;font-size:.9rem;margin:.5rem 0}
th,td{border:1px solid #ccc;padding:.2rem .5rem;text-align:right}th{background:#f3f3f3}
td.text{text-align:left}
figure{margin:.5rem 0}figure img{max-width:100%;height:auto}figcaption{font-size:.85rem;color:#555}
.note{color:#555;font-style:italic}
.in{color:#1a7f37;font-weight:600}.out{color:#b42318;font-weight:600}
.pair{display:flex;flex-wrap:wrap;gap:1rem}.pair figure{flex:1 1 420px}
"""


# --- strings and tables ------------------------------------------------------------


def esc(value: object) -> str:
    """``value`` as HTML text: ``<``, ``>``, ``&`` and both quotes escaped."""
    return html.escape(str(value), quote=True)


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


def html_table(frame: pd.DataFrame, classes: Mapping[str, str] | None = None, digits: int = 4,
               raw_columns: Iterable[str] = ()) -> str:
    """``frame`` as an HTML table, every header and cell escaped.

    ``classes`` maps a column to the CSS class of its cells; ``raw_columns``
    are columns whose cells are already HTML (built with :func:`esc`).
    """
    classes = dict(classes or {})
    raw = set(raw_columns)
    head = "".join(f"<th>{esc(column)}</th>" for column in frame.columns)
    rows = []
    for record in frame.itertuples(index=False, name=None):
        cells = []
        for column, value in zip(frame.columns, record):
            text = value if column in raw else esc(format_value(value, digits))
            css = classes.get(column) or ("text" if isinstance(value, str) else "")
            cells.append(f'<td class="{css}">{text}</td>' if css else f"<td>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def figure_html(fig: plt.Figure, alt: str, caption: str = "") -> str:
    """``fig`` as an inline base64 PNG ``<figure>`` (the figure is closed)."""
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=100)
    finally:
        plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    caption_html = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return f'<figure><img alt="{esc(alt)}" src="data:image/png;base64,{data}">{caption_html}</figure>'


def section_html(section_id: str, body: str) -> str:
    """One ``<section>`` with its title from :data:`SECTIONS`."""
    return f'<section id="{section_id}"><h2>{esc(SECTIONS[section_id])}</h2>{body}</section>'


def note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'


# --- what LGRC changed -------------------------------------------------------------


# --- sections --------------------------------------------------------------------


def header_html(ground_truth: Mapping, shape: tuple[int, int], labels: Mapping, k_choice: Mapping) -> str:
    """The title and the facts: the table read, its shape, labels, the chosen k and why."""
    source = ground_truth.get("source") or "unknown"
    n_samples, n_features = shape
    classes = list(labels.get("classes") or []) if labels else []
    label_text = f"{len(classes)} classes" if labels and labels.get("codes") else "no labels"
    facts = [("table", esc(source)),  # the file read (the data source is a folder of runs)
             ("shape", f"{n_samples} samples &times; {n_features} features"),
             ("labels", esc(label_text)),
             ("chosen k", esc(k_choice.get("k"))),
             ("why", esc(k_choice.get("reason", "")))]
    body = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    agreement = k_choice.get("agreement")
    extra = ""
    if agreement:
        table = pd.DataFrame({"k": [int(k) for k in agreement], "member agreement": list(agreement.values())})
        extra = "<p>Agreement of the members at every k:</p>" + html_table(table.sort_values("k"))
    nav = "".join(f'<li><a href="#{key}">{esc(title)}</a></li>' for key, title in SECTIONS.items())
    return (f"<header><h1>ICLFS run report: {esc(source)}</h1><dl class=\"facts\">{body}</dl>{extra}"
            f"<nav><ul>{nav}</ul></nav></header>")


def selected_section(feature_list: pd.DataFrame, feature_ranking: pd.DataFrame) -> str:
    """The selected features: rank, name, index, score, Laplacian score, member frequency when present."""
    columns = ["rank", "feature_name", "feature_index", "score", "laplacian_score"]
    columns += ["member_frequency"] if "member_frequency" in feature_list else []
    table = feature_list[columns].copy()
    table["feature_name"] = table["feature_name"].astype(str)
    swapped_in, _ = swapped_features(feature_ranking, feature_list)
    table["LGRC"] = ['<span class="in">swapped in</span>' if int(i) in swapped_in else ""
                     for i in table["feature_index"]]
    body = html_table(table, classes={"feature_name": "text", "LGRC": "text"}, raw_columns=["LGRC"])
    count = f"{len(table)} feature" + ("s" if len(table) != 1 else "")
    return section_html("selected", f"<p>{count}, best first.</p>{body}")


def loss_section(training_log: pd.DataFrame) -> str:
    if "method" in training_log and len(training_log):
        method = training_log["method"].iloc[0]
        seconds = float(training_log["member_seconds"].iloc[0]) if "member_seconds" in training_log else 0
        if training_log["loss"].isna().all():
            return section_html("loss", note(f"{method} (selection.method) trains no network: it selected in "
                                             f"{seconds:.1f} s"))
        caption = (f"{method} (selection.method): one network per k, "
                   f"{training_log.groupby('member')['epoch'].count().max()} epochs at most; {seconds:.1f} s")
        return section_html("loss", figure_html(training_loss_figure(training_log), "training loss per k",
                                                caption))
    members = training_log["member"].nunique() if "member" in training_log else 1
    epochs = int(training_log["epoch"].max()) if len(training_log) else 0
    caption = f"{members} member(s), {epochs} epoch(s)"
    if "schedule" in training_log and len(training_log):
        caption += f"; schedule {training_log['schedule'].iloc[0]}"
    if "device" in training_log and len(training_log):
        caption += f" on {training_log['device'].iloc[0]}"
    return section_html("loss", figure_html(training_loss_figure(training_log), "training loss per network",
                                            caption))


def scores_section(feature_ranking: pd.DataFrame, feature_list: pd.DataFrame) -> str:
    fig = score_distribution_figure(feature_ranking, feature_list)
    return section_html("scores", figure_html(fig, "score distribution with the top-k cut",
                                              f"{len(feature_ranking)} features; the red line is the top-"
                                              f"{len(feature_list)} cut of the ranking"))


def lgrc_section(feature_ranking: pd.DataFrame, laplacian_scores: pd.DataFrame,
                 feature_list: pd.DataFrame) -> str:
    """The scatter, and the features LGRC swapped in and out, listed."""
    swapped_in, swapped_out = swapped_features(feature_ranking, feature_list)
    ls = laplacian_scores.set_index("feature_index")["laplacian_score"].astype(float)
    not_finite = int((~np.isfinite(ls)).sum())
    caption = "grey: every feature; blue: selected; green triangles: swapped in; red crosses: swapped out"
    if not_finite:
        caption += f"; {not_finite} feature(s) with an infinite Laplacian score (constant) are not drawn"
    fig = score_vs_laplacian_figure(feature_ranking, laplacian_scores, feature_list)
    body = figure_html(fig, "network score against Laplacian score", caption)
    if not swapped_in and not swapped_out:
        body += note(f"LGRC kept the first {len(feature_list)} features of the ranking: nothing swapped.")
        return section_html("lgrc", body)
    by_index = feature_ranking.set_index("feature_index")
    rows = [{"change": f'<span class="{side}">swapped {side}</span>',
             "feature_name": str(by_index.loc[i, "feature_name"]), "feature_index": int(i),
             "ranking rank": int(by_index.loc[i, "rank"]), "score": float(by_index.loc[i, "score"]),
             "laplacian_score": float(ls.get(i, np.nan))}
            for side, indices in (("in", swapped_in), ("out", swapped_out)) for i in indices]
    body += (f"<p>LGRC swapped {len(swapped_in)} feature(s) in and {len(swapped_out)} out at k = "
             f"{len(feature_list)}.</p>")
    body += html_table(pd.DataFrame(rows), classes={"change": "text", "feature_name": "text"}, raw_columns=["change"])
    return section_html("lgrc", body)


def accuracy_section(evaluation_table: pd.DataFrame | None, k: int) -> str:
    """The accuracy curve and table with labels; "no labels" (and any recall columns) without."""
    if evaluation_table is None or "accuracy_mean" not in evaluation_table:
        body = note(NO_LABELS)
        if evaluation_table is not None and "informative_recall" in evaluation_table:
            body += "<p>Known informative features recovered:</p>" + html_table(evaluation_table)
        return section_html("accuracy", body)
    fig = accuracy_figure(evaluation_table, k)
    body = figure_html(fig, "k-means accuracy against k", "mean +- std over the k-means runs")
    best = evaluation_table.sort_values(["accuracy_mean", "k"], ascending=[False, True]).iloc[0]
    body += (f"<p>Best k by mean accuracy: {int(best['k'])} ({100 * float(best['accuracy_mean']):.1f} %); "
             f"chosen k: {k}.</p>")
    return section_html("accuracy", body + html_table(evaluation_table))


def pca_section(standardized_data: np.ndarray, feature_list: pd.DataFrame, labels: Mapping) -> str:
    indices = feature_list.sort_values("rank")["feature_index"].astype(int).tolist()
    coloured = "coloured by label" if labels and labels.get("codes") else "no labels: one colour"
    caption = f"{len(standardized_data)} samples, standardized; {coloured}"
    if len(standardized_data) > MAX_POINTS:
        caption += f"; {MAX_POINTS} of them drawn (the projection uses all)"
    fig = pca_figure(standardized_data, indices, labels)
    return section_html("pca", figure_html(fig, "PCA of the samples on all and on the selected features", caption))


def _names(names: Sequence, total: int | None = None, where: str = "") -> str:
    """``names`` joined, then how many of ``total`` (all of them: ``len(names)``) are not, and ``where`` they
    are."""
    names = [str(name) for name in names]
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
    return lines


def stability_section(selection_stability: Mapping, k: int) -> str:
    """Nogueira's Phi, and the overlap with the previous run's selection per k (the chosen k first)."""
    sentences = "".join(f"<p>{esc(line)}.</p>" for line in stability_sentences(selection_stability))
    previous = selection_stability.get("previous_version")
    if previous is None:
        return section_html("stability", sentences + note(selection_stability.get("message")
                                                          or "first run for this data source: nothing to compare"))
    per_k = {int(kk): value for kk, value in (selection_stability.get("per_k") or {}).items()}
    rows = []
    for kk in sorted(per_k, key=lambda value: (value != k, value)):
        value = per_k[kk]
        rows.append({"k": kk, "jaccard": value.get("jaccard"), "overlap": value.get("overlap"),
                     "rank_correlation": value.get("rank_correlation"),
                     **{key: _names(value.get(key, [])[:NAMES_A_CELL], len(value.get(key, [])), EVERY_NAME)
                        for key in ("entered", "left")},
                     "note": value.get("message", "")})
    body = sentences + f"<p>Compared with the selection of version {esc(previous)}.</p>"
    body += html_table(pd.DataFrame(rows), classes={"entered": "text", "left": "text", "note": "text"})
    return section_html("stability", body)


def page_html(title: str, header: str, sections: Sequence[str]) -> str:
    """The whole page: doctype, inline CSS, the header and the sections.

    Pure ASCII (any other character as a numeric reference), so the file reads
    the same whatever encoding it is saved or opened with.
    """
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{esc(title)}</title>"
            f"<style>{CSS}</style></head><body>{header}<main>{''.join(sections)}</main></body></html>\n")
    return page.encode("ascii", "xmlcharrefreplace").decode("ascii")


def run_report(ground_truth: Mapping, standardized_data: np.ndarray, labels: Mapping, k_choice: Mapping,
               feature_list: pd.DataFrame, training_log: pd.DataFrame, feature_ranking: pd.DataFrame,
               laplacian_scores: pd.DataFrame, evaluation_table: pd.DataFrame | None,
               selection_stability: Mapping) -> str:
    """The run's report as one HTML string (see the module docstring)."""
    k = int(k_choice["k"])
    sections = [
        selected_section(feature_list, feature_ranking),
        loss_section(training_log),
        scores_section(feature_ranking, feature_list),
        lgrc_section(feature_ranking, laplacian_scores, feature_list),
        accuracy_section(evaluation_table, k),
        pca_section(standardized_data, feature_list, labels),
        stability_section(selection_stability, k),
    ]
    header = header_html(ground_truth, tuple(np.shape(standardized_data)), labels, k_choice)
    return page_html(f"ICLFS run report: {ground_truth.get('source') or 'unknown'}", header, sections)
