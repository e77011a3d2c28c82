"""The run report (src/iclfs/pipelines/report/_report.py and its template, src/iclfs/templates/run_report.html.j2):
its pure functions on hand-made tables, and the report and list of two real refreshes."""

from __future__ import annotations

import base64
import html
import re

import numpy as np
import pandas as pd
import pytest
import yaml

from iclfs.method._lgrc import laplacian_gate, select_features
from iclfs.project import _figures as figures
from iclfs.pipelines.report import _report as report
from iclfs.pipelines.report.nodes import compare_with_previous

NAMES = ["alpha", "<b>&x", "gamma", "delta", "eps$ilon", "zeta", "eta", "theta"]
LAPLACIAN = np.array([0.9, 0.2, 0.3, 0.4, 0.1, 0.8, np.inf, 0.5])  # the gate, gamma, is 0.65: its 0.75 quantile
SELECTION = {"method": "iclfs", "k": 3, "k_values": [3, 6], "use_lgrc": True, "alpha": 1.5, "quantile": 0.75}


def ranking_of(order: list[int], names: list[str] = NAMES, gate: np.ndarray = LAPLACIAN) -> pd.DataFrame:
    """A feature_ranking table whose best-first order is ``order`` (scores decreasing), gated by ``gate``."""
    return pd.DataFrame({
        "rank": np.arange(1, len(order) + 1),
        "feature_index": order,
        "feature_name": [names[i] for i in order],
        "score": np.linspace(1.0, 0.3, len(order)),
        "score_name": "z_norm",
        "laplacian_gate": np.asarray(gate)[order],
    })


def selection_of(ranking: pd.DataFrame, chosen: list[int], laplacian: np.ndarray) -> pd.DataFrame:
    """A feature_list with ``chosen`` (feature indices, best first)."""
    by_index = ranking.set_index("feature_index")
    return pd.DataFrame({
        "rank": np.arange(1, len(chosen) + 1),
        "feature_name": [by_index.loc[i, "feature_name"] for i in chosen],
        "feature_index": chosen,
        "score": [by_index.loc[i, "score"] for i in chosen],
        "score_name": "z_norm",
        "laplacian_score": laplacian[chosen],
    })


def laplacian_table(laplacian: np.ndarray = LAPLACIAN, names: list[str] = NAMES) -> pd.DataFrame:
    return pd.DataFrame({"feature_index": range(len(names)), "feature_name": names, "laplacian_score": laplacian})


@pytest.fixture
def inputs() -> dict:
    return hand_made_inputs()


def hand_made_inputs() -> dict:
    """Every input of :func:`report.run_report`, hand-made: 30 samples, 8 features, 2 labelled classes, k = 3.

    LGRC at k = 3 pools the first round(1.5 x 3) = 4 of the ranking (0, 1, 2, 3) and swaps feature 0 (Laplacian
    score 0.9, above the gate 0.65) for the next, 4; the pool 1, 2, 3, 4 is then cut to 1, 2, 3: 0 out, 3 in.
    """
    rng = np.random.default_rng(0)
    ranking = ranking_of([0, 1, 2, 3, 4, 5, 6, 7])
    return {
        "ground_truth": {"source": "data/<in>&out.csv"},
        "standardized_data": rng.normal(size=(30, 8)).astype(np.float32),
        "labels": {"classes": ["a<1", "b&2"], "codes": [i % 2 for i in range(30)]},
        "k_choice": {"k": 3, "reason": "selection.k = 3"},
        "feature_list": selection_of(ranking, [1, 2, 3], LAPLACIAN),
        "training_log": pd.DataFrame({"member": [0, 0, 1, 1], "epoch": [1, 2, 1, 2],
                                      "loss": [4.0, 3.0, 4.1, 3.2], "schedule": "fast", "device": "cpu"}),
        "feature_ranking": ranking,
        "laplacian_scores": laplacian_table(),
        "evaluation_table": pd.DataFrame({"k": [3, 6], "accuracy_mean": [0.8, 0.7], "accuracy_std": [0.01, 0.02],
                                          "nmi_mean": [0.5, 0.4], "nmi_std": [0.0, 0.0]}),
        "selection_stability": {"previous_version": None,
                                "message": "first run for this data source: nothing to compare"},
        "selection": SELECTION,
    }


