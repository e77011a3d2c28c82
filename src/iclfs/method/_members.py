"""The members of a run: what each one is trained on, and their training (docs/members.md).

One member is the paper's single run: one network, ``training.epochs``
epochs, every sample, the run's own seed. ``members.per_run`` > 1 trains
that many networks, each with its own seed (weights, views, dropout) and,
with ``members.subsample`` < 1, on its own random subset of the samples,
as stability selection does (Meinshausen and Bühlmann, 2010).
``members.sampling: complementary`` trains them in pairs on two disjoint
halves of the samples instead (Shah and Samworth, 2013), for the bound of
:mod:`iclfs.method._evidence`.

``members.feature_blocks`` > 1 (a variant beyond the paper) deals each
member's features at random into that many blocks and trains one network per
block, on every sample the member sees: a network on d / m of the features
costs about 1 / m² of the attention and InfoNCE work of one on all of them.
The member scores a feature by its rank within its block.

Combining the members' scores into one order is :mod:`iclfs.method._ranking`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ._config import MembersConfig, RuntimeConfig, TrainingConfig, ViewConfig
from ._progress import Progress
from ._runtime import TrainingPlan, compute_settings, plan_training, select_regime
from ._scores import embed, feature_scores, rank_score
from ._training import Trainer, TrainingResult, train

FEATURE_BLOCK_STREAM = 1  # tags the seed stream that deals a member's features into blocks


@dataclass(frozen=True)
class MemberPlan:
    """What one member is trained on: its seed, its samples and its feature blocks.

    ``samples`` None: every sample. ``blocks``: the feature indices of each of
    its networks, ascending within a block (one block of every feature unless
    ``members.feature_blocks`` > 1); ``block_seeds``: each network's seed.
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
class MemberTraining:
    """What training one member gave: its plan, every feature score of method.md §5, and its networks with
    their training records (one per network). Its ranking score, by name, is a
    :class:`~iclfs.method._ranking.Member`."""

    plan: MemberPlan
    scores: dict[str, np.ndarray]  # every score of method.md §5, (d,) each
    results: list[TrainingResult] = field(repr=False)
    seconds: float = 0.0  # wall time: training and scoring


def plan_members(n_samples: int, members: MembersConfig, seed: int, n_features: int | None = None
                 ) -> list[MemberPlan]:
    """Seeds, sample subsets and feature blocks of the members of a run seeded ``seed``.

    One member is the run itself (seed ``seed``, every sample). Otherwise each
    member's seed comes from ``numpy.random.SeedSequence(seed)``, and that seed
    also draws its subsample of ``max(4, round(subsample n))`` samples, so a
    member is the same whichever machine or worker trains it. With
    ``members.feature_blocks`` m > 1 (``n_features`` needed), the member's
    seed also deals its features into m blocks of near-equal size and gives
    each block's network a seed.
    """
    if members.per_run == 1:
        plans = [MemberPlan(0, int(seed), None)]
    else:
        seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(members.per_run)]
        size = member_samples(n_samples, members)
        plans = []
        for index, member_seed in enumerate(seeds):
            samples = None
            if members.sampling == "complementary":
                samples = complementary_half(n_samples, seeds[index - index % 2], second=bool(index % 2))
            elif size < n_samples:
                samples = np.sort(np.random.default_rng(member_seed).choice(n_samples, size=size, replace=False))
            plans.append(MemberPlan(index, member_seed, samples))
    if members.feature_blocks == 1:
        return plans
    if n_features is None:
        raise ValueError("members.feature_blocks > 1 needs the number of features to deal them into blocks")
    return [_with_blocks(plan, n_features, members.feature_blocks) for plan in plans]


def _with_blocks(plan: MemberPlan, n_features: int, blocks: int) -> MemberPlan:
    # Streams of their own, so the member's sample draw stays what it is without blocks.
    streams = np.random.SeedSequence([plan.seed, FEATURE_BLOCK_STREAM]).spawn(blocks + 1)
    order = np.random.default_rng(streams[0]).permutation(n_features)
    dealt = tuple(np.sort(block) for block in np.array_split(order, blocks))
    seeds = tuple(int(s.generate_state(1)[0]) for s in streams[1:])
    return MemberPlan(plan.index, plan.seed, plan.samples, dealt, seeds)


def complementary_half(n_samples: int, pair_seed: int, second: bool) -> np.ndarray:
    """One half of a complementary pair (Shah and Samworth, 2013), ascending: ``n_samples // 2`` samples.

    The pair's first member's seed shuffles the samples; the first member
    takes the first ``n // 2``, the second the next ``n // 2``, so the two
    halves are disjoint and of one size (with n odd, one sample sits out).
    """
    half = n_samples // 2
    order = np.random.default_rng(pair_seed).permutation(n_samples)
    return np.sort(order[half:2 * half] if second else order[:half])


def member_samples(n_samples: int, members: MembersConfig) -> int:
    """How many samples each member trains on: all of them for one member, half of them in complementary pairs."""
    if members.per_run == 1:
        return n_samples
    if members.sampling == "complementary":
        return n_samples // 2
    return min(n_samples, max(4, round(members.subsample * n_samples)))


def member_settings(n_samples: int, training: TrainingConfig, members: MembersConfig) -> tuple[TrainingConfig, int]:
    """The training settings and epochs of every member of a run on ``n_samples`` samples.

    A member on a subsample keeps the layer sizes of the whole data (the
    regime is decided from all ``n_samples``), so every member is the same
    network shape as the single run but for the attention's width.
    """
    if members.per_run == 1:
        return training, training.epochs
    regime = select_regime(n_samples, training.regime).name
    return training.replace(regime=regime), members.epochs


