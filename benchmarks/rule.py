"""The decision rule that picked the default selection among candidates, and its command line.

    python -m benchmarks.rule decide --candidates R=members.per_run=1 W=members.per_run=6
    python -m benchmarks.rule compare --candidates R=members.per_run=1 F=members.feature_blocks=8

``decide`` scores candidate settings by the rule below from their cells in
the benchmark's cell store (the validation sets unless ``--datasets`` says
otherwise) and names the winner; the first candidate is the reference the
others are measured against. ``compare`` shows candidates side by side,
measured and not judged. The rounds the rule decided are in
``benchmarks/results/rounds/``, their conclusions in docs/members.md.

The rule was fixed before its candidates were run. On each development dataset a
candidate scores one point for each of: its mean best-k accuracy over the
outer seeds is at or above the reference's (one run); its standard deviation
over the seeds is at most half the reference's; its Jaccard index of the
k = 50 selections between the seeds is at least 0.6; its mean is at or
above the best baseline's; its mean wall time per seed is at most 1.5x the
reference's. The most points over the datasets wins; a tie goes to the
higher mean accuracy averaged over the datasets.

A round whose candidates are measured over several sessions can often be
settled before its last cells: with some of a candidate's seeds missing,
:func:`points` bounds each point from the cells it has (an accuracy lies in
[0, 100]; a standard deviation is at least the spread of the seeds already
run; the Jaccard distance is a metric, so the seeds already run cap how much
a missing one can share with them; a seed takes no less than no time), and
:func:`decide` names a winner only when no outcome of the missing cells could
change it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from iclfs.evaluation._benchmark import gather, method_name
from iclfs.evaluation._report import Summary, baseline_cell, best_baseline, summarize
from iclfs.method._config import Settings

from .grid import CELLS, RESULTS, read_cells

#: The four development sets: decisions are made on these, never on the paper's ten.
VALIDATION_DATASETS = ("Isolet", "ORL", "lung_small", "madelon")

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
        Benchmark cells gathered into one table (:func:`iclfs.evaluation._benchmark.gather`).
    candidates : mapping of str to str
        ``{short name: benchmark method name}``, in the order to report.
    reference : str
        The short name of the candidate the others are measured against (one run).
    datasets : sequence of str
        The development datasets.
    seeds : sequence of int
        The outer seeds. The reference and the baselines must have a cell at each; another
        candidate may lack some, and then its points are bounded (see the module's docstring).
    rule : Rule
        The thresholds.

    Returns
    -------
    pandas.DataFrame
        One row per (dataset, candidate): ``seeds`` (how many have a cell), ``mean``, ``std``,
        ``jaccard`` and ``seconds`` over those seeds (None without any); one column per point of
        :data:`POINTS`, 1 (earned), 0 (not earned) or None (the missing cells decide);
        ``total`` (points earned), ``total_max`` (earned or open) and ``mean_min``, ``mean_max``
        (the mean accuracy over all the seeds, bounded when some are missing).

    Raises
    ------
    IncompleteError
        When a cell of the reference or the baselines is missing, naming the dataset, the method and
        the seeds it has.
    """
    if reference not in candidates:
        raise ValueError(f"the reference {reference!r} is not one of the candidates {list(candidates)}")
    rows = []
    for dataset in datasets:
        found = {name: summarize(results, dataset, method, seeds, rule.k) for name, method in candidates.items()}
        ref = found[reference]
        if ref is None or sorted(ref.seeds) != sorted(seeds):
            raise IncompleteError(f"{dataset}: {candidates[reference]!r} ({reference}) has cells at seeds "
                                  f"{list(ref.seeds) if ref else []}, the rule needs {list(seeds)}")
        baseline = best_baseline(results, dataset, seeds, rule.k)
        if baseline is None or sorted(baseline[1].seeds) != sorted(seeds):
            raise IncompleteError(f"{dataset}: the baselines have no cells at every seed of {list(seeds)}")
        for name, s in found.items():
            scored = _score(s, len(seeds), ref, baseline[1].mean, rule)
            rows.append({"dataset": dataset, "candidate": name, "seeds": len(s.seeds) if s else 0,
                         "mean": s.mean if s else None, "std": s.std if s else None,
                         "jaccard": s.jaccard if s else None, "seconds": s.seconds if s else None,
                         "best_baseline": f"{baseline[0]} {baseline[1].mean:.2f}", **scored})
    return pd.DataFrame(rows)


