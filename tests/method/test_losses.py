"""method.md §4: InfoNCE with one extra negative, and the decorrelation term."""

from __future__ import annotations

import math

import pytest
import torch

from iclfs.method._losses import decorrelation_loss, info_nce_with_negative
from iclfs.method._runtime import loss_block_rows


def unit_rows(Z):
    out = []
    for row in Z.tolist():
        norm = math.sqrt(sum(v * v for v in row))
        out.append([v / norm for v in row])
    return out


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def naive_info_nce_terms(za, zp, zn, tau):
    a, p, ng = unit_rows(za), unit_rows(zp), unit_rows(zn)
    d = len(a)
    terms = []
    for j in range(d):
        logits = [dot(a[j], p[l]) / tau for l in range(d)]
        logits.append(dot(a[j], ng[j]) / tau)
        m = max(logits)
        lse = m + math.log(sum(math.exp(v - m) for v in logits))
        terms.append(lse - logits[j])
    return terms


def naive_info_nce(za, zp, zn, tau):
    terms = naive_info_nce_terms(za, zp, zn, tau)
    return sum(terms) / len(terms)


def naive_decorrelation(za):
    a = unit_rows(za)
    d = len(a)
    total = 0.0
    for i in range(d):
        for j in range(d):
            g = dot(a[i], a[j]) - (1.0 if i == j else 0.0)
            total += g * g
    return total / (d * d)


def rand(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("tau", [0.05, 0.5, 1.0])
@pytest.mark.parametrize("d,dz", [(1, 3), (2, 4), (7, 5), (13, 16)])
def test_info_nce_matches_naive(d, dz, tau):
    za, zp, zn = rand(d, dz, seed=1) * 3, rand(d, dz, seed=2), rand(d, dz, seed=3) * 0.5
    expected = naive_info_nce(za, zp, zn, tau)
    got = info_nce_with_negative(za, zp, zn, temperature=tau)
    assert got.shape == ()
    assert got.item() == pytest.approx(expected, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("block_rows", [None, 1, 2, 3, 5, 13, 50])
def test_info_nce_blocked_same_value_and_grad(block_rows):
    d, dz = 13, 6
    za0, zp0, zn0 = rand(d, dz, seed=4), rand(d, dz, seed=5), rand(d, dz, seed=6)
    expected = naive_info_nce(za0, zp0, zn0, 0.05)

    za, zp, zn = (t.clone().requires_grad_(True) for t in (za0, zp0, zn0))
    got = info_nce_with_negative(za, zp, zn, 0.05, block_rows=block_rows)
    got.backward()
    assert got.item() == pytest.approx(expected, rel=1e-9)

    ra, rp, rn = (t.clone().requires_grad_(True) for t in (za0, zp0, zn0))
    info_nce_with_negative(ra, rp, rn, 0.05).backward()
    for g_new, g_ref in ((za.grad, ra.grad), (zp.grad, rp.grad), (zn.grad, rn.grad)):
        torch.testing.assert_close(g_new, g_ref, atol=1e-10, rtol=1e-8)


def test_info_nce_float32_blocks_agree():
    d, dz = 31, 16
    za, zp, zn = (rand(d, dz, seed=s).float() for s in (7, 8, 9))
    ref = naive_info_nce(za.double(), zp.double(), zn.double(), 0.05)
    for block_rows in (None, 4, 10):
        got = info_nce_with_negative(za, zp, zn, 0.05, block_rows=block_rows).item()
        assert got == pytest.approx(ref, rel=1e-5)


def test_info_nce_is_scale_invariant_and_positive_aligned_is_lower():
    d, dz = 8, 5
    za = rand(d, dz, seed=10)
    zn = rand(d, dz, seed=11)
    aligned = info_nce_with_negative(za, za * 2.0, zn).item()
    random_pos = info_nce_with_negative(za, rand(d, dz, seed=12), zn).item()
    assert aligned < random_pos
    assert info_nce_with_negative(za * 7.0, za, zn * 0.1).item() == pytest.approx(aligned, rel=1e-9)


@pytest.mark.parametrize("d,dz", [(1, 2), (3, 3), (9, 4), (20, 16), (6, 32)])
def test_decorrelation_matches_naive_dense(d, dz):
    za = rand(d, dz, seed=d * 100 + dz) * 4.0
    expected = naive_decorrelation(za)
    got = decorrelation_loss(za)
    assert got.shape == ()
    assert got.item() == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_decorrelation_gradient_matches_dense_torch():
    d, dz = 11, 4
    z0 = rand(d, dz, seed=21)
    z1 = z0.clone().requires_grad_(True)
    decorrelation_loss(z1).backward()
    z2 = z0.clone().requires_grad_(True)
    u = z2 / z2.norm(dim=1, keepdim=True)
    ((u @ u.T - torch.eye(d, dtype=z2.dtype)) ** 2).mean().backward()
    torch.testing.assert_close(z1.grad, z2.grad, atol=1e-10, rtol=1e-8)


def test_decorrelation_orthonormal_is_zero_and_identical_rows_max():
    za = torch.eye(4, dtype=torch.float64) * 3.0
    assert decorrelation_loss(za).item() == pytest.approx(0.0, abs=1e-12)
    same = torch.ones(5, 3, dtype=torch.float64)
    # every off-diagonal Gram entry is 1: 20 ones over 25 entries
    assert decorrelation_loss(same).item() == pytest.approx(20 / 25)


def test_info_nce_never_allocates_the_d_by_d_logits():
    """With a small block, no single op of the forward or backward pass allocates
    anything close to the (d, d) logits matrix."""
    d = 3000
    za, zp, zn = (torch.randn(d, 8, requires_grad=True) for _ in range(3))
    with torch.profiler.profile(profile_memory=True) as prof:
        info_nce_with_negative(za, zp, zn, 0.05, block_rows=128).backward()
    largest = max(e.self_cpu_memory_usage for e in prof.events())
    assert largest < d * d * 4 / 8, largest


@pytest.mark.parametrize(
    ("rows", "device", "expected"),
    [
        (800, "cpu", 2 * 2**20 // (4 * 800)),  # 655 rows: about 2 MiB, cache-sized
        (500, "cpu", 500),  # 500 x 500 fits 2 MiB: one block
        (3, "cpu", 3),
        (5966, "cuda", 5966),  # 136 MiB fits the 256 MiB budget: one block
        (10_000, "cuda", 256 * 2**20 // (4 * 10_000)),  # 6710 rows
        (10**9, "cpu", 1),  # never fewer than one row
    ],
)
def test_loss_block_rows_fits_the_devices_budget(rows, device, expected):
    assert loss_block_rows(rows, device) == expected


def test_default_block_is_the_devices_loss_block_rows(monkeypatch):
    """block_rows=None takes loss_block_rows(d, device): the same value, bit for bit, as naming it."""
    from iclfs.method import _losses as losses

    d, dz = 40, 6
    za, zp, zn = (torch.randn(d, dz, generator=torch.Generator().manual_seed(s)) for s in (1, 2, 3))
    asked = []
    monkeypatch.setattr(losses, "loss_block_rows", lambda rows, device: asked.append((rows, device)) or 7)
    default = info_nce_with_negative(za, zp, zn, 0.05)
    assert asked == [(d, za.device)]
    assert default.item() == info_nce_with_negative(za, zp, zn, 0.05, block_rows=7).item()
