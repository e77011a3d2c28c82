"""Every feature-selection method besides ICLFS, in one registry.

The benchmark sets each of them beside ICLFS under one protocol, and
``select`` runs any of them in production (``selection.method``); both go
through :func:`run`, so the benchmark's baselines and the production
selectors are the same code.

Adding a method touches three places: its module (a ``select_<method>``
function and an options section), the :data:`REGISTRY` entry below, and its
options in ``conf/base/parameters_baselines.yml``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from iclfs.method.config import ParameterError, RuntimeConfig, Section

from .graph import (
    LaplacianScoreOptions,
    MCFSOptions,
    NDFSOptions,
    SPECOptions,
    select_laplacian_score,
    select_mcfs,
    select_ndfs,
    select_spec,
)
from .reference import AllFeaturesOptions, RandomOptions, select_all_features, select_random
from .result import BaselineResult

__all__ = ["REGISTRY", "Baseline", "BaselineResult", "baseline", "options_of", "run"]


@dataclass(frozen=True)
class Baseline:
    """One method of the registry.

    Attributes
    ----------
    key : str
        Its name in conf, ``benchmark.baselines`` and ``selection.method``.
    name : str
        Its name in every table, figure, cell and metric.
    select : callable
        ``select(X, k_values, *, n_clusters, seed, options, runtime) -> BaselineResult``
        on standardized data X of shape (n, d).
    options : type of Section
        Its options, validated declaratively (``baselines.<key>`` in conf).
    needs_clusters : bool
        It must be told the number of clusters (the number of classes in the benchmark).
    seeded : bool
        Its selection depends on the seed.
    reference : bool
        A reference point of the benchmark (random selection, every feature), not a method to select with.
    summary : str
        When to use it, in one line.
    """

    key: str
    name: str
    select: Callable[..., BaselineResult]
    options: type[Section]
    needs_clusters: bool = False
    seeded: bool = False
    reference: bool = False
    summary: str = ""


REGISTRY: dict[str, Baseline] = {entry.key: entry for entry in (
    Baseline("ls", "LS", select_laplacian_score, LaplacianScoreOptions,
             summary="the Laplacian score: fast, deterministic, the steadiest list between refreshes"),
    Baseline("spec", "SPEC", select_spec, SPECOptions,
             summary="spectral feature selection: deterministic, needs no number of clusters"),
    Baseline("mcfs", "MCFS", select_mcfs, MCFSOptions, needs_clusters=True,
             summary="multi-cluster feature selection: needs the number of clusters"),
    Baseline("ndfs", "NDFS", select_ndfs, NDFSOptions, needs_clusters=True, seeded=True,
             summary="nonnegative discriminative feature selection: needs the number of clusters"),
    Baseline("random", "random", select_random, RandomOptions, seeded=True, reference=True,
             summary="random selection, the chance level"),
    Baseline("all_features", "all features", select_all_features, AllFeaturesOptions, reference=True,
             summary="every feature, no selection"),
)}


def baseline(key: str) -> Baseline:
    """The registry's entry ``key``, or a :class:`ParameterError` naming the keys there are."""
    try:
        return REGISTRY[key]
    except (KeyError, TypeError):
        raise ParameterError(f"unknown baseline {key!r}; known: {', '.join(REGISTRY)}") from None


def options_of(key: str, options: Mapping | None) -> Section:
    """The options section of baseline ``key`` from conf's ``baselines.<key>`` dict (None: the defaults)."""
    entry = baseline(key)
    return entry.options.from_dict(options, name=f"baselines.{key}")


def run(key: str, X: np.ndarray, k_values: Sequence[int], *, n_clusters: int | None = None, seed: int = 42,
        options: Mapping | Section | None = None, runtime: RuntimeConfig | None = None) -> BaselineResult:
    """Baseline ``key``'s selections of standardized ``X`` (n, d) at every k of ``k_values``.

    A method that needs the number of clusters refuses to run without it.
    """
    entry = baseline(key)
    if entry.needs_clusters and n_clusters is None:
        raise ParameterError(f"{entry.name} needs the number of clusters: set selection.n_clusters "
                             "(n_clusters of the selector)")
    if not isinstance(options, Section):
        options = options_of(key, options)
    return entry.select(np.asarray(X, dtype=np.float64), [int(k) for k in k_values], n_clusters=n_clusters,
                        seed=int(seed), options=options, runtime=runtime or RuntimeConfig(progress=False))
