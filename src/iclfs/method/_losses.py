"""The contrastive objective: InfoNCE with one extra negative, and decorrelation (docs/method.md §4).

Every loss is computed in float32 (float64 inputs stay float64) with autocast
off, whatever the precision of the embeddings: at tau = 0.05 the rounding of a
bfloat16 cosine similarity (2^-8) would move a logit by up to 0.08.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._attention import at_least_float32
from ._runtime import loss_block_rows


def unit_rows(*embeddings: torch.Tensor) -> list[torch.Tensor]:
    """Row-normalized copies, at least float32 (the ``^`` of docs/method.md §4)."""
    return [F.normalize(at_least_float32(z), dim=1) for z in embeddings]


def full_precision(z: torch.Tensor) -> torch.autocast:
    return torch.autocast(z.device.type, enabled=False)


def _row_blocks(za: torch.Tensor, zp: torch.Tensor, extra: torch.Tensor, inv_t: float, block: int):
    """Per block of rows: (the rows, their log-normalizers, their cross-entropies), for unit rows."""
    for start in range(0, za.shape[0], block):
        rows = slice(start, start + block)
        logits = (za[rows] @ zp.T).mul_(inv_t)
        lse = torch.logaddexp(torch.logsumexp(logits, dim=1), extra[rows])
        yield rows, lse, lse - logits.diagonal(offset=start)


class _InfoNCE(torch.autograd.Function):
    """Mean InfoNCE over unit rows, logits formed ``block`` rows at a time.

    Only one log-normalizer per row is kept between the passes; the backward
    pass recomputes each block of logits. Peak memory is O(block x d).
    """

    @staticmethod
    def forward(ctx, za, zp, zn, temperature: float, block: int):
        d = za.shape[0]
        inv_t = 1.0 / temperature
        extra = (za * zn).sum(dim=1) * inv_t  # (d,) logit of each row's own negative
        log_norm = za.new_empty(d)
        total = za.new_zeros(())
        for rows, lse, row_losses in _row_blocks(za, zp, extra, inv_t, block):
            log_norm[rows] = lse
            total += row_losses.sum()
        ctx.save_for_backward(za, zp, zn, extra, log_norm)
        ctx.inv_t, ctx.block = inv_t, block
        return total / d

    @staticmethod
    def backward(ctx, grad):
        za, zp, zn, extra, log_norm = ctx.saved_tensors
        inv_t, block = ctx.inv_t, ctx.block
        d = za.shape[0]
        g = grad * inv_t / d
        grad_za = torch.empty_like(za)
        grad_zp = torch.zeros_like(zp)
        # d loss / d extra_j = softmax weight of the negative logit of row j.
        grad_extra = (extra - log_norm).exp_().mul_(g)
        for start in range(0, d, block):
            rows = slice(start, start + block)
            weights = (za[rows] @ zp.T).mul_(inv_t).sub_(log_norm[rows, None]).exp_()
            weights.diagonal(offset=start).sub_(1.0)  # softmax - one-hot target
            weights.mul_(g)
            grad_za[rows] = weights @ zp
            grad_zp.addmm_(weights.T, za[rows])
        grad_za.addcmul_(grad_extra[:, None], zn)
        grad_zn = grad_extra[:, None] * za
        return grad_za, grad_zp, grad_zn, None, None


def info_nce_with_negative(
    z_anchor: torch.Tensor,
    z_positive: torch.Tensor,
    z_negative: torch.Tensor,
    temperature: float = 0.05,
    block_rows: int | None = None,
) -> torch.Tensor:
    """L_con for one positive view.

    For feature j the logits are ``<^za_j, ^zp_l> / tau`` for every l, plus one
    extra logit ``<^za_j, ^zneg_j> / tau``; the target is l = j.

    Parameters
    ----------
    z_anchor, z_positive, z_negative : Tensor of shape (d, d_z)
        Embeddings (not yet normalized).
    temperature : float, default=0.05
        tau.
    block_rows : int or None, default=None
        Rows of the (d, d) logits formed at a time, in both passes;
        None picks :func:`~iclfs.method._runtime.loss_block_rows` for the embeddings' device.
        The value does not depend on it beyond float rounding.

    Returns
    -------
    Tensor
        The mean cross-entropy over the d features.
    """
    with full_precision(z_anchor):
        block = block_rows or loss_block_rows(z_anchor.shape[0], z_anchor.device)
        za, zp, zn = unit_rows(z_anchor, z_positive, z_negative)
        return _InfoNCE.apply(za, zp, zn, float(temperature), int(block))


def decorrelation_loss(z_anchor: torch.Tensor) -> torch.Tensor:
    """L_dec = mean over the d*d entries of (^Za ^Za^T - I)^2.

    Computed without the (d, d) Gram matrix: for unit rows,
    ``||G - I||_F^2 = ||^Za^T ^Za||_F^2 - d`` (since trace G = d), so the cost
    is O(d d_z^2) instead of O(d^2 d_z).
    """
    with full_precision(z_anchor):
        (za,) = unit_rows(z_anchor)
        d = za.shape[0]
        cross = za.T @ za  # (d_z, d_z)
        frob = (cross * cross).sum() - 2.0 * (za * za).sum() + d
        return frob / (d * d)