def _score(s: Summary | None, n: int, ref: Summary, baseline: float, rule: Rule) -> dict:
    """The points of one candidate's summary over those of the ``n`` seeds it has, bounded where some are missing."""
    m = len(s.seeds) if s else 0
    if m == n:
        mean_min = mean_max = s.mean
        std, jaccard_min, jaccard_max, seconds_min = s.std, s.jaccard, s.jaccard, s.seconds
    else:
        have = float(np.sum(s.accuracies)) if s else 0.0
        mean_min, mean_max = have / n, (have + 100.0 * (n - m)) / n
        # all missing seeds at the mean of those run: the least spread the n can have
        std = float(np.sqrt(np.sum((np.asarray(s.accuracies) - s.mean) ** 2) / n)) if m > 1 else 0.0
        jaccard_min, jaccard_max = _jaccard_bounds(s.jaccard if s else None, m, n)
        seconds_min = s.seconds * m / n if s else 0.0
    spread_limit = rule.spread_ratio * ref.std if ref.std is not None else None
    cost_limit = rule.cost_ratio * ref.seconds

    def point(earned: bool, possible: bool) -> int | None:
        return 1 if earned else 0 if not possible else None

    complete = m == n
    steady_enough = std is not None and spread_limit is not None and std <= spread_limit
    fast_enough = seconds_min <= cost_limit
    scored = {
        "accuracy": point(mean_min >= ref.mean, mean_max >= ref.mean),
        "spread": point(complete and steady_enough, steady_enough),
        "stability": point(jaccard_min is not None and jaccard_min >= rule.jaccard,
                           jaccard_max is not None and jaccard_max >= rule.jaccard),
        "baseline": point(mean_min >= baseline, mean_max >= baseline),
        "cost": point(complete and fast_enough, fast_enough),
    }
    return {**scored, "total": sum(v == 1 for v in scored.values()),
            "total_max": sum(v != 0 for v in scored.values()), "mean_min": mean_min, "mean_max": mean_max}


def _jaccard_bounds(known: float | None, m: int, n: int) -> tuple[float | None, float | None]:
    """Bounds on the mean pairwise Jaccard index of n selections, given the mean ``known`` of m of them.

    A missing selection x shares with the m known ones at most m - D / (m - 1) in total, D being the
    sum of the known pairs' Jaccard distances: summing d(i, x) + d(j, x) >= d(i, j) over the known
    pairs gives (m - 1) sum_i d(i, x) >= D. Two missing selections may be alike.
    """
    if n < 2:  # one seed has no pair: no Jaccard index, as for a complete candidate
        return None, None
    pairs = n * (n - 1) / 2
    known_pairs = m * (m - 1) / 2
    if m > 1 and known is None:  # selections missing from cells that exist: nothing is known
        return 0.0, 1.0
    shared = (known or 0.0) * known_pairs
    with_missing = m - (known_pairs - shared) / (m - 1) if m > 1 else float(m)
    missing = n - m
    return shared / pairs, (shared + missing * with_missing + missing * (missing - 1) / 2) / pairs


