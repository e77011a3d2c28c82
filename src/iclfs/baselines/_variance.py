"""The variance baselines: the features that vary most, raw or relative to their mean.

Both read the table as it was measured, **before standardization** (after it,
every feature has variance 1 and the raw variance ranks nothing). ``X`` is
(n, d) float64 with samples in rows, n >= 2, every value finite; higher
scores are better, and a score is never NaN: ``-inf`` means "ranks last".
Every order sorts by descending score with ties broken by the smaller index
(:func:`iclfs.method.scores.feature_order`), so both methods are
deterministic.

``variance``
    The sample variance of each feature, ``s_j^2 = sum_i (x_ij - m_j)^2 / (n - 1)``
    (ddof=1; ddof=0 would scale every score by (n - 1) / n and rank the same).
    Any real values, negative ones included. A constant feature (its largest
    value equals its smallest, tested exactly) scores exactly 0, so constant
    features rank last, by index, whatever the rounding of their mean.

``dispersion``
    The normalized dispersion of Seurat's ``mean.var.plot`` as scanpy's
    ``highly_variable_genes(flavor="seurat")`` computes it (Satija et al.,
    2015), on nonnegative data on its linear scale (counts, or normalized
    expression before the log). Per feature j:

    1. ``m_j`` the mean and ``v_j`` the variance (ddof=1) over the samples,
       ``v_j = 0`` exactly for a constant feature;
    2. the log dispersion ``delta_j = ln(v_j / m_j)``, defined for the
       *variable* features, those with ``m_j > 0`` and ``v_j > 0`` (and a
       finite ratio);
    3. the log mean ``mu_j = ln(1 + m_j)``, for every feature;
    4. ``n_bins`` equal-width bins of ``mu`` over ``[min mu, max mu]``, all
       features setting the range; bin b holds ``e_b < mu_j <= e_{b+1}``,
       edges ``e = linspace(min mu, max mu, n_bins + 1)``, the minimum in the
       first bin (``pandas.cut(mu, n_bins)``); one bin if all ``mu`` are equal;
    5. within each bin, the mean ``a_b`` and the standard deviation ``s_b``
       (ddof=1) of the log dispersions of its variable features;
    6. the score of a variable feature is ``(delta_j - a_b) / s_b``; it is
       exactly 1 when it is the only variable feature of its bin (scanpy's
       rule) and exactly 0 when every variable feature of its bin has the
       same log dispersion; features that are not variable (constant, all
       zeros, or a ratio that under- or overflows float64) score ``-inf``.

    Where this departs from scanpy's seurat flavour (scanpy 1.11.5 read):

    - **No expm1.** scanpy expects log1p-normalized data and first takes
      ``expm1`` of it; this function takes the linear scale itself, so
      ``dispersion_scores(X)`` is scanpy's seurat flavour on ``log1p(X)``,
      and scanpy's result for a log1p table ``L`` is
      ``dispersion_scores(np.expm1(L))``. Negative values are refused, not
      exponentiated.
    - Zero mean: scanpy sets ``m_j = 1e-12`` before dividing and binning; here
      ``mu_j = ln(1 + 0) = 0`` (the bin range moves by 1e-12) and the feature
      scores ``-inf``.
    - Features without a log dispersion: scanpy's ``NaN``, which its
      ``n_top_genes`` selection also puts last, is ``-inf`` here.
    - Constant features are found exactly; scanpy's variance,
      ``mean(x^2) - mean(x)^2``, can leave a rounding residue that gives a
      constant feature a finite, very low log dispersion which then enters its
      bin's mean and standard deviation. Variances here are two-pass
      (``mean((x - m)^2)``), so scores agree with scanpy's to rounding.
    - A single variable feature in a bin with ``delta_j = 0`` (variance equal
      to the mean) scores 1 here, ``0 / 0 = NaN`` in scanpy; a bin of two or
      more equal log dispersions scores 0 here, ``NaN`` in scanpy.
    - Only ``n_bins`` is an option: no cutoffs on mean or dispersion, no
      batches, no ``filter_unexpressed_genes`` (zero features rank last
      anyway).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from iclfs.method._config import Section, integer, param
from iclfs.method._preprocessing import DataValidationError, check_finite, extreme_scale
from iclfs.method._scores import feature_order

from ._result import BaselineResult

LOGGER = logging.getLogger(__name__)
DISPERSION_BINS = 20  # scanpy's default n_bins

# ---------------------------------------------------------------- validation


def _check_table(X: np.ndarray, method: str, nonnegative: bool = False) -> np.ndarray:
    """``X`` as a finite (n, d) float64 array with n >= 2 and d >= 1, and nonnegative if asked.

    Raises
    ------
    DataValidationError
        Naming ``method``, the problem, how many values and the first (row, column).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise DataValidationError(f"{method}: X must be 2-D (n_samples, n_features), got shape {X.shape}")
    n, d = X.shape
    if n < 2 or d < 1:
        raise DataValidationError(
            f"{method}: X needs >= 2 samples (a variance with ddof=1) and >= 1 feature, got shape {X.shape}")
    check_finite(X, source=method)
    if nonnegative:
        negative = X < 0
        count = int(np.count_nonzero(negative))
        if count:
            row, col = divmod(int(np.argmax(negative)), d)  # the first in row-major order
            raise DataValidationError(
                f"{method}: found {count} negative value(s) in the data matrix, first at (row {row}, column {col}) "
                f"= {float(X[row, col]):g}. The dispersion (variance / mean) needs nonnegative data on its linear "
                "scale, such as counts or normalized expression: pass the table before standardization or centring "
                "(use variance for data with negative values)")
    return X


