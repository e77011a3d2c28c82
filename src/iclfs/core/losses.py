"""SPEC §4 — the contrastive objective: InfoNCE with one extra negative, and decorrelation."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def info_nce_with_negative(
    z_anchor: torch.Tensor,
    z_positive: torch.Tensor,
    z_negative: torch.Tensor,
    temperature: float = 0.05,
    chunk_size: int | None = None,
) -> torch.Tensor:
    """L_con for one positive view.

    For feature j the logits are ``<^za_j, ^zp_l> / tau`` for every l, plus one
    extra logit ``<^za_j, ^zneg_j> / tau``; the target is l = j. Returns the
    mean cross-entropy over the d features.

    Args:
        z_anchor, z_positive, z_negative: (d, d_z) embeddings (not yet normalized).
        temperature: tau.
        chunk_size: if set, the (d, d) logits are formed ``chunk_size`` rows at
            a time (same value, bounded memory).
    """
    za = F.normalize(z_anchor, dim=1)
    zp = F.normalize(z_positive, dim=1)
    zn = F.normalize(z_negative, dim=1)
    d = za.shape[0]
    step = d if chunk_size is None else max(1, chunk_size)
    total = za.new_zeros(())
    for start in range(0, d, step):
        rows = slice(start, min(d, start + step))
        a = za[rows]
        logits = a @ zp.T / temperature  # (rows, d)
        extra = (a * zn[rows]).sum(dim=1, keepdim=True) / temperature
        positive = logits.diagonal(offset=start)  # entry (j, j) of the full matrix
        log_norm = torch.logsumexp(torch.cat([logits, extra], dim=1), dim=1)
        total = total + (log_norm - positive).sum()
    return total / d


def decorrelation_loss(z_anchor: torch.Tensor) -> torch.Tensor:
    """L_dec = mean over the d*d entries of (^Za ^Za^T - I)^2.

    Computed without the (d, d) Gram matrix: for unit rows,
    ``||G - I||_F^2 = ||^Za^T ^Za||_F^2 - d`` (since trace G = d), so the cost
    is O(d d_z^2) instead of O(d^2 d_z).
    """
    za = F.normalize(z_anchor, dim=1)
    d = za.shape[0]
    cross = za.T @ za  # (d_z, d_z)
    frob = (cross * cross).sum() - 2.0 * (za * za).sum() + d
    return frob / (d * d)
