"""The refresh simulation: a scheduled ``select`` on a data source whose samples change every night.

    python -m benchmarks.refresh train --datasets lung_small ORL --refreshes 20

``train`` runs the expensive part once: for each deployment (its own seed)
and refresh r, it draws a fresh random 90 % of the samples, and trains the
refresh's one ICLFS run on them with the seed a carried history gives its
member number r (:func:`iclfs.method.history.member_seed`). It keeps each
run's scores, its samples, its seed and its time in one file per dataset
and deployment, adding to it refresh by refresh, so a killed run resumes
where it stopped. That run is both the method "one run per refresh" and the
carried consensus's new member, so it is never trained twice.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from iclfs.io.synthetic import make_synthetic
from iclfs.io.tables import read_feature_table
from iclfs.method.config import ConsensusConfig, RuntimeConfig, TrainingConfig, ViewConfig
from iclfs.method.consensus import train_members
from iclfs.method.history import member_seed
from iclfs.method.preprocessing import FeatureTable, invert, prepare

STORE = "data/08_reporting/benchmark/refresh"
DATA_DIRS = ("../shared/datasets", "../shared/validation")
KEEP = 0.9  # each refresh keeps this share of the samples
DRAW_STREAM = 2  # tags the seed stream of a refresh's sample draw
DRIFT = "drift"  # the synthetic drift case: its informative features change at DRIFT_AT
DRIFT_AT = 10


def drift_tables() -> tuple[FeatureTable, FeatureTable]:
    """Two synthetic tables with the same feature names and different informative features."""
    shape = {"n_samples": 200, "n_classes": 4, "n_informative": 30, "n_redundant": 0, "n_noise": 370}
    return make_synthetic(**shape, seed=11), make_synthetic(**shape, seed=12)


def load_table(dataset: str, refresh: int, data_dirs) -> FeatureTable:
    if dataset == DRIFT:
        before, after = drift_tables()
        return before if refresh < DRIFT_AT else after
    for directory in data_dirs:
        path = Path(directory) / f"{dataset}.mat"
        if path.is_file():
            return read_feature_table(path)
    raise FileNotFoundError(f"{dataset}.mat is in none of {', '.join(map(str, data_dirs))}")


def refresh_samples(n_samples: int, deployment: int, refresh: int) -> np.ndarray:
    """The samples refresh ``refresh`` of a deployment seeded ``deployment`` sees, ascending."""
    rng = np.random.default_rng(np.random.SeedSequence([deployment, refresh, DRAW_STREAM]))
    return np.sort(rng.choice(n_samples, size=round(KEEP * n_samples), replace=False))


def members_path(store: Path, dataset: str, deployment: int) -> Path:
    return store / dataset / f"members_seed_{deployment}.npz"


def read_members(path: Path) -> dict[str, np.ndarray]:
    if not path.exists():
        return {}
    with np.load(path) as content:
        return {key: content[key] for key in content.files}


def write_members(path: Path, members: dict[str, np.ndarray]) -> None:
    """Whole or not at all: a temporary file beside it, renamed when complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **members)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".partial", dir=path.parent)
    with os.fdopen(handle, "wb") as out:
        out.write(buffer.getvalue())
    os.replace(temporary, path)


def train_refresh(table: FeatureTable, samples: np.ndarray, seed: int, threads: int) -> tuple[np.ndarray, float]:
    """One ICLFS run with the default settings on ``samples``: its z-norm scores and its seconds."""
    y = None if table.y is None else np.asarray(table.y)[samples]
    X = np.asarray(table.X)[samples]
    prepared = prepare(FeatureTable(X=X, y=y, feature_names=table.feature_names, source=table.source))
    runtime = RuntimeConfig(progress=False, num_threads=threads)
    (member,) = train_members(invert(prepared.standardized), TrainingConfig(), ViewConfig(), runtime,
                              ConsensusConfig(), seed)
    return member.scores["z_norm"], member.seconds


def train(datasets, refreshes: dict[str, int], deployments, store: Path, data_dirs, threads: int) -> None:
    for dataset in datasets:
        for deployment in deployments:
            path = members_path(store, dataset, deployment)
            members = read_members(path)
            for refresh in range(refreshes[dataset]):
                if f"scores_{refresh}" in members:
                    continue
                table = load_table(dataset, refresh, data_dirs)
                samples = refresh_samples(np.asarray(table.X).shape[0], deployment, refresh)
                seed = member_seed(deployment, refresh)
                started = time.time()
                scores, seconds = train_refresh(table, samples, seed, threads)
                members.update({f"scores_{refresh}": scores, f"samples_{refresh}": samples,
                                f"seed_{refresh}": np.array(seed, dtype=np.int64),
                                f"seconds_{refresh}": np.array(seconds)})
                write_members(path, members)
                print(f"{dataset} deployment {deployment} refresh {refresh}: {seconds:.1f} s "
                      f"({time.time() - started:.1f} s with preparation)", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.refresh", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("train", help="train the refreshes' runs that are missing")
    run.add_argument("--datasets", nargs="+", required=True)
    run.add_argument("--refreshes", nargs="+", required=True,
                     help="NAME=COUNT per dataset, or one COUNT for all")
    run.add_argument("--deployments", type=int, nargs="+", default=[42, 43])
    run.add_argument("--store", default=STORE)
    run.add_argument("--data-dirs", nargs="+", default=list(DATA_DIRS))
    run.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    counts = dict(item.split("=") if "=" in item else ("*", item) for item in args.refreshes)
    refreshes = {name: int(counts.get(name, counts.get("*", 0))) for name in args.datasets}
    train(args.datasets, refreshes, args.deployments, Path(args.store), args.data_dirs, args.threads)


if __name__ == "__main__":
    main()
