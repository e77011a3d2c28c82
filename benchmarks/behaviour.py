"""Behaviour record: the method's lists and scores, bit for bit, to hold a refactor to.

    python -m benchmarks.behaviour record --out benchmarks/results/behaviour.json
    python -m benchmarks.behaviour check  --record benchmarks/results/behaviour.json

For each dataset (lung_small and warpPIE10P by default; 5 epochs, one torch
thread) it runs, through :func:`iclfs.chain.run` and
:func:`iclfs.baselines.run`:

``one_run``
    one ICLFS run (the default settings but the epochs);
``two_members``
    a run of two members (``members.per_run: 2``, 5 epochs each);
``carried``
    three carried refreshes, each on its own 90 % of the samples (drawn from
    ``numpy.random.default_rng(refresh)``), from an empty member history;
``ndfs``
    NDFS, given the number of classes.

It records every list (feature indices at every k) and a SHA-256 of the bytes
of every score array (the order's scores, the Laplacian scores, each
member's scores). ``check`` runs the same again and names each entry that
differs: a refactor that changes no behaviour leaves every one equal.

The settings are given as dotted keys, by their current names: a key of an
earlier version is refused (:func:`iclfs.method._config.refuse_old_names`),
so a rename updates :data:`CASES` with it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

DATASETS = ("lung_small", "warpPIE10P")
FOLDERS = ("../shared/validation", "../shared/datasets")
EPOCHS = 5
#: The cases' settings, as dotted keys.
CASES = {
    "one_run": {"training.epochs": EPOCHS},
    "two_members": {"training.epochs": EPOCHS, "members.per_run": 2, "members.epochs": EPOCHS},
    "carried": {"training.epochs": EPOCHS},
}
REFRESHES = 3
KEEP = 0.9


def digest(array: np.ndarray) -> str:
    array = np.ascontiguousarray(np.asarray(array))
    return hashlib.sha256(str(array.dtype).encode() + str(array.shape).encode() + array.tobytes()).hexdigest()


def settings_for(overrides: dict):
    from iclfs.method._config import Settings

    text = ",".join(f"{key}={json.dumps(value)}" for key, value in overrides.items())
    return Settings().with_overrides(text + ",runtime.num_threads=1,runtime.progress=false")


def refresh_rows(n: int, refresh: int) -> np.ndarray:
    """The samples refresh ``refresh`` keeps: a sorted 90 % draw."""
    size = max(4, round(KEEP * n))
    return np.sort(np.random.default_rng(refresh).choice(n, size=size, replace=False))


def chain_entry(result) -> dict:
    return {
        "lists": {str(k): [int(j) for j in chosen] for k, chosen in sorted(result.selections.items())},
        "k": int(result.k),
        "scores": digest(result.ranking.scores),
        "order": digest(result.ranking.order),
        "laplacian": digest(result.laplacian_scores),
        "members": [{name: digest(values) for name, values in sorted(m.scores.items())}
                    for m in result.trained.trainings],
    }


def record_dataset(table) -> dict:
    """Every case on one table."""
    from iclfs import baselines
    from iclfs import chain
    from iclfs.method._ranking import MemberHistory
    from iclfs.method._preprocessing import FeatureTable, prepare

    out: dict = {}
    for case in ("one_run", "two_members"):
        out[case] = chain_entry(chain.run(table, settings_for(CASES[case])))
    X = np.asarray(table.X, dtype=np.float64)
    history, lists = MemberHistory(), None
    refreshes = []
    for refresh in range(REFRESHES):
        rows = refresh_rows(X.shape[0], refresh)
        part = FeatureTable(X=X[rows], feature_names=table.feature_names, source=f"{table.source} refresh {refresh}")
        result = chain.run(part, settings_for(CASES["carried"]), history=history, previous=lists)
        history, lists = result.history, result.lists
        refreshes.append(chain_entry(result))
    out["carried"] = refreshes
    prepared = prepare(table)
    n_classes = len(np.unique(np.asarray(table.y)))
    grid = chain.k_values_for(settings_for({}).selection, X.shape[1])
    result = baselines.run("ndfs", prepared.standardized, grid, n_clusters=n_classes, seed=42)
    out["ndfs"] = {"lists": {str(k): [int(j) for j in result.selections[k]] for k in grid},
                   "scores": digest(result.scores)}
    return out


def record(datasets, folders) -> dict:
    from iclfs.io._tables import find_dataset, read_feature_table

    return {name: record_dataset(read_feature_table(find_dataset(name, folders))) for name in datasets}


def differences(expected, actual, where: str = "") -> list[str]:
    """Every path at which two records differ."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        found = [f"{where}/{key}: missing" for key in expected if key not in actual]
        found += [f"{where}/{key}: not in the record" for key in actual if key not in expected]
        for key in expected:
            if key in actual:
                found += differences(expected[key], actual[key], f"{where}/{key}")
        return found
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual) and \
            all(isinstance(e, (dict, list)) for e in expected):
        return [d for i, (e, a) in enumerate(zip(expected, actual)) for d in differences(e, a, f"{where}[{i}]")]
    return [] if expected == actual else [f"{where}: differs"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.behaviour", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("record", "check"):
        command = sub.add_parser(name)
        command.add_argument("--datasets", nargs="+", default=list(DATASETS))
        command.add_argument("--data-dirs", nargs="+", default=list(FOLDERS))
    sub.choices["record"].add_argument("--out", type=Path, default=Path("benchmarks/results/behaviour.json"))
    sub.choices["check"].add_argument("--record", type=Path, default=Path("benchmarks/results/behaviour.json"))
    args = parser.parse_args(argv)
    current = record(args.datasets, args.data_dirs)
    if args.command == "record":
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(current, indent=1) + "\n")
        print(f"recorded {', '.join(args.datasets)} to {args.out}")
        return 0
    expected = json.loads(args.record.read_text())
    expected = {name: expected[name] for name in args.datasets}
    found = differences(expected, current)
    if found:
        print("\n".join(found))
        print(f"{len(found)} difference(s) from {args.record}")
        return 1
    print(f"identical to {args.record}: {', '.join(args.datasets)}, every list and score")
    return 0


if __name__ == "__main__":
    sys.exit(main())
