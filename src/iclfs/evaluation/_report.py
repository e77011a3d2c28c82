"""The benchmark report: every cell gathered into one Markdown page and one figure per dataset.

A method's score on a dataset is the mean over the outer seeds of its best-k
mean accuracy (docs/method.md §8), its spread the standard deviation of those
best-k accuracies over the seeds, and its stability between seeds the mean
pairwise Jaccard index and Nogueira's Phi of its selections at k = 50.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclfs.baselines import REGISTRY
from iclfs.evaluation._benchmark import method_name
from iclfs.evaluation._paper import PAPER_RESULTS, target_status
from iclfs.method._config import Settings
from iclfs.method._stability import mean_pairwise_jaccard, nogueira_of

#: Every baseline's name in the cells, in registry order.
BASELINES = tuple(entry.name for entry in REGISTRY.values())
#: The baselines the paper reports, in its column order.
PAPER_BASELINES = ("LS", "MCFS", "NDFS", "SPEC", "CAE", "LS-CAE")


@dataclass(frozen=True)
class ReportSpec:
    """What the report compares, and on which seeds.

    Attributes
    ----------
    default : str
        The method name of the default selection (``select``'s, on the everyday schedule).
    seeds : tuple of int
        The outer seeds.
    datasets : tuple of str
        Every dataset of the benchmark, in report order.
    paper_run : str
        The method judged against the paper's published numbers (one seed).
    target_points : float
        A paper number is met within max(paper std, this many points).
    stability_k : int
        The k whose selections the stability between seeds compares.
    """

    default: str
    seeds: tuple[int, ...]
    datasets: tuple[str, ...]
    paper_run: str = "ICLFS [published stream]"
    target_points: float = 2.0
    stability_k: int = 50


def spec_for(settings: Settings, seeds: Sequence[int], datasets: Sequence[str]) -> ReportSpec:
    """The report of ``settings`` (the project's defaults), and the paper's run replayed (literal loop, the
    published code's draws, one run)."""
    one_run = f"members.per_run=1,selection.k={settings.selection.k_values[0]}"  # k auto needs members
    return ReportSpec(
        default=method_name(settings),
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
    phi: float | None  # Nogueira's Phi of those selections
    seconds: float  # mean training (or selecting) seconds per seed

    @property
    def mean(self) -> float:
        return float(np.mean(self.accuracies))

    @property
    def std(self) -> float | None:
        return float(np.std(self.accuracies)) if len(self.accuracies) > 1 else None

    def cell(self) -> str:
        spread = f" ± {self.std:.2f}" if self.std is not None else ""
        return f"{self.mean:.2f}{spread} ({len(self.seeds)})"


def n_features(results: pd.DataFrame, dataset: str) -> int | None:
    """d of ``dataset``: the k of its ``all features`` cells (None without one)."""
    rows = results[(results["dataset"] == dataset) & (results["method"] == "all features")]
    return int(rows["k"].max()) if not rows.empty else None


def summarize(results: pd.DataFrame, dataset: str, method: str, seeds: Sequence[int], k: int) -> Summary | None:
    """``method`` on ``dataset`` over those of ``seeds`` it was run with; None when never."""
    rows = results[(results["dataset"] == dataset) & (results["method"] == method) & results["seed"].isin(seeds)]
    if rows.empty:
        return None
    best = best_rows(rows).sort_values("seed")
    at_k = rows[rows["k"] == k].sort_values("seed")
    picks = [s.split() for s in at_k["selected"].fillna("") if s]
    d = n_features(results, dataset)
    phi = None
    if len(picks) > 1 and d is not None:
        phi = nogueira_of(picks, [str(j) for j in range(d)]).phi
    return Summary(tuple(int(s) for s in best["seed"]), tuple(100 * best["accuracy_mean"]),
                   mean_pairwise_jaccard(picks), phi, float(rows.drop_duplicates("seed")["seconds"].mean()))


def best_baseline(results: pd.DataFrame, dataset: str, seeds: Sequence[int], k: int) -> tuple[str, Summary] | None:
    """The baseline with the highest mean over the seeds (``all features`` and ``random`` included)."""
    found = [(name, summarize(results, dataset, name, seeds, k)) for name in BASELINES]
    found = [(name, s) for name, s in found if s is not None]
    return max(found, key=lambda item: item[1].mean) if found else None


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None or (isinstance(value, float) and np.isnan(value)) else f"{value:.{digits}f}"


def baseline_cell(baseline: tuple[str, Summary] | None) -> str:
    """A :func:`best_baseline` as a table cell: its name and its mean ± std (seeds), or – when none."""
    return f"{baseline[0]} {baseline[1].cell()}" if baseline else "–"


def headline(results: pd.DataFrame, spec: ReportSpec) -> list[str]:
    """The default selection against the best baseline on every dataset, with their stability between seeds."""
    k = spec.stability_k
    lines = [f"| dataset | {spec.default} (the default) | best baseline | Jaccard@{k} | Φ@{k} | "
             f"best baseline's Jaccard@{k} | Φ@{k} |", "|---|---|---|---|---|---|---|"]
    wins = compared = 0
    for dataset in spec.datasets:
        default = summarize(results, dataset, spec.default, spec.seeds, k)
        baseline = best_baseline(results, dataset, spec.seeds, k)
        if default is None and baseline is None:
            continue
        if default is not None and baseline is not None:
            compared += 1
            wins += default.mean >= baseline[1].mean
        other = baseline[1] if baseline else None
        lines.append(f"| {dataset} | {default.cell() if default else '–'} | {baseline_cell(baseline)} | "
                     f"{_fmt(default.jaccard if default else None)} | {_fmt(default.phi if default else None)} | "
                     f"{_fmt(other.jaccard if other else None)} | {_fmt(other.phi if other else None)} |")
    return lines + ["", f"The default is at or above the best baseline on {wins} of {compared} datasets."]


def all_methods(results: pd.DataFrame, spec: ReportSpec) -> list[str]:
    """Every method on every dataset: mean ± std over the seeds it ran with (number of seeds).

    Two tables, the ICLFS configurations and then the baselines, one column per method.
    """
    present = set(results["method"])
    groups = (sorted(m for m in present if m not in BASELINES), [b for b in BASELINES if b in present])
    lines: list[str] = []
    for shown in groups:
        if not shown:
            continue
        if lines:
            lines.append("")
        lines += ["| dataset | " + " | ".join(shown) + " |", "|---|" + "---|" * len(shown)]
        for dataset in spec.datasets:
            cells = []
            for method in shown:
                s = summarize(results, dataset, method, sorted(set(results["seed"])), spec.stability_k)
                cells.append(s.cell() if s else "–")
            if any(c != "–" for c in cells):
                lines.append(f"| {dataset} | " + " | ".join(cells) + " |")
    return lines


def refused(results: pd.DataFrame, spec: ReportSpec) -> list[str]:
    """A sentence per method that needs nonnegative values, naming the datasets it has no result on."""
    lines = []
    for entry in (e for e in REGISTRY.values() if e.nonnegative and (results["method"] == e.name).any()):
        without = [d for d in spec.datasets if (results["dataset"] == d).any()
                   and not ((results["dataset"] == d) & (results["method"] == entry.name)).any()]
        if without:
            lines += ["", f"{entry.name} needs nonnegative values; the tables of {', '.join(without)} hold negative "
                          "ones, so it has no result (–) there."]
    return lines


def against_variance(results: pd.DataFrame, spec: ReportSpec) -> list[str]:
    """The default selection against the highest-variance features (and the dispersion), per dataset.

    The decision rule, fixed before any result: the default is above (below) variance where its mean over
    the seeds is higher (lower) by more than its standard deviation over them, else within its spread; with
    a single seed of the default there is no spread, and no verdict.
    """
    k = spec.stability_k
    lines = [f"| dataset | {spec.default} (the default) | variance | dispersion | default − variance | verdict |",
             "|---|---|---|---|---|---|"]
    tally = {"above": 0, "below": 0, "within its spread": 0, "one seed: no verdict": 0}
    for dataset in spec.datasets:
        default = summarize(results, dataset, spec.default, spec.seeds, k)
        found = {name: summarize(results, dataset, name, sorted(set(results["seed"])), k)
                 for name in ("variance", "dispersion")}
        variance = found["variance"]
        if default is None or variance is None:
            continue
        difference = default.mean - variance.mean
        spread = default.std
        verdict = ("one seed: no verdict" if spread is None else "above" if difference > spread
                   else "below" if difference < -spread else "within its spread")
        tally[verdict] += 1
        dispersion = found["dispersion"]
        lines.append(f"| {dataset} | {default.cell()} | {variance.cell()} | "
                     f"{dispersion.cell() if dispersion else '–'} | {difference:+.2f} | {verdict} |")
    if len(lines) == 2:
        return ["No dataset has both a default and a variance cell yet."]
    return lines + ["", f"Each cell: the best k's accuracy, mean ± std over the seeds (their number). The default is "
                        f"above variance on {tally['above']}, below on {tally['below']} and within its spread (its "
                        f"standard deviation over the seeds) on {tally['within its spread']} dataset(s); "
                        f"{tally['one seed: no verdict']} have one seed of the default only."]


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


def baseline_fidelity(results: pd.DataFrame, spec: ReportSpec) -> list[str]:
    """Our baselines against the paper's numbers for them: the mean over the outer seeds, per paper dataset."""
    datasets = [d for d in spec.datasets if d in PAPER_RESULTS]
    lines = ["| dataset | " + " | ".join(PAPER_BASELINES) + " |", "|---|" + "---|" * len(PAPER_BASELINES)]
    met = {name: [0, 0] for name in PAPER_BASELINES}
    for dataset in datasets:
        cells = []
        for name in PAPER_BASELINES:
            ours = summarize(results, dataset, name, spec.seeds, spec.stability_k)
            paper = PAPER_RESULTS[dataset].get(name)
            if ours is None or paper is None:
                cells.append(f"{ours.cell() if ours else '–'} / {paper.accuracy:.2f}" if paper else
                             f"{ours.cell() if ours else '–'} / –")
                continue
            status, diff = target_status(ours.mean / 100, dataset, spec.target_points, name)
            met[name][1] += 1
            met[name][0] += status.startswith("met")
            mark = "" if status.startswith("met") else " ✗"
            cells.append(f"{ours.cell()} / {paper.accuracy:.2f} ({diff:+.2f}{mark})")
        lines.append(f"| {dataset} | " + " | ".join(cells) + " |")
    tally = ", ".join(f"{name} {won} of {of}" for name, (won, of) in met.items() if of)
    return lines + ["", "Each cell: ours (mean ± std over the seeds, their number) / the paper's, and ours minus "
                        f"the paper's; ✗ where ours is below it by more than max(paper std, {spec.target_points:g} "
                        f"points). Met (at, above or within): {tally or 'no cells yet'}."]


def runs_table(results: pd.DataFrame) -> list[str]:
    """Training (or selecting) seconds of every trained method's cell, per dataset and method, over its seeds."""
    neural = [entry.name for entry in REGISTRY.values() if entry.neural]  # the methods that train networks
    trained = results[results["method"].str.startswith("ICLFS") | results["method"].isin(neural)]
    trained = trained.drop_duplicates(["dataset", "method", "seed"])
    lines = ["| dataset | method | seeds | seconds per seed | device |", "|---|---|---|---|---|"]
    for (dataset, method), group in trained.groupby(["dataset", "method"], sort=True):
        seconds = ", ".join(f"{s}: {t:.0f}" for s, t in zip(group["seed"], group["seconds"], strict=True))
        lines.append(f"| {dataset} | {method} | {len(group)} | {seconds} | {', '.join(sorted(set(group['device'])))} |")
    return lines


def build_report(results: pd.DataFrame, spec: ReportSpec, command: str, missing: Mapping[str, str] | None = None,
                 figures: str | None = "figures", cells: str = "cells/") -> str:
    """The whole Markdown report from the gathered cells (:func:`iclfs.evaluation._benchmark.gather`).

    ``figures`` is the folder the figures are linked from, relative to the
    report; None names no folder (the figures are an artifact of their own).
    """
    missing = dict(missing or {})
    done = [d for d in spec.datasets if (results["dataset"] == d).any()]
    lines = [
        "# ICLFS benchmark",
        "",
        f"Generated by `{command}` from the result cells in `{cells}` (one file per dataset, method and seed). "
        "Do not edit by hand.",
        "",
        "Protocol (docs/method.md §8): every method selects from the same standardized data, except variance and "
        "dispersion, which select from the table as read (standardizing erases the variance they rank); for each "
        "k of 50, 100, ..., 300 (up to d) its selection, on the standardized data, goes through 20 k-means runs "
        "(random_state = seed + r). Variance and dispersion are deterministic: one seed suffices for them. A "
        "method's result at one seed is its best k's mean accuracy. Below, each cell is the mean ± std of that "
        f"over the outer seeds {', '.join(map(str, spec.seeds))} (their number in parentheses). `random` pools "
        "five random orders; `all features` uses every column. MCFS and NDFS are given the number of classes; "
        "the other methods use nothing of the labels. Stability between seeds: the mean pairwise Jaccard index "
        "of the 50 features selected at each seed, and Nogueira's Φ of those selections (1: identical, 0: as "
        "random).",
        "",
        "## The default selection and the best baseline",
        "",
        *headline(results, spec),
        "",
        "## ICLFS against the highest-variance features",
        "",
        *against_variance(results, spec),
        "",
        "## Every method",
        "",
        *all_methods(results, spec),
        *refused(results, spec),
        "",
        f"## Fidelity to the paper: `{spec.paper_run}`, seed {spec.seeds[0]}",
        "",
        *fidelity(results, spec),
        "",
        "## Fidelity to the paper: the baselines",
        "",
        *baseline_fidelity(results, spec),
        "",
        "## Training time per cell",
        "",
        *runs_table(results),
        "",
    ]
    if missing:
        lines += ["## Not run", ""] + [f"- **{d}**: {why}" for d, why in missing.items()] + [""]
    if figures is None:
        lines += ["## Figures", "", "One per dataset in the `benchmark_figures` artifact: "
                  + ", ".join(f"`{d}.png`" for d in done) + "."]
    else:
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
        style = {"linewidth": 2.5} if method == spec.default else \
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
