"""Check the pipelines' parameters before any node writes an artifact."""

from __future__ import annotations

from typing import Any

from iclfs.core.config import config_from_dict


def _fail(key: str, value: Any, expected: str) -> None:
    raise ValueError(f"parameter {key} = {value!r} is invalid: expected {expected}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_number(key: str, value: Any, low: float, high: float, expected: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        _fail(key, value, expected)


def _check_positive_int(key: str, value: Any) -> None:
    if not _is_int(value) or value < 1:
        _fail(key, value, "a positive integer")


def validate_parameters(parameters: dict[str, Any]) -> None:
    """Check every parameter section the pipelines use, naming the first bad one.

    Called by the first node of a run, so a typo stops the run before any
    artifact is written (later nodes would otherwise fail after earlier ones saved).
    """
    from iclfs.core.scores import SCORE_NAMES
    from iclfs.core.training import TrainingConfig
    from iclfs.core.views import ViewConfig

    seed = parameters.get("seed")
    if not _is_int(seed) or seed < 0:
        _fail("seed", seed, "a non-negative integer")
    config_from_dict(ViewConfig, parameters["views"], "views")
    config_from_dict(TrainingConfig, parameters["training"], "training")

    score = parameters["ranking"].get("score")
    if score not in SCORE_NAMES:
        _fail("ranking.score", score, f"one of {', '.join(SCORE_NAMES)}")

    _check_positive_int("laplacian.n_neighbors", parameters["laplacian"].get("n_neighbors"))

    lgrc = parameters["lgrc"]
    k_values = lgrc.get("k_values")
    if not isinstance(k_values, list) or not k_values or not all(_is_int(k) and k >= 1 for k in k_values):
        _fail("lgrc.k_values", k_values, "a non-empty list of positive integers")
    if len(set(k_values)) != len(k_values):
        _fail("lgrc.k_values", k_values, "no repeated k")
    _check_number("lgrc.alpha", lgrc.get("alpha"), 1, float("inf"), "a number >= 1")
    _check_number("lgrc.quantile", lgrc.get("quantile"), 0, 1, "a number in [0, 1]")
    if not isinstance(lgrc.get("enabled", True), bool):
        _fail("lgrc.enabled", lgrc.get("enabled"), "true or false")

    if "select" in parameters:
        k = parameters["select"].get("k")
        if k not in k_values:
            _fail("select.k", k, f"one of lgrc.k_values {k_values}")

    _check_positive_int("evaluation.n_runs", parameters["evaluation"].get("n_runs"))


def validate_for_data(parameters: dict[str, Any], n_samples: int, n_features: int) -> None:
    """The checks that depend on the data's shape: neighbours, and whether training will fit in memory."""
    from iclfs.core.model import select_regime
    from iclfs.core.resources import check_memory, estimate_training_memory
    from iclfs.core.training import TrainingConfig, resolve_device

    neighbors = parameters["laplacian"]["n_neighbors"]
    if neighbors >= n_samples:
        _fail("laplacian.n_neighbors", neighbors, f"fewer than the {n_samples} samples")
    config = TrainingConfig(**parameters["training"])
    if config.check_memory:
        regime = select_regime(n_samples, config.regime, config.regime_threshold)
        device = resolve_device(config.device)
        estimate = estimate_training_memory(n_features, n_samples, regime, config.schedule,
                                            config.attention_kernel_for(n_samples, device), config.use_attention,
                                            config.loss_chunk_size_for(n_features, device))
        check_memory(estimate, device, n_features, n_samples, regime, config.schedule)
