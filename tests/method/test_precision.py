"""Precision and threads of a training run: fp32 on CPU, bf16 autocast for the
network's passes only (losses and scores stay float32), settings restored."""

from __future__ import annotations

import copy
import dataclasses
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from iclfs import _threads
from iclfs._threads import _cgroup_cpu_quota
from iclfs.method._config import RuntimeConfig, TrainingConfig, ViewConfig
from iclfs.method._losses import decorrelation_loss, info_nce_with_negative
from iclfs.method._model import FeatureAttention
from iclfs.method._replay import decorrelation_dense, info_nce_dense, paper_step
from iclfs.method._runtime import (
    available_cpus,
    compute_settings,
    denormals_flushed,
    flushing_denormals,
    forward_context_for,
    resolve_precision,
)
from iclfs.method._training import build_model, fast_step, plan_training, train
from iclfs.method._views import generate_views

CPU = torch.device("cpu")


def _bf16_autocast():
    return torch.autocast("cpu", dtype=torch.bfloat16)


@pytest.mark.parametrize("precision", ["bf16", "tf32"])
def test_reduced_precision_on_cpu_is_refused_with_the_reason(precision):
    message = f"runtime.precision '{precision}' needs a CUDA device.*100x slower"
    for schedule in ("fast", "paper"):
        with pytest.raises(ValueError, match=message):
            resolve_precision(precision, schedule, CPU)
    A = np.zeros((4, 3), dtype=np.float32)
    with pytest.raises(ValueError, match=message):  # refused before any training
        train(A, TrainingConfig(epochs=1), ViewConfig(), RuntimeConfig(device="cpu", precision=precision,
                                                                       progress=False))


@pytest.mark.parametrize("kwargs", [{"precision": "fp16"}, {"precision": None}, {"num_threads": 0},
                                    {"num_threads": 1.5}])
def test_invalid_precision_or_threads_raise(kwargs):
    with pytest.raises(ValueError, match="runtime.(precision|num_threads)"):
        RuntimeConfig(device="cpu", **kwargs)


@pytest.mark.parametrize(
    ("schedule", "precision", "device", "expected"),
    [
        ("fast", "auto", "cpu", "fp32"),
        ("paper", "auto", "cpu", "fp32"),
        ("fast", "auto", "cuda", "tf32"),
        ("paper", "auto", "cuda", "fp32"),  # the literal loop keeps strict fp32 for fidelity checks
        ("fast", "fp32", "cpu", "fp32"),
    ],
)
def test_resolve_precision(schedule, precision, device, expected):
    assert resolve_precision(precision, schedule, torch.device(device)) == expected


@pytest.mark.parametrize(("kernel", "step"), [("fused", fast_step), ("blocked", fast_step),
                                              ("literal", paper_step)])
def test_bf16_forward_passes_stay_close_to_fp32(kernel, step):
    """CPU autocast stands in for CUDA's: the same code path, only slower."""
    config = TrainingConfig(dropout=0.0)
    torch.manual_seed(0)
    planned = plan_training(40, 12, config, RuntimeConfig(device="cpu"))
    model = build_model(dataclasses.replace(planned, attention_kernel=kernel), config)
    assert model.attention.kernel == kernel
    model.train()
    A = torch.randn(40, 12, generator=torch.Generator().manual_seed(1))
    views = generate_views(A, ViewConfig(), torch.Generator().manual_seed(2))
    m32, m16 = copy.deepcopy(model), copy.deepcopy(model)

    out32 = step(m32, A, views, 0.05, 0.2)
    out16 = step(m16, A, views, 0.05, 0.2, forward_context=forward_context_for(CPU, "bf16"))

    assert out16["loss"] != out32["loss"]  # autocast did change the arithmetic
    assert out16["loss"] == pytest.approx(out32["loss"], rel=2e-2)
    g32 = torch.cat([p.grad.flatten() for p in m32.parameters()])
    g16 = torch.cat([p.grad.flatten() for p in m16.parameters()])
    assert g16.dtype == torch.float32  # weights and their gradients stay float32
    assert F.cosine_similarity(g32, g16, dim=0) > 0.95


def test_fp32_forward_context_is_no_context():
    assert forward_context_for(CPU, "fp32")().__class__.__name__ == "nullcontext"
    assert forward_context_for(CPU, "tf32")().__class__.__name__ == "nullcontext"


