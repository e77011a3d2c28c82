"""Train the members and score every feature (docs/method.md §3-5, docs/consensus.md)."""

from __future__ import annotations

import logging
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclfs.baselines import REGISTRY as BASELINES
from iclfs._distributed import train_members_here
from iclfs.chain import k_values_for, train
from iclfs.method._config import (
    SCORE_NAMES,
    MembersConfig,
    RuntimeConfig,
    SelectionConfig,
    Settings,
    TrainingConfig,
    ViewConfig,
)
from iclfs.method._members import state_dicts
from iclfs.method._ranking import MemberHistory, start
from iclfs.project._figures import training_loss_figure

LOGGER = logging.getLogger(__name__)


def start_history(previous_member_history: MemberHistory, feature_names: list[str], members: dict,
                  selection: dict, seed: int) -> dict:
    """Where this run stands with the data source's member history, and the seed its members train from.

    Returns
    -------
    history_start : dict
        ``carry``, ``seed`` (``seed`` itself without carrying or on a fresh
        history; else the seed of the history's next member number),
        ``members`` and ``runs`` kept so far, ``version`` (the stored
        history built on) and ``note`` (why a stored history was set aside).
    """
    config = MembersConfig.from_dict(members)
    method = SelectionConfig.from_dict(selection).method
    if config.carry and hasattr(previous_member_history, "reserve"):
        # the member numbers this run trains from, past those of any run on this data source that runs now: two
        # refreshes started together train two distinct members
        previous_member_history.reserve(method, config.per_run)
    continuation = start(previous_member_history, feature_names, seed, config, method)
    if continuation.note is not None:
        LOGGER.warning("%s", continuation.note)
    history = continuation.history or MemberHistory()
    return {"carry": config.carry, "seed": continuation.seed, "members": len(history.members),
            "runs": history.runs, "next_index": history.next_index, "version": history.version,
            "note": continuation.note}


def train_members(inverted_data: np.ndarray, feature_names: list[str], training: dict, views: dict, runtime: dict,
                  members: dict, ranking: dict, history_start: dict, selection: dict, baselines: dict,
                  measured_data: np.ndarray) -> tuple[dict, pd.DataFrame, dict[str, np.ndarray]]:
    """The training step (:func:`iclfs.chain.train`) at ``history_start["seed"]``: ICLFS's members, or
    another ``selection.method`` at every k of the grid (variance and dispersion read ``measured_data``,
    the table before standardization).

    Returns
    -------
    model_state : dict
        The trained weights: one state dict, or one per network
        (``member_<i>``, ``member_<i>_block_<b>`` with feature blocks); empty for another method.
    training_log : DataFrame
        One row per member, feature block and epoch (loss, its terms, seconds)
        with the member's seed, its samples and the network's features, and the device, precision, thread count,
        attention kernel, InfoNCE block rows, regime and schedule used. CPU
        results are bit-identical at the same seed and thread count. Another method: its epochs (CAE,
        LS-CAE, one network per k), or one row with its time.
    member_scores : dict of str to ndarray of shape (members, d)
        ICLFS: the paper's four scores of method.md §5 by each member; another method: its score
        (``<method>``) and its selection at each k (``selected_<k>``); both with ``seed`` and ``seconds``
        (members,).
    """
    settings = Settings.from_parameters({"training": training, "views": views, "runtime": runtime,
                                         "members": members, "ranking": ranking, "selection": selection})
    seed = int(history_start["seed"])
    # The standardized table exactly as data_processing laid it out (the inverted map's transpose): another
    # method's linear algebra rounds by the memory layout of what it is given.
    standardized = inverted_data.T
    grid = k_values_for(settings.selection, len(feature_names))
    method = settings.selection.method
    if method != "iclfs":
        started = time.perf_counter()
        measured = measured_data if measured_data.shape == standardized.shape else None
        trained = train(standardized, feature_names, settings, seed, grid, (baselines or {}).get(method),
                        measured=measured)
        return method_outputs(trained, method, time.perf_counter() - started)
    # On a Dask cluster each member is a task of its own; the chain's step takes them as trained here.
    trainings = train_members_here(inverted_data, settings.training, settings.views, settings.runtime,
                                   settings.members, seed)
    trained = train(standardized, feature_names, settings, seed, grid, trainings=trainings)
    return training_outputs(trained.trainings, inverted_data.shape, settings.training.schedule)


