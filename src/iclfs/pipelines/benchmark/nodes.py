"""One benchmark dataset at this run's seed: ICLFS and the baselines as cells (docs/method.md §8)."""

from __future__ import annotations

from pathlib import PurePath

import numpy as np
import pandas as pd

from iclfs.evaluation._benchmark import baseline_selections, evaluate_cell, method_name, slug
from iclfs.method._config import Settings
from iclfs.project._frames import indices_by_k, k_grid


def _labelled(standardized_data: np.ndarray, labels: dict, ground_truth: dict) -> tuple[np.ndarray, np.ndarray, str]:
    codes = np.asarray(labels["codes"])
    source = str(ground_truth.get("source", "data"))
    if codes.size == 0:
        raise ValueError(f"the benchmark needs class labels to score clusterings; {source} has none")
    return np.asarray(standardized_data), codes, PurePath(source).name.split(".")[0]


def _cell(table: pd.DataFrame) -> str:
    """The partition of a cell inside its dataset's folder: ``<method slug>/seed_<seed>``."""
    return f"{slug(table['method'].iloc[0])}/seed_{int(table['seed'].iloc[0])}"


def evaluate_iclfs(standardized_data: np.ndarray, labels: dict, ground_truth: dict, selections: pd.DataFrame,
                   training_log: pd.DataFrame, parameters: dict) -> dict[str, pd.DataFrame]:
    """This run's ICLFS selections through the protocol: its cell, ``{partition: table}``.

    The method is named from the run's parameters (:func:`iclfs.evaluation._benchmark.method_name`); the
    cell's seconds are the wall time of training and scoring every member.
    """
    X, codes, dataset = _labelled(standardized_data, labels, ground_truth)
    settings = Settings.from_parameters(parameters)
    members = training_log.drop_duplicates("member")
    table = evaluate_cell(X, codes, indices_by_k(selections), dataset=dataset, method=method_name(settings),
                          seed=settings.seed, n_runs=settings.evaluation.n_runs,
                          seconds=float(members["member_seconds"].sum()), device=str(members["device"].iloc[0]),
                          schedule=settings.training.schedule, epochs=len(training_log))
    return {_cell(table): table}


def evaluate_baselines(standardized_data: np.ndarray, labels: dict, ground_truth: dict, measured_data: np.ndarray,
                       benchmark: dict, baselines: dict, selection: dict, evaluation: dict, runtime: dict,
                       seed: int) -> dict[str, pd.DataFrame]:
    """Every baseline of ``benchmark.baselines``, with its options of ``baselines``, through the same
    protocol at this run's seed: one cell each (variance and dispersion select from ``measured_data``; every
    cell is scored on the standardized table)."""
    X, codes, dataset = _labelled(standardized_data, labels, ground_truth)
    settings = Settings.from_parameters({"selection": selection, "evaluation": evaluation, "runtime": runtime,
                                         "seed": seed})
    grid = k_grid(ground_truth)
    cells = {}
    for name, (chosen, seconds) in baseline_selections(X, codes, benchmark["baselines"], baselines, grid, seed,
                                                       settings.runtime, measured=measured_data).items():
        table = evaluate_cell(X, codes, chosen, dataset=dataset, method=name, seed=seed,
                              n_runs=settings.evaluation.n_runs, seconds=seconds)
        cells[_cell(table)] = table
    return cells
