"""Train the members and score every feature (docs/method.md §3-5, docs/members.md)."""

from __future__ import annotations

import logging
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from iclfs.baselines import REGISTRY as BASELINES
from iclfs._distributed import train_members_here
from iclfs.chain import train
from iclfs.io.datasets import MemberHistories
from iclfs.method._config import SCORE_NAMES, MembersConfig, SelectionConfig, Settings
from iclfs.method._members import state_dicts
from iclfs.method._ranking import Continuation, start
from iclfs.project._figures import training_loss_figure
from iclfs.project._frames import k_grid

LOGGER = logging.getLogger(__name__)


def start_history(previous_member_history: MemberHistories, feature_names: list[str], members: dict,
                  selection: dict, seed: int) -> dict:
    """The run's decision about its members, made once (:func:`iclfs.method._ranking.start`): whether it builds on
    the data source's member history, which stored version, which of its members, the seed its members train
    from, and whether its lists hold to the last ones. The later stages read this record, never the disk again.

    Returns
    -------
    history_start : dict
        :meth:`iclfs.method._ranking.Continuation.record`.
    """
    config = MembersConfig.from_dict(members)
    method = SelectionConfig.from_dict(selection).method
    if config.carry:
        # the member numbers this run trains from, past those of any run on this data source that runs now: two
        # refreshes started together train two distinct members
        previous_member_history.reserve(method, config.per_run)
    continuation = start(previous_member_history, feature_names, seed, config, method)
    if continuation.note is not None:
        LOGGER.warning("%s", continuation.note)
    return continuation.record()


def start_without_history(seed: int) -> dict:
    """The benchmark's decision: one run at ``seed``, building on no member history and keeping none."""
    return Continuation(None, int(seed)).record()


def train_members(inverted_data: np.ndarray, feature_names: list[str], ground_truth: dict, training: dict,
                  views: dict, runtime: dict, members: dict, ranking: dict, history_start: dict, selection: dict,
                  baselines: dict, measured_data: np.ndarray) -> tuple[dict, pd.DataFrame, dict[str, np.ndarray]]:
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
        results are bit-identical at the same seed (``paper``: and thread count). Another method: its epochs (CAE,
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
    grid = k_grid(ground_truth)
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