def section(page: str, section_id: str) -> str:
    """The section's HTML as it stands in the page (escaped)."""
    match = re.search(rf'<section id="{section_id}">(.*?)</section>', page, re.S)
    assert match, f"no section {section_id}"
    return match.group(1)


def text_of(markup: str) -> str:
    """What a reader sees of ``markup``: the tags dropped, the references read."""
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


def swap_rows(markup: str) -> list[tuple[str, str, str]]:
    """The LGRC section's swap table as (change, by, feature name) rows, unescaped."""
    rows = re.findall(r'<tr><td class="text"><span class="(?:in|out)">(swapped (?:in|out))</span></td>'
                      r'<td class="text">([^<]*)</td><td class="text">([^<]*)</td>', markup)
    return [(change, html.unescape(by), html.unescape(name)) for change, by, name in rows]


# --- what LGRC changed, and what the hold changed ----------------------------------------------------------


def test_lgrc_swaps_are_its_gate_at_k_against_the_rankings_first_k(inputs):
    changes = figures.list_changes(inputs["feature_ranking"], inputs["feature_list"], SELECTION)
    assert changes.by == {figures.LGRC: ([3], [0]), figures.HOLD: ([], [])}
    assert changes.gate == pytest.approx(0.65)
    markup = report.run_report(**inputs)
    lgrc = section(markup, "lgrc")
    assert swap_rows(lgrc) == [("swapped in", "LGRC", "delta"), ("swapped out", "LGRC", "alpha")]
    assert ("LGRC swapped 1 feature(s) in and 1 out of the ranking's first 3: a feature goes out when its Laplacian "
            "score (laplacian_gate) is above the gate, 0.65.") in text_of(lgrc)
    assert "hold" not in text_of(lgrc)
    assert '<span class="in">LGRC</span>' in section(markup, "selected")  # delta, in the selected table


def test_the_holds_swaps_are_told_from_lgrcs(inputs):
    """A carried run's list held to the last one: feature 4 (on the last list) kept, 3 (LGRC's) made way."""
    inputs["feature_list"] = selection_of(inputs["feature_ranking"], [1, 2, 4], LAPLACIAN)
    changes = figures.list_changes(inputs["feature_ranking"], inputs["feature_list"], SELECTION)
    assert changes.by == {figures.LGRC: ([3], [0]), figures.HOLD: ([4], [3])}
    markup = report.run_report(**inputs)
    lgrc = section(markup, "lgrc")
    assert swap_rows(lgrc) == [("swapped in", "LGRC", "delta"), ("swapped out", "LGRC", "alpha"),
                               ("swapped in", "the hold", "eps$ilon"), ("swapped out", "the hold", "delta")]
    seen = text_of(lgrc)
    assert "LGRC swapped 1 feature(s) in and 1 out of the ranking's first 3" in seen
    assert "The hold to the last list" in seen and "brought 1 feature(s) in and took 1 out, against LGRC's 3" in seen
    selected = section(markup, "selected")
    assert '<span class="in">the hold</span>' in selected and '<span class="in">LGRC</span>' not in selected


