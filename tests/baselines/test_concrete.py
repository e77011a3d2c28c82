"""CAE and LS-CAE on tiny data: their schedules, exactly k distinct features, repeatable selections."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclfs import baselines
from iclfs.baselines import _concrete as concrete
from iclfs.baselines._concrete import (
    CAEOptions,
    LSCAEOptions,
    cae_temperatures,
    distinct_selection,
    laplacian_term,
    lscae_learning_rates,
    lscae_temperature,
    select_cae,
    select_lscae,
)
from iclfs.method._config import ParameterError, RuntimeConfig
from iclfs.method._runtime import flushing_denormals

RUNTIME = RuntimeConfig(device="cpu", progress=False, num_threads=1)


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 20))
    X[:15, :4] += 2.0
    return (X - X.mean(0)) / X.std(0)


def test_the_cae_temperature_is_the_references_stepwise_update():
    start, end, steps = 10.0, 0.01, 1500
    alpha = math.exp(math.log(end / start) / steps)
    reference, temperature = [], start
    for _ in range(steps):  # updated before each step's use, floored at the end temperature
        temperature = max(end, temperature * alpha)
        reference.append(temperature)
    np.testing.assert_allclose(cae_temperatures(start, end, steps), reference, rtol=1e-9)
    assert cae_temperatures(start, end, steps)[-1] == pytest.approx(end)


def test_the_lscae_temperature_and_learning_rates_follow_the_reference_per_epoch():
    assert lscae_temperature(0, 500, 10.0, 0.01) == 10.0
    assert lscae_temperature(250, 500, 10.0, 0.01) == pytest.approx(10.0 * (0.001 ** 0.5))
    assert lscae_temperature(500, 500, 10.0, 0.01) == pytest.approx(0.01)
    options = LSCAEOptions()
    assert lscae_learning_rates(0, options) == (1e-3, 1e-1)
    assert lscae_learning_rates(98, options) == (1e-3, 1e-1)  # LambdaLR: 0.1^floor((epoch + 1) / 100)
    assert lscae_learning_rates(99, options) == pytest.approx((1e-4, 1e-2))
    assert lscae_learning_rates(199, options) == pytest.approx((1e-5, 1e-3))
    assert lscae_learning_rates(299, options) == pytest.approx((1e-5, 1e-4))  # the decoder's floor


def test_repeated_argmaxes_are_filled_to_exactly_k_distinct_features():
    probabilities = np.array([[0.7, 0.2, 0.1, 0.0], [0.6, 0.3, 0.05, 0.05], [0.1, 0.1, 0.1, 0.7]])
    chosen = distinct_selection(np.array([0, 0, 3]), probabilities)
    assert chosen.tolist() == [0, 3, 1]  # distinct argmaxes by their row's probability, then the best of the rest
    assert distinct_selection(np.array([2, 1, 0]), probabilities).tolist() == [1, 2, 0]  # ties by row


def test_the_laplacian_term_is_the_references_formula(X):
    gated = torch.as_tensor(X[:8, :6], dtype=torch.float64)
    squared = ((X[:8, None, :6] - X[None, :8, :6]) ** 2).sum(-1)
    scale = np.sort(np.sqrt(squared), axis=1)[:, 1].max()  # the largest distance to the nearest other sample
    W = np.exp(-squared**2 / scale**2)
    W = (W + W.T) / 2
    L = W / W.sum(1, keepdims=True)
    expected = -np.trace(X[:8, :6].T @ L @ L @ X[:8, :6]) / (64 * 3)
    assert float(laplacian_term(gated, k=3, batch_size=64)) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("select, options", [(select_cae, CAEOptions(epochs=3)),
                                             (select_lscae, LSCAEOptions(epochs=3))], ids=["cae", "lscae"])
def test_exactly_k_distinct_features_and_the_same_selection_at_the_same_seed(X, select, options):
    first = select(X, [3, 5], seed=7, options=options, runtime=RUNTIME)
    again = select(X, [3, 5], seed=7, options=options, runtime=RUNTIME)
    for k in (3, 5):
        assert len(first.selections[k]) == k and len(set(first.selections[k].tolist())) == k
        np.testing.assert_array_equal(first.selections[k], again.selections[k])
    assert first.scores.shape == (20,) and set(first.selections[5]) == set(np.argsort(-first.scores)[:5])
    assert {row["k"] for row in first.history} == {3, 5} and len(first.history) == 2 * 3
    before = torch.random.get_rng_state()
    select(X, [3], seed=8, options=options, runtime=RUNTIME)
    assert torch.equal(before, torch.random.get_rng_state())  # the caller's torch stream is left alone


@pytest.mark.parametrize("caller_flushes", [False, True])
def test_training_flushes_subnormals_on_the_cpu_and_restores_the_callers_setting(X, monkeypatch, caller_flushes):
    seen = []
    train = concrete.train_lscae

    def spy(*args, **kwargs):
        seen.append(flushing_denormals())
        return train(*args, **kwargs)

    monkeypatch.setattr(concrete, "train_lscae", spy)
    torch.set_flush_denormal(caller_flushes)
    try:
        select_lscae(X, [3, 4], seed=7, options=LSCAEOptions(epochs=1), runtime=RUNTIME)
        assert seen == [True, True] and flushing_denormals() == caller_flushes
    finally:
        torch.set_flush_denormal(False)


def test_cae_tries_again_with_twice_the_epochs_and_ends_a_try_early_once_sure(X, monkeypatch):
    from iclfs.baselines import _concrete as concrete

    monkeypatch.setattr(concrete, "CAE_MEAN_MAX_TARGET", 0.999999)
    unsure = select_cae(X, [3], seed=1, options=CAEOptions(epochs=2, tries=2), runtime=RUNTIME)
    assert [row["try"] for row in unsure.history] == [0, 0, 1, 1, 1, 1]
    monkeypatch.setattr(concrete, "CAE_STOP_MEAN_MAX", 1e-9)
    early = select_cae(X, [3], seed=1, options=CAEOptions(epochs=5), runtime=RUNTIME)
    assert len(early.history) == 1  # sure after one epoch by that (absurd) threshold


@pytest.mark.parametrize("section, values, message", [
    (CAEOptions, {"epochs": 0}, "baselines.cae.epochs"),
    (CAEOptions, {"start_temperature": 0.001}, "end_temperature .* must not exceed start_temperature"),
    (CAEOptions, {"dropout": 1.0}, "baselines.cae.dropout"),
    (LSCAEOptions, {"batch_size": 1}, "baselines.lscae.batch_size"),
    (LSCAEOptions, {"decoder_lr": 0}, "baselines.lscae.decoder_lr"),
])
def test_bad_options_are_refused_by_name(section, values, message):
    with pytest.raises(ParameterError, match=message):
        section(**values)


def test_both_are_in_the_registry_seeded_and_neural(X):
    for key, name in (("cae", "CAE"), ("lscae", "LS-CAE")):
        entry = baselines.REGISTRY[key]
        assert entry.name == name and entry.seeded and entry.neural and not entry.needs_clusters
    result = baselines.run("lscae", X, [4], seed=3, options={"epochs": 2}, runtime=RUNTIME)
    assert len(set(result.selections[4].tolist())) == 4
    with pytest.raises(ParameterError, match="baselines.cae.epoch"):
        baselines.run("cae", X, [4], options={"epoch": 2})
