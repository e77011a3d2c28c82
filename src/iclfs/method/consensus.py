"""Consensus ICLFS: several short runs combined into one ranking (docs/consensus.md).

One ICLFS run is one draw of a noisy method: two seeds share few of their
top 50 features. A consensus trains ``consensus.members`` networks, each with
its own seed (weights, views, dropout) and, with ``consensus.subsample < 1``,
on its own random subset of the samples, as stability selection does
(Meinshausen and Bühlmann, 2010). Their scores are combined into one ranking:

``mean_rank``
    Each member's scores are turned into ranks; the consensus orders the
    features by their mean rank. Ranks ignore how each member scales its
    scores, which varies from seed to seed.
``mean_score``
    The mean of the members' min-max scaled scores.

``consensus.laplacian_weight`` > 0 mixes in the rank of the Laplacian score
(a named variant beyond the paper). ``members: 1`` is the paper's single
run: one network, ``training.epochs``, every sample, the run's own seed and
its raw score, exactly what ICLFS computed before consensus existed.

``consensus.feature_blocks`` > 1 (a named variant beyond the paper) deals
each member's features at random into that many blocks and trains one
network per block, on every sample the member sees: a network on d / m of
the features costs about 1 / m² of the attention and InfoNCE work of one on
all of them. The member scores a feature by its rank within its block.

Per feature it keeps the consensus score, every member's rank and, at each
k, how many members put the feature in their top k; :func:`member_jaccard`
says how much the members agree, and :func:`choose_k` picks k from that
agreement when ``selection.k`` is ``auto``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .config import ConsensusConfig, RuntimeConfig, TrainingConfig, ViewConfig
from .model import select_regime
from .scores import feature_scores, min_max, rank_features, rank_score
from .training import TrainingResult, contrastive_losses, embed, train


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
                 runtime: RuntimeConfig, progress_bar=None, *, contrastive: bool = False) -> Member:
    """Train one member's networks on its samples and score every feature (eval mode, on those samples).

    The member's scores are the paper's four, and with ``contrastive`` the
    contrastive score too (method.md §5): it costs about 3 % of the training,
    so it is computed only for a run that ranks by it.

    With feature blocks, each network scores its own block, and the member's
    score of a feature is its rank score within its block (1 = the block's
    best, 0 = its worst): scores of networks trained apart are on scales of
    their own, so only their order is carried over.
    """
    started = time.perf_counter()
    A_member = A if plan.samples is None else np.ascontiguousarray(A[:, plan.samples])
    d = A.shape[0]
    results, scores = [], {}
    for features, seed in plan.networks():
        A_block = A_member if features is None else np.ascontiguousarray(A_member[features])
        result = train(A_block, training, views, runtime, seed, epochs=epochs, progress_bar=progress_bar)
        losses = contrastive_losses(result.model, A_block, views, training.temperature, seed) if contrastive else None
        block_scores = feature_scores(*embed(result.model, A_block), losses)
        result.model = result.model.cpu()
        results.append(result)
        if features is None:
            scores = block_scores
            continue
        for name, values in block_scores.items():
            scores.setdefault(name, np.full(d, np.nan))[features] = rank_score(values)
    return Member(plan, scores, results, time.perf_counter() - started)


def train_members(A: np.ndarray, training: TrainingConfig, views: ViewConfig, runtime: RuntimeConfig,
                  consensus: ConsensusConfig, seed: int, *, contrastive: bool = False) -> list[Member]:
    """Train every member in turn, with one progress bar over members x epochs.

    Parameters
    ----------
    A : array of shape (d, n)
        The inverted map.
    contrastive : bool, default=False
        Also compute each member's contrastive score (:func:`train_member`).

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
        return [train_member(A, plan, member_training, epochs, views, runtime, bar, contrastive=contrastive)
                for plan in plans]