@pytest.mark.parametrize("seed", range(40))
def test_lgrc_swaps_out_only_features_above_its_gate_and_the_hold_is_the_rest(seed):
    """On random rankings and lists: every feature LGRC takes out is gated above gamma, LGRC's and the hold's
    parts compose (first k, then LGRC's k, then the list), and each side is counted once."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(8, 60))
    k = int(rng.integers(1, d // 2 + 1))
    names = [f"f{j}" for j in range(d)]
    gate = rng.uniform(0, 1, d)
    gate[rng.random(d) < 0.1] = np.inf  # constant features
    ranking = ranking_of(list(rng.permutation(d)), names, gate)
    listed = list(rng.choice(d, size=k, replace=False))
    changes = figures.list_changes(ranking, selection_of(ranking, listed, gate), {**SELECTION, "k": k,
                                                                                  "k_values": [k]})
    order = ranking["feature_index"].to_numpy()
    gated = select_features(order, gate, k, alpha=1.5, quantile=0.75)
    lgrc_in, lgrc_out = changes.by[figures.LGRC]
    hold_in, hold_out = changes.by[figures.HOLD]
    assert changes.gate == laplacian_gate(gate, 0.75)
    assert all(gate[i] > changes.gate for i in lgrc_out)
    assert (set(order[:k]) - set(lgrc_out)) | set(lgrc_in) == set(gated)
    assert (set(gated) - set(hold_out)) | set(hold_in) == set(listed)
    assert len(lgrc_in) == len(lgrc_out) and len(hold_in) == len(hold_out)


def test_another_method_is_not_credited_to_lgrc(inputs):
    inputs["feature_list"] = selection_of(inputs["feature_ranking"], [1, 2, 5], LAPLACIAN)
    inputs["selection"] = {**SELECTION, "method": "variance"}
    lgrc = section(report.run_report(**inputs), "lgrc")
    assert swap_rows(lgrc) == [("swapped in", "the members", "zeta"), ("swapped out", "the members", "alpha")]
    assert ("variance is not corrected by LGRC: its list is the 3 features its members chose most, 1 of them not "
            "among the ranking's first 3") in text_of(lgrc)
    assert "LGRC swapped" not in text_of(lgrc)


def test_without_lgrc_the_first_k_is_nothing_swapped(inputs):
    inputs["feature_list"] = selection_of(inputs["feature_ranking"], [2, 0, 1], LAPLACIAN)  # reordered
    inputs["selection"] = {**SELECTION, "use_lgrc": False}
    assert "nothing swapped" in section(report.run_report(**inputs), "lgrc")


def test_without_the_selection_settings_no_cause_is_named(inputs):
    """What the notebook draws from a run's files alone: the differences from the first k, no cause named."""
    inputs["feature_list"] = selection_of(inputs["feature_ranking"], [1, 2, 4], LAPLACIAN)
    del inputs["selection"]
    lgrc = section(report.run_report(**inputs), "lgrc")
    assert swap_rows(lgrc) == [("swapped in", "not the first k", "eps$ilon"), ("swapped out", "not the first k",
                                                                               "alpha")]
    assert "1 listed feature(s) are not among the ranking's first 3" in text_of(lgrc)
    fig = figures.score_vs_laplacian_figure(inputs["feature_ranking"], inputs["laplacian_scores"],
                                            inputs["feature_list"])
    try:
        assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()][2:4] == ["swapped in", "swapped out"]
    finally:
        figures.plt.close(fig)


def test_the_lgrc_figure_marks_lgrc_and_the_hold_apart(inputs):
    listed = selection_of(inputs["feature_ranking"], [1, 2, 4], LAPLACIAN)
    changes = figures.list_changes(inputs["feature_ranking"], listed, SELECTION)
    fig = figures.score_vs_laplacian_figure(inputs["feature_ranking"], inputs["laplacian_scores"], listed, changes)
    try:
        legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    finally:
        figures.plt.close(fig)
    assert legend[2:6] == ["swapped in by LGRC", "swapped out by LGRC", "swapped in by the hold",
                           "swapped out by the hold"]


def test_swapped_features_are_every_difference_from_the_first_k_whatever_the_row_order():
    ranking = ranking_of([5, 3, 0, 7, 1, 2, 4, 6])
    selected = selection_of(ranking, [3, 1, 5, 2], np.zeros(8))
    assert figures.swapped_features(ranking, selected) == ([1, 2], [0, 7])  # in: list order; out: ranking order
    shuffled = figures.swapped_features(ranking.sample(frac=1, random_state=1), selected.sample(frac=1, random_state=2))
    assert shuffled == ([1, 2], [0, 7])
    assert figures.swapped_features(ranking, selection_of(ranking, [0, 5, 3], np.zeros(8))) == ([], [])


def test_lgrc_section_counts_the_features_it_cannot_draw(inputs):
    changes = figures.list_changes(inputs["feature_ranking"], inputs["feature_list"], SELECTION)
    blocks = report.lgrc_section(inputs["feature_ranking"], inputs["laplacian_scores"], inputs["feature_list"], changes)
    assert "1 feature(s) with an infinite Laplacian score" in blocks[0]["caption"]  # feature 6 is constant
    assert [b["kind"] for b in blocks] == ["figure", "p", "table"]


# --- escaping: the template's autoescape --------------------------------------------------------------------


HOSTILE = '<script>alert("x")</script>'


