"""method.md §8: clustering accuracy and the k-means protocol."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sklearn.cluster import KMeans

from iclfs.evaluation._protocol import best_k, clustering_accuracy, evaluate_selections, kmeans_scores


def brute_force_accuracy(labels, clusters):
    """Best one-to-one cluster->class matching by trying every permutation."""
    classes = sorted(set(labels))
    groups = sorted(set(clusters))
    y = [classes.index(v) for v in labels]
    c = [groups.index(v) for v in clusters]
    m = max(len(classes), len(groups))
    best = 0
    for perm in itertools.permutations(range(m)):
        # cluster i -> class perm[i]; a perm[i] beyond the classes is "unmatched"
        hits = sum(1 for yi, ci in zip(y, c) if perm[ci] == yi)
        best = max(best, hits)
    return best / len(labels)


@pytest.mark.parametrize("seed", range(40))
def test_clustering_accuracy_vs_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 25))
    n_classes = int(rng.integers(1, 5))
    n_clusters = int(rng.integers(1, 6))  # sometimes more clusters than classes
    labels = rng.integers(0, n_classes, size=n) * 10 - 3  # arbitrary coding
    clusters = rng.integers(0, n_clusters, size=n) + 100
    assert clustering_accuracy(labels, clusters) == pytest.approx(
        brute_force_accuracy(labels.tolist(), clusters.tolist())
    )


def test_clustering_accuracy_examples():
    assert clustering_accuracy(np.array([0, 0, 1, 1]), np.array([1, 1, 0, 0])) == 1.0
    # 3 clusters for 2 classes: the third cluster counts as errors
    assert clustering_accuracy(np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 2, 1, 1, 1])) == pytest.approx(5 / 6)
    # 1 cluster for 2 classes: only the majority class is matched
    assert clustering_accuracy(np.array(["a", "b", "b"]), np.array([7, 7, 7])) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        clustering_accuracy(np.array([0, 1]), np.array([0, 1, 1]))


def blobs(seed=0, n_per=8, c=3, dim=4):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(c, dim)) * 3
    labels = np.repeat(np.arange(c), n_per)
    X = centers[labels] + rng.normal(size=(len(labels), dim))
    return X.astype(np.float32), labels


def test_kmeans_scores_shapes_determinism_and_values():
    X, labels = blobs()
    acc, nmi = kmeans_scores(X, labels, n_runs=4, seed=7)
    assert acc.shape == (4,) and nmi.shape == (4,)
    acc2, nmi2 = kmeans_scores(X, labels, n_runs=4, seed=7)
    np.testing.assert_array_equal(acc, acc2)
    np.testing.assert_array_equal(nmi, nmi2)
    assert np.all((nmi >= 0) & (nmi <= 1 + 1e-12))
    for r in range(4):
        clusters = KMeans(n_clusters=3, n_init=1, random_state=7 + r).fit_predict(X)
        assert acc[r] == pytest.approx(brute_force_accuracy(labels.tolist(), clusters.tolist()))


def test_evaluate_selections_rows():
    X, labels = blobs(seed=1, dim=6)
    selections = {4: [0, 1, 2, 5], 2: [3, 4], 3: [5, 0, 1]}
    informative = [0, 1, 9]
    rows = evaluate_selections(X, labels, selections, n_runs=3, seed=11, informative_features=informative)
    assert [r["k"] for r in rows] == [2, 3, 4]
    expected_keys = {"k", "accuracy_mean", "accuracy_std", "nmi_mean", "nmi_std",
                     "informative_recovered", "informative_recall"}
    for row in rows:
        assert set(row) == expected_keys
        cols = selections[row["k"]]
        accs = []
        for r in range(3):
            clusters = KMeans(n_clusters=3, n_init=1, random_state=11 + r).fit_predict(X[:, cols])
            accs.append(brute_force_accuracy(labels.tolist(), clusters.tolist()))
        mean = sum(accs) / 3
        std = math.sqrt(sum((a - mean) ** 2 for a in accs) / 3)  # population std
        assert row["accuracy_mean"] == pytest.approx(mean)
        assert row["accuracy_std"] == pytest.approx(std, abs=1e-12)
        found = sum(1 for j in informative if j in cols)
        assert row["informative_recovered"] == found
        assert row["informative_recall"] == pytest.approx(found / 3)
    assert [r["informative_recovered"] for r in rows] == [0, 2, 2]


def test_evaluate_selections_without_informative():
    X, labels = blobs(seed=2)
    rows = evaluate_selections(X, labels, {2: [0, 1]}, n_runs=2)
    assert set(rows[0]) == {"k", "accuracy_mean", "accuracy_std", "nmi_mean", "nmi_std"}


def test_best_k_ties_go_to_smaller_k():
    rows = [
        {"k": 100, "accuracy_mean": 0.8},
        {"k": 50, "accuracy_mean": 0.8},
        {"k": 150, "accuracy_mean": 0.7},
        {"k": 200, "accuracy_mean": 0.8},
    ]
    assert best_k(rows)["k"] == 50
    assert best_k(list(reversed(rows)))["k"] == 50
    rows.append({"k": 300, "accuracy_mean": 0.81})
    assert best_k(rows)["k"] == 300
    with pytest.raises(ValueError):
        best_k([])
