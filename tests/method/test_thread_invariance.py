"""A ``fast`` training on CPU ends in the same bits at any thread count: its batch norm, the fused attention's
backward pass and MKL's products (docs/guides/performance.md, "Lists that do not depend on the thread count")."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from iclfs import _threads
from iclfs.method._attention import flash_attention
from iclfs.method._model import ThreadInvariantBatchNorm1d
from iclfs.method._runtime import RuntimeConfig, plan_training
from iclfs.method._training import TrainingConfig, build_model

THREAD_COUNTS = (1, 2, 3)
#: For single operations, up to more threads than most machines here have cores: torch runs them all the same.
OPERATION_THREAD_COUNTS = (1, 2, 3, 8)


@contextmanager
def torch_threads(count: int):
    saved = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def _pair(channels: int, momentum: float | None):
    torch.manual_seed(0)
    ours = ThreadInvariantBatchNorm1d(channels, momentum=momentum)
    with torch.no_grad():
        ours.weight.uniform_(0.5, 1.5)
        ours.bias.uniform_(-0.5, 0.5)
    theirs = nn.BatchNorm1d(channels, momentum=momentum)
    theirs.load_state_dict(ours.state_dict())
    return ours, theirs


@pytest.mark.parametrize("momentum", [0.01, 0.3, None])
def test_batch_norm_computes_torchs_batch_norm(momentum):
    """The same outputs, gradients and running statistics as nn.BatchNorm1d, to float rounding, over several
    training passes (the cumulative average when momentum is None); evaluation is torch's own, bit for bit."""
    ours, theirs = _pair(7, momentum)
    for step in range(3):
        x = torch.randn(50, 7, dtype=torch.float64).float().mul_(step + 1).add_(step)
        mine, its = x.clone().requires_grad_(), x.clone().requires_grad_()
        out_ours, out_theirs = ours(mine), theirs(its)
        torch.testing.assert_close(out_ours, out_theirs, rtol=1e-5, atol=1e-5)
        weights = torch.randn_like(out_ours)
        (out_ours * weights).sum().backward()
        (out_theirs * weights).sum().backward()
        torch.testing.assert_close(mine.grad, its.grad, rtol=1e-4, atol=1e-5)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        torch.testing.assert_close(getattr(ours, name), getattr(theirs, name), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ours.weight.grad, theirs.weight.grad, rtol=1e-4, atol=1e-5)
    ours.eval(), theirs.eval()
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(20, 7)
    assert torch.equal(ours(x), theirs(x))


def test_batch_norm_and_flash_attention_give_the_same_bits_at_every_thread_count():
    """Forward and backward, at 1, 2, 3 and 8 threads, on shapes large enough that torch splits their work."""
    torch.manual_seed(1)
    x = torch.randn(2420, 64)
    q, k, v = (torch.randn(600, 40) for _ in range(3))
    grad_out = torch.randn(600, 40)
    results = []
    for count in OPERATION_THREAD_COUNTS:
        with torch_threads(count):
            norm = ThreadInvariantBatchNorm1d(64)
            rows = x.clone().requires_grad_()
            out = norm(rows)
            out.square().sum().backward()
            leaves = [t.clone().requires_grad_() for t in (q, k, v)]
            attended = flash_attention(*leaves)
            attended.backward(grad_out)
            results.append([out, rows.grad, norm.running_var, attended, *(t.grad for t in leaves)])
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            assert torch.equal(a, b)


