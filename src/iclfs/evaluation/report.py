"""The benchmark report: every cell gathered into one Markdown page and one figure per dataset.

The headline compares three methods over the outer seeds: ICLFS as one run
(``single``), a consensus (``consensus``: the default selection when that is
a consensus, else the benchmark's consensus) and the best baseline, and says
which of them is the default. The consensus is judged by the targets of
docs/consensus.md, fixed before the results were seen: a method's score on a
dataset is the mean over the outer seeds of its best-k mean accuracy
(docs/method.md §8), its spread the standard deviation of those best-k
accuracies over the seeds, and its stability the mean pairwise Jaccard index
of its k = 50 selections between the seeds.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclfs.evaluation.benchmark import BASELINE_NAMES, BENCHMARKED_CONSENSUS, method_name
from iclfs.evaluation.paper import PAPER_RESULTS, target_status
from iclfs.method.config import Settings

BASELINES = tuple(BASELINE_NAMES.values())
PAPER_BASELINES = ("LS", "SPEC", "MCFS", "NDFS")


@dataclass(frozen=True)
class ReportSpec:
    """What the report compares, and on which seeds.

    Attributes
    ----------
    single : str
        The method name of one ICLFS run as the paper runs it, on the everyday schedule.
    default : str
        The method name of the default selection (``single`` or ``consensus``, or neither).
    consensus : str
        The method name of the consensus the targets judge against one run.
    seeds : tuple of int
        The outer seeds.
    datasets : tuple of str
        Every dataset of the benchmark, in report order.
    paper_run : str
        The method judged against the paper's published numbers (one seed).
    target_points : float
        The paper target is met within max(paper std, this many points).
    stability_k : int
        The k whose selections the Jaccard index compares.
    """

    single: str
    default: str
    consensus: str
    seeds: tuple[int, ...]
    datasets: tuple[str, ...]
    paper_run: str = "ICLFS [published stream]"
    target_points: float = 2.0
    stability_k: int = 50


def spec_for(settings: Settings, seeds: Sequence[int], datasets: Sequence[str],
             consensus: str = BENCHMARKED_CONSENSUS) -> ReportSpec:
    """The report of ``settings`` (the project's defaults): one ``members: 1`` run of them against a
    consensus (``settings`` when they are one, else ``settings`` with the overrides ``consensus``), and the
    paper's run replayed (literal loop, the published code's draws)."""
    one_run = f"consensus.members=1,selection.k={settings.selection.k_values[0]}"  # k auto needs members
    judged = settings if settings.consensus.members > 1 else settings.with_overrides(consensus)
    return ReportSpec(
        single=method_name(settings.with_overrides(one_run)),
        default=method_name(settings),
        consensus=method_name(judged),
        seeds=tuple(int(s) for s in seeds),
        datasets=tuple(datasets),
        paper_run=method_name(settings.with_overrides(f"{one_run},training.schedule=paper,views.stream=published")),
    )


def best_rows(results: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, method, seed): the row of highest mean accuracy, ties to the smaller k (method.md §8)."""
    if results.empty:
        return results
    ordered = results.sort_values(["dataset", "method", "seed", "accuracy_mean", "k"],
                                  ascending=[True, True, True, False, True], kind="stable")
    return ordered.groupby(["dataset", "method", "seed"], sort=False).head(1).reset_index(drop=True)


@dataclass(frozen=True)
class Summary:
    """One method on one dataset over the outer seeds it was run with."""

    seeds: tuple[int, ...]
    accuracies: tuple[float, ...]  # best-k mean accuracy per seed, in %
    jaccard: float | None  # mean pairwise Jaccard of the stability_k selections between seeds
    seconds: float  # mean training (or ranking) seconds per seed

    @property
    def mean(self) -> float:
        return float(np.mean(self.accuracies))

    @property
    def std(self) -> float | None:
        return float(np.std(self.accuracies)) if len(self.accuracies) > 1 else None

    def cell(self) -> str:
        spread = f" ± {self.std:.2f}" if self.std is not None else ""
        return f"{self.mean:.2f}{spread} ({len(self.seeds)})"


def summarize(results: pd.DataFrame, dataset: str, method: str, seeds: Sequence[int], k: int) -> Summary | None:
    """``method`` on ``dataset`` over those of ``seeds`` it was run with; None when never."""
    rows = results[(results["dataset"] == dataset) & (results["method"] == method) & results["seed"].isin(seeds)]
    if rows.empty:
        return None
    best = best_rows(rows).sort_values("seed")
    at_k = rows[rows["k"] == k].sort_values("seed")
    picks = [set(s.split()) for s in at_k["selected"].fillna("") if s]
    pairs = [len(a & b) / len(a | b) for a, b in itertools.combinations(picks, 2)]
    return Summary(tuple(int(s) for s in best["seed"]), tuple(100 * best["accuracy_mean"]),
                   float(np.mean(pairs)) if pairs else None,
                   float(rows.drop_duplicates("seed")["seconds"].mean()))


