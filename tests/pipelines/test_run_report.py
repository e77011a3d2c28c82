"""The run report's pure functions (src/iclfs/pipelines/report/_report.py), on hand-made tables."""

from __future__ import annotations

import base64
import re

import numpy as np
import pandas as pd
import pytest

from iclfs.project import _figures as figures
from iclfs.pipelines.report import _report as report
from iclfs.pipelines.report.nodes import compare_with_previous

NAMES = ["alpha", "<b>&x", "gamma", "delta", "eps$ilon", "zeta", "eta", "theta"]


def ranking_of(order: list[int], names: list[str] = NAMES) -> pd.DataFrame:
    """A feature_ranking table whose best-first order is ``order`` (scores decreasing)."""
    return pd.DataFrame({
        "rank": np.arange(1, len(order) + 1),
        "feature_index": order,
        "feature_name": [names[i] for i in order],
        "score": np.linspace(1.0, 0.3, len(order)),
        "score_name": "z_norm",
    })


def selection_of(ranking: pd.DataFrame, chosen: list[int], laplacian: np.ndarray) -> pd.DataFrame:
    """A feature_list with ``chosen`` (feature indices, best first)."""
    by_index = ranking.set_index("feature_index")
    return pd.DataFrame({
        "rank": np.arange(1, len(chosen) + 1),
        "feature_name": [by_index.loc[i, "feature_name"] for i in chosen],
        "feature_index": chosen,
        "score": [by_index.loc[i, "score"] for i in chosen],
        "laplacian_score": laplacian[chosen],
    })


@pytest.fixture
def inputs() -> dict:
    """Every input of :func:`report.run_report`, hand-made: 30 samples, 8 features, 2 labelled classes, k = 3."""
    rng = np.random.default_rng(0)
    laplacian = np.array([0.9, 0.2, 0.3, 0.4, 0.1, 0.8, np.inf, 0.5])
    ranking = ranking_of([0, 1, 2, 3, 4, 5, 6, 7])
    # LGRC dropped feature 0 (first of the ranking, worst Laplacian score) for feature 4.
    selected = selection_of(ranking, [1, 2, 4], laplacian)
    return {
        "ground_truth": {"source": "data/<in>&out.csv"},
        "standardized_data": rng.normal(size=(30, 8)).astype(np.float32),
        "labels": {"classes": ["a<1", "b&2"], "codes": [i % 2 for i in range(30)]},
        "k_choice": {"k": 3, "reason": "selection.k = 3"},
        "feature_list": selected,
        "training_log": pd.DataFrame({"member": [0, 0, 1, 1], "epoch": [1, 2, 1, 2],
                                          "loss": [4.0, 3.0, 4.1, 3.2], "schedule": "fast", "device": "cpu"}),
        "feature_ranking": ranking,
        "laplacian_scores": pd.DataFrame({"feature_index": range(8), "feature_name": NAMES,
                                          "laplacian_score": laplacian}),
        "evaluation_table": pd.DataFrame({"k": [3, 6], "accuracy_mean": [0.8, 0.7], "accuracy_std": [0.01, 0.02],
                                          "nmi_mean": [0.5, 0.4], "nmi_std": [0.0, 0.0]}),
        "selection_stability": {"previous_version": None, "message": "first run for this data source: nothing to compare"},
    }


def section(page: str, section_id: str) -> str:
    match = re.search(rf'<section id="{section_id}">(.*?)</section>', page, re.S)
    assert match, f"no section {section_id}"
    return match.group(1)


# --- LGRC's swaps -----------------------------------------------------------------


def test_swapped_in_and_out_at_the_chosen_k():
    ranking = ranking_of([5, 3, 0, 7, 1, 2, 4, 6])
    laplacian = np.zeros(8)
    # first 4 of the ranking: 5, 3, 0, 7; selected: 3, 1, 5, 2 (order of the selection)
    selected = selection_of(ranking, [3, 1, 5, 2], laplacian)
    swapped_in, swapped_out = figures.swapped_features(ranking, selected)
    assert swapped_in == [1, 2]  # selected, not in the first 4, in selection order
    assert swapped_out == [0, 7]  # in the first 4, not selected, in ranking order


def test_no_swap_when_the_selection_is_the_first_k_even_reordered():
    ranking = ranking_of([2, 0, 1, 3, 4, 5, 6, 7])
    selected = selection_of(ranking, [1, 2, 0], np.zeros(8))
    assert figures.swapped_features(ranking, selected) == ([], [])
    page = report.lgrc_section(ranking, pd.DataFrame({"feature_index": range(8), "laplacian_score": np.ones(8)}),
                               selected)
    assert "nothing swapped" in page


def test_swaps_do_not_depend_on_row_order():
    ranking = ranking_of([5, 3, 0, 7, 1, 2, 4, 6])
    selected = selection_of(ranking, [3, 1, 5, 2], np.zeros(8))
    shuffled = figures.swapped_features(ranking.sample(frac=1, random_state=1), selected.sample(frac=1, random_state=2))
    assert shuffled == ([1, 2], [0, 7])


