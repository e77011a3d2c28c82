"""Every feature-selection method besides ICLFS, in one registry.

The benchmark sets each of them beside ICLFS under one protocol, and
``select`` runs any of them in production (``selection.method``); both go
through :func:`run`, so the benchmark's baselines and the production
selectors are the same code.

Adding a method touches three places: its module (a ``select_<method>``
function, an options section and a memory estimate), the :data:`REGISTRY`
entry below, and its options in ``conf/base/parameters_baselines.yml``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from iclfs.method._config import ParameterError, RuntimeConfig, Section, closest
from iclfs.method._runtime import ResourceLimitError

from ._concrete import CAEOptions, LSCAEOptions, cae_memory, lscae_memory, select_cae, select_lscae
from ._graph import (
    LaplacianScoreOptions,
    MCFSOptions,
    NDFSOptions,
    SPECOptions,
    ls_memory,
    mcfs_memory,
    ndfs_memory,
    select_laplacian_score,
    select_mcfs,
    select_ndfs,
    select_spec,
    spec_memory,
)
from ._reference import AllFeaturesOptions, RandomOptions, data_memory, select_all_features, select_random
from ._result import BaselineResult
from ._variance import (
    DispersionOptions,
    VarianceOptions,
    dispersion_memory,
    select_dispersion,
    select_variance,
    variance_memory,
)

__all__ = ["METHODS", "REGISTRY", "Baseline", "BaselineResult", "baseline", "check_memory", "check_method",
           "options_of", "run"]


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
        on X of shape (n, d): the standardized table, or the table as measured for a method that
        ``reads_measured``.
    options : type of Section
        Its options, validated declaratively (``baselines.<key>`` in conf).
    memory : callable
        ``memory(n, d, k_max) -> bytes``: its peak memory, checked before it runs.
    needs_clusters : bool
        It must be told the number of clusters (the number of classes in the benchmark).
    seeded : bool
        Its selection depends on the seed.
    reference : bool
        A reference point of the benchmark (random selection, every feature), not a method to select with.
    neural : bool
        It trains a network with torch (``runtime.device`` and ``runtime.num_threads`` apply).
    reads_measured : bool
        It reads the table as measured, before standardization (which sets every feature's variance to 1).
    nonnegative : bool
        It needs nonnegative values (counts, expression on its linear scale): others are refused up front.
    summary : str
        When to use it, in one line.
    """

    key: str
    name: str
    select: Callable[..., BaselineResult]
    options: type[Section]
    memory: Callable[[int, int, int], int]
    needs_clusters: bool = False
    seeded: bool = False
    reference: bool = False
    neural: bool = False
    reads_measured: bool = False
    nonnegative: bool = False
    summary: str = ""


REGISTRY: dict[str, Baseline] = {entry.key: entry for entry in (
    Baseline("ls", "LS", select_laplacian_score, LaplacianScoreOptions, ls_memory,
             summary="the Laplacian score: fast, deterministic, the steadiest list between refreshes"),
    Baseline("spec", "SPEC", select_spec, SPECOptions, spec_memory,
             summary="spectral feature selection: deterministic, needs no number of clusters"),
    Baseline("mcfs", "MCFS", select_mcfs, MCFSOptions, mcfs_memory, needs_clusters=True,
             summary="multi-cluster feature selection: needs the number of clusters"),
    Baseline("ndfs", "NDFS", select_ndfs, NDFSOptions, ndfs_memory, needs_clusters=True, seeded=True,
             summary="nonnegative discriminative feature selection: needs the number of clusters"),
    Baseline("cae", "CAE", select_cae, CAEOptions, cae_memory, seeded=True, neural=True,
             summary="concrete autoencoder: a neural selector of k features that reconstruct the rest"),
    Baseline("lscae", "LS-CAE", select_lscae, LSCAEOptions, lscae_memory, seeded=True, neural=True,
             summary="CAE with a Laplacian-score term: k features that reconstruct the rest and keep its structure"),
    Baseline("variance", "variance", select_variance, VarianceOptions, variance_memory, reads_measured=True,
             summary="the features of highest variance as measured: the first comparison, for features on one scale"),
    Baseline("dispersion", "dispersion", select_dispersion, DispersionOptions, dispersion_memory,
             reads_measured=True, nonnegative=True,
             summary="Seurat's normalized dispersion (scanpy's seurat flavour): nonnegative counts or expression"),
    Baseline("random", "random", select_random, RandomOptions, data_memory, seeded=True, reference=True,
             summary="random selection, the chance level"),
    Baseline("all_features", "all features", select_all_features, AllFeaturesOptions, data_memory, reference=True,
             summary="every feature, no selection"),
)}

