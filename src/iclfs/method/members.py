"""The members of a run: what each one is trained on, and their training (docs/consensus.md).

One member is the paper's single run: one network, ``training.epochs``
epochs, every sample, the run's own seed. ``consensus.members`` > 1 trains
that many networks, each with its own seed (weights, views, dropout) and,
with ``consensus.subsample`` < 1, on its own random subset of the samples,
as stability selection does (Meinshausen and Bühlmann, 2010).

``consensus.feature_blocks`` > 1 (a variant beyond the paper) deals each
member's features at random into that many blocks and trains one network per
block, on every sample the member sees: a network on d / m of the features
costs about 1 / m² of the attention and InfoNCE work of one on all of them.
The member scores a feature by its rank within its block.

Combining the members' scores into one order is :mod:`iclfs.method.consensus`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .config import ConsensusConfig, RuntimeConfig, TrainingConfig, ViewConfig
from .model import select_regime
from .scores import embed, feature_scores, rank_score
from .training import TrainingResult, train

FEATURE_BLOCK_STREAM = 1  # tags the seed stream that deals a member's features into blocks


@dataclass(frozen=True)
class MemberPlan:
    """What one member is trained on: its seed, its samples and its feature blocks.

    ``samples`` None: every sample. ``blocks``: the feature indices of each of
    its networks, ascending within a block (one block of every feature unless
    ``consensus.feature_blocks`` > 1); ``block_seeds``: each network's seed.
    """

    index: int
    seed: int
    samples: np.ndarray | None
    blocks: tuple[np.ndarray, ...] | None = None
    block_seeds: tuple[int, ...] = ()

    def networks(self) -> list[tuple[np.ndarray | None, int]]:
        """(features or None for all of them, seed) of each network the member trains."""
        if self.blocks is None:
            return [(None, self.seed)]
        return list(zip(self.blocks, self.block_seeds))


@dataclass
class Member:
    """A trained member: its plan, its feature scores and its training record (one per network)."""

    plan: MemberPlan
    scores: dict[str, np.ndarray]  # every score of method.md §5, (d,) each
    results: list[TrainingResult] = field(repr=False)
    seconds: float = 0.0  # wall time: training and scoring


def plan_members(n_samples: int, consensus: ConsensusConfig, seed: int, n_features: int | None = None
                 ) -> list[MemberPlan]:
    """Seeds, sample subsets and feature blocks of the members of a run seeded ``seed``.

    One member is the run itself (seed ``seed``, every sample). Otherwise each
    member's seed comes from ``numpy.random.SeedSequence(seed)``, and that seed
    also draws its subsample of ``max(4, round(subsample n))`` samples, so a
    member is the same whichever machine or worker trains it. With
    ``consensus.feature_blocks`` m > 1 (``n_features`` needed), the member's
    seed also deals its features into m blocks of near-equal size and gives
    each block's network a seed.
    """
    if consensus.members == 1:
        plans = [MemberPlan(0, int(seed), None)]
    else:
        seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(consensus.members)]
        size = member_samples(n_samples, consensus)
        plans = []
        for index, member_seed in enumerate(seeds):
            samples = None
            if size < n_samples:
                samples = np.sort(np.random.default_rng(member_seed).choice(n_samples, size=size, replace=False))
            plans.append(MemberPlan(index, member_seed, samples))
    if consensus.feature_blocks == 1:
        return plans
    if n_features is None:
        raise ValueError("consensus.feature_blocks > 1 needs the number of features to deal them into blocks")
    return [_with_blocks(plan, n_features, consensus.feature_blocks) for plan in plans]


def _with_blocks(plan: MemberPlan, n_features: int, blocks: int) -> MemberPlan:
    # Streams of their own, so the member's sample draw stays what it is without blocks.
    streams = np.random.SeedSequence([plan.seed, FEATURE_BLOCK_STREAM]).spawn(blocks + 1)
    order = np.random.default_rng(streams[0]).permutation(n_features)
    dealt = tuple(np.sort(block) for block in np.array_split(order, blocks))
    seeds = tuple(int(s.generate_state(1)[0]) for s in streams[1:])
    return MemberPlan(plan.index, plan.seed, plan.samples, dealt, seeds)


def member_samples(n_samples: int, consensus: ConsensusConfig) -> int:
    """How many samples each member trains on: all of them for one member."""
    if consensus.members == 1:
        return n_samples
    return min(n_samples, max(4, round(consensus.subsample * n_samples)))


def member_settings(n_samples: int, training: TrainingConfig, consensus: ConsensusConfig) -> tuple[TrainingConfig, int]:
    """The training settings and epochs of every member of a run on ``n_samples`` samples.

    A member on a subsample keeps the layer sizes of the whole data (the
    regime is decided from all ``n_samples``), so every member is the same
    network shape as the single run but for the attention's width.
    """
    if consensus.members == 1:
        return training, training.epochs
    regime = select_regime(n_samples, training.regime, training.regime_threshold).name
    return training.replace(regime=regime), consensus.member_epochs


def train_member(A: np.ndarray, plan: MemberPlan, training: TrainingConfig, epochs: int, views: ViewConfig,
                 runtime: RuntimeConfig, progress_bar=None) -> Member:
    """Train one member's networks on its samples and score every feature (eval mode, on those samples).

    The member's scores are the paper's four (method.md §5). With feature
    blocks, each network scores its own block, and the member's score of a
    feature is its rank score within its block (1 = the block's best, 0 = its
    worst): scores of networks trained apart are on scales of their own, so
    only their order is carried over.
    """
    started = time.perf_counter()
    A_member = A if plan.samples is None else np.ascontiguousarray(A[:, plan.samples])
    d = A.shape[0]
    results, scores = [], {}
    for features, seed in plan.networks():
        A_block = A_member if features is None else np.ascontiguousarray(A_member[features])
        result = train(A_block, training, views, runtime, seed, epochs=epochs, progress_bar=progress_bar)
        block_scores = feature_scores(*embed(result.model, A_block))
        result.model = result.model.cpu()
        results.append(result)
        if features is None:
            scores = block_scores
            continue
        for name, values in block_scores.items():
            scores.setdefault(name, np.full(d, np.nan))[features] = rank_score(values)
    return Member(plan, scores, results, time.perf_counter() - started)


def train_members(A: np.ndarray, training: TrainingConfig, views: ViewConfig, runtime: RuntimeConfig,
                  consensus: ConsensusConfig, seed: int) -> list[Member]:
    """Train every member in turn, with one progress bar over members x epochs.

    Parameters
    ----------
    A : array of shape (d, n)
        The inverted map.

    Returns
    -------
    list of Member
        In member order; ``members: 1`` gives the paper's single run.
    """
    from tqdm.auto import tqdm

    member_training, epochs = member_settings(A.shape[1], training, consensus)
    d, n = A.shape
    plans = plan_members(n, consensus, seed, d)
    desc = f"ICLFS {training.schedule} d={d} n={n}" + (f", {len(plans)} members" if len(plans) > 1 else "")
    if consensus.feature_blocks > 1:
        desc += f", {consensus.feature_blocks} feature blocks each"
    total = len(plans) * consensus.feature_blocks * epochs
    with tqdm(total=total, desc=desc, unit="epoch", disable=not runtime.progress) as bar:
        return [train_member(A, plan, member_training, epochs, views, runtime, bar) for plan in plans]


def state_dicts(members: Sequence[Member]) -> dict:
    """Every network's trained weights: one network's state dict alone, else one entry per network.

    Keys ``member_<i>``, or ``member_<i>_block_<b>`` with feature blocks.
    """
    if len(members) == 1 and len(members[0].results) == 1:
        return members[0].results[0].model.state_dict()
    return {network_name(m, b): result.model.state_dict() for m in members for b, result in enumerate(m.results)}


def network_name(member: Member, block: int) -> str:
    """``member_<i>``, or ``member_<i>_block_<b>`` for a member with feature blocks."""
    name = f"member_{member.plan.index}"
    return name if member.plan.blocks is None else f"{name}_block_{block}"


def total_epochs(members: Sequence[Member]) -> int:
    """Epochs run by every network of every member."""
    return sum(len(result.history) for m in members for result in m.results)


def total_seconds(members: Sequence[Member]) -> float:
    """Wall time of training and scoring every member: a consensus's cost, one run's for ``members: 1``."""
    return float(sum(m.seconds for m in members))

