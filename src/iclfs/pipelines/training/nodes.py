"""Train the members and score every feature (docs/method.md §3-5, docs/consensus.md)."""

from __future__ import annotations

import logging
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclfs.distributed import train_members_here
from iclfs.baselines import REGISTRY as BASELINES
from iclfs.baselines import run as baselines_run
from iclfs.method.chain import k_values_for
from iclfs.method.config import (
    SCORE_NAMES,
    ConsensusConfig,
    HistoryConfig,
    RuntimeConfig,
    SelectionConfig,
    TrainingConfig,
    ViewConfig,
)
from iclfs.method.history import MemberHistory, continue_history
from iclfs.method.members import state_dicts
from iclfs.pipelines.figures import training_loss_figure

LOGGER = logging.getLogger(__name__)


def start_history(previous_member_history: MemberHistory, feature_names: list[str], history: dict,
                  selection: dict, seed: int) -> dict:
    """Where this run stands with the data source's member history, and the seed its members train from.

    Returns
    -------
    history_start : dict
        ``carry``, ``seed`` (``seed`` itself without carrying or on a fresh
        history; else the seed of the history's next member number),
        ``members`` and ``runs`` carried so far, ``version`` (the stored
        history built on) and ``note`` (why a stored history was set aside).
    """
    config = HistoryConfig.from_dict(history)
    start = continue_history(previous_member_history, feature_names, seed, carry=config.carry, reset=config.reset,
                             method=SelectionConfig.from_dict(selection).method)
    if start.note is not None:
        LOGGER.warning("%s", start.note)
    return {"carry": config.carry, "seed": start.seed, "members": len(start.history.members),
            "runs": start.history.runs, "next_index": start.history.next_index, "version": start.history.version,
            "note": start.note}


def train_model(inverted_data: np.ndarray, training: dict, views: dict, runtime: dict, consensus: dict,
                history_start: dict, selection: dict, baselines: dict
                ) -> tuple[dict, pd.DataFrame, dict[str, np.ndarray], list[float]]:
    """The run's method at ``history_start["seed"]`` (``params:seed`` unless the run carries members):
    :func:`train_one_run` for ICLFS, :func:`run_method` for another ``selection.method``."""
    seed = int(history_start["seed"])
    method = SelectionConfig.from_dict(selection).method
    if method != "iclfs":
        return run_method(inverted_data, selection, (baselines or {}).get(method), runtime, seed)
    return train_one_run(inverted_data, training, views, runtime, consensus, seed)


def run_method(inverted_data: np.ndarray, selection: dict, options: dict | None, runtime: dict, seed: int
               ) -> tuple[dict, pd.DataFrame, dict[str, np.ndarray], list[float]]:
    """Another method of :mod:`iclfs.baselines` (``selection.method``) at every k of the grid.

    The outputs keep the training stage's shapes: no model state; its
    training history (the neural methods' epochs, one network per k); as
    member scores its score of every feature (``<method>``, one row),
    ``seed``, ``seconds`` and its selection at each k (``selected_<k>``).
    """
    config = SelectionConfig.from_dict(selection)
    X = np.ascontiguousarray(inverted_data.T)
    grid = k_values_for(config, X.shape[1])
    started = time.perf_counter()
    result = baselines_run(config.method, X, grid, n_clusters=config.n_clusters, seed=seed, options=options,
                           runtime=RuntimeConfig.from_dict(runtime))
    seconds = time.perf_counter() - started
    name = BASELINES[config.method].name
    # a method without epochs (LS, SPEC, MCFS, NDFS) leaves one row: its time
    history = pd.DataFrame(result.history or [{"epoch": 0, "loss": np.nan}])
    history = history.rename(columns={"k": "member"}) if "k" in history else history.assign(member=0)
    history = history.assign(block=0, method=name, member_seed=seed, member_seconds=seconds)
    scores = result.scores if result.scores is not None else np.zeros(X.shape[1])
    member_scores = {config.method: np.asarray(scores, dtype=np.float64)[None, :],
                     "seed": np.array([seed], dtype=np.int64), "seconds": np.array([seconds])}
    for k, chosen in result.selections.items():
        member_scores[f"selected_{k}"] = np.asarray(chosen, dtype=np.int64)
    return {}, history, member_scores, history["loss"].dropna().tolist()


def train_one_run(inverted_data: np.ndarray, training: dict, views: dict, runtime: dict, consensus: dict,
                  seed: int) -> tuple[dict, pd.DataFrame, dict[str, np.ndarray], list[float]]:
    """Train every member on the (d, n) inverted map and score the features with each.

    Returns
    -------
    model_state : dict
        The trained weights: one state dict, or one per network
        (``member_<i>``, ``member_<i>_block_<b>`` with feature blocks).
    training_history : DataFrame
        One row per member, feature block and epoch (loss, its terms, seconds)
        with the member's seed, its samples and the network's features, and the device, precision, thread count,
        attention kernel, InfoNCE block rows, regime and schedule used. CPU
        results are bit-identical at the same seed and thread count.
    member_scores : dict of str to ndarray of shape (members, d)
        The paper's four scores of method.md §5 by each member, ``seed`` and ``seconds`` (members,).
    training_loss : list of float
        Every epoch's loss, member after member, for the MLflow metric history.
    """
    training_config = TrainingConfig.from_dict(training)
    members = train_members_here(inverted_data, training_config, ViewConfig.from_dict(views),
                                 RuntimeConfig.from_dict(runtime), ConsensusConfig.from_dict(consensus), seed)
    frames = []
    for member in members:
        for block, result in enumerate(member.results):
            frame = pd.DataFrame(result.history)
            frame.insert(0, "member", member.plan.index)
            frame.insert(1, "block", block)
            frame["member_seed"] = member.plan.seed
            frame["member_seconds"] = member.seconds  # wall time: building, every epoch, scoring
            frame["n_samples"] = inverted_data.shape[1] if member.plan.samples is None else len(member.plan.samples)
            blocks = member.plan.blocks
            frame["n_features"] = inverted_data.shape[0] if blocks is None else len(blocks[block])
            frame["device"] = result.device
            frame["precision"] = result.precision
            frame["threads"] = result.threads
            frame["attention_kernel"] = result.attention_kernel
            frame["loss_block_rows"] = result.loss_block_rows  # empty for paper's dense losses
            frame["regime"] = result.regime.name
            frame["schedule"] = training_config.schedule
            frames.append(frame)
    history = pd.concat(frames, ignore_index=True)
    scores = {name: np.array([m.scores[name] for m in members]) for name in SCORE_NAMES}
    scores["seed"] = np.array([m.plan.seed for m in members], dtype=np.int64)
    scores["seconds"] = np.array([m.seconds for m in members], dtype=np.float64)
    return state_dicts(members), history, scores, history["loss"].tolist()


def plot_training_history(training_history: pd.DataFrame) -> plt.Figure:
    """Loss per epoch and its two terms; one line per network (member, feature block)."""
    return training_loss_figure(training_history)