def best_baseline(results: pd.DataFrame, dataset: str, seeds: Sequence[int], k: int) -> tuple[str, Summary] | None:
    """The baseline with the highest mean over the seeds (``all features`` and ``random`` included)."""
    found = [(name, summarize(results, dataset, name, seeds, k)) for name in BASELINES]
    found = [(name, s) for name, s in found if s is not None]
    return max(found, key=lambda item: item[1].mean) if found else None


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _baseline_cell(baseline: tuple[str, Summary] | None) -> str:
    """A :func:`best_baseline` as a table cell: its name and its mean ± std (seeds), or – when none."""
    return f"{baseline[0]} {baseline[1].cell()}" if baseline else "–"


def _label(spec: ReportSpec, method: str) -> str:
    return f"{method} (the default)" if method == spec.default else method


def headline(results: pd.DataFrame, spec: ReportSpec) -> tuple[list[str], dict]:
    """The table of the three methods per dataset, and the consensus's targets judged over all datasets."""
    k = spec.stability_k
    lines = [
        f"| dataset | one run: {_label(spec, spec.single)} | consensus: {_label(spec, spec.consensus)} | "
        f"best baseline | Jaccard@{k} one run | Jaccard@{k} consensus | cost (consensus / one run) |",
        "|---|---|---|---|---|---|---|",
    ]
    counts = {"compared": 0, "consensus_vs_single": 0, "baseline_compared": 0, "consensus_vs_baseline": 0}
    std_ratios, jaccards, costs = [], [], []
    for dataset in spec.datasets:
        single = summarize(results, dataset, spec.single, spec.seeds, k)
        consensus = summarize(results, dataset, spec.consensus, spec.seeds, k)
        baseline = best_baseline(results, dataset, spec.seeds, k)
        if single is None and consensus is None:
            continue
        cost = None
        if single is not None and consensus is not None:
            counts["compared"] += 1
            counts["consensus_vs_single"] += consensus.mean >= single.mean
            if single.std and consensus.std is not None:
                std_ratios.append(consensus.std / single.std)
            cost = consensus.seconds / single.seconds
            costs.append(cost)
        if consensus is not None and baseline is not None:
            counts["baseline_compared"] += 1
            counts["consensus_vs_baseline"] += consensus.mean >= baseline[1].mean
        if consensus is not None and consensus.jaccard is not None:
            jaccards.append(consensus.jaccard)
        lines.append(
            f"| {dataset} | {single.cell() if single else '–'} | {consensus.cell() if consensus else '–'} | "
            f"{_baseline_cell(baseline)} | "
            f"{_fmt(single.jaccard if single else None)} | {_fmt(consensus.jaccard if consensus else None)} | "
            f"{_fmt(cost)} |")
    targets = {
        "consensus_vs_single": (counts["consensus_vs_single"], counts["compared"]),
        "consensus_vs_baseline": (counts["consensus_vs_baseline"], counts["baseline_compared"]),
        "median_std_ratio": float(np.median(std_ratios)) if std_ratios else None,
        "median_jaccard": float(np.median(jaccards)) if jaccards else None,
        "mean_cost": float(np.mean(costs)) if costs else None,
        "max_cost": float(np.max(costs)) if costs else None,
    }
    return lines, targets


def comparison(results: pd.DataFrame, methods: Mapping[str, str], datasets: Sequence[str], seeds: Sequence[int],
               k: int = 50) -> list[str]:
    """Named methods side by side on each dataset, measured and not judged (no points, no winner).

    Parameters
    ----------
    results : pandas.DataFrame
        Benchmark cells gathered into one table.
    methods : mapping of str to str
        ``{short name: benchmark method name}``; the first is the one the others' time is measured against.
    datasets, seeds : sequence
        What to show; each method is summarized over those of ``seeds`` it has cells at.
    k : int
        The k whose selections the Jaccard index compares.

    Returns
    -------
    list of str
        Markdown lines: one row per (dataset, method) that has a cell, with its accuracy (mean ± std and the
        number of seeds), its Jaccard@k between seeds, its seconds per seed and their ratio to the first
        method's, and the dataset's best baseline over the same seeds.
    """
    reference = next(iter(methods))
    lines = ["| candidate | method |", "|---|---|", *(f"| {name} | {method} |" for name, method in methods.items()),
             "", f"| dataset | candidate | accuracy (mean ± std, seeds) | Jaccard@{k} | seconds per seed | "
                 f"time / {reference}'s | best baseline |", "|---|---|---|---|---|---|---|"]
    for dataset in datasets:
        found = {name: summarize(results, dataset, method, seeds, k) for name, method in methods.items()}
        baseline = best_baseline(results, dataset, seeds, k)
        ref = found[reference]
        for name, summary in found.items():
            if summary is None:
                continue
            ratio = summary.seconds / ref.seconds if ref is not None and ref.seconds > 0 else None
            lines.append(f"| {dataset} | {name} | {summary.cell()} | {_fmt(summary.jaccard)} | "
                         f"{summary.seconds:.0f} | {_fmt(ratio)} | "
                         f"{_baseline_cell(baseline)} |")
    return lines