def decide(table: pd.DataFrame) -> tuple[str | None, pd.DataFrame]:
    """The winner of a :func:`points` table, and each candidate's points and mean accuracy, best first.

    The most points over the datasets wins; a tie goes to the higher mean accuracy averaged over the
    datasets (a tie in both goes to the candidate listed first). With cells missing, the winner is the
    candidate that wins even if it earns none of its open points and every other candidate earns all of
    theirs, at the least and the most mean accuracy the missing cells allow; None when there is none.
    The totals give ``points`` (earned), ``points_max`` (earned or open), ``mean_accuracy`` (over the
    seeds run) and ``mean_min``, ``mean_max`` (over all the seeds, bounded).
    """
    order = list(dict.fromkeys(table["candidate"]))
    totals = (table.groupby("candidate", sort=False)
              .agg(points=("total", "sum"), points_max=("total_max", "sum"), mean_accuracy=("mean", "mean"),
                   mean_min=("mean_min", "mean"), mean_max=("mean_max", "mean"))
              .reindex(order).reset_index())
    # a stable sort keeps the listed order among candidates tied in both
    totals = totals.sort_values(["points", "points_max", "mean_accuracy"], ascending=False,
                                kind="stable").reset_index(drop=True)
    rows = list(totals.itertuples(index=False))

    def beats(x, y) -> bool:
        if x.points != y.points_max:
            return x.points > y.points_max
        if x.mean_min != y.mean_max:
            return x.mean_min > y.mean_max
        return order.index(x.candidate) < order.index(y.candidate)

    winners = [x.candidate for x in rows if all(beats(x, y) for y in rows if y is not x)]
    return (str(winners[0]) if winners else None), totals


def markdown(table: pd.DataFrame, totals: pd.DataFrame, winner: str | None, candidates: Mapping[str, str]) -> str:
    """The points table, the totals and the winner as Markdown; ``?`` marks a point the missing cells decide."""

    def fmt(value: float | None) -> str:
        return "–" if value is None or pd.isna(value) else f"{value:.2f}"

    def span(low, high, cell) -> str:
        return cell(low) if low == high else f"{cell(low)}–{cell(high)}"

    n = int(table["seeds"].max())  # the reference has every seed
    partial = bool((table["seeds"] < n).any())
    lines = ["| candidate | method |", "|---|---|"]
    lines += [f"| {name} | {method} |" for name, method in candidates.items()]
    lines += ["", "| dataset | candidate | accuracy (mean ± std) | Jaccard@50 | seconds per seed | best baseline | "
              + " | ".join(POINTS) + " | points |", "|---|---|---|---|---|---|" + "---|" * (len(POINTS) + 1)]
    for row in table.itertuples(index=False):
        accuracy = f"{fmt(row.mean)} ± {fmt(row.std)}"
        if partial and row.seeds < n:
            accuracy += f" ({row.seeds} of {n} seeds)"
        seconds = "–" if row.seconds is None or pd.isna(row.seconds) else f"{row.seconds:.0f}"
        marks = ["?" if pd.isna(getattr(row, p)) else str(int(getattr(row, p))) for p in POINTS]
        lines.append(f"| {row.dataset} | {row.candidate} | {accuracy} | {fmt(row.jaccard)} | {seconds} | "
                     f"{row.best_baseline} | " + " | ".join(marks)
                     + f" | {span(row.total, row.total_max, str)} |")
    lines += ["", "| candidate | points | mean accuracy over the datasets |", "|---|---|---|"]
    for row in totals.itertuples(index=False):
        accuracy = fmt(row.mean_accuracy)
        if partial and row.mean_min != row.mean_max:
            accuracy += f" over the seeds run; {span(row.mean_min, row.mean_max, lambda v: f'{v:.2f}')} over all"
        lines.append(f"| {row.candidate} | {span(row.points, row.points_max, str)} | {accuracy} |")
    if winner is None:
        lines += ["", "No winner yet: the missing cells could still change the order."]
    else:
        settled = ", whatever the missing cells give" if partial else ""
        lines += ["", f"Winner by the rule: **{winner}** ({candidates[winner]}){settled}."]
    return "\n".join(lines) + "\n"


