"""Validate, standardize and invert a samples x features table (docs/method.md §1).

Everything here is numpy only. Every check raises :class:`DataValidationError`
with a message that names the source, the problem and where it is, so that a
pipeline fails before it writes anything.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

LOGGER = logging.getLogger(__name__)

MIN_SAMPLES = 4
#: The features are the training batch (BatchNorm, contrastive loss): one is not enough.
MIN_FEATURES = 2


class DataValidationError(ValueError):
    """Raised when input data cannot be used; the message says why and where."""


@dataclass
class FeatureTable:
    """A raw samples x features table as it comes out of the catalog.

    Attributes
    ----------
    X : array-like of shape (n_samples, n_features)
        The raw values.
    y : array-like of shape (n_samples,) or None
        Optional labels, any coding; evaluation only.
    feature_names : sequence of str or None
        Optional names, one per column.
    informative_features : sequence of int or None
        Optional column indices known to carry the cluster signal
        (synthetic data only); used to report recall at k.
    source : str
        Where the table came from, used in error messages.
    metadata : dict
        Anything else the reader knows (kept with the run's ground truth).
    sample_ids : sequence or None
        Optional id of every sample (the ``id_column``), kept in the reduced table.
    sample_id_name : str or None
        The id column's name.
    """

    X: object
    y: object | None = None
    feature_names: Sequence[str] | None = None
    informative_features: Sequence[int] | None = None
    source: str = "data"
    metadata: dict = field(default_factory=dict)
    sample_ids: Sequence | None = None
    sample_id_name: str | None = None

    def fingerprint(self) -> str:
        """A SHA-256 of the values, the feature names and the sample ids: equal for the same table.

        A run reads its input once; a later stage that needs the original values
        again checks this, so a file refreshed during a run is refused rather
        than mixed with the selection made from the old one.
        """
        digest = hashlib.sha256()
        X = np.ascontiguousarray(as_numeric_matrix(self.X, self.source))
        digest.update(str(X.shape).encode())
        digest.update(X.tobytes())
        for part in (self.feature_names, self.sample_ids):
            digest.update(b"\0" if part is None else "\x1f".join(map(str, part)).encode())
        return digest.hexdigest()


def _describe_positions(mask: np.ndarray, limit: int = 5) -> str:
    rows, cols = np.nonzero(mask)
    shown = ", ".join(f"(row {r}, column {c})" for r, c in zip(rows[:limit], cols[:limit]))
    more = f" and {len(rows) - limit} more" if len(rows) > limit else ""
    return shown + more


def as_numeric_matrix(X: object, source: str = "data") -> np.ndarray:
    """Return ``X`` as a 2-D float64 array, or raise naming what is wrong.

    Accepts numpy arrays of any integer/float/bool dtype, scipy sparse matrices
    and pandas DataFrames whose columns are all numeric.
    """
    if hasattr(X, "toarray") and callable(X.toarray):  # scipy.sparse
        X = X.toarray()
    if hasattr(X, "dtypes") and hasattr(X, "columns"):  # pandas DataFrame
        if X.size == 0:
            raise DataValidationError(f"{source}: the data matrix is empty (shape {X.shape}).")
        bad = [j for j, t in enumerate(X.dtypes) if t.kind not in "biuf"]
        if bad:
            shown = ", ".join(repr(str(X.columns[j])) for j in bad[:5])
            more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
            hint = ("Drop them, encode them as numbers, or declare them id_column / label_column. The values look "
                    "like numbers with decimal commas (1,5): read them as such with --params decimal=comma"
                    if any(_decimal_commas(X.iloc[:, j]) for j in bad[:5]) else
                    "Drop them or encode them as numbers before feature selection.")
            first = X.iloc[:, 0]
            if bad[0] == 0 and len(X) <= X.shape[1] and len(X) > 1 and first.is_unique \
                    and all(isinstance(v, str) for v in first):  # one distinct name a row: the sample ids
                name = str(X.columns[0])
                shown = ", ".join(map(repr, first[:3]))
                hint = (f"The first column {name!r} holds a distinct name on every row ({shown}, ...): if these are "
                        f"the sample ids, say so with id_column={name} (--params "
                        f"id_column={name}, or id_column: in its source) and they are kept aside. Else: " + hint)
            elif bad[0] == 0 and len(X) > X.shape[1]:  # a first column of names over a tall table: genes in rows
                hint = (f"The first column {str(X.columns[0])!r} holds names and the table is taller than wide: if "
                        "it holds features in rows (genes x samples), read it with orientation=features_in_rows "
                        "(--params orientation=features_in_rows, or orientation: in its source). Else: " + hint)
            raise DataValidationError(f"{source}: {len(bad)} column(s) are not numeric: {shown}{more}. {hint}")
        # Explicit dtype: mixed bool/nullable-int frames would otherwise come out
        # as object arrays, and pd.NA must become NaN for the finiteness check.
        X = X.to_numpy(dtype=np.float64, na_value=np.nan)
    arr = np.asarray(X)
    if arr.dtype.kind not in "biuf":
        raise DataValidationError(
            f"{source}: the data matrix has dtype {arr.dtype!s}, expected numbers "
            "(integer or float). Non-numeric values cannot be standardized."
        )
    if arr.ndim != 2:
        raise DataValidationError(
            f"{source}: the data matrix must be 2-D (samples x features), got shape {arr.shape}."
        )
    return arr.astype(np.float64, copy=False)


def _decimal_commas(column: object) -> bool:
    """Whether a column's text values are numbers once a decimal comma is read as a point."""
    values = [v for v in list(column)[:50] if isinstance(v, str) and v.strip()]
    if not values or not any("," in v for v in values):
        return False
    try:
        [float(v.replace(".", "").replace(",", ".")) for v in values]
    except ValueError:
        return False
    return True


def check_finite(X: np.ndarray, source: str = "data", feature_names: Sequence | None = None,
                 sample_ids: Sequence | None = None) -> None:
    """Raise if ``X`` (n_samples, n_features) holds NaN or +-Inf, saying how many and where; with the table's
    ``feature_names`` (n_features,) and ``sample_ids`` (n_samples,), the first by its names too, which read the
    same in a genes-in-rows file, where this matrix's rows are the file's columns."""
    bad = ~np.isfinite(X)
    if bad.any():
        n_nan = int(np.isnan(X).sum())
        n_inf = int(bad.sum()) - n_nan
        named = ""
        row, column = np.argwhere(bad)[0]
        if feature_names is not None and len(feature_names) == X.shape[1]:
            sample = f" in sample {str(sample_ids[row])!r}" \
                if sample_ids is not None and len(sample_ids) == X.shape[0] else ""
            named = f"; the first is feature {str(feature_names[column])!r}{sample}"
        raise DataValidationError(
            f"{source}: found {n_nan} NaN and {n_inf} infinite value(s) in the data matrix (samples x features), "
            f"first at {_describe_positions(bad)}{named}. Impute or drop them first."
        )


def validate_shape(
    X: np.ndarray, min_features: int = 1, source: str = "data"
) -> None:
    """Raise if there are too few samples or features for ICLFS."""
    n, d = X.shape
    if n < MIN_SAMPLES:
        raise DataValidationError(
            f"{source}: {n} sample(s) (rows) found, ICLFS needs at least {MIN_SAMPLES} "
            "(masks, kNN graph and k-means all need several samples)."
        )
    if d < MIN_FEATURES:
        raise DataValidationError(
            f"{source}: {d} feature(s) (columns) found, ICLFS needs at least {MIN_FEATURES} "
            "(the features are its training batch)."
        )
    if d < min_features:
        raise DataValidationError(
            f"{source}: {d} feature(s) (columns) found, but the smallest requested k is "
            f"{min_features}. Lower the k values (params lgrc.k_values) or add features."
        )


def extreme_scale(X: np.ndarray) -> np.ndarray:
    """Per column of ``X`` (n, d), a power of two (d,) that brings a column whose largest magnitude is below
    2**-500 to about 1, and 1 for every other column (an all-zero one too).

    Multiplying by a power of two is exact in float64, so variances and z-scores of the scaled column are
    those of the column, without their squares underflowing. (Values too large are refused by name where
    their squares overflow: the user rescales them, e.g. by a log.)
    """
    with np.errstate(over="ignore", invalid="ignore"):
        largest = np.abs(X).max(axis=0) if X.size else np.zeros(X.shape[1:])
    extreme = (largest > 0) & (largest < 2.0 ** -500)
    exponent = np.where(extreme, -np.frexp(np.where(extreme, largest, 1.0))[1], 0)
    return np.ldexp(1.0, exponent)


def standardize(X: np.ndarray, source: str = "data") -> np.ndarray:
    """Z-score every column over the samples (ddof=0); constant columns become 0.

    The statistics are computed in float64 so that large raw values (counts,
    1e30 sensor glitches) do not overflow before they are scaled down.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The values, finite.

    Returns
    -------
    ndarray of shape (n_samples, n_features), dtype=float32
        The z-scored columns.
    """
    X = np.asarray(X, dtype=np.float64)
    # A column of tiny magnitude (values ~1e-300: their squared deviations underflow to 0, so a column that varies
    # would read as constant) is first scaled by a power of two, which is exact: its z-scores are unchanged, and
    # every other column is computed as before, bit for bit.
    X = X * extreme_scale(X)
    with np.errstate(over="ignore", invalid="ignore"):
        mean = X.mean(axis=0)
        centered = X - mean
        std = np.sqrt((centered * centered).mean(axis=0))
    if not (np.isfinite(mean).all() and np.isfinite(std).all()):
        cols = np.nonzero(~(np.isfinite(mean) & np.isfinite(std)))[0]
        raise DataValidationError(
            f"{source}: {len(cols)} column(s) overflow when standardized (values too large, "
            f"first columns {cols[:5].tolist()}). Rescale them (e.g. log) first."
        )
    # A column is constant when its spread is negligible next to its magnitude;
    # an exact ``std == 0`` test would keep float round-off as a huge z-score.
    scale = np.maximum(np.abs(mean), 1.0)
    constant = std <= 1e-12 * scale
    safe_std = np.where(constant, 1.0, std)
    Z = centered / safe_std
    Z[:, constant] = 0.0
    return Z.astype(np.float32)


def invert(X_std: np.ndarray) -> np.ndarray:
    """Return the inverted map ``A = X_std.T`` (n_features x n_samples), C-contiguous."""
    return np.ascontiguousarray(np.asarray(X_std, dtype=np.float32).T)


def encode_labels(y: object, n_samples: int, source: str = "data") -> tuple[np.ndarray, list]:
    """Factorize labels of any coding to 0..c-1 (classes in sorted order).

    Returns
    -------
    codes : ndarray of shape (n_samples,)
        The class codes 0..c-1.
    classes : list
        The original class values.
    """
    arr = np.asarray(y)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise DataValidationError(
            f"{source}: labels must be one column, got shape {np.asarray(y).shape}."
        )
    if arr.shape[0] != n_samples:
        raise DataValidationError(
            f"{source}: {arr.shape[0]} label(s) for {n_samples} sample(s); "
            "labels must have one entry per row of the data matrix."
        )
    if arr.dtype.kind == "f":
        missing = ~np.isfinite(arr)
    elif arr.dtype.kind == "O":
        missing = np.array([v is None or (isinstance(v, float) and not np.isfinite(v)) for v in arr], dtype=bool)
    else:
        missing = np.zeros(arr.shape, dtype=bool)
    if missing.any():
        raise DataValidationError(
            f"{source}: {int(missing.sum())} label(s) are missing (None/NaN/Inf), first at row "
            f"{int(np.argmax(missing))}. Drop those samples or the labels."
        )
    classes, codes = np.unique(arr, return_inverse=True)
    if len(classes) > n_samples / 2:
        LOGGER.warning("%s: the labels have %d distinct values for %d samples: about one class per sample, so they "
                       "look continuous or like sample ids. Clustering accuracy against them means little; check "
                       "label_column.", source, len(classes), n_samples)
    if len(classes) < 2:
        raise DataValidationError(
            f"{source}: labels have a single class ({classes.tolist()}); "
            "clustering accuracy needs at least 2. Drop the labels to run without evaluation."
        )
    return codes.astype(np.int64), [c.item() if hasattr(c, "item") else c for c in classes]


def resolve_feature_names(
    names: Sequence[str] | None, n_features: int, source: str = "data"
) -> list[str]:
    """Return one unique string name per column (``feature_<j>`` when absent), each exactly as given."""
    if names is None:
        width = len(str(max(n_features - 1, 0)))
        return [f"feature_{j:0{width}d}" for j in range(n_features)]
    names = [str(s) for s in np.asarray(names, dtype=object).reshape(-1)]
    if len(names) != n_features:
        raise DataValidationError(
            f"{source}: {len(names)} feature name(s) for {n_features} column(s)."
        )
    seen: dict[str, int] = {}
    dupes = []
    for j, name in enumerate(names):
        if name in seen:
            dupes.append(f"{name!r} (columns {seen[name]} and {j})")
        else:
            seen[name] = j
    if dupes:
        raise DataValidationError(
            f"{source}: duplicate feature name(s): {', '.join(dupes[:5])}. "
            "Feature names must be unique so selections are unambiguous."
        )
    return names


@dataclass
class PreparedData:
    """Validated, standardized data ready for training and evaluation."""

    standardized: np.ndarray  # (n_samples, n_features) float32
    feature_names: list[str]
    labels: np.ndarray | None  # (n_samples,) int64 codes, or None
    classes: list | None
    informative_features: list[int] | None
    # (n_samples, n_features) float64: the validated values as read, kept only for a method that reads the table
    # before standardization (variance, dispersion); None otherwise, so no second copy of the table is held
    measured: np.ndarray | None = None


def prepare(table: FeatureTable, min_features: int = 1, keep_measured: bool = False) -> PreparedData:
    """Run every check and transform of docs/method.md §1 on a raw table (nothing is written); with
    ``keep_measured``, the validated values before standardization are kept too (``PreparedData.measured``)."""
    src = table.source
    X = as_numeric_matrix(table.X, src)
    if X.size == 0:
        raise DataValidationError(f"{src}: the data matrix is empty (shape {X.shape}).")
    validate_shape(X, min_features=min_features, source=src)
    check_finite(X, src, table.feature_names, table.sample_ids)
    names = resolve_feature_names(table.feature_names, X.shape[1], src)
    labels = classes = None
    if table.y is not None:
        labels, classes = encode_labels(table.y, X.shape[0], src)
    Z = standardize(X, src)
    if not Z.any():
        raise DataValidationError(
            f"{src}: every feature is constant over the {X.shape[0]} samples; there is nothing to select."
        )
    informative = None
    if table.informative_features is not None:
        informative = sorted(int(j) for j in table.informative_features)
        if informative and (informative[0] < 0 or informative[-1] >= X.shape[1]):
            raise DataValidationError(
                f"{src}: informative feature indices must lie in 0..{X.shape[1] - 1}."
            )
    return PreparedData(Z, names, labels, classes, informative, X if keep_measured else None)
