"""The attention kernels of the feature attention (docs/method.md §3): blocked and literal.

``blocked_attention(q, k, v, block_rows)`` equals
``softmax(q k^T / sqrt(e)) v`` (q, k, v of shape (L, e)), but it forms the
attention weights ``block_rows`` query rows at a time in the forward pass and
recomputes them, block by block, in the backward pass. It keeps only one
log-normalizer per row between the two passes, so peak memory is
O(block_rows x L) instead of O(L^2), and every step is a large matrix product,
which runs near the CPU's GEMM throughput. When one block holds every row
(``block_rows >= L``), that block is kept for the backward pass instead of
being recomputed: each call then holds its L x L weights (no more than one
block) from its forward pass to its backward pass.

``literal_attention`` computes the attention the way the paper's
``nn.MultiheadAttention`` does, d x d weights and all: the ``paper`` schedule
uses it, so that training repeats the published loop bit for bit.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._runtime import FLASH_BACKWARD_ROWS, keeps_weights


class _BlockedAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_rows: int,
                keep_weights: bool) -> torch.Tensor:
        scale = 1.0 / math.sqrt(q.shape[-1])
        out = q.new_empty((q.shape[0], v.shape[1]))
        log_norm = q.new_empty(q.shape[0])
        weights = None
        for start in range(0, q.shape[0], block_rows):
            rows = slice(start, start + block_rows)
            scores = (q[rows] @ k.T).mul_(scale)
            lse = torch.logsumexp(scores, dim=1)
            weights = scores.sub_(lse[:, None]).exp_()
            out[rows] = weights @ v
            log_norm[rows] = lse
        if keep_weights:
            ctx.save_for_backward(q, k, v, out, log_norm, weights)
        else:
            ctx.save_for_backward(q, k, v, out, log_norm)
        ctx.block_rows = block_rows
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        q, k, v, out, log_norm, *kept = ctx.saved_tensors
        grads = attention_backward(q, k, v, out, log_norm, grad_out, ctx.scale, ctx.block_rows,
                                   kept[0] if kept else None)
        return (*grads, None, None)


def attention_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, log_norm: torch.Tensor,
                       grad_out: torch.Tensor, scale: float, block_rows: int,
                       weights: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients of softmax(q k^T scale) v with respect to q, k and v, ``block_rows`` query rows at a time.

    ``out`` is the forward pass's result and ``log_norm`` each query row's
    log-normalizer (logsumexp of its scaled scores); ``weights``, when the
    forward pass kept them, are the softmax weights of the one block that
    holds every row. The sums over query rows (the gradients of k and v)
    accumulate block after block, in that order, so on CPU the result does
    not depend on torch's thread count (each product splits its output, not
    its sum, across threads: :data:`iclfs._threads.REPRODUCIBLE_GEMM`).
    """
    grad_out = grad_out.contiguous()
    grad_q = torch.empty_like(q)
    grad_k = torch.zeros_like(k)
    grad_v = torch.zeros_like(v)
    # d softmax: dS = P * (dP - rowsum(dO * O)), with dP = dO v^T.
    row_dot = (grad_out * out).sum(dim=1)
    for start in range(0, q.shape[0], block_rows):
        rows = slice(start, start + block_rows)
        block = weights if weights is not None else (
            (q[rows] @ k.T).mul_(scale).sub_(log_norm[rows, None]).exp_())
        grad_v.addmm_(block.T, grad_out[rows])
        grad_scores = (grad_out[rows] @ v.T).sub_(row_dot[rows, None]).mul_(block).mul_(scale)
        grad_q[rows] = grad_scores @ k
        grad_k.addmm_(grad_scores.T, q[rows])
    return grad_q, grad_k, grad_v


class _FlashAttention(torch.autograd.Function):
    """PyTorch's CPU flash kernel for the forward pass, :func:`attention_backward` for the backward pass.

    The flash kernel's forward pass gives each query row to one thread, so
    its result is the same at any thread count; its backward pass sums the
    gradients of k and v in one buffer per thread and adds those up, so its
    rounding changed with the thread count, and with it (and torch's batch
    norm, :class:`~iclfs.method._model.ThreadInvariantBatchNorm1d`) a run's
    list: lung_small's shared 0.89 of its 50 features between 1 and 2
    threads. This backward pass computes the same gradients, block by block
    in a fixed order.
    """

    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        out, log_norm = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q[None, None], k[None, None], v[None, None])[:2]
        out, log_norm = out[0, 0], log_norm[0, 0]
        ctx.save_for_backward(q, k, v, out, log_norm)
        ctx.scale = 1.0 / math.sqrt(q.shape[-1])
        return out

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        q, k, v, out, log_norm = ctx.saved_tensors
        return attention_backward(q, k, v, out, log_norm, grad_out, ctx.scale, FLASH_BACKWARD_ROWS)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T / sqrt(e)) v for (L, e) inputs with the flash kernel: on CPU, when gradients flow,
    with :class:`_FlashAttention`'s backward pass, whose result does not depend on the thread count."""
    if q.device.type == "cpu" and torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return _FlashAttention.apply(q, k, v)
    # 4-D (batch, heads, rows, dim): the fused kernels reject 3-D inputs
    # and would silently fall back to the d x d math path.
    return F.scaled_dot_product_attention(q[None, None], k[None, None], v[None, None])[0, 0]


def blocked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_rows: int) -> torch.Tensor:
    """softmax(q k^T / sqrt(e)) v for (L, e) inputs, in blocks of ``block_rows`` query rows.

    Computed in at least float32 with autocast off, whatever the inputs' dtype:
    the backward pass recomputes the weights from the saved log-normalizers,
    which bfloat16 would round too coarsely.
    """
    if block_rows < 1:
        raise ValueError(f"block_rows must be >= 1, got {block_rows}")
    with torch.autocast(q.device.type, enabled=False):
        q, k, v = (at_least_float32(t) for t in (q, k, v))
        return _BlockedAttention.apply(q, k, v, int(block_rows), keeps_weights(q.shape[0], block_rows))


def at_least_float32(t: torch.Tensor) -> torch.Tensor:
    """``t`` in float32, or in its own dtype when that is wider (float64 stays float64)."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


def literal_attention(attention: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``attention`` (a :class:`~iclfs.method._model.FeatureAttention`) applied to x (d, n) as the paper calls it.

    ``nn.MultiheadAttention``'s functional form with its defaults
    (``need_weights=True`` materializes the d x d weights). One tensor is
    passed as query, key and value: ``F.multi_head_attention_forward`` tests
    identity (``is``) to take the packed self-attention projection that
    ``nn.MultiheadAttention(x, x, x)`` takes, whose rounding differs from
    three separate products.
    """
    x3 = x[:, None]
    out, _ = F.multi_head_attention_forward(
        x3, x3, x3, attention.embed_dim, 1,
        attention.in_proj_weight, attention.in_proj_bias, None, None, False, 0.0,
        attention.out_proj.weight, attention.out_proj.bias, training=attention.training, need_weights=True,
    )
    return out[:, 0]
