"""Laplacian score of every feature on a cosine kNN graph, lower is better (docs/method.md §6)."""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.neighbors import NearestNeighbors


def knn_affinity(X: np.ndarray, n_neighbors: int = 3) -> sparse.csr_matrix:
    """Symmetric kNN affinity W over the samples (rows) of ``X``.

    k nearest neighbours by cosine distance, self excluded; weight
    ``exp(-dist / sigma)`` with sigma the mean kNN distance (floor 1e-12);
    symmetrized by element-wise max; zero diagonal.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Standardized data.

    Returns
    -------
    sparse matrix of shape (n, n)
        W, with at most 2 n k non-zeros.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    if not 1 <= n_neighbors < n:
        raise ValueError(f"laplacian.n_neighbors must be in 1..{n - 1} for {n} samples, got {n_neighbors}")
    search = NearestNeighbors(n_neighbors=n_neighbors + 1, metric="cosine", algorithm="brute").fit(X)
    dist, idx = search.kneighbors(X)
    # Exclude each sample itself. With duplicate rows, self may not be first, so
    # drop it wherever it appears, else drop the farthest of the k + 1.
    is_self = idx == np.arange(n)[:, None]
    no_self = ~is_self.any(axis=1)
    is_self[no_self, -1] = True
    keep = ~is_self
    dist = np.clip(dist[keep].reshape(n, n_neighbors), 0.0, None)
    idx = idx[keep].reshape(n, n_neighbors)
    sigma = max(float(dist.mean()), 1e-12)
    rows = np.repeat(np.arange(n), n_neighbors)
    W = sparse.csr_matrix((np.exp(-dist.ravel() / sigma), (rows, idx.ravel())), shape=(n, n))
    W = W.maximum(W.T).tolil()
    W.setdiag(0.0)
    return W.tocsr()


def laplacian_scores(X: np.ndarray, n_neighbors: int = 3) -> np.ndarray:
    """Laplacian score of every column of ``X`` (n, d) -> (d,) float64.

    ``+inf`` where the feature has no variance on the graph (denominator
    <= 1e-12), e.g. constant features.
    """
    X = np.asarray(X, dtype=np.float64)
    W = knn_affinity(X, n_neighbors)
    degree = np.asarray(W.sum(axis=1)).ravel()
    centered = X - (degree @ X) / degree.sum()
    laplacian = sparse.diags(degree) - W
    numerator = np.einsum("ij,ij->j", centered, laplacian @ centered)
    denominator = np.einsum("ij,ij->j", centered, degree[:, None] * centered)
    scores = np.full(X.shape[1], np.inf)
    ok = denominator > 1e-12
    scores[ok] = numerator[ok] / denominator[ok]
    return scores