def largest_network_plan(n_samples: int, n_features: int, training: TrainingConfig, members: MembersConfig,
                         runtime: RuntimeConfig) -> TrainingPlan:
    """The training plan of the largest network a member trains on an (n_samples, n_features) table.

    Its samples are the member's (:func:`member_samples`), its features the
    largest of ``members.feature_blocks`` blocks, its regime the whole table's
    (:func:`member_settings`). The chain plans it before anything is written:
    with ``runtime.check_memory``, a run whose networks will not fit the
    device is refused there (:func:`~iclfs.method._runtime.plan_training`).
    """
    samples = member_samples(n_samples, members)
    features = -(-n_features // members.feature_blocks)
    member_training, _ = member_settings(n_samples, training, members)
    return plan_training(features, samples, member_training, runtime)


def train_member(A: np.ndarray, plan: MemberPlan, training: TrainingConfig, epochs: int, views: ViewConfig,
                 runtime: RuntimeConfig, progress: Progress | None = None) -> MemberTraining:
    """Train one member's networks on its samples and score every feature (eval mode, on those samples).

    Each network is planned once, here, for its shape
    (:func:`~iclfs.method._runtime.plan_training`), and trained from that
    plan. The member's scores are the paper's four (method.md §5). With feature
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
        network = plan_training(*A_block.shape, training, runtime)
        result = train(A_block, training, views, runtime, seed, epochs=epochs, progress=progress, plan=network)
        block_scores = feature_scores(*embed(result.model, A_block))
        result.model = result.model.cpu()
        results.append(result)
        if features is None:
            scores = block_scores
            continue
        for name, values in block_scores.items():
            scores.setdefault(name, np.full(d, np.nan))[features] = rank_score(values)
    return MemberTraining(plan, scores, results, time.perf_counter() - started)


def train_members(A: np.ndarray, training: TrainingConfig, views: ViewConfig, runtime: RuntimeConfig,
                  members: MembersConfig, seed: int) -> list[MemberTraining]:
    """Train every member in turn, their progress logged over members x epochs (:class:`Progress`).

    Parameters
    ----------
    A : array of shape (d, n)
        The inverted map.

    Returns
    -------
    list of MemberTraining
        In member order; ``members.per_run: 1`` gives the paper's single run.
    """
    member_training, epochs = member_settings(A.shape[1], training, members)
    d, n = A.shape
    plans = plan_members(n, members, seed, d)
    desc = f"ICLFS {training.schedule} d={d} n={n}" + (f", {len(plans)} members" if len(plans) > 1 else "")
    if members.feature_blocks > 1:
        desc += f", {members.feature_blocks} feature blocks each"
    total = len(plans) * members.feature_blocks * epochs
    progress = Progress(total, desc, runtime.progress)
    block = -(-d // members.feature_blocks)
    if runtime.progress and block > PROBE_FEATURES:  # a wide table: say what it will cost before it starts
        probed = probe_epoch_seconds(A[:, plans[0].samples] if plans[0].samples is not None else A,
                                     member_training, views, runtime, block)
        progress.forecast(probed, f"one epoch timed on {PROBE_FEATURES:,} of the {block:,} features, scaled by "
                                  "the square of their count")
    return [train_member(A, plan, member_training, epochs, views, runtime, progress) for plan in plans]


#: Above this many features a network's epoch is timed on this many of them before the training starts.
PROBE_FEATURES = 2048


def probe_epoch_seconds(A: np.ndarray, training: TrainingConfig, views: ViewConfig, runtime: RuntimeConfig,
                        d: int) -> float:
    """Seconds one epoch of a network on ``d`` features of ``A`` will take: one epoch timed on its first
    :data:`PROBE_FEATURES` rows, scaled by the square of the feature count (the InfoNCE logits and the
    attention's work grow so). Leaves torch's random streams as they were."""
    import torch

    rows = np.ascontiguousarray(A[:PROBE_FEATURES])
    with torch.random.fork_rng():
        # a lone network on the probed rows, which its Trainer plans: never refused for memory
        trainer = Trainer(rows, training, views, runtime.replace(check_memory=False), seed=0)
        with compute_settings(trainer.device, trainer.precision, runtime.num_threads):
            started = time.perf_counter()
            trainer.train_epoch()
            seconds = time.perf_counter() - started
    return seconds * (d / len(rows)) ** 2


def state_dicts(members: Sequence[MemberTraining]) -> dict:
    """Every network's trained weights: one network's state dict alone, else one entry per network.

    Keys ``member_<i>``, or ``member_<i>_block_<b>`` with feature blocks.
    """
    if len(members) == 1 and len(members[0].results) == 1:
        return members[0].results[0].model.state_dict()
    return {network_name(m, b): result.model.state_dict() for m in members for b, result in enumerate(m.results)}


def network_name(member: MemberTraining, block: int) -> str:
    """``member_<i>``, or ``member_<i>_block_<b>`` for a member with feature blocks."""
    name = f"member_{member.plan.index}"
    return name if member.plan.blocks is None else f"{name}_block_{block}"


def total_epochs(members: Sequence[MemberTraining]) -> int:
    """Epochs run by every network of every member."""
    return sum(len(result.history) for m in members for result in m.results)


def total_seconds(members: Sequence[MemberTraining]) -> float:
    """Wall time of training and scoring every member: one run's for ``members.per_run: 1``."""
    return float(sum(m.seconds for m in members))

