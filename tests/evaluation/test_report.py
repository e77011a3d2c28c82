"""The benchmark report: what it compares, the best k, the seed summaries, the fidelity tables, the page."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from iclfs.evaluation._benchmark import gather, method_name
from iclfs.evaluation._paper import PAPER_RESULTS
from iclfs.evaluation._report import (
    ReportSpec,
    against_variance,
    baseline_fidelity,
    best_baseline,
    best_rows,
    build_report,
    figure,
    headline,
    refused,
    spec_for,
    summarize,
)
from iclfs.method._config import Settings
from tests.evaluation.cells import cell as _cell

DEFAULT = "ICLFS [fast]"


def _results(*cells):
    return gather({str(i): cell for i, cell in enumerate(cells)})


def _spec(datasets=("COIL20", "arcene"), seeds=(42, 43)):
    return ReportSpec(default=DEFAULT, seeds=seeds, datasets=datasets)


def _selection(*features):
    return " ".join(map(str, features))


# -- what the report compares ---------------------------------------------------------


def test_spec_reports_the_default_settings_and_the_papers_run():
    spec = spec_for(Settings(), [42, 43, 44], ["COIL20", "arcene"])
    assert spec.default == DEFAULT == method_name(Settings())
    assert spec.seeds == (42, 43, 44) and spec.datasets == ("COIL20", "arcene")
    assert spec.paper_run == "ICLFS [published stream]"  # the literal loop with the published draws
    assert spec.stability_k == 50 and spec.target_points == 2.0
    members = spec_for(Settings().with_overrides("members.per_run=6"), [42], ["COIL20"])
    assert members.default == "ICLFS [fast, 6 members of 25 epochs, 0.5 of samples]"


def test_spec_for_a_grid_without_50():
    settings = Settings().with_overrides("selection.k=5,selection.k_values=[5,10]")
    assert spec_for(settings, [42], ["COIL20"]).default == method_name(settings)


def test_best_row_ties_go_to_the_smaller_k():
    table = _results(_cell(DEFAULT, 42, [0.6, 0.6]), _cell(DEFAULT, 43, [0.5, 0.7]))
    best = best_rows(table)
    assert list(zip(best["seed"], best["k"], strict=True)) == [(42, 50), (43, 100)]


# -- one method over the seeds --------------------------------------------------------


def test_summary_is_the_best_k_accuracy_per_seed_and_the_agreement_between_seeds():
    results = _results(
        _cell(DEFAULT, 42, [0.60, 0.50], selected=_selection(1, 2, 3, 4), seconds=12.0),
        _cell(DEFAULT, 43, [0.50, 0.70], selected=_selection(3, 4, 5, 6), seconds=14.0),
        _cell(DEFAULT, 44, [0.65, 0.40], selected=_selection(4, 3, 2, 1), seconds=16.0),
        _cell(DEFAULT, 45, [0.99, 0.99]),  # not an outer seed of this report
        _cell("all features", 42, [0.5], ks=(8,)),  # d = 8
    )
    summary = summarize(results, "COIL20", DEFAULT, [42, 43, 44], k=50)
    assert summary.seeds == (42, 43, 44)
    assert summary.accuracies == pytest.approx((60.0, 70.0, 65.0))
    assert summary.mean == pytest.approx(65.0) and summary.std == pytest.approx(4.0825, abs=1e-4)
    # Jaccard of the k = 50 selections, as sets: 42-43 2/6, 42-44 1 (order ignored), 43-44 2/6
    assert summary.jaccard == pytest.approx((1 / 3 + 1 + 1 / 3) / 3)
    # Nogueira of the three sets of 4 out of d = 8: p = (2/3, 2/3, 1, 1, 1/3, 1/3, 0, 0)
    p = [2 / 3, 2 / 3, 1, 1, 1 / 3, 1 / 3, 0, 0]
    expected = 1 - 1.5 * sum(x * (1 - x) for x in p) / 8 / (0.5 * 0.5)
    assert summary.phi == pytest.approx(expected)
    assert summary.seconds == pytest.approx(14.0)
    assert summary.cell() == "65.00 ± 4.08 (3)"
    one = summarize(results, "COIL20", DEFAULT, [42], k=50)
    assert one.std is None and one.jaccard is None and one.phi is None and one.cell() == "60.00 (1)"
    assert summarize(results, "arcene", DEFAULT, [42], k=50) is None
    assert summarize(results, "COIL20", "ICLFS", [42], k=50) is None


def test_pooled_selections_have_no_agreement():
    results = _results(_cell("random", 42, [0.5, 0.5], selected=""), _cell("random", 43, [0.5, 0.5], selected=""))
    summary = summarize(results, "COIL20", "random", [42, 43], k=50)
    assert summary.jaccard is None and summary.phi is None


def test_the_best_baseline_includes_random_and_all_features():
    results = _results(_cell("LS", 42, [0.50, 0.55]), _cell("random", 42, [0.58, 0.52]),
                       _cell("all features", 42, [0.57], ks=(300,)), _cell(DEFAULT, 42, [0.9, 0.9]))
    name, summary = best_baseline(results, "COIL20", [42], k=50)
    assert name == "random" and summary.mean == pytest.approx(58.0)
    assert best_baseline(results, "arcene", [42], k=50) is None


# -- the headline and the fidelity tables --------------------------------------------------


def test_headline_sets_the_default_against_the_best_baseline():
    results = _results(
        _cell(DEFAULT, 42, [0.50, 0.40], selected=_selection(1, 2), seconds=10.0),
        _cell(DEFAULT, 43, [0.60, 0.40], selected=_selection(3, 4), seconds=10.0),
        _cell("LS", 42, [0.52, 0.40], selected=_selection(1, 2)), _cell("LS", 43, [0.56, 0.40], selected=_selection(1, 2)),
        _cell("all features", 42, [0.3], ks=(5,)),
        _cell(DEFAULT, 42, [0.70, 0.40], dataset="arcene"),  # arcene: no baseline yet
    )
    lines = headline(results, _spec())
    assert lines[0] == (f"| dataset | {DEFAULT} (the default) | best baseline | Jaccard@50 | Φ@50 | "
                        "best baseline's Jaccard@50 | Φ@50 |")
    # d = 5, two disjoint pairs: 1 - 2 (4 / 4 / 5) / (0.4 0.6) = -2/3; LS selects {1, 2} twice: 1
    assert lines[2] == "| COIL20 | 55.00 ± 5.00 (2) | LS 54.00 ± 2.00 (2) | 0.00 | -0.67 | 1.00 | 1.00 |"
    assert lines[3] == "| arcene | 70.00 (1) | – | – | – | – | – |"
    assert lines[-1] == "The default is at or above the best baseline on 1 of 1 datasets."


def test_the_default_against_variance_by_the_rule_fixed_before_the_results():
    results = _results(
        _cell(DEFAULT, 42, [0.50, 0.40]), _cell(DEFAULT, 43, [0.60, 0.40]),  # 55 ± 5
        _cell("variance", 42, [0.45, 0.40]), _cell("dispersion", 42, [0.40, 0.30]),  # 45: below by more than 5
        _cell(DEFAULT, 42, [0.70, 0.40], dataset="arcene"), _cell(DEFAULT, 43, [0.70, 0.60], dataset="arcene"),
        _cell("variance", 42, [0.72, 0.40], dataset="arcene"),  # 72 against 70 ± 0: below
        _cell(DEFAULT, 42, [0.50], ks=(50,), dataset="nci9"), _cell("variance", 42, [0.40], ks=(50,), dataset="nci9"),
        _cell(DEFAULT, 42, [0.50], ks=(50,), dataset="ORL"), _cell(DEFAULT, 43, [0.52], ks=(50,), dataset="ORL"),
        _cell("variance", 42, [0.505], ks=(50,), dataset="ORL"),
    )
    lines = against_variance(results, _spec(datasets=("COIL20", "arcene", "nci9", "ORL")))
    assert lines[2] == "| COIL20 | 55.00 ± 5.00 (2) | 45.00 (1) | 40.00 (1) | +10.00 | above |"
    assert lines[3] == "| arcene | 70.00 ± 0.00 (2) | 72.00 (1) | – | -2.00 | below |"
    assert lines[4] == "| nci9 | 50.00 (1) | 40.00 (1) | – | +10.00 | one seed: no verdict |"
    assert lines[5] == "| ORL | 51.00 ± 1.00 (2) | 50.50 (1) | – | +0.50 | within its spread |"
    assert lines[-1].endswith("above variance on 1, below on 1 and within its spread (its standard deviation over "
                              "the seeds) on 1 dataset(s); 1 have one seed of the default only.")
    # dispersion ran on COIL20 only: the others hold negative values, said under the table of every method
    assert refused(results, _spec(datasets=("COIL20", "arcene", "nci9", "ORL"))) == [
        "", "dispersion needs nonnegative values; the tables of arcene, nci9, ORL hold negative ones, so it has no "
            "result (–) there."]
    assert against_variance(_results(_cell(DEFAULT, 42, [0.5], ks=(50,))), _spec()) == [
        "No dataset has both a default and a variance cell yet."]


def test_baseline_fidelity_sets_ours_beside_the_papers_numbers():
    paper = PAPER_RESULTS["COIL20"]
    results = _results(
        _cell("CAE", 42, [paper["CAE"].accuracy / 100 + 0.01, 0.3]),
        _cell("LS-CAE", 42, [paper["LS-CAE"].accuracy / 100 - 0.20, 0.3]),
    )
    lines = baseline_fidelity(results, _spec(datasets=("COIL20", "lung_small")))
    assert lines[0] == "| dataset | LS | MCFS | NDFS | SPEC | CAE | LS-CAE |"
    row = next(line for line in lines if line.startswith("| COIL20 |"))
    assert f"{paper['CAE'].accuracy + 1:.2f} (1) / {paper['CAE'].accuracy:.2f} (+1.00)" in row
    assert f"{paper['LS-CAE'].accuracy - 20:.2f} (1) / {paper['LS-CAE'].accuracy:.2f} (-20.00 ✗)" in row
    assert "| lung_small" not in "\n".join(lines)  # no paper numbers there
    assert lines[-1].endswith("Met (at, above or within): CAE 1 of 1, LS-CAE 0 of 1.")


# -- the page ---------------------------------------------------------------------------


def test_report_has_the_headline_the_fidelity_and_names_what_was_not_run():
    paper = PAPER_RESULTS["COIL20"]["ICLFS"]
    spec = _spec(datasets=("COIL20", "arcene", "nci9"))
    results = _results(
        _cell(DEFAULT, 42, [0.50, 0.40]), _cell("LS", 42, [0.52, 0.40]),
        _cell(spec.paper_run, 42, [paper.accuracy / 100 - 0.01, 0.4]),
    )
    text = build_report(results, spec, "kedro run --pipeline benchmark_report", {"nci9": "nci9.mat is in none of x"})
    assert text.startswith("# ICLFS benchmark\n")
    assert "Generated by `kedro run --pipeline benchmark_report`" in text
    assert "| COIL20 | 50.00 (1) | LS 52.00 (1) |" in text
    fidelity = text.split("## Fidelity to the paper: `ICLFS [published stream]`, seed 42")[1].split("##")[0]
    assert f"| COIL20 | {paper.accuracy - 1:.2f} ± 1.00 (50) | {paper.accuracy:.2f} ± {paper.std:.2f} " \
           f"({paper.k}) | -1.00 | met (within max(std, 2)) |" in fidelity
    assert "Met on 1 of 1" in fidelity
    every = text.split("## Every method")[1].split("##")[0]
    headers = [line for line in every.splitlines() if line.startswith("| dataset")]
    # the ICLFS configurations first, then the baselines
    assert headers == [f"| dataset | {DEFAULT} | {spec.paper_run} |", "| dataset | LS |"]
    assert "## Not run\n\n- **nci9**: nci9.mat is in none of x" in text
    assert "![COIL20](figures/COIL20.png)" in text and "figures/arcene.png" not in text
    assert "No `ICLFS [published stream]` run at seed 42 yet." in build_report(
        results[results["method"] != spec.paper_run], spec, "c")
    artifact = build_report(results, spec, "c", figures=None)
    assert "One per dataset in the `benchmark_figures` artifact: `COIL20.png`." in artifact


def test_a_report_of_nothing_is_still_a_page():
    text = build_report(gather({}), _spec(), "c")
    assert "## The default selection and the best baseline" in text and "## Not run" not in text


def test_figure_draws_every_method_on_the_dataset():
    results = _results(_cell(DEFAULT, 42, [0.5, 0.4]), _cell("LS", 42, [0.5, 0.45]),
                       _cell("all features", 42, [0.5], ks=(300,)), _cell("LS", 42, [0.1, 0.1], dataset="arcene"))
    fig = figure(results, "COIL20", _spec())
    try:
        ax = fig.axes[0]
        labels = set(ax.get_legend_handles_labels()[1])
        assert {DEFAULT, "LS", "all features", "ICLFS (paper)"} <= labels
        assert "COIL20" in ax.get_title()
    finally:
        plt.close(fig)
