"""method.md §3: the network and the size regimes."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from iclfs.method._attention import _BlockedAttention, blocked_attention
from iclfs.method._model import FeatureAttention, ICLFSNetwork
from iclfs.method._runtime import REGIMES, select_regime


KERNEL_CASES = [("fused", None), ("literal", None), ("blocked", None), ("blocked", 1), ("blocked", 3),
                ("blocked", 7), ("blocked", 100)]


def _pair(d, n, kernel, block_rows, seed=0):
    torch.manual_seed(seed)
    mha = nn.MultiheadAttention(n, 1)
    # make the biases non-trivial so their handling is tested too
    with torch.no_grad():
        mha.in_proj_bias.normal_()
        mha.out_proj.bias.normal_()
    att = FeatureAttention(n, kernel=kernel, block_rows=block_rows)
    att.load_state_dict(mha.state_dict())
    return mha, att


@pytest.mark.parametrize("kernel,block_rows", KERNEL_CASES)
@pytest.mark.parametrize("d,n", [(13, 6), (20, 12)])
def test_feature_attention_equals_multihead_attention(d, n, kernel, block_rows):
    mha, att = _pair(d, n, kernel, block_rows)
    g = torch.Generator().manual_seed(1)
    x0 = torch.randn((d, n), generator=g) * 2.0
    weights = torch.randn((d, n), generator=g)

    x_ref = x0.clone().requires_grad_(True)
    ref, _ = mha(x_ref, x_ref, x_ref, need_weights=False)
    (ref * weights).sum().backward()

    x_new = x0.clone().requires_grad_(True)
    out = att(x_new)
    (out * weights).sum().backward()

    assert out.shape == (d, n)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(x_new.grad, x_ref.grad, atol=1e-5, rtol=1e-5)
    # parameter gradients match too (same names in both state dicts)
    ref_params = dict(mha.named_parameters())
    for name, p in att.named_parameters():
        torch.testing.assert_close(p.grad, ref_params[name].grad, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kernel", ["fused", "blocked", "literal"])
def test_feature_attention_naive_formula(kernel):
    """Independent of torch's MHA: softmax(Q K^T / sqrt(n)) V, out-projected, by loops."""
    d, n = 5, 4
    torch.manual_seed(3)
    att = FeatureAttention(n, kernel=kernel, block_rows=2).double()
    with torch.no_grad():
        att.in_proj_bias.normal_()
        att.out_proj.bias.normal_()
    x = torch.randn(d, n, dtype=torch.float64)
    W, b = att.in_proj_weight.detach(), att.in_proj_bias.detach()
    Wo, bo = att.out_proj.weight.detach(), att.out_proj.bias.detach()

    def lin(Wm, bm, v):
        return [sum(Wm[r, c].item() * v[c] for c in range(len(v))) + bm[r].item() for r in range(Wm.shape[0])]

    rows = [x[j].tolist() for j in range(d)]
    proj = [lin(W, b, r) for r in rows]
    q = [p[:n] for p in proj]
    k = [p[n:2 * n] for p in proj]
    v = [p[2 * n:] for p in proj]
    import math

    expected = []
    for j in range(d):
        s = [sum(q[j][t] * k[l][t] for t in range(n)) / math.sqrt(n) for l in range(d)]
        m = max(s)
        e = [math.exp(t - m) for t in s]
        w = [t / sum(e) for t in e]
        o = [sum(w[l] * v[l][t] for l in range(d)) for t in range(n)]
        expected.append(lin(Wo, bo, o))
    got = att(x)
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64), atol=1e-10, rtol=1e-10)
    att.block_rows = None
    torch.testing.assert_close(att(x), torch.tensor(expected, dtype=torch.float64), atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_blocked_attention_kept_weights_give_the_recomputed_bits(dtype):
    """One block holding every row is kept for the backward pass instead of
    recomputed; the output and all three gradients are bit for bit the same."""
    L, e = 37, 11
    g = torch.Generator().manual_seed(5)
    inputs = [torch.randn((L, e), generator=g, dtype=dtype) * 2.0 for _ in range(3)]
    grad_out = torch.randn((L, e), generator=g, dtype=dtype)
    results = []
    for keep in (False, True):
        q, k, v = (t.clone().requires_grad_(True) for t in inputs)
        out = _BlockedAttention.apply(q, k, v, L, keep)
        out.backward(grad_out)
        results.append((out, q.grad, k.grad, v.grad))
    for recomputed, kept in zip(*results):
        assert torch.equal(recomputed, kept)


@pytest.mark.parametrize(("block_rows", "kept"), [(37, True), (100, True), (36, False), (5, False)])
def test_blocked_attention_keeps_the_weights_only_when_one_block_holds_every_row(block_rows, kept):
    L, e = 37, 4
    q, k, v = (torch.randn(L, e, requires_grad=True) for _ in range(3))
    out = blocked_attention(q, k, v, block_rows)
    saved = out.grad_fn.saved_tensors
    assert any(t.shape == (L, L) for t in saved) is kept
    out.sum().backward()  # and the backward pass runs either way
    assert q.grad is not None and torch.isfinite(q.grad).all()


def test_blocked_attention_kept_weights_survive_a_second_backward():
    """retain_graph: the kept block is read, never overwritten, by the backward pass."""
    L, e = 9, 3
    q, k, v = (torch.randn(L, e, requires_grad=True) for _ in range(3))
    out = blocked_attention(q, k, v, L)
    out.sum().backward(retain_graph=True)
    first = q.grad.clone()
    q.grad = None
    out.sum().backward()
    assert torch.equal(q.grad, first)


def test_feature_attention_bad_block_rows_or_kernel():
    with pytest.raises(ValueError):
        FeatureAttention(4, block_rows=0)
    with pytest.raises(ValueError, match="kernel"):
        FeatureAttention(4, kernel="flash")


def test_fused_and_blocked_kernels_never_allocate_the_d_by_d_weights():
    """No single op of the fused or blocked kernels allocates anything close to a
    d x d matrix (forward and backward); the literal kernel does."""
    d, n = 3000, 8
    x = torch.randn(d, n, requires_grad=True)
    dd_bytes = d * d * 4
    for kernel in ("fused", "blocked"):
        att = FeatureAttention(n, kernel=kernel, block_rows=256)
        with torch.profiler.profile(profile_memory=True) as prof:
            att(x).sum().backward()
        largest = max(e.self_cpu_memory_usage for e in prof.events())
        assert largest < dd_bytes / 4, (kernel, largest, dd_bytes)
    att = FeatureAttention(n, kernel="literal")
    with torch.profiler.profile(profile_memory=True) as prof:
        att(x).sum().backward()
    assert max(e.self_cpu_memory_usage for e in prof.events()) >= dd_bytes


@pytest.mark.parametrize("regime_name", ["small", "large"])
@pytest.mark.parametrize("use_attention", [True, False])
def test_network_output_shapes(regime_name, use_attention):
    d, n = 9, 7
    regime = REGIMES[regime_name]
    torch.manual_seed(0)
    net = ICLFSNetwork(n, regime, use_attention=use_attention, attention_block_rows=4)
    h, z = net(torch.randn(d, n))
    assert h.shape == (d, regime.d_h)
    assert z.shape == (d, regime.d_z)
    assert (net.attention is None) == (not use_attention)
    net.eval()
    h2, z2 = net(torch.randn(d, n))
    assert h2.shape == (d, regime.d_h) and z2.shape == (d, regime.d_z)


def test_regime_table():
    s, l = REGIMES["small"], REGIMES["large"]
    assert (s.d_e, s.d_h, s.d_p, s.d_z, s.decorrelation_weight) == (16, 512, 128, 16, 0.20)
    assert (l.d_e, l.d_h, l.d_p, l.d_z, l.decorrelation_weight) == (64, 1440, 2048, 32, 0.40)


def test_network_layers_follow_spec():
    net = ICLFSNetwork(10, REGIMES["small"])
    bns = [m for m in net.modules() if isinstance(m, nn.BatchNorm1d)]
    assert len(bns) == 3
    assert all(bn.momentum == 0.01 and bn.eps == 1e-5 for bn in bns)
    leaky = [m for m in net.modules() if isinstance(m, nn.LeakyReLU)]
    assert len(leaky) == 1 and leaky[0].negative_slope == 0.2
    drops = [m for m in net.modules() if isinstance(m, nn.Dropout)]
    assert len(drops) == 1 and drops[0].p == 0.1


def test_select_regime_threshold():
    assert select_regime(999).name == "small"
    assert select_regime(1000).name == "large"
    assert select_regime(5).name == "small"
    assert select_regime(100000).name == "large"
    assert select_regime(50, threshold=50).name == "large"
    assert select_regime(49, threshold=50).name == "small"
    assert select_regime(5000, regime="small").name == "small"
    assert select_regime(5, regime="large").name == "large"
    with pytest.raises(ValueError):
        select_regime(10, regime="medium")