def test_a_hostile_feature_name_is_escaped_wherever_it_appears(inputs):
    names = [HOSTILE if name == "delta" else name for name in NAMES]  # delta: selected and swapped in by LGRC
    ranking = ranking_of(list(range(8)), names)
    inputs.update(feature_ranking=ranking, feature_list=selection_of(ranking, [1, 2, 3], LAPLACIAN),
                  laplacian_scores=laplacian_table(names=names))
    inputs["labels"] = {"classes": [HOSTILE, "b"], "codes": [i % 2 for i in range(30)]}
    inputs["ground_truth"] = {"source": f"data/{HOSTILE}.csv"}
    inputs["k_choice"] = {"k": 3, "reason": HOSTILE}
    inputs["selection_stability"] = {"previous_version": HOSTILE, "history": {"carry": True, "members": 2,
                                                                             "note": HOSTILE},
                                     "per_k": {"3": {"jaccard": 0.5, "overlap": 2, "rank_correlation": 1.0,
                                                     "entered": [HOSTILE], "left": [HOSTILE], "message": HOSTILE}}}
    page = report.run_report(**inputs)
    assert "<script" not in page.lower() and "alert(\"x\")" not in page
    escaped = "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"
    assert escaped in section(page, "selected") and escaped in section(page, "lgrc")
    assert escaped in section(page, "stability") and f"<title>ICLFS run report: data/{escaped}.csv</title>" in page
    assert f"<dt>why</dt><dd>{escaped}</dd>" in page


def test_the_template_escapes_what_it_is_given():
    """Autoescape is on in the template itself: markup handed in as text is shown, never read."""
    page = report.render("<i>t</i>", [("<b>fact</b>", "x & y")], [report.paragraph("<p>para</p>")],
                         {"selected": [report.note("<em>n</em>"),
                                       report.table(pd.DataFrame({"<th>": ["<td>"],
                                                                  "m": [report.Marked("<u>", "in")]}))]})
    for tag in ("<i>", "<b>", "<em>", "<u>", "<th><", "<td><", "<p><p>"):
        assert tag not in page
    assert "&lt;b&gt;fact&lt;/b&gt;" in page and "x &amp; y" in page and '<span class="in">&lt;u&gt;</span>' in page
    assert report.environment().autoescape is True


def test_table_cells():
    block = report.table(pd.DataFrame({"feature_name": ["<b>&x"], "score": [0.123456789], "missing": [np.nan]}))
    assert block["columns"] == ["feature_name", "score", "missing"]
    assert block["rows"] == [[{"text": "<b>&x", "css": "text", "mark": ""}, {"text": "0.1235", "css": "", "mark": ""},
                              {"text": "", "css": "", "mark": ""}]]
    assert figures.plain("eps$ilon") == r"eps\$ilon"  # never read as mathtext by matplotlib


def test_a_stability_section_names_the_features_that_entered_and_left():
    page = report.render("t", [], [], {"stability": report.stability_section(
        {"previous_version": "2026-01-01T00.00.00.000Z",
         "per_k": {"3": {"jaccard": 0.5, "overlap": 2, "rank_correlation": 1.0, "entered": ["<b>&x"], "left": ["a<c"]},
                   "6": {"message": "k = 6 was not selected in the previous run"}}}, 3)})
    assert "&lt;b&gt;&amp;x" in page and "a&lt;c" in page and "<b>" not in page
    assert "2026-01-01T00.00.00.000Z" in page and "k = 6 was not selected" in page
    assert page.index("<td>3</td>") < page.index("<td>6</td>")  # the chosen k first


def test_a_stability_section_shows_ten_names_per_cell_and_counts_the_rest():
    entered = [f"e{j}" for j in range(15)]
    (table,) = [b for b in report.stability_section(
        {"previous_version": "2026-01-01T00.00.00.000Z",
         "per_k": {"20": {"jaccard": 0.2, "overlap": 5, "rank_correlation": 0.1, "entered": entered,
                          "left": ["gone"]}}}, 20) if b["kind"] == "table"]
    cells = [cell["text"] for cell in table["rows"][0]]
    assert ", ".join(entered[:10]) + " and 5 more (selection_stability.json)" in cells and "gone" in cells


# --- labels or not ----------------------------------------------------------------


def test_with_labels_the_report_has_accuracy_and_coloured_pca(inputs):
    page = report.run_report(**inputs)
    accuracy = section(page, "accuracy")
    assert "<img" in accuracy and "accuracy_mean" in accuracy and "no labels" not in accuracy
    assert "Best k by mean accuracy: 3 (80.0 %)" in accuracy
    assert "coloured by label" in section(page, "pca")
    assert "<dt>labels</dt><dd>2 classes</dd>" in page


