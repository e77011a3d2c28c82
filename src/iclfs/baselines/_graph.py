"""The graph-based baselines, written from the original papers.

- Laplacian score: He, Cai & Niyogi, "Laplacian score for feature selection",
  NIPS 2005 (scores in :mod:`iclfs.method._laplacian`; lower is better).
- SPEC: Zhao & Liu, "Spectral feature selection for supervised and
  unsupervised learning", ICML 2007 (normalized-cut variant phi_2; lower is
  better).
- MCFS: Cai, Zhang & He, "Unsupervised feature selection for multi-cluster
  data", KDD 2010 (higher is better).
- NDFS: Li, Yang, Liu, Zhou & Lu, "Unsupervised feature selection using
  nonnegative spectral analysis", AAAI 2012 (higher is better).

Every ``*_order`` returns a (d,) int64 array of feature indices, best first,
ties broken by the smaller index. ``X`` is always (n, d) standardized data
with samples in rows. Each method's ``select_*`` and options section are what
the registry (:mod:`iclfs.baselines`) runs and validates.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy import linalg
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lars

from iclfs.method._config import Section, integer, number, optional, param
from iclfs.method._laplacian import knn_affinity, laplacian_scores
from iclfs.method._scores import feature_order

from ._result import BaselineResult

MCFS_MAX_NONZERO = 300  # default LARS cardinality cap (see mcfs_scores)
NDFS_INIT_OFFSET = 0.2  # added to the 0/1 cluster indicator (see _ndfs_init)
_EPS = 1e-12


# ---------------------------------------------------------------- validation


def _check_data(X: np.ndarray) -> np.ndarray:
    """``X`` as a finite (n, d) float64 array with n >= 2 and d >= 1."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.shape[0] < 2 or X.shape[1] < 1:
        raise ValueError(f"X needs >= 2 samples and >= 1 feature, got shape {X.shape}")
    bad = int(np.count_nonzero(~np.isfinite(X)))
    if bad:
        raise ValueError(f"X must be finite, found {bad} NaN/Inf entries")
    return X


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_neighbors(n_neighbors: int, n: int) -> None:
    if not _is_int(n_neighbors) or not 1 <= n_neighbors <= n - 1:
        raise ValueError(f"n_neighbors must be an integer in 1..{n - 1} for {n} samples, got {n_neighbors!r}")


def _check_clusters(n_clusters: int, upper: int, n: int) -> None:
    if not _is_int(n_clusters) or not 2 <= n_clusters <= upper:
        raise ValueError(f"n_clusters must be an integer in 2..{upper} for {n} samples, got {n_clusters!r}")


def _check_positive(name: str, value: float) -> None:
    if not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def ascending_order(scores: np.ndarray) -> np.ndarray:
    """Feature indices by ascending score, ties by index; NaN and +inf last."""
    scores = np.asarray(scores, dtype=np.float64)
    key = np.where(np.isnan(scores), np.inf, scores)
    # lexsort is stable and sorts by the last key first.
    return np.lexsort((np.arange(len(key)), key)).astype(np.int64)


def _descending_order(scores: np.ndarray) -> np.ndarray:
    return feature_order(scores).astype(np.int64)


