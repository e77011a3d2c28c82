"""The benchmark's two reference points: random selection, and every feature.

Neither is a method to select with: they bound what selecting is worth.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from iclfs.method._config import Section, integer, param

from ._result import BaselineResult


def random_orders(d: int, n_seeds: int, seed: int = 0) -> np.ndarray:
    """``n_seeds`` independent uniform permutations of range(d), (n_seeds, d) int64.

    Drawn in order from one generator seeded by ``seed``, so the first rows
    do not depend on ``n_seeds``.
    """
    if isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    if isinstance(n_seeds, bool) or not isinstance(n_seeds, numbers.Integral) or n_seeds < 1:
        raise ValueError(f"n_seeds must be an integer >= 1, got {n_seeds!r}")
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(d) for _ in range(n_seeds)]).astype(np.int64)


@dataclass(frozen=True)
class RandomOptions(Section):
    """Random selection: how many random orders pool their k-means runs."""

    SECTION: ClassVar[str] = "baselines.random"

    rankings: int = param(5, integer(1), "random orders drawn from the seed, their k-means runs pooled")


@dataclass(frozen=True)
class AllFeaturesOptions(Section):
    """Every feature: no options."""

    SECTION: ClassVar[str] = "baselines.all_features"


def data_memory(n: int, d: int, k: int) -> int:
    """Peak bytes of a reference point: one copy of the data."""
    return 8 * n * d


def select_random(X: np.ndarray, k_values: Sequence[int], *, seed: int, options: RandomOptions,
                  **_: object) -> BaselineResult:
    orders = random_orders(np.asarray(X).shape[1], options.rankings, seed=seed)
    return BaselineResult({int(k): orders[:, :k] for k in k_values})


def select_all_features(X: np.ndarray, k_values: Sequence[int], **_: object) -> BaselineResult:
    d = np.asarray(X).shape[1]
    return BaselineResult({d: np.arange(d)})
