"""Exact softmax attention over many rows without a rows x rows matrix in memory.

``chunked_attention(q, k, v, chunk_size)`` equals
``softmax(q k^T / sqrt(e)) v`` (q, k, v of shape (L, e)), but it forms the
attention weights ``chunk_size`` query rows at a time in the forward pass and
recomputes them, block by block, in the backward pass. It keeps only one
log-normalizer per row between the two passes, so peak memory is
O(chunk_size x L) instead of O(L^2), and every step is a large matrix product,
which runs near the CPU's GEMM throughput. When one block holds every row
(``chunk_size >= L``), that block is kept for the backward pass instead of
being recomputed: each call then holds its L x L weights (no more than one
block) from its forward pass to its backward pass.
"""

from __future__ import annotations

import math

import torch


class _ChunkedAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, chunk_size: int,
                keep_weights: bool) -> torch.Tensor:
        scale = 1.0 / math.sqrt(q.shape[-1])
        out = q.new_empty((q.shape[0], v.shape[1]))
        log_norm = q.new_empty(q.shape[0])
        weights = None
        for start in range(0, q.shape[0], chunk_size):
            rows = slice(start, start + chunk_size)
            scores = (q[rows] @ k.T).mul_(scale)
            lse = torch.logsumexp(scores, dim=1)
            weights = scores.sub_(lse[:, None]).exp_()
            out[rows] = weights @ v
            log_norm[rows] = lse
        if keep_weights:
            ctx.save_for_backward(q, k, v, out, log_norm, weights)
        else:
            ctx.save_for_backward(q, k, v, out, log_norm)
        ctx.chunk_size = chunk_size
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        q, k, v, out, log_norm, *kept = ctx.saved_tensors
        scale, chunk_size = ctx.scale, ctx.chunk_size
        grad_out = grad_out.contiguous()
        grad_q = torch.empty_like(q)
        grad_k = torch.zeros_like(k)
        grad_v = torch.zeros_like(v)
        # d softmax: dS = P * (dP - rowsum(dO * O)), with dP = dO v^T.
        row_dot = (grad_out * out).sum(dim=1)
        for start in range(0, q.shape[0], chunk_size):
            rows = slice(start, start + chunk_size)
            if kept:
                weights = kept[0]
            else:
                weights = (q[rows] @ k.T).mul_(scale).sub_(log_norm[rows, None]).exp_()
            grad_v.addmm_(weights.T, grad_out[rows])
            grad_scores = (grad_out[rows] @ v.T).sub_(row_dot[rows, None]).mul_(weights).mul_(scale)
            grad_q[rows] = grad_scores @ k
            grad_k.addmm_(grad_scores.T, q[rows])
        return grad_q, grad_k, grad_v, None, None


def chunked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """softmax(q k^T / sqrt(e)) v for (L, e) inputs, in blocks of ``chunk_size`` query rows.

    Computed in at least float32 with autocast off, whatever the inputs' dtype:
    the backward pass recomputes the weights from the saved log-normalizers,
    which bfloat16 would round too coarsely.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    with torch.autocast(q.device.type, enabled=False):
        q, k, v = (at_least_float32(t) for t in (q, k, v))
        return _ChunkedAttention.apply(q, k, v, int(chunk_size), keeps_weights(q.shape[0], chunk_size))


def keeps_weights(rows: int, chunk_size: int) -> bool:
    """Whether :func:`chunked_attention` keeps its weights for the backward pass: when one block holds every row.

    Keeping that block spares the backward pass an (L x L x e) product and an
    exp over L x L, for memory the block budget already allowed (held longer).
    The kept weights are the very bits the recomputation would give, so the
    gradients do not change.
    """
    return chunk_size >= rows


def at_least_float32(t: torch.Tensor) -> torch.Tensor:
    """``t`` in float32, or in its own dtype when that is wider (float64 stays float64)."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


def auto_chunk_size(rows: int, budget_bytes: int = 256 * 2**20, itemsize: int = 4) -> int:
    """The largest block of query rows whose (block x rows) weights fit ``budget_bytes``."""
    return max(1, min(rows, budget_bytes // max(1, rows * itemsize)))