def test_lgrc_section_lists_both_sides(inputs):
    html = report.lgrc_section(inputs["feature_ranking"], inputs["laplacian_scores"], inputs["feature_list"])
    assert "swapped 1 feature(s) in and 1 out at k = 3" in html
    assert '<span class="in">swapped in</span></td><td class="text">eps$ilon' in html
    assert '<span class="out">swapped out</span></td><td class="text">alpha' in html
    assert "1 feature(s) with an infinite Laplacian score" in html  # feature 6 is constant
    assert html.count("<img") == 1


# --- escaping ---------------------------------------------------------------------


def test_a_feature_name_with_markup_is_escaped_everywhere(inputs):
    page = report.run_report(**inputs)
    assert "<b>&x" not in page
    assert "&lt;b&gt;&amp;x" in section(page, "selected")
    assert "<b>" not in page
    # the source and the class names too
    assert "data/&lt;in&gt;&amp;out.csv" in page and "<in>" not in page


def test_escape_helpers():
    assert report.esc('<b>&x "q" \'s\'') == "&lt;b&gt;&amp;x &quot;q&quot; &#x27;s&#x27;"
    assert figures.plain("eps$ilon") == r"eps\$ilon"  # never read as mathtext by matplotlib
    table = report.html_table(pd.DataFrame({"feature_name": ["<b>&x"], "score": [0.123456789]}))
    assert "<td class=\"text\">&lt;b&gt;&amp;x</td>" in table and "<td>0.1235</td>" in table


def test_a_stability_section_escapes_the_names_that_entered_and_left():
    html = report.stability_section({"previous_version": "2026-01-01T00.00.00.000Z",
                                     "per_k": {"3": {"jaccard": 0.5, "overlap": 2, "rank_correlation": 1.0,
                                                     "entered": ["<b>&x"], "left": ["a<c"]},
                                               "6": {"message": "k = 6 was not selected in the previous run"}}}, 3)
    assert "&lt;b&gt;&amp;x" in html and "a&lt;c" in html and "<b>" not in html
    assert "2026-01-01T00.00.00.000Z" in html and "k = 6 was not selected" in html
    assert html.index("<td>3</td>") < html.index("<td>6</td>")  # the chosen k first



def test_a_stability_section_shows_ten_names_per_cell_and_counts_the_rest():
    entered = [f"e{j}" for j in range(15)]
    html = report.stability_section({"previous_version": "2026-01-01T00.00.00.000Z",
                                     "per_k": {"20": {"jaccard": 0.2, "overlap": 5, "rank_correlation": 0.1,
                                                      "entered": entered, "left": ["gone"]}}}, 20)
    assert ", ".join(entered[:10]) + " and 5 more (selection_stability.json)" in html
    assert "e10" not in html and "<td class=\"text\">gone</td>" in html

# --- labels or not ----------------------------------------------------------------


def test_with_labels_the_report_has_accuracy_and_coloured_pca(inputs):
    page = report.run_report(**inputs)
    accuracy = section(page, "accuracy")
    assert "<img" in accuracy and "accuracy_mean" in accuracy and "no labels" not in accuracy
    assert "Best k by mean accuracy: 3 (80.0 %)" in accuracy
    assert "coloured by label" in section(page, "pca")
    assert "2 classes" in page


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
    inputs["feature_ranking"]["top_3_frequency"] = 0.5
    inputs["feature_list"]["member_frequency"] = [1.0, 0.5, 0.5]
    inputs["k_choice"] = {"k": 3, "reason": "auto: the largest k the members agree on", "agreement": {"3": 0.9}}
    page = report.run_report(**inputs)
    assert page.startswith("<!DOCTYPE html>") and page.isascii()
    for key, title in report.SECTIONS.items():
        assert f'<section id="{key}"><h2>{title}</h2>' in page
    assert "member_frequency" in section(page, "selected")
    assert "member agreement" in page and "auto: the largest k" in page
    images = re.findall(r'<img alt="[^"]*" src="data:image/png;base64,([^"]+)">', page)
    assert len(images) == 5  # loss, scores, LGRC, accuracy, PCA
    assert all(base64.b64decode(data).startswith(b"\x89PNG\r\n\x1a\n") for data in images)
    # nothing to fetch: no link, no script, no remote or file URL
    assert not re.search(r"<link|<script|src=\"(?!data:)|url\(|https?://|file:", page)
    assert "<td class=\"text\"><span class=\"in\">swapped in</span></td>" in section(page, "selected")


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
    from iclfs.project._tracking import run_metrics

    names = list("abcdefgh")
    ranking = pd.DataFrame({"rank": np.arange(1, 9), "feature_index": np.arange(8), "feature_name": names})
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