def combine(member_scores: np.ndarray, rule: str = "mean_rank") -> np.ndarray:
    """One consensus score per feature (higher is better) from the members' scores.

    Parameters
    ----------
    member_scores : array of shape (members, d)
        Each member's score of every feature (higher is better).
    rule : {"mean_rank", "mean_score"}

    Returns
    -------
    ndarray of shape (d,)
        With one member, its scores unchanged. Else ``mean_rank``: 1 minus the
        mean rank scaled to [0, 1] (1 = ranked first by every member);
        ``mean_score``: the mean of the min-max scaled scores.
    """
    member_scores = np.atleast_2d(np.asarray(member_scores, dtype=np.float64))
    if member_scores.shape[0] == 1:
        return member_scores[0].copy()
    if rule == "mean_rank":
        return rank_score(member_scores)
    if rule == "mean_score":
        return np.mean([min_max(s) for s in member_scores], axis=0)
    raise ValueError(f"unknown consensus rule {rule!r}; use mean_rank or mean_score")


def fuse_laplacian(scores: np.ndarray, laplacian_scores: np.ndarray, weight: float) -> np.ndarray:
    """``(1 - weight)`` times the rank score of ``scores`` plus ``weight`` times that of the Laplacian score.

    Both as :func:`rank_score` (lower Laplacian score is better; ``inf`` ranks last).
    ``weight = 0`` returns ``scores`` unchanged.
    """
    if weight == 0:
        return np.asarray(scores, dtype=np.float64)
    ls = np.asarray(laplacian_scores, dtype=np.float64)
    return (1.0 - weight) * rank_score(scores) + weight * rank_score(-np.where(np.isfinite(ls), ls, np.inf))


def member_rankings(member_scores: np.ndarray) -> np.ndarray:
    """Each member's ranking, (members, d) feature indices best first."""
    return np.array([rank_features(s) for s in np.atleast_2d(member_scores)], dtype=np.int64)


def top_k_frequency(rankings: np.ndarray, k: int) -> np.ndarray:
    """(d,) fraction of the members whose first k features include each feature."""
    rankings = np.atleast_2d(rankings)
    counts = np.zeros(rankings.shape[1])
    for ranking in rankings:
        counts[ranking[:k]] += 1
    return counts / rankings.shape[0]


def jaccard(a: Sequence, b: Sequence) -> float:
    """|a & b| / |a | b| of two selections (1 when both are empty)."""
    a, b = set(np.asarray(a).tolist()), set(np.asarray(b).tolist())
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def mean_pairwise_jaccard(selections: Sequence[Sequence]) -> float | None:
    """Mean Jaccard index over every pair of selections; None with fewer than two."""
    pairs = [jaccard(a, b) for a, b in itertools.combinations(selections, 2)]
    return float(np.mean(pairs)) if pairs else None


def member_jaccard(rankings: np.ndarray, k: int) -> float | None:
    """Mean pairwise Jaccard of the members' top k; None with one member."""
    return mean_pairwise_jaccard([ranking[:k] for ranking in np.atleast_2d(rankings)])


@dataclass(frozen=True)
class KChoice:
    """The k chosen for ``selection.k: auto``, and why."""

    k: int
    reason: str
    agreement: dict[int, float]  # per k: median chance-corrected member frequency of the consensus selection


def agreement(frequency: np.ndarray, selection: np.ndarray, k: int, d: int) -> float:
    """Median over the ``selection`` of its features' member top-k frequency, corrected for chance.

    A feature in a random top k out of d has frequency k / d on average, so
    ``(frequency - k/d) / (1 - k/d)`` is 0 for members that agree by chance
    and 1 for members that all select it.
    """
    chance = k / d
    if chance >= 1:
        return 1.0
    return float(np.median((np.asarray(frequency)[selection] - chance) / (1.0 - chance)))


def choose_k(agreements: dict[int, float], threshold: float) -> KChoice:
    """The largest k whose consensus selection the members agree on at least ``threshold``.

    Without one, the smallest k: the members agree on no list of that size,
    and the shortest list is the one to check first.
    """
    ks = sorted(agreements)
    agreed = [k for k in ks if agreements[k] >= threshold]
    shown = ", ".join(f"k = {k}: {agreements[k]:.2f}" for k in ks)
    if agreed:
        k = agreed[-1]
        reason = (f"k = {k} is the largest k whose selected features the members agree on at least "
                  f"{threshold:g} (median chance-corrected top-k frequency; {shown})")
    else:
        k = ks[0]
        reason = (f"no k reaches the agreement threshold {threshold:g} ({shown}); the smallest k, {k}, is used: "
                  "the members disagree, so treat the list with care")
    return KChoice(k, reason, dict(agreements))


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