def comparison(results: pd.DataFrame, methods: Mapping[str, str], datasets: Sequence[str], seeds: Sequence[int],
               k: int = 50) -> list[str]:
    """Named methods side by side on each dataset, measured and not judged (no points, no winner).

    ``methods`` is ``{short name: benchmark method name}``; the first is the one the others' time is
    measured against. One Markdown row per (dataset, method) that has a cell: its accuracy (mean ± std and
    the number of seeds), its Jaccard@k between seeds, its seconds per seed and their ratio to the first
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
            jaccard = "–" if summary.jaccard is None else f"{summary.jaccard:.2f}"
            lines.append(f"| {dataset} | {name} | {summary.cell()} | {jaccard} | {summary.seconds:.0f} | "
                         f"{'–' if ratio is None else f'{ratio:.2f}'} | {baseline_cell(baseline)} |")
    return lines


def named_methods(candidates: Sequence[str]) -> dict[str, str]:
    """``{NAME: benchmark method name}`` from ``NAME=section.key=value,...`` texts, in their order."""
    named: dict[str, str] = {}
    for text in candidates:
        name, sep, overrides = text.partition("=")
        if not sep or not name:
            raise ValueError(f"candidate {text!r} is not NAME=section.key=value,...")
        if name in named:
            raise ValueError(f"candidate name {name!r} is given twice")
        named[name] = method_name(Settings().with_overrides(overrides))
    return named


def decide_text(candidates: Sequence[str], datasets: Sequence[str], seeds: Sequence[int],
                cells: dict[str, pd.DataFrame]) -> str:
    """The rule's points, totals and winner for ``NAME=SETTINGS`` candidates, as Markdown."""
    named = named_methods(candidates)
    table = points(gather(cells), named, next(iter(named)), datasets, seeds)
    winner, totals = decide(table)
    return markdown(table, totals, winner, named)


def compare_text(candidates: Sequence[str], datasets: Sequence[str], seeds: Sequence[int],
                 cells: dict[str, pd.DataFrame]) -> str:
    """``NAME=SETTINGS`` candidates side by side, measured and not judged, as Markdown."""
    return "\n".join(comparison(gather(cells), named_methods(candidates), datasets, seeds)) + "\n"


def main(argv: list[str] | None = None) -> None:
    import argparse
    import sys

    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rule", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for command, summary, first, datasets in (
            ("decide", "score candidates by the rule", "the first is the reference (one run)", VALIDATION_DATASETS),
            ("compare", "show candidates side by side, without points or a winner",
             "time is shown as a ratio to the first's", None)):
        sub = commands.add_parser(command, help=summary)
        sub.add_argument("--candidates", nargs="+", required=True, metavar="NAME=SETTINGS",
                         help=f"NAME=section.key=value,...; {first}")
        sub.add_argument("--datasets", nargs="+", default=list(datasets) if datasets else None,
                         help="default: " + ("the validation sets" if datasets else "every dataset with cells"))
        sub.add_argument("--seeds", type=int, nargs="+", default=[42, 43, 44])
        sub.add_argument("--cells", nargs="+", default=[CELLS, str(RESULTS / "cells")])
        sub.add_argument("--out", help="also write the Markdown to this file")
    args = parser.parse_args(argv)
    make, title, how = {
        "decide": (decide_text, "The rule's points", "by the rule of benchmarks/rule.py (fixed before the "
                   "candidates ran)"),
        "compare": (compare_text, "Candidates side by side",
                    "(each over the seeds it has cells at; measured, not judged by a rule)"),
    }[args.command]
    cells = read_cells(*args.cells)
    datasets = args.datasets or sorted({key.split("/")[0] for key in cells})
    try:
        text = make(args.candidates, datasets, args.seeds, cells)
    except ValueError as err:
        parser.error(str(err))
    print(text, end="")
    if args.out:
        command = "python -m benchmarks.rule " + " ".join(argv)
        Path(args.out).write_text(f"# {title}\n\nGenerated by `{command}` from the benchmark's cells "
                                  f"{how}. Do not edit by hand.\n\n" + text)


if __name__ == "__main__":
    main()
