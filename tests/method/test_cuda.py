"""The CUDA paths: the same checks as on CPU, on the device training runs on there.

Skipped where torch sees no CUDA device (CI has none); run on a GPU machine with
``python -m pytest tests/method/test_cuda.py``.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn

from iclfs.method._config import RuntimeConfig, TrainingConfig, ViewConfig
from iclfs.method._model import FeatureAttention
from iclfs.method._replay import paper_step
from iclfs.method._runtime import (
    PROCESS_OVERHEAD,
    estimate_training_memory,
    forward_context_for,
    resolve_precision,
)
from iclfs.method._training import build_model, fast_step, plan_training, train
from iclfs.method._views import generate_views

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

CUDA = torch.device("cuda")
TAU = 0.05


def _setup(d, n, dtype, seed=0):
    config = TrainingConfig(dropout=0.0)
    torch.manual_seed(seed)
    plan = plan_training(d, n, config, RuntimeConfig(device="cuda", check_memory=False))
    model, regime = build_model(plan, config).to(CUDA, dtype).train(), plan.regime
    A = torch.randn(d, n, generator=torch.Generator().manual_seed(seed + 1), dtype=dtype).to(CUDA)
    views = generate_views(A, ViewConfig(), torch.Generator(device=CUDA).manual_seed(seed + 2))
    return model, regime, A, views


def test_paper_and_fast_steps_same_loss_and_gradients_on_cuda():
    """Dropout off, the same views: both schedules give the same loss and gradients (float64)."""
    model, regime, A, views = _setup(40, 12, torch.float64)
    m_paper, m_fast = copy.deepcopy(model), copy.deepcopy(model)
    out_paper = paper_step(m_paper, A, views, TAU, regime.decorrelation_weight)
    out_fast = fast_step(m_fast, A, views, TAU, regime.decorrelation_weight, None)
    assert out_paper["loss"] == pytest.approx(out_fast["loss"], rel=1e-9)
    fast = dict(m_fast.named_parameters())
    for name, p in m_paper.named_parameters():
        torch.testing.assert_close(p.grad, fast[name].grad, atol=1e-9, rtol=1e-7, msg=name)


@pytest.mark.parametrize("kernel,block_rows", [("fused", None), ("blocked", None), ("blocked", 7), ("literal", None)])
def test_attention_kernels_equal_multihead_attention_on_cuda(kernel, block_rows):
    d, n = 50, 12
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(n, 1).double()
    with torch.no_grad():
        mha.in_proj_bias.normal_()
        mha.out_proj.bias.normal_()
    att = FeatureAttention(n, kernel=kernel, block_rows=block_rows).double()
    att.load_state_dict(mha.state_dict())
    att.to(CUDA)
    x = torch.randn(d, n, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    weights = torch.randn(d, n, dtype=torch.float64, generator=torch.Generator().manual_seed(2))

    x_ref = x.clone().requires_grad_(True)
    ref, _ = mha(x_ref, x_ref, x_ref, need_weights=False)
    (ref * weights).sum().backward()
    x_cuda = x.to(CUDA).requires_grad_(True)
    out = att(x_cuda)
    (out * weights.to(CUDA)).sum().backward()

    torch.testing.assert_close(out.cpu(), ref, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(x_cuda.grad.cpu(), x_ref.grad, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("schedule,expected", [("fast", "tf32"), ("paper", "fp32")])
def test_train_on_cuda_uses_the_schedules_precision_and_restores_the_tf32_flags(schedule, expected):
    flags = torch.backends.cuda.matmul
    before = (flags.allow_tf32, torch.backends.cudnn.allow_tf32)
    A = np.random.default_rng(0).normal(size=(60, 16)).astype(np.float32)
    result = train(A, TrainingConfig(epochs=3, schedule=schedule), ViewConfig(),
                   RuntimeConfig(device="cuda", progress=False), seed=1)
    assert result.device.startswith("cuda") and result.precision == expected
    assert next(result.model.parameters()).device.type == "cuda"
    assert all(np.isfinite(h["loss"]) for h in result.history)
    assert (flags.allow_tf32, torch.backends.cudnn.allow_tf32) == before


@pytest.mark.parametrize("step", [fast_step, paper_step])
def test_bf16_step_on_cuda_stays_close_to_fp32(step):
    model, regime, A, views = _setup(200, 30, torch.float32, seed=4)
    losses, grads = [], []
    for precision in ("fp32", "bf16"):
        m = copy.deepcopy(model)
        out = step(m, A, views, TAU, regime.decorrelation_weight,
                   forward_context=forward_context_for(CUDA, precision))
        losses.append(out["loss"])
        grads.append(torch.cat([p.grad.flatten() for p in m.parameters()]))
    assert losses[0] != losses[1]  # autocast really ran
    assert losses[1] == pytest.approx(losses[0], rel=0.02)
    assert torch.nn.functional.cosine_similarity(grads[0], grads[1], dim=0) > 0.95


@pytest.mark.parametrize("schedule", ["fast", "paper"])
def test_memory_estimate_covers_a_cuda_training_step(schedule):
    """The estimate ``check_memory`` refuses runs with is at least what CUDA steps allocate
    (less its allowance for the interpreter, which lives in host memory)."""
    d, n = 3000, 100
    config = TrainingConfig(schedule=schedule)
    plan = plan_training(d, n, config, RuntimeConfig(device="cuda", check_memory=False))
    kernel, regime = plan.attention_kernel, plan.regime
    torch.manual_seed(0)
    model = build_model(plan, config).to(CUDA).train()
    A = torch.randn(d, n, device=CUDA)
    optimizer = torch.optim.Adam(model.parameters())
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    for _ in range(2):  # the second step holds Adam's moments too
        views = generate_views(A, ViewConfig(), torch.Generator(device=CUDA).manual_seed(0))
        optimizer.zero_grad(set_to_none=True)
        {"fast": fast_step, "paper": paper_step}[schedule](
            model, A, views, TAU, regime.decorrelation_weight,
            forward_context=forward_context_for(CUDA, resolve_precision("auto", schedule, CUDA)))
        optimizer.step()
    torch.cuda.synchronize()
    used = torch.cuda.max_memory_allocated() - base
    estimate = estimate_training_memory(d, n, regime, schedule, kernel)
    assert used <= estimate.total_bytes - PROCESS_OVERHEAD, (used, estimate)


def test_speed_worker_times_cuda_epochs_after_a_warm_up(monkeypatch):
    """The first CUDA epoch pays for cuBLAS handles and kernel selection: never timed."""
    from benchmarks import speed
    from iclfs.method._training import Trainer

    calls = []
    draw = Trainer.draw_views
    monkeypatch.setattr(Trainer, "draw_views", lambda self: calls.append(1) or draw(self))
    result = speed.worker("synthetic:300x40", "fast", 1, "cuda", False)
    assert len(result["epoch_seconds"]) == 1 and len(calls) == 2 and result["peak_cuda_bytes"] > 0