def _check_bins(n_bins: object) -> None:
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be an integer >= 1, got {n_bins!r}")


def _mean_var(X: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature mean and variance (ddof=1), each (d,); constant features exactly 0 variance.

    A table whose values are all of magnitude below 2**-500 (values ~1e-300, whose variances underflow to 0 and
    would read as constant) is first scaled by one power of two, exactly, with a warning:
    its scores are then the scaled table's, in the same order. Any other table is computed as given.
    """
    scale = float(extreme_scale(X.reshape(-1, 1))[0])  # one factor for the whole table: the order is kept
    if scale != 1.0:
        LOGGER.warning("%s: the values are of magnitude %.3g at most, where their variances fall outside float64's "
                       "range: the scores are those of the table times 2**%d (exact; the order is the same)", method,
                       float(np.abs(X).max()), int(np.log2(scale)))
        X = X * scale
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused below, by name
        mean = X.mean(axis=0)
        var = X.var(axis=0, ddof=1)
    var[X.max(axis=0) == X.min(axis=0)] = 0.0
    bad = ~np.isfinite(var)
    if bad.any():
        cols = np.flatnonzero(bad)
        raise DataValidationError(
            f"{method}: the variance of {len(cols)} feature(s) overflows float64, first column {cols[0]} "
            f"(values up to {np.abs(X[:, cols[0]]).max():.3g}); rescale the data")
    return mean, var


# ------------------------------------------------------------------ variance


def variance_scores(X: np.ndarray) -> np.ndarray:
    """The sample variance of every feature (ddof=1); higher is better.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The data before standardization, finite, n >= 2.

    Returns
    -------
    ndarray of shape (d,), dtype=float64
        Variances >= 0; exactly 0 for constant features, which rank last.

    Raises
    ------
    DataValidationError
        For a table that is not 2-D, has fewer than 2 samples or holds NaN/inf.
    """
    X = _check_table(X, "variance")
    var = _mean_var(X, "variance")[1]
    varying = var[var > 0]
    if len(varying) > 1 and varying.max() - varying.min() <= 1e-9 * varying.max():
        # a standardized table (every variance 1): the order would be rounding's, not the data's
        LOGGER.warning("variance: all %d varying features have the same variance (%.6g): the order among them is "
                       "rounding's. Pass the table before standardization, or use another method", len(varying),
                       float(varying.max()))
    return var


def variance_order(X: np.ndarray) -> np.ndarray:
    """Features by descending variance (see :func:`variance_scores`), ties by index.

    Returns
    -------
    ndarray of shape (d,), dtype=int64
        The order; constant features last.
    """
    return feature_order(variance_scores(X)).astype(np.int64)


# ---------------------------------------------------------------- dispersion


def _mean_bins(mu: np.ndarray, n_bins: int) -> np.ndarray:
    """Bin index (d,) of each log mean: ``n_bins`` equal-width, right-closed bins over [min, max].

    The bins of ``pandas.cut(mu, n_bins)``: a value on an inner edge belongs
    to the lower bin, the minimum to the first.
    """
    lo, hi = float(mu.min()), float(mu.max())
    if lo == hi:
        return np.zeros(len(mu), dtype=np.int64)
    edges = np.linspace(lo, hi, n_bins + 1)
    return np.clip(np.searchsorted(edges, mu, side="left") - 1, 0, n_bins - 1).astype(np.int64)


def _normalize_in_bins(delta: np.ndarray, bins: np.ndarray, n_bins: int) -> np.ndarray:
    """z-scores (c,) of the log dispersions ``delta`` (c,) within their bins ``bins`` (c,).

    1 for the only value of its bin, 0 in a bin whose values are all equal.
    """
    count = np.bincount(bins, minlength=n_bins)
    avg = np.bincount(bins, weights=delta, minlength=n_bins) / np.maximum(count, 1)
    centred = delta - avg[bins]
    std = np.sqrt(np.bincount(bins, weights=centred * centred, minlength=n_bins) / np.maximum(count - 1, 1))
    lowest = np.full(n_bins, np.inf)
    highest = np.full(n_bins, -np.inf)
    np.minimum.at(lowest, bins, delta)
    np.maximum.at(highest, bins, delta)
    flat = (highest == lowest) | (std == 0)  # checked exactly: a rounded mean leaves residues

    z = np.divide(centred, std[bins], out=np.zeros_like(delta), where=~flat[bins])
    z[count[bins] == 1] = 1.0
    return z


def dispersion_scores(X: np.ndarray, n_bins: int = DISPERSION_BINS) -> np.ndarray:
    """Seurat's normalized dispersion of every feature (scanpy's seurat flavour, module docstring); higher is better.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Nonnegative data on its linear scale (counts or normalized
        expression, not log1p: pass ``np.expm1(L)`` for a log1p table
        ``L``), finite, n >= 2.
    n_bins : int, default=20
        Equal-width bins of ``ln(1 + mean)``; each feature's log dispersion
        is z-scored among the features of its bin.

    Returns
    -------
    ndarray of shape (d,), dtype=float64
        The normalized dispersions; 1 for the only variable feature of its
        bin; ``-inf`` for constant and all-zero features, which rank last.

    Raises
    ------
    DataValidationError
        For a table that is not 2-D, has fewer than 2 samples, or holds
        NaN/inf or negative values (how many, and the first row and column).
    ValueError
        For ``n_bins`` not an integer >= 1.
    """
    _check_bins(n_bins)
    X = _check_table(X, "dispersion", nonnegative=True)
    mean, var = _mean_var(X, "dispersion")
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        delta = np.log(var / mean)
    variable = (mean > 0) & (var > 0) & np.isfinite(delta)
    bins = _mean_bins(np.log1p(mean), int(n_bins))
    scores = np.full(X.shape[1], -np.inf)
    scores[variable] = _normalize_in_bins(delta[variable], bins[variable], int(n_bins))
    return scores


def dispersion_order(X: np.ndarray, n_bins: int = DISPERSION_BINS) -> np.ndarray:
    """Features by descending normalized dispersion (see :func:`dispersion_scores`), ties by index.

    Returns
    -------
    ndarray of shape (d,), dtype=int64
        The order; constant and all-zero features last.
    """
    return feature_order(dispersion_scores(X, n_bins)).astype(np.int64)


# ----------------------------------------------------------- the registry's entries


@dataclass(frozen=True)
class VarianceOptions(Section):
    """The features of highest variance: no options."""

    SECTION: ClassVar[str] = "baselines.variance"


@dataclass(frozen=True)
class DispersionOptions(Section):
    """Seurat's normalized dispersion (scanpy's seurat flavour): the bins of the mean it normalizes within."""

    SECTION: ClassVar[str] = "baselines.dispersion"

    n_bins: int = param(DISPERSION_BINS, integer(1),
                        "equal-width bins of ln(1 + mean); the log dispersion is z-scored within each")


# Peak memory in bytes for n samples and d features (float64): the data, the centred copy the variance
# squares in place (the NaN/inf and sign checks' masks, 2 n d bytes, come and go before it), and (d,) vectors.
def variance_memory(n: int, d: int, k: int) -> int:
    return 8 * (2 * n * d + 8 * d)


def dispersion_memory(n: int, d: int, k: int) -> int:
    return 8 * (2 * n * d + 24 * d)


def _first_k(order: np.ndarray, k_values: Sequence[int]) -> dict[int, np.ndarray]:
    return {int(k): order[:k] for k in k_values}


def select_variance(X: np.ndarray, k_values: Sequence[int], *, options: VarianceOptions | None = None,
                    **_: object) -> BaselineResult:
    """The ``k`` features of highest variance for every k of ``k_values``, X (n, d) unstandardized."""
    scores = variance_scores(X)
    return BaselineResult(_first_k(feature_order(scores).astype(np.int64), k_values), scores)


def select_dispersion(X: np.ndarray, k_values: Sequence[int], *, options: DispersionOptions | None = None,
                      **_: object) -> BaselineResult:
    """The ``k`` features of highest normalized dispersion for every k, X (n, d) nonnegative, unstandardized."""
    options = DispersionOptions() if options is None else options
    scores = dispersion_scores(X, options.n_bins)
    return BaselineResult(_first_k(feature_order(scores).astype(np.int64), k_values), scores)