def test_losses_ignore_a_surrounding_autocast_and_upcast_bf16():
    g = torch.Generator().manual_seed(0)
    za, zp, zn = (torch.randn(30, 8, generator=g) for _ in range(3))
    expected = [info_nce_with_negative(za, zp, zn, 0.05, 7), info_nce_dense(za, zp, zn, 0.05),
                decorrelation_loss(za), decorrelation_dense(za)]
    with _bf16_autocast():
        inside = [info_nce_with_negative(za, zp, zn, 0.05, 7), info_nce_dense(za, zp, zn, 0.05),
                  decorrelation_loss(za), decorrelation_dense(za)]
    for got, want in zip(inside, expected, strict=True):
        assert got.dtype == torch.float32 and got.item() == want.item()

    rounded = [z.bfloat16() for z in (za, zp, zn)]
    loss = info_nce_with_negative(*rounded, 0.05)
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(info_nce_with_negative(*(z.float() for z in rounded), 0.05).item(), rel=1e-6)


def test_blocked_attention_runs_in_float32_under_autocast():
    layer = FeatureAttention(8, kernel="blocked", block_rows=5)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(20, 8, generator=g) for _ in range(3))
    expected = layer.attend(q, k, v)
    with _bf16_autocast():
        inside = layer.attend(q, k, v)
        from_bf16 = layer.attend(q.bfloat16(), k.bfloat16(), v.bfloat16())
    assert inside.dtype == from_bf16.dtype == torch.float32
    torch.testing.assert_close(inside, expected, rtol=0, atol=0)
    reference = torch.softmax(q.bfloat16().float() @ k.bfloat16().float().T / np.sqrt(8), dim=1) @ v.bfloat16().float()
    torch.testing.assert_close(from_bf16, reference, rtol=1e-5, atol=1e-6)


def test_compute_settings_caps_threads_at_the_available_cpus_and_restores_them(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setattr("iclfs.method._runtime.available_cpus", lambda: 1)
    with compute_settings(CPU, "fp32", None) as threads:
        assert threads == torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with compute_settings(CPU, "fp32", 2) as threads:  # an explicit count wins
        assert threads == torch.get_num_threads() == 2
    assert torch.get_num_threads() == before


def test_compute_settings_keeps_a_lower_thread_count_the_caller_chose(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setattr("iclfs.method._runtime.available_cpus", lambda: 64)
    torch.set_num_threads(1)
    try:
        with compute_settings(CPU, "fp32", None) as threads:
            assert threads == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(("precision", "tf32"), [("fp32", False), ("tf32", True), ("bf16", True)])
def test_compute_settings_sets_cuda_tf32_flags_for_the_run_only(precision, tf32):
    flags = torch.backends.cuda.matmul
    saved = (flags.allow_tf32, torch.backends.cudnn.allow_tf32)
    flags.allow_tf32, torch.backends.cudnn.allow_tf32 = (not tf32), (not tf32)
    try:
        with compute_settings(torch.device("cuda"), precision, None):
            assert flags.allow_tf32 is tf32 and torch.backends.cudnn.allow_tf32 is tf32
        assert flags.allow_tf32 is (not tf32) and torch.backends.cudnn.allow_tf32 is (not tf32)
    finally:
        flags.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def test_train_reports_precision_and_threads_and_restores_threads(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setattr("iclfs.method._runtime.available_cpus", lambda: 1)
    A = np.random.default_rng(0).normal(size=(20, 8)).astype(np.float32)
    result = train(A, TrainingConfig(epochs=1), ViewConfig(), RuntimeConfig(device="cpu", progress=False), seed=0)
    assert (result.precision, result.threads) == ("fp32", 1)
    assert torch.get_num_threads() == before


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"cpu.max": "max 100000\n"}, None),
        ({"cpu.max": "150000 100000\n"}, 1.5),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
        ({"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 0.5),
        ({}, None),
    ],
)
def test_cgroup_cpu_quota(tmp_path, files, expected):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _cgroup_cpu_quota(tmp_path) == expected


@pytest.mark.parametrize(("quota", "cap"), [(None, None), (0.5, 1), (1.7, 1)])
def test_available_cpus_is_the_affinity_set_capped_by_the_quota(monkeypatch, quota, cap):
    monkeypatch.setattr(_threads, "_cgroup_cpu_quota", lambda: quota)
    affinity = len(os.sched_getaffinity(0))
    assert available_cpus() == (affinity if cap is None else min(affinity, cap))


def test_denormals_are_flushed_on_the_cpu_only_and_the_setting_restored():
    assert not flushing_denormals()
    with denormals_flushed(CPU):
        assert flushing_denormals()
        assert (torch.tensor([1e-39]) * 1.0).item() == 0.0
    assert not flushing_denormals()
    with denormals_flushed(torch.device("meta")):  # another device's training leaves the CPU's setting alone
        assert not flushing_denormals()