def _verdict(ok: bool | None) -> str:
    return "–" if ok is None else ("**met**" if ok else "**missed**")


def count_verdict(won: int, compared: int, needed: int, of: int = 14) -> bool | None:
    """A count target "at least ``needed`` of ``of`` datasets", judged as soon as it is decided.

    Met once ``needed`` datasets are won; missed once more than ``of - needed``
    are lost, since the datasets not yet measured can no longer make it up;
    None (undecided) in between.
    """
    if won >= needed:
        return True
    if compared - won > of - needed:
        return False
    return None


def target_lines(targets: dict) -> list[str]:
    """The issue's targets for the consensus, each as met, missed or undecided (–), with the numbers behind it."""
    won, compared = targets["consensus_vs_single"]
    beat, against = targets["consensus_vs_baseline"]
    ratio, jaccard, cost = targets["median_std_ratio"], targets["median_jaccard"], targets["max_cost"]
    return [
        "| target | measured | verdict |",
        "|---|---|---|",
        f"| consensus at or above one run in mean accuracy on at least 11 of 14 datasets | {won} of {compared} "
        f"| {_verdict(count_verdict(won, compared, 11))} |",
        f"| consensus at or above the best baseline's mean on at least 9 of 14 | {beat} of {against} "
        f"| {_verdict(count_verdict(beat, against, 9))} |",
        f"| consensus's std over seeds at most half of one run's, median dataset | median ratio {_fmt(ratio)} "
        f"| {_verdict(None if ratio is None else ratio <= 0.5)} |",
        f"| consensus's Jaccard@50 between seeds at least 0.6 (median dataset) | {_fmt(jaccard)} "
        f"| {_verdict(None if jaccard is None else jaccard >= 0.6)} |",
        f"| consensus's cost at most 1.5x one run's (worst dataset) | mean {_fmt(targets['mean_cost'])}x, "
        f"worst {_fmt(cost)}x | {_verdict(None if cost is None else cost <= 1.5)} |",
    ]


def all_methods(results: pd.DataFrame, spec: ReportSpec) -> list[str]:
    """Every method on every dataset: mean ± std over the seeds it ran with (number of seeds)."""
    methods = sorted(set(results["method"]), key=lambda m: (m in BASELINES, m))
    shown = [m for m in methods if m not in BASELINES] + [b for b in BASELINES if b in methods]
    lines = ["| dataset | " + " | ".join(shown) + " |", "|---|" + "---|" * len(shown)]
    for dataset in spec.datasets:
        cells = []
        for method in shown:
            s = summarize(results, dataset, method, sorted(set(results["seed"])), spec.stability_k)
            cells.append(s.cell() if s else "–")
        if any(c != "–" for c in cells):
            lines.append(f"| {dataset} | " + " | ".join(cells) + " |")
    return lines


def fidelity(results: pd.DataFrame, spec: ReportSpec) -> list[str]:
    """The paper's run against its published numbers, on the paper's datasets (first outer seed)."""
    seed = spec.seeds[0]
    lines = ["| dataset | ours | paper | difference | target |", "|---|---|---|---|---|"]
    met = total = 0
    for dataset in (d for d in spec.datasets if d in PAPER_RESULTS):
        rows = results[(results["dataset"] == dataset) & (results["method"] == spec.paper_run)
                       & (results["seed"] == seed)]
        if rows.empty:
            continue
        best = best_rows(rows).iloc[0]
        paper = PAPER_RESULTS[dataset]["ICLFS"]
        status, diff = target_status(float(best["accuracy_mean"]), dataset, spec.target_points)
        total += 1
        met += status.startswith("met")
        lines.append(f"| {dataset} | {100 * best['accuracy_mean']:.2f} ± {100 * best['accuracy_std']:.2f} "
                     f"({int(best['k'])}) | {paper.accuracy:.2f} ± {paper.std:.2f} ({paper.k}) | {diff:+.2f} | "
                     f"{status} |")
    if not total:
        return [f"No `{spec.paper_run}` run at seed {seed} yet."]
    return lines + ["", f"Met on {met} of {total} (within max(paper std, {spec.target_points:g} points))."]


