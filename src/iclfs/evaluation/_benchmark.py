"""Benchmark cells: one method on one dataset at one seed, through the k-means protocol.

A cell is the unit of the benchmark grid (datasets x methods x seeds). Its
result is one small table, one row per k (:data:`RESULT_COLUMNS`), kept as
its own file ``<dataset>/<method slug>/seed_<seed>.csv`` (:func:`cell_key`), so
cells computed apart (other seeds, other machines, other workers) never
overwrite each other and a rerun replaces one cell only.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version

import numpy as np
import pandas as pd

from iclfs import baselines
from iclfs.evaluation._protocol import kmeans_scores
from iclfs.method._config import RuntimeConfig, Settings

LOGGER = logging.getLogger(__name__)

# Letters of the paper's progressive ablation names, in the paper's order.
_ABLATION_LETTERS = ("L", "D", "A", "R")
RESULT_COLUMNS = ["dataset", "method", "seed", "k", "accuracy_mean", "accuracy_std", "nmi_mean", "nmi_std", "n_runs",
                  "seconds", "evaluation_seconds", "device", "schedule", "epochs", "run_at", "versions", "selected"]


def method_name(settings: Settings) -> str:
    """The benchmark name of the ICLFS configuration in ``settings``, relative to the paper's single run.

    ``ICLFS`` is the paper's method: one run, the literal loop. The paper's
    ablation names mark what is off: ``W`` + ``L`` (no LGRC), ``D`` (no
    decorrelation), ``A`` (no attention), ``R`` (one random-masked view),
    e.g. ``ICLFS-WLD``. A score other than z-norm follows in parentheses.
    Anything else that differs from the paper's run is a tag in brackets:
    the ``fast`` schedule, a run's several members (how many, their epochs,
    their share of the samples), feature blocks, the published code's random draws, bf16
    arithmetic: ``ICLFS [fast]``, ``ICLFS [fast, 8 members of 20 epochs, 0.5 of samples]``,
    ``ICLFS [fast, 4 members of 100 epochs, 8 feature blocks]``, ``ICLFS [published stream]``.
    """
    off = (not settings.selection.use_lgrc, not settings.training.use_decorrelation,
           not settings.training.use_attention, settings.views.positives == "random")
    letters = "".join(letter for letter, is_off in zip(_ABLATION_LETTERS, off, strict=True) if is_off)
    name = f"ICLFS-W{letters}" if letters else "ICLFS"
    if settings.ranking.score != "z_norm":
        name += f" ({settings.ranking.score})"
    tags = [settings.training.schedule] if settings.training.schedule != "paper" else []
    members = settings.members
    if members.per_run > 1:
        tag = f"{members.per_run} members of {members.epochs} epochs"
        if members.subsample < 1:
            tag += f", {members.subsample:g} of samples"
        tags.append(tag)
    if members.feature_blocks > 1:
        tags.append(f"{members.feature_blocks} feature blocks")
    if settings.runtime.precision == "bf16":
        tags.append("bf16")
    if settings.views.stream == "published":
        tags.append("published stream")
    return name + (f" [{', '.join(tags)}]" if tags else "")


def slug(method: str) -> str:
    """A method name as a folder name: ``ICLFS [fast]`` -> ``iclfs-fast``."""
    return re.sub(r"[^a-z0-9.]+", "-", method.lower()).strip("-")


def cell_key(dataset: str, method: str, seed: int) -> str:
    """Where a cell's result lives, relative to the cells folder: ``<dataset>/<method slug>/seed_<seed>``."""
    return f"{dataset}/{slug(method)}/seed_{int(seed)}"


def versions() -> str:
    """The versions that computed a cell."""
    parts = []
    for package in ("iclfs", "torch", "scikit-learn"):
        try:
            parts.append(f"{package}={version(package)}")
        except PackageNotFoundError:
            parts.append(f"{package}=source")
    return " ".join(parts)