def test_flash_attention_has_torchs_gradients():
    """The backward pass that replaces the flash kernel's gives the gradients of softmax(q k^T / sqrt(e)) v: a
    finite-difference check in float64, and torch's own flash gradients in float32."""
    torch.manual_seed(2)
    q, k, v = (torch.randn(23, 5, dtype=torch.float64, requires_grad=True) for _ in range(3))
    assert torch.autograd.gradcheck(flash_attention, (q, k, v))
    q, k, v = (t.detach().float().requires_grad_() for t in (q, k, v))
    grad_out = torch.randn(23, 5)
    ours = torch.autograd.grad(flash_attention(q, k, v), (q, k, v), grad_out)
    torchs = torch.autograd.grad(F.scaled_dot_product_attention(q[None, None], k[None, None], v[None, None])[0, 0],
                                 (q, k, v), grad_out)
    for a, b in zip(ours, torchs, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_fast_on_cpu_builds_the_thread_invariant_network_and_paper_keeps_torchs():
    def norms(schedule):
        training = TrainingConfig(schedule=schedule)
        plan = plan_training(40, 12, training, RuntimeConfig(device="cpu"))
        return {type(m) for m in build_model(plan, training).modules() if isinstance(m, nn.BatchNorm1d)}

    assert norms("fast") == {ThreadInvariantBatchNorm1d}
    assert norms("paper") == {nn.BatchNorm1d}


@pytest.mark.threads
def test_a_run_gives_the_same_ranking_and_scores_at_every_thread_count():
    """A whole ICLFS run (training, scores, Laplacian gate, ranking) at 1, 2 and 3 threads: bit-identical."""
    from iclfs import chain
    from iclfs.io._synthetic import make_synthetic
    from iclfs.method._config import Settings

    table = make_synthetic(n_samples=60, n_classes=3, n_informative=10, n_redundant=10, n_noise=280, seed=5)
    runs = [chain.run(table, Settings().with_overrides(
        f"training.epochs=3,runtime.num_threads={count},runtime.progress=false,selection.k=10,"
        "selection.k_values=[10]")) for count in THREAD_COUNTS]
    for other in runs[1:]:
        assert np.array_equal(runs[0].ranking.order, other.ranking.order)
        assert np.array_equal(np.asarray(runs[0].ranking.scores), np.asarray(other.ranking.scores))


def test_a_training_that_chooses_its_thread_count_epoch_by_epoch_ends_in_the_same_bits(monkeypatch):
    """Under load adaptive-timed runs a training's epochs on two thread counts (iclfs.method._runtime.ThreadChoice):
    the network, its history and its scores are those of a training on one thread, bit for bit, and each history
    row says which count its epoch ran on."""
    from iclfs.method._training import train

    rng = np.random.default_rng(3)
    A = rng.normal(size=(120, 30)).astype(np.float32)
    training = TrainingConfig(epochs=4)
    monkeypatch.setattr(_threads, "APPLIED", _threads.AppliedPolicy("adaptive-timed", {}, {}, False, "passive",
                                                                     1.0, 2))
    with torch_threads(2):
        chosen = train(A, training, runtime=RuntimeConfig(device="cpu", progress=False), seed=7)
        assert torch.get_num_threads() == 2  # restored
    single = train(A, training, runtime=RuntimeConfig(device="cpu", progress=False, num_threads=1), seed=7)
    counts = [row["threads"] for row in chosen.history]
    assert counts[:2] == [2, 1] and set(counts) == {1, 2}  # each timed once, then the faster of the two, as timed
    assert chosen.threads == max(counts, key=counts.count)
    assert [row["threads"] for row in single.history] == [1] * 4
    assert [row["loss"] for row in chosen.history] == [row["loss"] for row in single.history]
    for (name, a), (_, b) in zip(chosen.model.state_dict().items(), single.model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


def test_reproducible_gemm_is_set_unless_the_user_set_it():
    environ = {}
    assert _threads.reproducible_gemm(environ) and environ == {"MKL_CBWR": "AUTO,STRICT"}
    environ = {"MKL_CBWR": "COMPATIBLE"}
    assert not _threads.reproducible_gemm(environ) and environ == {"MKL_CBWR": "COMPATIBLE"}
    environ = {"MKL_CBWR": ""}
    assert _threads.reproducible_gemm(environ) and environ == {"MKL_CBWR": "AUTO,STRICT"}


@pytest.mark.slow
@pytest.mark.parametrize(("users", "mode"), [(None, "AUTO,STRICT"), ("COMPATIBLE", "COMPATIBLE")])
def test_a_process_that_imports_the_selector_first_runs_mkl_reproducibly(users, mode):
    """A fresh Python that imports the selector, then multiplies with torch: MKL itself (MKL_VERBOSE) reports the
    strict reproducible mode, or the user's own."""
    env = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"} | {"MKL_VERBOSE": "1"}
    if users:
        env["MKL_CBWR"] = users
    script = "from iclfs import ICLFSSelector; import torch; torch.ones(64, 64) @ torch.ones(64, 64)"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"CNR:{mode} " in done.stdout, done.stdout[-2000:]