def runs_table(results: pd.DataFrame) -> list[str]:
    """Training (or ranking) seconds of every ICLFS cell, per dataset and method, over its seeds."""
    iclfs = results[results["method"].str.startswith("ICLFS")].drop_duplicates(["dataset", "method", "seed"])
    lines = ["| dataset | method | seeds | seconds per seed | device |", "|---|---|---|---|---|"]
    for (dataset, method), group in iclfs.groupby(["dataset", "method"], sort=True):
        seconds = ", ".join(f"{s}: {t:.0f}" for s, t in zip(group["seed"], group["seconds"], strict=True))
        lines.append(f"| {dataset} | {method} | {len(group)} | {seconds} | {', '.join(sorted(set(group['device'])))} |")
    return lines


def build_report(results: pd.DataFrame, spec: ReportSpec, command: str, missing: Mapping[str, str] | None = None,
                 figures: str = "benchmark/figures") -> str:
    """The whole Markdown report from the gathered cells (:func:`iclfs.evaluation.benchmark.gather`)."""
    missing = dict(missing or {})
    head, targets = headline(results, spec)
    done = [d for d in spec.datasets if (results["dataset"] == d).any()]
    lines = [
        "# ICLFS benchmark",
        "",
        f"Generated by `{command}` from the result cells in `{figures.rsplit('/', 1)[0]}/cells/` "
        "(one file per dataset, method and seed). Do not edit by hand.",
        "",
        "Protocol (docs/method.md §8): every method selects from the same standardized data; for each k of "
        "50, 100, ..., 300 (up to d) its selection goes through 20 k-means runs (random_state = seed + r). A "
        "method's result at one seed is its best k's mean accuracy. Below, each cell is the mean ± std of that "
        f"over the outer seeds {', '.join(map(str, spec.seeds))} (their number in parentheses). `random` pools "
        "five random rankings; `all features` uses every column. Jaccard@50 is the mean pairwise Jaccard index "
        "of the 50 features selected at each seed. Cost is the consensus's wall time (training every member, "
        "scoring, the Laplacian score and LGRC) over one run's, at the same seeds. The default selection is "
        f"`{spec.default}`; docs/consensus.md says how it was chosen.",
        "",
        "## One run, a consensus and the best baseline",
        "",
        *head,
        "",
        "## Targets",
        "",
        "Judged as docs/consensus.md fixed before the results were seen. A count over the 14 datasets is "
        "judged once it is decided (met at the count needed, missed once more datasets are lost than it "
        "allows); until then it shows –.",
        "",
        *target_lines(targets),
        "",
        "## Every method",
        "",
        *all_methods(results, spec),
        "",
        f"## Fidelity to the paper: `{spec.paper_run}`, seed {spec.seeds[0]}",
        "",
        *fidelity(results, spec),
        "",
        "## Training time per cell",
        "",
        *runs_table(results),
        "",
    ]
    if missing:
        lines += ["## Not run", ""] + [f"- **{d}**: {why}" for d, why in missing.items()] + [""]
    lines += ["## Figures", ""] + [f"![{d}]({figures}/{d}.png)" for d in done]
    return "\n".join(lines) + "\n"


def figure(results: pd.DataFrame, dataset: str, spec: ReportSpec) -> plt.Figure:
    """Accuracy against k for every method on ``dataset``: the mean over the outer seeds."""
    fig, ax = plt.subplots(figsize=(8.5, 4))
    rows = results[(results["dataset"] == dataset) & results["seed"].isin(spec.seeds)]
    colours = plt.get_cmap("tab20").colors
    for i, (method, group) in enumerate(rows.groupby("method", sort=True)):
        mean = group.groupby("k")["accuracy_mean"].mean().sort_index()
        if method == "all features":
            ax.axhline(100 * mean.iloc[0], color="grey", linestyle=":", label=method)
            continue
        style = {"linewidth": 2.5} if method in (spec.default, spec.single, spec.consensus) else \
            {"linestyle": "-" if method.startswith("ICLFS") else "--"}
        ax.plot(mean.index, 100 * mean.to_numpy(), marker="o", markersize=3, label=method,
                color=colours[i % len(colours)], **style)
    paper = PAPER_RESULTS.get(dataset, {}).get("ICLFS")
    if paper:
        ax.scatter([paper.k], [paper.accuracy], marker="*", s=150, color="black", zorder=5, label="ICLFS (paper)")
    ax.set_xlabel("number of selected features k")
    ax.set_ylabel("k-means accuracy (%)")
    ax.set_title(f"{dataset} (mean over the seeds each method ran with)", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    return fig