def evaluate_cell(X: np.ndarray, codes: np.ndarray, selections: Mapping[int, np.ndarray | Sequence[np.ndarray]], *,
                  dataset: str, method: str, seed: int, n_runs: int, seconds: float, device: str = "cpu",
                  schedule: str = "none", epochs: int = 0) -> pd.DataFrame:
    """One method's selections at every k through the protocol: the cell's table, one row per k.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The standardized data every method selects from.
    codes : ndarray of shape (n_samples,)
        Class codes 0..c-1.
    selections : mapping of k to indices, or to several index arrays
        A method with several selections at a k (``random``) pools their
        k-means runs.
    seconds : float
        The method's own time (training, or ranking for a baseline).

    Returns
    -------
    DataFrame
        :data:`RESULT_COLUMNS`; ``selected`` holds the selection at each k
        (indices best first, space-separated; empty for pooled selections).
    """
    rows = []
    for k in sorted(selections):
        chosen = [np.asarray(s, dtype=np.int64) for s in np.atleast_2d(np.asarray(selections[k], dtype=np.int64))]
        started = time.perf_counter()
        runs = [kmeans_scores(X[:, s], codes, n_runs=n_runs, seed=seed) for s in chosen]
        acc = np.concatenate([r[0] for r in runs])
        nmi = np.concatenate([r[1] for r in runs])
        rows.append({"k": int(k), "accuracy_mean": float(acc.mean()), "accuracy_std": float(acc.std()),
                     "nmi_mean": float(nmi.mean()), "nmi_std": float(nmi.std()), "n_runs": int(acc.size),
                     "evaluation_seconds": time.perf_counter() - started,
                     "selected": " ".join(map(str, chosen[0])) if len(chosen) == 1 else ""})
    table = pd.DataFrame(rows, columns=[c for c in RESULT_COLUMNS if c in
                                        ("k", "accuracy_mean", "accuracy_std", "nmi_mean", "nmi_std", "n_runs",
                                         "evaluation_seconds", "selected")])
    table["dataset"] = dataset
    table["method"] = method
    table["seed"] = int(seed)
    table["seconds"] = float(seconds)
    table["device"] = device
    table["schedule"] = schedule
    table["epochs"] = int(epochs)
    table["run_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    table["versions"] = versions()
    return table[RESULT_COLUMNS]


def baseline_selections(X: np.ndarray, codes: np.ndarray, keys: Sequence[str], options: Mapping[str, Mapping],
                        k_values: Sequence[int], seed: int, runtime: RuntimeConfig | None = None,
                        measured: np.ndarray | None = None) -> dict[str, tuple[dict[int, np.ndarray], float]]:
    """Every baseline's selection at every k, on the same standardized data as ICLFS (:mod:`iclfs.baselines`),
    or, for variance and dispersion, on ``measured``, the same table before standardization.

    The methods that need the number of clusters (MCFS, NDFS) are told the
    number of classes, as is usual for them; seeded ones get ``seed``;
    ``random`` pools its draws; ``all_features`` selects every column once
    (k = d). ``options`` is conf's ``baselines`` section, by key.

    Returns
    -------
    dict
        ``{baseline name: ({k: indices or (draws, k) indices}, seconds to select)}``; no selection (``{}``)
        for a method that refuses the table (dispersion on negative values), whose cell is then empty.
    """
    for key in keys:
        baselines.baseline(key)  # an unknown key stops here, before any work
    X = np.asarray(X, dtype=np.float64)
    grid = sorted(int(k) for k in k_values if k <= X.shape[1])
    n_clusters = len(np.unique(codes))
    out = {}
    for key in keys:
        entry = baselines.REGISTRY[key]
        if entry.nonnegative and measured is not None and (np.asarray(measured) < 0).any():
            # a table it cannot serve (centred or log-ratio values): an empty cell, so the grid does not ask again
            LOGGER.warning("%s skipped: it needs nonnegative values and the table has %d negative one(s)",
                           entry.name, int(np.count_nonzero(np.asarray(measured) < 0)))
            out[entry.name] = ({}, 0.0)
            continue
        started = time.perf_counter()
        result = baselines.run(key, X, grid, n_clusters=n_clusters, seed=seed, options=options.get(key),
                               runtime=runtime, measured=measured)
        out[baselines.REGISTRY[key].name] = (result.selections, time.perf_counter() - started)
    return out


def gather(cells: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Every cell's table in one, ordered by dataset, method, seed and k.

    Only the benchmark's own cells, ``<dataset>/<method>/seed_<seed>``: the
    store's deeper keys are other studies' (the refresh simulation's, under
    ``refresh/``).
    """
    tables = [table for key, table in cells.items()
              if str(key).count("/") <= 2 and table is not None and not table.empty]
    if not tables:
        return pd.DataFrame(columns=RESULT_COLUMNS)
    table = pd.concat(tables, ignore_index=True)
    for column in RESULT_COLUMNS:
        if column not in table:
            table[column] = "" if column == "selected" else np.nan
    table["selected"] = table["selected"].fillna("")
    return table[RESULT_COLUMNS].sort_values(["dataset", "method", "seed", "k"], kind="stable").reset_index(drop=True)