def _normalized_affinity(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``D^{-1/2} W D^{-1/2}`` (n, n) dense and ``D^{1/2}`` (n,), degrees floored at 1e-12."""
    sqrt_degree = np.sqrt(np.maximum(W.sum(axis=1), _EPS))
    return W / sqrt_degree[:, None] / sqrt_degree[None, :], sqrt_degree


# ---------------------------------------------------------------------- SPEC


def spec_scores(X: np.ndarray, gamma: float | None = None) -> np.ndarray:
    """SPEC phi_2 (normalized-cut) score of every feature; lower is better.

    W_ij = exp(-gamma ||x_i - x_j||^2) over all sample pairs, self-similarity
    included (the full RBF kernel matrix, so W_ii = 1). D = diag(W 1),
    L = I - D^{-1/2} W D^{-1/2}, xi_1 = D^{1/2} 1 / ||D^{1/2} 1||, and for a
    feature column f, f_hat = D^{1/2} f / ||D^{1/2} f|| and

        phi_2(f) = f_hat^T L f_hat / (1 - (f_hat^T xi_1)^2).

    The denominator removes the part of f along the trivial eigenvector, so a
    feature constant over the samples cannot win. Dense (n, n): fine up to a
    few thousand samples.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Standardized data.
    gamma : float or None, default=None
        RBF width. ``None`` uses 1 / (2 m), m the mean squared
        Euclidean distance over distinct sample pairs (so a typical pair
        has similarity about exp(-1/2)); 1.0 if all samples coincide.

    Returns
    -------
    ndarray of shape (d,), dtype=float64
        The scores; ``+inf`` for features with ||D^{1/2} f|| <= 1e-12 or a
        denominator <= 1e-10 (zero or constant features).
    """
    X = _check_data(X)
    n = X.shape[0]
    sq_norms = np.einsum("ij,ij->i", X, X)
    sq_dist = np.clip(sq_norms[:, None] + sq_norms[None, :] - 2.0 * (X @ X.T), 0.0, None)
    np.fill_diagonal(sq_dist, 0.0)
    if gamma is None:
        mean_sq = sq_dist.sum() / (n * (n - 1))
        gamma = 1.0 / (2.0 * mean_sq) if mean_sq > 0 else 1.0
    else:
        _check_positive("gamma", gamma)
    A, sqrt_degree = _normalized_affinity(np.exp(-gamma * sq_dist))

    F = sqrt_degree[:, None] * X
    norms = np.linalg.norm(F, axis=0)
    ok = norms > _EPS
    F_hat = F[:, ok] / norms[ok]
    # f_hat has unit norm, so f_hat^T L f_hat = 1 - f_hat^T A f_hat.
    numerator = np.clip(1.0 - np.einsum("ij,ij->j", F_hat, A @ F_hat), 0.0, None)
    xi_1 = sqrt_degree / np.linalg.norm(sqrt_degree)
    denominator = 1.0 - (xi_1 @ F_hat) ** 2

    scores = np.full(X.shape[1], np.inf)
    finite = denominator > 1e-10
    idx = np.flatnonzero(ok)[finite]
    scores[idx] = numerator[finite] / denominator[finite]
    return scores


# ---------------------------------------------------------------------- MCFS


def _spectral_embedding(W: np.ndarray, n_components: int) -> np.ndarray:
    """Solutions y of L y = lambda D y with the smallest non-trivial lambdas.

    Solved in the symmetric form M u = (1 - lambda) u with
    M = D^{-1/2} W D^{-1/2} and y = D^{-1/2} u. The trivial direction
    u_0 ~ D^{1/2} 1 is deflated (pushed to eigenvalue -1) rather than dropped
    by position, so it is removed exactly even when the graph is disconnected
    and eigenvalue 1 is repeated.

    Returns
    -------
    ndarray of shape (n, n_components)
        The solutions y, one per column, smallest lambda first.
    """
    M, sqrt_degree = _normalized_affinity(W)
    u_0 = sqrt_degree / np.linalg.norm(sqrt_degree)
    M = M - 2.0 * np.outer(u_0, u_0)
    n = M.shape[0]
    _, U = linalg.eigh(M, subset_by_index=[n - n_components, n - 1])
    return U[:, ::-1] / sqrt_degree[:, None]


def _mcfs_scores_at(X: np.ndarray, n_clusters: int, n_neighbors: int, cardinalities: list[int]) -> np.ndarray:
    """MCFS scores for several LARS cardinalities from one path per eigenvector.

    LARS adds one feature per step, so the fit stopped at cardinality k is
    the path's k-th step: one path to the largest k gives every smaller one,
    exactly as ``Lars(n_nonzero_coefs=k)`` would (the same steps, in the
    same order). A path that ends early (at most min(n, d) features can be
    active) keeps its last step for every larger k.

    Returns
    -------
    ndarray of shape (len(cardinalities), d), dtype=float64
        Scores >= 0, row i for ``cardinalities[i]``.
    """
    Y = _spectral_embedding(knn_affinity(X, n_neighbors).toarray(), n_clusters)
    with warnings.catch_warnings():
        # With d >> n, LARS drops regressors that become collinear with the
        # active set and warns; that is the expected path, not a failure.
        warnings.simplefilter("ignore", ConvergenceWarning)
        lars = Lars(n_nonzero_coefs=max(cardinalities), fit_intercept=False, fit_path=True).fit(X, Y)
    scores = np.zeros((len(cardinalities), X.shape[1]))
    # One path per eigenvector (n_clusters >= 2, so sklearn keeps the list).
    for path in lars.coef_path_:  # (d, steps + 1); column 0 is the empty model
        steps = np.minimum(np.asarray(cardinalities), path.shape[1] - 1)
        scores = np.maximum(scores, np.abs(path[:, steps].T))
    return scores


def _check_cardinality(name: str, value: object, d: int) -> None:
    if not _is_int(value) or not 1 <= value <= d:
        raise ValueError(f"{name} must be an integer in 1..{d}, got {value!r}")


def mcfs_scores(
    X: np.ndarray, n_clusters: int, n_neighbors: int = 5, n_nonzero: int | None = None
) -> np.ndarray:
    """MCFS score of every feature, max_k |a_{k, j}|; higher is better.

    The p-nearest-neighbour heat-kernel graph W is :func:`knn_affinity`
    (cosine distance, as for the Laplacian score); L = D - W. The embedding
    Y (n, n_clusters) holds the generalized eigenvectors of L y = lambda D y
    with the smallest eigenvalues, the trivial constant one excluded. Each
    column y_k is regressed on X with LARS stopped at ``n_nonzero`` active
    features (the paper's cardinality-constrained L1 problem), no intercept.

    K = ``n_clusters`` counts non-trivial eigenvectors. Data with c clusters
    has only c - 1 eigenvectors that separate clusters, so K = c adds one
    that follows within-cluster structure, which can lift noise features.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Standardized data.
    n_clusters : int
        K, the number of non-trivial eigenvectors; 2..n-1.
    n_neighbors : int, default=5
        p of the kNN graph; 1..n-1.
    n_nonzero : int or None, default=None
        LARS cardinality per eigenvector, 1..d. ``None`` uses
        min(d, 300). The paper sets it to the number of features to
        select, which a full order does not know (use
        :func:`mcfs_selections` for that); 300 bounds the LARS path
        length. LARS can never hold more than min(n, d) active
        features, so for d >> n the cap is in effect n, and for d < n
        with n_nonzero = d the path ends at plain least squares.

    Returns
    -------
    ndarray of shape (d,), dtype=float64
        Scores >= 0; features never selected score 0.
    """
    X = _check_data(X)
    n, d = X.shape
    _check_clusters(n_clusters, n - 1, n)
    _check_neighbors(n_neighbors, n)
    if n_nonzero is None:
        n_nonzero = min(d, MCFS_MAX_NONZERO)
    else:
        _check_cardinality("n_nonzero", n_nonzero, d)
    return _mcfs_scores_at(X, n_clusters, n_neighbors, [n_nonzero])[0]


def mcfs_selections(
    X: np.ndarray, n_clusters: int, k_values: list[int], n_neighbors: int = 5
) -> dict[int, np.ndarray]:
    """MCFS as its paper runs it: for each number k of features to select, a fit of cardinality k.

    The paper's selection of k features takes the k best scores of the
    LARS fits stopped at k active features per eigenvector, so the set for
    k = 50 is not the first 50 of the set for k = 300. All fits come from
    one LARS path per eigenvector (see :func:`mcfs_scores` for the graph
    and the embedding).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Standardized data.
    n_clusters : int
        K, the number of non-trivial eigenvectors; 2..n-1.
    k_values : list of int
        The numbers of features to select, each in 1..d.
    n_neighbors : int, default=5
        p of the kNN graph; 1..n-1.

    Returns
    -------
    dict of int to ndarray of shape (d,), dtype=int64
        ``{k: (d,) int64 order by the scores of the cardinality-k fit}``;
        its first k entries are MCFS's k features (a fit with fewer than k
        features selected fills up with unselected ones, by index).
    """
    k_values = list(k_values)
    scores = _mcfs_fits(X, n_clusters, k_values, n_neighbors)
    return {int(k): _descending_order(row) for k, row in zip(k_values, scores, strict=True)}


def _mcfs_fits(X: np.ndarray, n_clusters: int, k_values: list[int], n_neighbors: int) -> np.ndarray:
    """The checked inputs' MCFS scores of the cardinality-k fit for every k of ``k_values``, (len, d)."""
    X = _check_data(X)
    n, d = X.shape
    _check_clusters(n_clusters, n - 1, n)
    _check_neighbors(n_neighbors, n)
    if not k_values:
        raise ValueError("k_values must name at least one number of features to select")
    for k in k_values:
        _check_cardinality("every k in k_values", k, d)
    return _mcfs_scores_at(X, n_clusters, n_neighbors, k_values)


# ---------------------------------------------------------------------- NDFS


def _ndfs_factor(X: np.ndarray, w_scale: np.ndarray, beta: float) -> tuple:
    """Cholesky factor of X D_W^{-1} X^T + beta I_n (n, n), D_W^{-1} = diag(w_scale).

    Push-through identity, the reason NDFS never needs a (d, d) matrix:
    (X^T X + beta D_W)^{-1} X^T = D_W^{-1} X^T (X D_W^{-1} X^T + beta I_n)^{-1}.
    """
    K = (X * w_scale[None, :]) @ X.T
    return linalg.cho_factor(K + beta * np.eye(X.shape[0]))


def _ndfs_w(X: np.ndarray, F: np.ndarray, w_scale: np.ndarray, factor: tuple) -> np.ndarray:
    """W = (X^T X + beta D_W)^{-1} X^T F, (d, c), from :func:`_ndfs_factor`."""
    return w_scale[:, None] * (X.T @ linalg.cho_solve(factor, F))


def _ndfs_residual_op(factor: tuple, beta: float) -> np.ndarray:
    """I_n - X (X^T X + beta D_W)^{-1} X^T = beta (X D_W^{-1} X^T + beta I_n)^{-1}, (n, n).

    With K = X D_W^{-1} X^T: K (K + beta I)^{-1} = I - beta (K + beta I)^{-1}.
    """
    return beta * linalg.cho_solve(factor, np.eye(factor[0].shape[0]))


def _ndfs_init(A: np.ndarray, n_clusters: int, random_state: int | None) -> np.ndarray:
    """Nonnegative F (n, c) from spectral clustering of the graph.

    Top-c eigenvectors of A = D^{-1/2} S D^{-1/2}, rows normalized, k-means
    (Ng, Jordan & Weiss). The 0/1 indicator gets a 0.2 offset because a
    multiplicative update can never move an entry away from 0; columns are
    then scaled to unit norm, the scale F^T F = I asks for.
    """
    n = A.shape[0]
    _, U = linalg.eigh(A, subset_by_index=[n - n_clusters, n - 1])
    U = U / np.maximum(np.linalg.norm(U, axis=1, keepdims=True), _EPS)
    labels = KMeans(n_clusters=n_clusters, n_init=10, random_state=random_state).fit_predict(U)
    F = np.eye(n_clusters)[labels] + NDFS_INIT_OFFSET
    return F / np.linalg.norm(F, axis=0)


def ndfs_scores(
    X: np.ndarray,
    n_clusters: int,
    alpha: float = 1.0,
    beta: float = 1.0,
    gamma: float = 1e8,
    n_neighbors: int = 5,
    max_iter: int = 50,
    random_state: int | None = 0,
) -> np.ndarray:
    """NDFS score of every feature, ||w_j||_2; higher is better.

    Minimizes Tr(F^T L F) + alpha (||X W - F||_F^2 + beta ||W||_{2,1}) over
    F >= 0 with F^T F = I relaxed to + gamma/2 ||F^T F - I||_F^2; L is the
    normalized Laplacian I - D^{-1/2} S D^{-1/2} of the :func:`knn_affinity`
    graph S. Each of ``max_iter`` iterations (the paper's Algorithm 1):

    1. M = L + alpha (I - X (X^T X + beta D_W)^{-1} X^T), W eliminated;
    2. F <- F * (gamma F + M^- F) / (M^+ F + gamma F F^T F), elementwise;
    3. W = (X^T X + beta D_W)^{-1} X^T F;
    4. D_W = diag(1 / (2 sqrt(||w_i||^2 + 1e-12))).

    D_W starts at I. Step 2 is the paper's rule with M split into its
    positive and negative parts (M = M^+ - M^-), so numerator and denominator
    stay nonnegative even where (M F)_ij < 0; its fixed points are the same
    KKT points. Steps 1 and 3 use the push-through identity of
    :func:`_ndfs_factor`: O(n^2 d) per iteration, no (d, d) matrix.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Standardized data.
    n_clusters : int
        c, columns of F; 2..n.
    alpha : float, default=1.0
        The paper's weight alpha, > 0.
    beta : float, default=1.0
        The paper's weight beta, > 0.
    gamma : float, default=1e8
        The paper's weight gamma, > 0.
    n_neighbors : int, default=5
        k of the kNN graph; 1..n-1.
    max_iter : int, default=50
        Iterations, >= 1 (fixed count, no early stop).
    random_state : int or None, default=0
        Seed of the k-means initialization of F.

    Returns
    -------
    ndarray of shape (d,), dtype=float64
        Scores >= 0.
    """
    X = _check_data(X)
    n = X.shape[0]
    _check_clusters(n_clusters, n, n)
    _check_neighbors(n_neighbors, n)
    for name, value in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
        _check_positive(name, value)
    if not _is_int(max_iter) or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")

    A, _ = _normalized_affinity(knn_affinity(X, n_neighbors).toarray())
    laplacian = np.eye(n) - A
    F = _ndfs_init(A, n_clusters, random_state)
    w_scale = np.ones(X.shape[1])  # D_W^{-1}, D_W = I at the start
    for _ in range(max_iter):
        # D_W is fixed within an iteration, so steps 1 and 3 share one factor.
        factor = _ndfs_factor(X, w_scale, beta)
        M = laplacian + alpha * _ndfs_residual_op(factor, beta)
        M_pos, M_neg = np.maximum(M, 0.0), np.maximum(-M, 0.0)
        F = F * (gamma * F + M_neg @ F) / np.maximum(M_pos @ F + gamma * F @ (F.T @ F), _EPS)
        W = _ndfs_w(X, F, w_scale, factor)
        w_scale = 2.0 * np.sqrt(np.einsum("ij,ij->i", W, W) + _EPS)
    return np.linalg.norm(W, axis=1)


# ----------------------------------------------------------- the registry's entries


@dataclass(frozen=True)
class LaplacianScoreOptions(Section):
    """The Laplacian score's graph (He, Cai and Niyogi, 2005)."""

    SECTION: ClassVar[str] = "baselines.ls"

    n_neighbors: int = param(3, integer(1), "kNN graph over samples, cosine distance")


@dataclass(frozen=True)
class SPECOptions(Section):
    """SPEC's kernel (Zhao and Liu, 2007)."""

    SECTION: ClassVar[str] = "baselines.spec"

    gamma: float | None = param(None, optional(number(0, low_open=True)),
                                "RBF width; null: 1 / (2 mean squared distance)")


@dataclass(frozen=True)
class MCFSOptions(Section):
    """MCFS's graph (Cai, Zhang and He, 2010); one LARS fit per k, of cardinality k."""

    SECTION: ClassVar[str] = "baselines.mcfs"

    n_neighbors: int = param(5, integer(1), "p of the kNN graph")


@dataclass(frozen=True)
class NDFSOptions(Section):
    """NDFS's weights and iterations (Li et al., 2012)."""

    SECTION: ClassVar[str] = "baselines.ndfs"

    n_neighbors: int = param(5, integer(1), "k of the kNN graph")
    alpha: float = param(1.0, number(0, low_open=True), "the paper's alpha")
    beta: float = param(1.0, number(0, low_open=True), "the paper's beta")
    gamma: float = param(1.0e8, number(0, low_open=True), "the paper's gamma")
    max_iter: int = param(50, integer(1), "iterations (no early stop)")


# Peak memory in bytes for n samples and d features (float64): the n x n matrices each method holds at once
# (kNN or RBF affinities, Laplacians, eigenvectors, NDFS's factor and update operators) and copies of the data.
def ls_memory(n: int, d: int, k: int) -> int:
    return 8 * (2 * n * d + 3 * n * n)


def spec_memory(n: int, d: int, k: int) -> int:
    return 8 * (3 * n * d + 4 * n * n)


def mcfs_memory(n: int, d: int, k: int) -> int:
    # scikit-learn's Lars precomputes the d x d Gram matrix for several targets (the eigenvectors), and
    # holds about three of them at its peak: 10 GB measured at 20,000 features.
    return 8 * (4 * n * d + 5 * n * n + 3 * d * d)


def ndfs_memory(n: int, d: int, k: int) -> int:
    return 8 * (3 * n * d + 9 * n * n)


def _prefixes(order: np.ndarray, k_values: Sequence[int]) -> dict[int, np.ndarray]:
    return {int(k): order[:k] for k in k_values}


def select_laplacian_score(X: np.ndarray, k_values: Sequence[int], *, options: LaplacianScoreOptions,
                           **_: object) -> BaselineResult:
    scores = laplacian_scores(_check_data(X), options.n_neighbors)
    return BaselineResult(_prefixes(ascending_order(scores), k_values), -scores)


def select_spec(X: np.ndarray, k_values: Sequence[int], *, options: SPECOptions, **_: object) -> BaselineResult:
    scores = spec_scores(X, options.gamma)
    return BaselineResult(_prefixes(ascending_order(scores), k_values), -scores)


def select_mcfs(X: np.ndarray, k_values: Sequence[int], *, n_clusters: int, options: MCFSOptions,
                **_: object) -> BaselineResult:
    k_values = [int(k) for k in k_values]
    fits = _mcfs_fits(X, n_clusters, k_values, options.n_neighbors)
    selections = {k: _descending_order(row)[:k] for k, row in zip(k_values, fits, strict=True)}
    # The order of the largest fit scores every feature; each k keeps its own fit's selection.
    return BaselineResult(selections, fits[int(np.argmax(k_values))])


def select_ndfs(X: np.ndarray, k_values: Sequence[int], *, n_clusters: int, seed: int, options: NDFSOptions,
                **_: object) -> BaselineResult:
    scores = ndfs_scores(X, n_clusters, options.alpha, options.beta, options.gamma, options.n_neighbors,
                         options.max_iter, random_state=seed)
    return BaselineResult(_prefixes(_descending_order(scores), k_values), scores)