def test_without_labels_the_report_says_no_labels(inputs):
    inputs["labels"] = {"classes": [], "codes": []}
    inputs["evaluation_table"] = pd.DataFrame({"k": [3, 6]})  # what evaluate_with_kmeans writes without labels
    page = report.run_report(**inputs)
    accuracy = section(page, "accuracy")
    assert report.NO_LABELS in accuracy and "<img" not in accuracy
    assert "no labels: one colour" in section(page, "pca")
    assert "<dt>labels</dt><dd>no labels</dd>" in page


def test_without_labels_known_informative_features_are_still_reported(inputs):
    inputs["labels"] = {"classes": [], "codes": []}
    inputs["evaluation_table"] = pd.DataFrame({"k": [3, 6], "informative_recovered": [1, 2],
                                               "informative_recall": [0.5, 1.0]})
    accuracy = section(report.run_report(**inputs), "accuracy")
    assert report.NO_LABELS in accuracy and "informative_recall" in accuracy


# --- the page as a whole ----------------------------------------------------------


def test_the_page_is_self_contained_with_every_section_and_figure(inputs):
    inputs["feature_ranking"]["selection_frequency_3"] = 0.5
    inputs["feature_list"]["selection_frequency"] = [1.0, 0.5, 0.5]
    inputs["k_choice"] = {"k": 3, "reason": "auto: the largest k the members agree on", "agreement": {"3": 0.9}}
    page = report.run_report(**inputs)
    assert page.startswith("<!DOCTYPE html>") and page.isascii()
    for key, title in report.SECTIONS.items():
        assert f'<section id="{key}"><h2>{title}</h2>' in page
        assert f'<li><a href="#{key}">{title}</a></li>' in page
    selected = section(page, "selected")
    assert "selection_frequency" in selected and "<th>score_name</th>" in selected
    assert "member agreement" in page and "auto: the largest k" in page
    assert "<dt>shape</dt><dd>30 samples &#215; 8 features</dd>" in page  # the one non-ASCII character, referenced
    images = re.findall(r'<img alt="[^"]*" src="data:image/png;base64,([^"]+)">', page)
    assert len(images) == 5  # loss, scores, LGRC, accuracy, PCA
    assert all(base64.b64decode(data).startswith(b"\x89PNG\r\n\x1a\n") for data in images)
    # nothing to fetch: no link, no script, no remote or file URL
    assert not re.search(r"<link|<script|src=\"(?!data:)|url\(|https?://|file:", page)


def test_pca_of_one_column_and_of_one_sample():
    coords, ratios = figures.pca_2d(np.arange(5.0)[:, None])
    np.testing.assert_allclose(coords[:, 0], [-2, -1, 0, 1, 2])
    assert not coords[:, 1].any() and ratios[0] == 1.0
    coords, ratios = figures.pca_2d(np.ones((1, 4)))
    assert coords.shape == (1, 2) and not coords.any()
    coords, ratios = figures.pca_2d(np.random.default_rng(0).normal(size=(20, 6)))
    assert coords.shape == (20, 2) and 0 < ratios[1] <= ratios[0] < 1


def test_a_single_selected_feature_still_gives_a_page(inputs):
    inputs["feature_list"] = inputs["feature_list"].head(1)
    inputs["k_choice"] = {"k": 1, "reason": "selection.k = 1"}
    page = report.run_report(**inputs)
    assert page.count("<img") == 5 and "<p>1 feature, best first.</p>" in page


def _stability_after(earlier_lists: list[list[str]], current: list[str], members: int) -> tuple[dict, dict]:
    """compare_with_previous for a list after ``earlier_lists``, with ``members`` members' ranks, and the MLflow
    metrics the tracking hook logs from it."""
    from iclfs.project._tracked import run_metrics

    names = list("abcdefgh")
    ranking = pd.DataFrame({"rank": np.arange(1, 9), "feature_index": np.arange(8), "feature_name": names,
                            "members": members})
    for m in range(members):
        ranking[f"member_{m}_rank"] = np.roll(np.arange(1, 9), m)
    listed = pd.DataFrame({"rank": np.arange(1, len(current) + 1), "feature_name": current})
    earlier = pd.DataFrame([{"version": f"v{i}", "rank": r + 1, "feature_name": n}
                            for i, names_i in enumerate(earlier_lists) for r, n in enumerate(names_i)],
                           columns=["version", "rank", "feature_name"])
    summary = compare_with_previous(pd.DataFrame(columns=["k", "rank", "feature_name"]),
                                    pd.DataFrame(columns=["k", "rank", "feature_name"]), listed, earlier, ranking,
                                    {"carry": True}, {"previous_version": None}, {}, {})
    return summary, run_metrics(lambda name: summary if name == "selection_stability" else None)[0]


