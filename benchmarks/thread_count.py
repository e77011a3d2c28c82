"""Does a run's list depend on torch's thread count?

    python -m benchmarks.thread_count --tables lung_small warpPIE10P --epochs 100 --threads 1 2 3 4

For each table, one default ICLFS run (:func:`iclfs.chain.run`, the default
settings but the epochs) at each of ``--threads`` (``runtime.num_threads``),
each in this process, one after the other; then each run against the first:
the list at the chosen k (Jaccard index and whether it is the same list in
the same order), how many lists of the k grid are identical, whether the
whole ranking is, and the largest difference of a feature's score.

It must not: the same table, settings and seed should give one list on any
machine of a kind, and a thread count that followed the machine's load
would otherwise make the list depend on how busy it was. At first it did
(1 against 2 threads, 100 epochs: Jaccard 0.887 on lung_small and 0.818 on
warpPIE10P, no list of the k grid the same), which kept every thread policy
of issue 59 at one thread count. A ``fast`` training on CPU now sums in an
order the threads do not change (docs/guides/performance.md, "Lists that do
not depend on the thread count"), and this page shows it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PAGE = HERE / "results" / "thread_count.md"


def compare(first, other) -> dict:
    """``other`` run's list, lists and scores against ``first``'s (both :class:`iclfs.chain.ChainResult`)."""
    chosen, theirs = list(first.selections[first.k]), list(other.selections[first.k])
    grid = sorted(set(first.selections) & set(other.selections))
    return {"k": int(first.k), "k_other": int(other.k),
            "jaccard_at_k": len(set(chosen) & set(theirs)) / len(set(chosen) | set(theirs)),
            "same_list_at_k": chosen == theirs,
            "same_lists_of_grid": sum(list(first.selections[g]) == list(other.selections[g]) for g in grid),
            "grid": len(grid),
            "same_ranking": bool(np.array_equal(first.ranking.order, other.ranking.order)),
            "max_score_difference": float(np.max(np.abs(np.asarray(first.ranking.scores, dtype=np.float64)
                                                        - np.asarray(other.ranking.scores, dtype=np.float64))))}


def measure(table, epochs: int, threads) -> dict:
    """One run of ``table`` at each thread count of ``threads``; each against the first."""
    from iclfs import chain
    from iclfs.method._config import Settings

    runs, seconds = [], []
    for count in threads:
        settings = Settings().with_overrides(
            f"training.epochs={epochs},runtime.num_threads={count},runtime.progress=false")
        started = time.perf_counter()
        runs.append(chain.run(table, settings))
        seconds.append(time.perf_counter() - started)
    return {"n": int(np.asarray(table.X).shape[0]), "d": int(np.asarray(table.X).shape[1]), "epochs": epochs,
            "threads": list(threads), "seconds": seconds,
            "against_first": [compare(runs[0], run) for run in runs[1:]]}


def render(results: dict, command: str, date: str) -> str:
    lines = ["# A run's list at different thread counts", "",
             f"Measured {date} on this machine's CPU with `{command}`: one ICLFS run of each table at each "
             "thread count (`runtime.num_threads`), the default settings with the epochs given, each against the "
             "run at the first count. Why it matters: `benchmarks/thread_count.py`.", "",
             "| table | n x d | epochs | threads | k | Jaccard at k | same list at k | identical lists of the k grid "
             "| same ranking | largest score difference | seconds |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        for count, c, seconds in zip(r["threads"][1:], r["against_first"], r["seconds"][1:]):
            k = f"{c['k']}" if c["k_other"] == c["k"] else f"{c['k']} (chose {c['k_other']})"
            lines.append(f"| {name} | {r['n']} x {r['d']} | {r['epochs']} | {r['threads'][0]} vs {count} | {k} | "
                         f"{c['jaccard_at_k']:.3f} | {'yes' if c['same_list_at_k'] else 'no'} | "
                         f"{c['same_lists_of_grid']} of {c['grid']} | {'yes' if c['same_ranking'] else 'no'} | "
                         f"{c['max_score_difference']:.3g} | {r['seconds'][0]:.1f} / {seconds:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.thread_count", description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="+", default=["lung_small", "warpPIE10P"],
                        help="scikit-feature names (found in --data-dirs), paths, or synthetic:DxN")
    parser.add_argument("--data-dirs", nargs="+", default=["../shared/validation", "../shared/datasets"])
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--output", type=Path, default=PAGE)
    parser.add_argument("--json", type=Path, default=None, help="default: --output with .json")
    args = parser.parse_args(argv)
    if len(args.threads) < 2 or min(args.threads) < 1:
        parser.error(f"--threads {' '.join(map(str, args.threads))}: give at least two counts, each at least 1")
    from iclfs.io._synthetic import make_synthetic
    from iclfs.io._tables import find_dataset, read_feature_table

    results = {}
    for name in args.tables:
        if name.startswith("synthetic:"):
            d, n = (int(v) for v in name.split(":")[1].split("x"))
            table = make_synthetic(n_samples=n, n_informative=min(30, d), n_redundant=0,
                                   n_noise=max(0, d - 30), seed=0)
        else:
            table = read_feature_table(name if Path(name).is_file() else find_dataset(name, args.data_dirs))
        results[name] = measure(table, args.epochs, args.threads)
        print(json.dumps({name: results[name]["against_first"]}), flush=True)
    command = "python -m benchmarks.thread_count " + " ".join(sys.argv[1:] if argv is None else argv)
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render(results, command, date))
    (args.json or args.output.with_suffix(".json")).write_text(
        json.dumps({"command": command, "date": date, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
