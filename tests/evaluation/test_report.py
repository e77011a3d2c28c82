"""The benchmark report: what it compares, the best k, the seed summaries, the targets, the page."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from iclfs.evaluation.benchmark import gather, method_name
from iclfs.evaluation.paper import PAPER_RESULTS
from iclfs.evaluation.report import (
    ReportSpec,
    best_baseline,
    best_rows,
    build_report,
    count_verdict,
    figure,
    headline,
    spec_for,
    summarize,
    target_lines,
)
from iclfs.method.config import Settings
from tests.evaluation.cells import cell as _cell

SINGLE = "ICLFS [fast]"
DEFAULT = "ICLFS [fast, consensus 8x20, 0.5 of samples]"
CONSENSUS = "consensus.members=8,consensus.member_epochs=20,consensus.subsample=0.5,consensus.laplacian_weight=0"


def _results(*cells):
    return gather({str(i): cell for i, cell in enumerate(cells)})


def _spec(datasets=("COIL20", "arcene"), seeds=(42, 43)):
    return ReportSpec(single=SINGLE, default=DEFAULT, consensus=DEFAULT, seeds=seeds, datasets=datasets)


def _selection(*features):
    return " ".join(map(str, features))


# -- what the report compares ---------------------------------------------------------


def test_spec_compares_the_settings_with_one_run_of_them():
    spec = spec_for(Settings().with_overrides(CONSENSUS), [42, 43, 44], ["COIL20", "arcene"])
    assert (spec.single, spec.default, spec.consensus) == (SINGLE, DEFAULT, DEFAULT)  # the default is judged
    assert spec.seeds == (42, 43, 44) and spec.datasets == ("COIL20", "arcene")
    assert spec.paper_run == "ICLFS [published stream]"  # the literal loop with the published draws
    assert spec.stability_k == 50 and spec.target_points == 2.0
    # the project's defaults, whatever the default consensus is
    defaults = spec_for(Settings(), [42], ["COIL20"])
    assert defaults.default == method_name(Settings())
    assert defaults.single == method_name(Settings().with_overrides("consensus.members=1"))


def test_a_default_of_one_run_is_compared_with_the_benchmarks_consensus():
    spec = spec_for(Settings().with_overrides("consensus.members=1"), [42], ["COIL20"])
    assert spec.default == spec.single == SINGLE
    assert spec.consensus == "ICLFS [fast, consensus 8x10, 0.5 of samples, Laplacian weight 0.5]"
    other = spec_for(Settings().with_overrides("consensus.members=1"), [42], ["COIL20"], consensus=CONSENSUS)
    assert other.consensus == DEFAULT
    lines, _ = headline(_results(_cell(SINGLE, 42, [0.5, 0.5])), other)
    assert lines[0].startswith(f"| dataset | one run: {SINGLE} (the default) | consensus: {DEFAULT} | ")


def test_spec_for_a_grid_without_50():
    settings = Settings().with_overrides("selection.k=5,selection.k_values=[5,10]")
    spec = spec_for(settings, [42], ["COIL20"])
    assert spec.default == method_name(settings)


def test_best_row_ties_go_to_the_smaller_k():
    table = _results(_cell(SINGLE, 42, [0.6, 0.6]), _cell(SINGLE, 43, [0.5, 0.7]))
    best = best_rows(table)
    assert list(zip(best["seed"], best["k"], strict=True)) == [(42, 50), (43, 100)]


# -- one method over the seeds --------------------------------------------------------


def test_summary_is_the_best_k_accuracy_per_seed_and_the_jaccard_between_seeds():
    results = _results(
        _cell(DEFAULT, 42, [0.60, 0.50], selected=_selection(1, 2, 3, 4), seconds=12.0),
        _cell(DEFAULT, 43, [0.50, 0.70], selected=_selection(3, 4, 5, 6), seconds=14.0),
        _cell(DEFAULT, 44, [0.65, 0.40], selected=_selection(4, 3, 2, 1), seconds=16.0),
        _cell(DEFAULT, 45, [0.99, 0.99]),  # not an outer seed of this report
    )
    summary = summarize(results, "COIL20", DEFAULT, [42, 43, 44], k=50)
    assert summary.seeds == (42, 43, 44)
    assert summary.accuracies == pytest.approx((60.0, 70.0, 65.0))
    assert summary.mean == pytest.approx(65.0) and summary.std == pytest.approx(4.0825, abs=1e-4)
    # Jaccard of the k = 50 selections, as sets: 42-43 2/6, 42-44 1 (order ignored), 43-44 2/6
    assert summary.jaccard == pytest.approx((1 / 3 + 1 + 1 / 3) / 3)
    assert summary.seconds == pytest.approx(14.0)
    assert summary.cell() == "65.00 ± 4.08 (3)"
    one = summarize(results, "COIL20", DEFAULT, [42], k=50)
    assert one.std is None and one.jaccard is None and one.cell() == "60.00 (1)"
    assert summarize(results, "arcene", DEFAULT, [42], k=50) is None
    assert summarize(results, "COIL20", SINGLE, [42], k=50) is None


def test_pooled_selections_have_no_jaccard():
    results = _results(_cell("random", 42, [0.5, 0.5], selected=""), _cell("random", 43, [0.5, 0.5], selected=""))
    assert summarize(results, "COIL20", "random", [42, 43], k=50).jaccard is None


def test_the_best_baseline_includes_random_and_all_features():
    results = _results(_cell("LS", 42, [0.50, 0.55]), _cell("random", 42, [0.58, 0.52]),
                       _cell("all features", 42, [0.57], ks=(300,)), _cell(DEFAULT, 42, [0.9, 0.9]))
    name, summary = best_baseline(results, "COIL20", [42], k=50)
    assert name == "random" and summary.mean == pytest.approx(58.0)
    assert best_baseline(results, "arcene", [42], k=50) is None


# -- the headline and its targets --------------------------------------------------------


def test_headline_compares_the_consensus_with_one_run_and_the_best_baseline():
    results = _results(
        _cell(SINGLE, 42, [0.50, 0.40], selected=_selection(1, 2), seconds=10.0),
        _cell(SINGLE, 43, [0.60, 0.40], selected=_selection(3, 4), seconds=10.0),
        _cell(DEFAULT, 42, [0.56, 0.40], selected=_selection(1, 2, 3), seconds=12.0),
        _cell(DEFAULT, 43, [0.58, 0.40], selected=_selection(1, 2, 3), seconds=14.0),
        _cell("LS", 42, [0.52, 0.40]), _cell("LS", 43, [0.56, 0.40]),
        # arcene: only one run, no consensus yet
        _cell(SINGLE, 42, [0.70, 0.40], dataset="arcene"),
    )
    lines, targets = headline(results, _spec())
    assert lines[0] == (f"| dataset | one run: {SINGLE} | consensus: {DEFAULT} (the default) | best baseline | "
                        "Jaccard@50 one run | Jaccard@50 consensus | cost (consensus / one run) |")
    assert lines[2] == "| COIL20 | 55.00 ± 5.00 (2) | 57.00 ± 1.00 (2) | LS 54.00 ± 2.00 (2) | 0.00 | 1.00 | 1.30 |"
    assert lines[3] == "| arcene | 70.00 (1) | – | – | – | – | – |"
    assert targets["consensus_vs_single"] == (1, 1) and targets["consensus_vs_baseline"] == (1, 1)
    assert targets["median_std_ratio"] == pytest.approx(0.2)
    assert targets["median_jaccard"] == pytest.approx(1.0)
    assert targets["mean_cost"] == pytest.approx(1.3) and targets["max_cost"] == pytest.approx(1.3)

    text = "\n".join(target_lines(targets))
    # one dataset decides no count over 14; the ratios are judged
    assert "| consensus at or above one run in mean accuracy on at least 11 of 14 datasets | 1 of 1 | – |" in text
    assert "| consensus at or above the best baseline's mean on at least 9 of 14 | 1 of 1 | – |" in text
    assert "| consensus's std over seeds at most half of one run's, median dataset | median ratio 0.20 | **met** |" \
        in text
    assert "| consensus's Jaccard@50 between seeds at least 0.6 (median dataset) | 1.00 | **met** |" in text
    assert "| consensus's cost at most 1.5x one run's (worst dataset) | mean 1.30x, worst 1.30x | **met** |" in text


def test_targets_missed_are_said_so():
    targets = {"consensus_vs_single": (3, 5), "consensus_vs_baseline": (1, 5), "median_std_ratio": 0.8,
               "median_jaccard": 0.4, "mean_cost": 1.2, "max_cost": 2.5}
    text = "\n".join(target_lines(targets))
    assert "median ratio 0.80 | **missed** |" in text
    assert "| 0.40 | **missed** |" in text
    assert "| mean 1.20x, worst 2.50x | **missed** |" in text
    assert "**met**" not in text
    nothing = {"consensus_vs_single": (0, 0), "consensus_vs_baseline": (0, 0), "median_std_ratio": None,
               "median_jaccard": None, "mean_cost": None, "max_cost": None}
    assert all(line.endswith("| – |") for line in target_lines(nothing)[2:])


@pytest.mark.parametrize(("won", "compared", "needed", "verdict"), [
    (11, 11, 11, True),    # met as soon as enough are won, whatever is still to come
    (11, 14, 11, True),
    (10, 14, 11, False),
    (3, 10, 11, False),    # 7 lost: the 4 datasets to come cannot make up 11
    (8, 11, 11, None),     # 3 lost: still possible
    (0, 5, 9, None),
    (0, 6, 9, False),
])
def test_a_count_is_judged_once_it_is_decided(won, compared, needed, verdict):
    assert count_verdict(won, compared, needed) is verdict


@pytest.mark.parametrize(("wins", "verdict"), [(11, "**met**"), (10, "**missed**")])
def test_the_counts_are_judged_on_all_fourteen_datasets(wins, verdict):
    datasets = tuple(f"D{i:02d}" for i in range(14))
    cells = []
    for i, dataset in enumerate(datasets):
        default = 0.60 if i < wins else 0.40
        cells += [_cell(SINGLE, 42, [0.50, 0.50], dataset=dataset), _cell(DEFAULT, 42, [default, 0.4], dataset=dataset),
                  _cell("LS", 42, [0.55, 0.5], dataset=dataset)]
    results = _results(*cells)
    lines, targets = headline(results, _spec(datasets, seeds=(42,)))
    assert targets["consensus_vs_single"] == (wins, 14) and targets["consensus_vs_baseline"] == (wins, 14)
    text = "\n".join(target_lines(targets))
    assert f"on at least 11 of 14 datasets | {wins} of 14 | {verdict} |" in text
    assert f"on at least 9 of 14 | {wins} of 14 | **met** |" in text  # 9 of 14 is enough here
    assert len(lines) == 2 + 14


# -- the page ---------------------------------------------------------------------------


def test_report_has_the_headline_the_fidelity_and_names_what_was_not_run():
    paper = PAPER_RESULTS["COIL20"]["ICLFS"]
    spec = _spec(datasets=("COIL20", "arcene", "nci9"))
    results = _results(
        _cell(SINGLE, 42, [0.50, 0.40]), _cell(DEFAULT, 42, [0.56, 0.40]), _cell("LS", 42, [0.52, 0.40]),
        _cell(spec.paper_run, 42, [paper.accuracy / 100 - 0.01, 0.4]),
    )
    text = build_report(results, spec, "kedro run --pipeline benchmark_report", {"nci9": "nci9.mat is in none of x"})
    assert text.startswith("# ICLFS benchmark\n")
    assert "Generated by `kedro run --pipeline benchmark_report`" in text
    assert f"The default selection is `{DEFAULT}`" in text
    assert "| COIL20 | 50.00 (1) | 56.00 (1) | LS 52.00 (1) |" in text
    assert "| arcene |" not in text.split("## Targets")[0]  # nothing run there
    fidelity = text.split("## Fidelity to the paper: `ICLFS [published stream]`, seed 42")[1].split("##")[0]
    assert f"| COIL20 | {paper.accuracy - 1:.2f} ± 1.00 (50) | {paper.accuracy:.2f} ± {paper.std:.2f} " \
           f"({paper.k}) | -1.00 | met (within max(std, 2)) |" in fidelity
    assert "Met on 1 of 1" in fidelity
    every = text.split("## Every method")[1].split("##")[0]
    header = next(line for line in every.splitlines() if line.startswith("| dataset"))
    assert f"| {DEFAULT} |" in header and header.endswith("| LS |")  # ICLFS methods first, then the baselines
    assert "## Not run\n\n- **nci9**: nci9.mat is in none of x" in text
    assert "![COIL20](benchmark/figures/COIL20.png)" in text and "figures/arcene.png" not in text
    assert "No `ICLFS [published stream]` run at seed 42 yet." in build_report(
        results[results["method"] != spec.paper_run], spec, "c")


def test_a_report_of_nothing_is_still_a_page():
    text = build_report(gather({}), _spec(), "c")
    assert "## Targets" in text and "## Not run" not in text


def test_figure_draws_every_method_on_the_dataset():
    results = _results(_cell(SINGLE, 42, [0.5, 0.4]), _cell("LS", 42, [0.5, 0.45]),
                       _cell("all features", 42, [0.5], ks=(300,)), _cell("LS", 42, [0.1, 0.1], dataset="arcene"))
    fig = figure(results, "COIL20", _spec())
    try:
        ax = fig.axes[0]
        labels = set(ax.get_legend_handles_labels()[1])
        assert {SINGLE, "LS", "all features", "ICLFS (paper)"} <= labels
        assert "COIL20" in ax.get_title()
    finally:
        plt.close(fig)