#: The methods ``select`` runs (``selection.method``): ICLFS and every registry entry that is not a reference point.
METHODS = ("iclfs", *(key for key, entry in REGISTRY.items() if not entry.reference))


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


def check_method(method: str, n_clusters: int | None, selector: bool = False) -> None:
    """Refuse a ``selection.method`` that ``select`` cannot run, or one that needs ``selection.n_clusters``
    without it, naming the methods there are; with ``selector``, the fix is the selector's argument."""
    if method not in METHODS:
        raise ParameterError(f"selection.method {method!r} is not a method{closest(method, METHODS)}; "
                             f"known: {', '.join(METHODS)}")
    if method != "iclfs" and REGISTRY[method].needs_clusters and n_clusters is None:
        fix = (f"BaselineSelector({method!r}, n_clusters=4)" if selector else
               "set selection.n_clusters (e.g. --params selection.n_clusters=4)")
        raise ParameterError(f"selection.method {method!r} ({REGISTRY[method].name}) needs the number of clusters: "
                             f"{fix}")


def check_memory(key: str, n: int, d: int, k_max: int, available: int | None = None) -> None:
    """Refuse, before it runs, a method whose matrices will not fit in the memory there is.

    ``available`` in bytes; by default what the machine (or its container) has free.
    """
    entry = baseline(key)
    needed = int(entry.memory(int(n), int(d), int(k_max)))
    if available is None:
        import torch

        from iclfs.method._runtime import available_memory

        available = available_memory(torch.device("cpu"))
    if available is not None and needed > available:
        graph = ("" if entry.neural or entry.reads_measured
                 else " (it holds n x n matrices, and d x d in its LARS)" if key == "mcfs"
                 else " (it holds n x n matrices)")
        raise ResourceLimitError(
            f"{entry.name} needs about {needed / 2**30:.1f} GiB for {n:,} samples x {d:,} features{graph}, but "
            f"{available / 2**30:.1f} GiB are free; select from fewer samples, or use a method whose memory grows "
            "with the features only (ICLFS with members.feature_blocks, CAE, LS-CAE)")


def run(key: str, X: np.ndarray, k_values: Sequence[int], *, n_clusters: int | None = None, seed: int = 42,
        options: Mapping | Section | None = None, runtime: RuntimeConfig | None = None,
        measured: np.ndarray | None = None) -> BaselineResult:
    """Baseline ``key``'s selections at every k of ``k_values``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The standardized table.
    measured : ndarray of shape (n, d), optional
        The same table before standardization; a method that ``reads_measured`` (variance, dispersion) reads
        it instead of ``X`` and refuses to run without it.

    A method that needs the number of clusters refuses to run without it.
    """
    entry = baseline(key)
    if entry.needs_clusters and n_clusters is None:
        raise ParameterError(f"{entry.name} needs the number of clusters: set selection.n_clusters "
                             "(n_clusters of the selector)")
    if not isinstance(options, Section):
        options = options_of(key, options)
    if entry.reads_measured:
        if measured is None:
            raise ValueError(f"{entry.name} reads the table before standardization (it ranks the variance that "
                             "standardizing sets to 1): pass it as measured=")
        if np.shape(measured) != np.shape(X):
            raise ValueError(f"measured has shape {np.shape(measured)}, the standardized table {np.shape(X)}: "
                             "they must be the same table")
        X = measured
    X = np.asarray(X)
    check_memory(key, X.shape[0], X.shape[1], max(int(k) for k in k_values))
    return entry.select(np.asarray(X, dtype=np.float64), [int(k) for k in k_values], n_clusters=n_clusters,
                        seed=int(seed), options=options, runtime=runtime or RuntimeConfig(progress=False))