def test_two_lists_give_phi_without_an_interval_and_three_give_both():
    summary, metrics = _stability_after([list("abc")], list("abd"), members=2)
    lists = summary["nogueira"]["lists"]
    assert lists["selections"] == 2 and lists["phi"] is not None and lists["lower"] is None and lists["upper"] is None
    assert "nogueira_lists" in metrics and "nogueira_members" in metrics
    assert not {"nogueira_lists_lower", "nogueira_lists_upper", "nogueira_members_lower"} & set(metrics)
    sentences = report.stability_sentences(summary)
    assert "Nogueira's Phi over the last 2 lists: " in sentences[1] and sentences[1].endswith(
        "(an interval needs 3 or more)")
    assert all("95 % interval" not in line for line in sentences)

    summary, metrics = _stability_after([list("abc"), list("abe")], list("abd"), members=3)
    lists = summary["nogueira"]["lists"]
    assert lists["selections"] == 3 and lists["lower"] <= lists["phi"] <= lists["upper"]
    assert {"nogueira_lists", "nogueira_lists_lower", "nogueira_lists_upper", "nogueira_members_lower"} <= set(metrics)
    assert all("95 % interval" in line for line in report.stability_sentences(summary)[1:])


# --- two real refreshes: the list names its score, the report tells the hold's swaps from LGRC's ---------------


def versions_of(project, artifact: str) -> list:
    """Every version's file of ``artifact`` (``<layer>/<file>``) of ICLFS on the synthetic source, oldest first."""
    layer, name = artifact.split("/")
    return sorted((project / "data" / layer / "synthetic" / "iclfs" / name).glob(f"*/{name}"))


@pytest.mark.slow
def test_a_first_and_a_carried_refresh_name_their_scores_and_the_report_credits_the_holds_swaps(project):
    from tests.pipelines.conftest import run_session

    run_session(project)
    run_session(project)  # the same table again: its member is carried onto the first run's
    lists = [pd.read_csv(path) for path in versions_of(project, "07_model_output/feature_list.csv")]
    rankings = [pd.read_csv(path) for path in versions_of(project, "07_model_output/feature_ranking.csv")]
    assert len(lists) == len(rankings) == 2
    # The list says what its score is, as the ranking does: a first run's own score, a carried run's mean rank.
    for listed, ranking in zip(lists, rankings):
        assert set(listed["score_name"]) == {ranking["score_name"].iloc[0]}
        by_name = ranking.set_index("feature_name")["score"]
        np.testing.assert_array_equal(listed["score"], by_name[listed["feature_name"]].to_numpy())
    assert lists[0]["score_name"].iloc[0] == "z_norm"
    assert lists[1]["score_name"].iloc[0].startswith("carried mean rank of z_norm (2 members)")

    # The carried run held its list to the first one; its report credits those swaps to the hold, not LGRC.
    parameters = yaml.safe_load((project / "conf/local/parameters.yml").read_text())
    selection = {**yaml.safe_load((project / "conf/base/parameters_selection.yml").read_text())["selection"],
                 **parameters["selection"]}
    changes = figures.list_changes(rankings[1], lists[1], selection)
    hold_in, hold_out = changes.by[figures.HOLD]
    assert hold_in and hold_out, "the carried run's hold changed nothing: this test needs a table where it does"
    assert set(lists[0]["feature_index"]) >= set(hold_in) - set(changes.by[figures.LGRC][1])
    page = versions_of(project, "08_reporting/run_report.html")[1].read_text()
    names = rankings[1].set_index("feature_index")["feature_name"].astype(str)
    expected = [(f"swapped {side}", cause, names[i]) for cause, sides in changes.by.items()
                for side, indices in zip(("in", "out"), sides) for i in indices]
    assert swap_rows(section(page, "lgrc")) == expected
    assert "The hold to the last list" in text_of(section(page, "lgrc"))