def method_outputs(trained, method: str, seconds: float) -> tuple[dict, pd.DataFrame, dict[str, np.ndarray]]:
    """The training stage's outputs for another method of :mod:`iclfs.baselines`: no model state; its epoch
    log (the neural methods', one network per k) or one row with its time; its score of every feature
    (``<method>``, one row), ``seed``, ``seconds`` and its selection at each k (``selected_<k>``)."""
    member = trained.members[0]
    name = BASELINES[method].name
    # a method without epochs (LS, SPEC, MCFS, NDFS) leaves one row: its time
    history = pd.DataFrame(trained.log or [{"epoch": 0, "loss": np.nan}])
    history = history.rename(columns={"k": "member"}) if "k" in history else history.assign(member=0)
    history = history.assign(block=0, method=name, member_seed=member.seed, member_seconds=seconds)
    member_scores = {method: np.asarray(member.scores, dtype=np.float64)[None, :],
                     "seed": np.array([member.seed], dtype=np.int64), "seconds": np.array([seconds])}
    for k, chosen in trained.selections.items():
        member_scores[f"selected_{k}"] = np.asarray(chosen, dtype=np.int64)
    return {}, history, member_scores


def train_one_run(inverted_data: np.ndarray, training: dict, views: dict, runtime: dict, members: dict,
                  seed: int) -> tuple[dict, pd.DataFrame, dict[str, np.ndarray]]:
    """The benchmark's training: one run's members at ``seed``, no member history (outputs as
    :func:`train_members`)."""
    training_config = TrainingConfig.from_dict(training)
    trainings = train_members_here(inverted_data, training_config, ViewConfig.from_dict(views),
                                   RuntimeConfig.from_dict(runtime), MembersConfig.from_dict(members), seed)
    return training_outputs(trainings, inverted_data.shape, training_config.schedule)


def training_outputs(trainings: list, shape: tuple[int, int], schedule: str
                     ) -> tuple[dict, pd.DataFrame, dict[str, np.ndarray]]:
    """``model_state``, ``training_log`` and ``member_scores`` of ICLFS members trained on
    a (d, n) inverted map (:func:`train_members`)."""
    frames = []
    for member in trainings:
        for block, result in enumerate(member.results):
            frame = pd.DataFrame(result.history)
            frame.insert(0, "member", member.plan.index)
            frame.insert(1, "block", block)
            frame["member_seed"] = member.plan.seed
            frame["member_seconds"] = member.seconds  # wall time: building, every epoch, scoring
            frame["n_samples"] = shape[1] if member.plan.samples is None else len(member.plan.samples)
            blocks = member.plan.blocks
            frame["n_features"] = shape[0] if blocks is None else len(blocks[block])
            frame["device"] = result.device
            frame["precision"] = result.precision
            frame["threads"] = result.threads
            frame["attention_kernel"] = result.attention_kernel
            frame["loss_block_rows"] = result.loss_block_rows  # empty for paper's dense losses
            frame["regime"] = result.regime.name
            frame["schedule"] = schedule
            frames.append(frame)
    history = pd.concat(frames, ignore_index=True)
    scores = {name: np.array([m.scores[name] for m in trainings]) for name in SCORE_NAMES}
    scores["seed"] = np.array([m.plan.seed for m in trainings], dtype=np.int64)
    scores["seconds"] = np.array([m.seconds for m in trainings], dtype=np.float64)
    return state_dicts(trainings), history, scores


def plot_training_log(training_log: pd.DataFrame) -> plt.Figure:
    """Loss per epoch and its two terms; one line per network (member, feature block)."""
    return training_loss_figure(training_log)
