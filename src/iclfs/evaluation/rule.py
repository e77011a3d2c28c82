"""The rule that picks the default selection among candidates (docs/consensus.md, round 2).

Fixed before its candidates were run. On each development dataset a
candidate scores one point for each of: its mean best-k accuracy over the
outer seeds is at or above the reference's (one run); its standard deviation
over the seeds is at most half the reference's; its Jaccard index of the
k = 50 selections between the seeds is at least 0.6; its mean is at or
above the best baseline's; its mean wall time per seed is at most 1.5x the
reference's. The most points over the datasets wins; a tie goes to the
higher mean accuracy averaged over the datasets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from iclfs.evaluation.report import best_baseline, summarize

POINTS = ("accuracy", "spread", "stability", "baseline", "cost")


@dataclass(frozen=True)
class Rule:
    """The thresholds of the rule.

    Attributes
    ----------
    spread_ratio : float
        A candidate's std over the seeds must be at most this fraction of the reference's.
    jaccard : float
        The Jaccard index of the ``k`` selections between seeds must reach this.
    cost_ratio : float
        A candidate's mean seconds per seed must be at most this multiple of the reference's.
    k : int
        The k whose selections the Jaccard index compares.
    """

    spread_ratio: float = 0.5
    jaccard: float = 0.6
    cost_ratio: float = 1.5
    k: int = 50


class IncompleteError(ValueError):
    """A candidate or the baselines lack a cell the rule needs."""


def points(results: pd.DataFrame, candidates: Mapping[str, str], reference: str, datasets: Sequence[str],
           seeds: Sequence[int], rule: Rule = Rule()) -> pd.DataFrame:
    """Every candidate's points on every dataset.

    Parameters
    ----------
    results : pandas.DataFrame
        Benchmark cells gathered into one table (:func:`iclfs.evaluation.benchmark.gather`).
    candidates : mapping of str to str
        ``{short name: benchmark method name}``, in the order to report.
    reference : str
        The short name of the candidate the others are measured against (one run).
    datasets : sequence of str
        The development datasets.
    seeds : sequence of int
        The outer seeds; every candidate and the baselines must have a cell at each.
    rule : Rule
        The thresholds.

    Returns
    -------
    pandas.DataFrame
        One row per (dataset, candidate): ``mean``, ``std``, ``jaccard``, ``seconds``, one 0/1 column per
        point of :data:`POINTS` and ``total``.

    Raises
    ------
    IncompleteError
        When a cell is missing, naming the dataset, the method and the seeds it has.
    """
    if reference not in candidates:
        raise ValueError(f"the reference {reference!r} is not one of the candidates {list(candidates)}")
    rows = []
    for dataset in datasets:
        found = {name: summarize(results, dataset, method, seeds, rule.k) for name, method in candidates.items()}
        for name, summary in found.items():
            if summary is None or sorted(summary.seeds) != sorted(seeds):
                have = list(summary.seeds) if summary else []
                raise IncompleteError(f"{dataset}: {candidates[name]!r} ({name}) has cells at seeds {have}, "
                                      f"the rule needs {list(seeds)}")
        baseline = best_baseline(results, dataset, seeds, rule.k)
        if baseline is None or sorted(baseline[1].seeds) != sorted(seeds):
            raise IncompleteError(f"{dataset}: the baselines have no cells at every seed of {list(seeds)}")
        ref = found[reference]
        for name, s in found.items():
            row = {"dataset": dataset, "candidate": name, "mean": s.mean, "std": s.std, "jaccard": s.jaccard,
                   "seconds": s.seconds, "best_baseline": f"{baseline[0]} {baseline[1].mean:.2f}",
                   "accuracy": int(s.mean >= ref.mean),
                   "spread": int(s.std is not None and ref.std is not None and s.std <= rule.spread_ratio * ref.std),
                   "stability": int(s.jaccard is not None and s.jaccard >= rule.jaccard),
                   "baseline": int(s.mean >= baseline[1].mean),
                   "cost": int(s.seconds <= rule.cost_ratio * ref.seconds)}
            row["total"] = sum(row[p] for p in POINTS)
            rows.append(row)
    return pd.DataFrame(rows)


def decide(table: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """The winner of a :func:`points` table, and each candidate's total and mean accuracy, best first.

    The most points over the datasets wins; a tie goes to the higher mean accuracy averaged over the
    datasets (a tie in both goes to the candidate listed first).
    """
    order = list(dict.fromkeys(table["candidate"]))
    totals = (table.groupby("candidate", sort=False)
              .agg(points=("total", "sum"), mean_accuracy=("mean", "mean"))
              .reindex(order).reset_index())
    # a stable sort keeps the listed order among candidates tied in both
    totals = totals.sort_values(["points", "mean_accuracy"], ascending=False, kind="stable").reset_index(drop=True)
    return str(totals["candidate"].iloc[0]), totals


def markdown(table: pd.DataFrame, totals: pd.DataFrame, winner: str, candidates: Mapping[str, str]) -> str:
    """The points table, the totals and the winner as Markdown."""

    def fmt(value: float | None) -> str:
        return "–" if value is None or pd.isna(value) else f"{value:.2f}"

    lines = ["| candidate | method |", "|---|---|"]
    lines += [f"| {name} | {method} |" for name, method in candidates.items()]
    lines += ["", "| dataset | candidate | accuracy (mean ± std) | Jaccard@50 | seconds per seed | best baseline | "
              + " | ".join(POINTS) + " | points |", "|---|---|---|---|---|---|" + "---|" * (len(POINTS) + 1)]
    for row in table.itertuples(index=False):
        lines.append(f"| {row.dataset} | {row.candidate} | {row.mean:.2f} ± {fmt(row.std)} | {fmt(row.jaccard)} | "
                     f"{row.seconds:.0f} | {row.best_baseline} | "
                     + " | ".join(str(getattr(row, p)) for p in POINTS) + f" | {row.total} |")
    lines += ["", "| candidate | points | mean accuracy over the datasets |", "|---|---|---|"]
    lines += [f"| {row.candidate} | {row.points} | {row.mean_accuracy:.2f} |" for row in totals.itertuples(index=False)]
    lines += ["", f"Winner by the rule: **{winner}** ({candidates[winner]})."]
    return "\n".join(lines) + "\n"
