"""The network applied to a (d, n) map: attention, encoder, projector (docs/method.md §3).

Its layer sizes are a :class:`~iclfs.method._runtime.Regime`, which the training plan chooses.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._attention import at_least_float32, blocked_attention, flash_attention, literal_attention
from ._runtime import Regime, rows_per_block

ATTENTION_KERNELS = ("fused", "blocked", "literal")


class FeatureAttention(nn.Module):
    """Single-head self-attention across the d feature rows, embed dim n.

    Same parameters, initialization and maths as ``nn.MultiheadAttention(n, 1)``
    (its state dict loads here). ``kernel`` chooses how the softmax weights are
    computed; all three give the same result up to float rounding:

    * ``fused``: ``scaled_dot_product_attention`` (flash attention on CPU and
      CUDA); never materializes the d x d weights. On CPU its backward pass is
      :func:`iclfs.method._attention.attention_backward`, whose result does not
      depend on the thread count.
    * ``blocked``: :func:`iclfs.method._attention.blocked_attention`, blocks of
      ``block_rows`` query rows (sized to a 256 MiB budget when None),
      recomputed in the backward pass; it holds at most one block of the
      weights, which is all d x d of them only when they fit that budget.
    * ``literal``: the d x d softmax matrix as the paper's
      ``nn.MultiheadAttention`` computes it (:func:`iclfs.method._attention.literal_attention`),
      used by the ``paper`` schedule.
    """

    def __init__(self, embed_dim: int, kernel: str = "fused", block_rows: int | None = None) -> None:
        super().__init__()
        if kernel not in ATTENTION_KERNELS:
            raise ValueError(f"attention kernel must be one of {ATTENTION_KERNELS}, got {kernel!r}")
        if block_rows is not None and block_rows < 1:
            raise ValueError(f"attention block_rows must be >= 1 or None, got {block_rows}")
        self.embed_dim = embed_dim
        self.kernel = kernel
        self.block_rows = block_rows
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
        self.in_proj_bias = nn.Parameter(torch.empty(3 * embed_dim))
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # nn.MultiheadAttention's initialization, so both start from the same law.
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.in_proj_bias)
        nn.init.zeros_(self.out_proj.bias)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """softmax(q k^T / sqrt(n)) v for (d, n) projections, with the ``fused`` or ``blocked`` kernel."""
        if self.kernel == "fused":
            return flash_attention(q, k, v)
        if self.kernel == "blocked":
            return blocked_attention(q, k, v, self.block_rows or rows_per_block(q.shape[0]))
        raise ValueError("the literal kernel attends inside F.multi_head_attention_forward; call forward")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (d, n) -> (d, n)."""
        if self.kernel == "literal":
            return literal_attention(self, x)
        q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
        return self.out_proj(self.attend(q, k, v))


class ThreadInvariantBatchNorm1d(nn.BatchNorm1d):
    """``nn.BatchNorm1d`` whose batch statistics on CPU are the same at any thread count.

    torch's CPU batch-norm kernel sums a channel's batch over threads, each a
    share of the rows, so its mean and variance round differently at 1 and 2
    threads (by up to 4e-6 on warpPIE10P's 2420 x 210 map) and a run's list
    moved with the thread count. Here they are column means (``mean(0)``),
    which torch computes one column per thread, each in one order. Same
    parameters, buffers and state dict as ``nn.BatchNorm1d``; evaluation
    (running statistics, an elementwise map) is torch's own.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or x.dim() != 2:
            return super().forward(x)
        x = at_least_float32(x)  # as autocast runs torch's batch norm: in float32
        mean = x.mean(0)
        centered = x - mean
        var = (centered * centered).mean(0)
        if self.track_running_stats:
            with torch.no_grad():
                self.num_batches_tracked.add_(1)
                factor = (1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum)
                unbiased = var * (x.shape[0] / max(x.shape[0] - 1, 1))
                self.running_mean.lerp_(mean, factor)
                self.running_var.lerp_(unbiased, factor)
        y = centered * torch.rsqrt(var + self.eps)
        return y * self.weight + self.bias if self.affine else y


class ICLFSNetwork(nn.Module):
    """Attention -> encoder (H, d_h) -> projector (Z, d_z), applied row-wise.

    Parameters
    ----------
    n_samples : int
        n, the length of each feature row (attention embed dim).
    regime : Regime
        Layer sizes.
    dropout : float, default=0.1
        Encoder dropout probability.
    leaky_slope : float, default=0.2
        LeakyReLU negative slope in the encoder.
    bn_momentum : float, default=0.01
        BatchNorm1d momentum of every BN layer.
    bn_eps : float, default=1e-5
        BatchNorm1d eps of every BN layer.
    use_attention : bool, default=True
        False drops the attention block (ablation WLDA).
    attention_kernel : str, default="fused"
        See :class:`FeatureAttention`.
    attention_block_rows : int or None, default=None
        See :class:`FeatureAttention`.
    thread_invariant : bool, default=False
        True: :class:`ThreadInvariantBatchNorm1d` in every BN layer, so that
        with the ``fused`` or ``blocked`` kernel a CPU training's result does
        not depend on torch's thread count. False: ``nn.BatchNorm1d``, as the
        paper's loop runs it.
    """

    def __init__(
        self,
        n_samples: int,
        regime: Regime,
        *,
        dropout: float = 0.1,
        leaky_slope: float = 0.2,
        bn_momentum: float = 0.01,
        bn_eps: float = 1e-5,
        use_attention: bool = True,
        attention_kernel: str = "fused",
        attention_block_rows: int | None = None,
        thread_invariant: bool = False,
    ) -> None:
        super().__init__()
        bn = {"momentum": bn_momentum, "eps": bn_eps}
        norm_layer = ThreadInvariantBatchNorm1d if thread_invariant else nn.BatchNorm1d
        self.attention = FeatureAttention(n_samples, attention_kernel, attention_block_rows) if use_attention else None
        self.encoder = nn.Sequential(
            nn.Linear(n_samples, regime.d_e),
            norm_layer(regime.d_e, **bn),
            nn.LeakyReLU(leaky_slope),
            nn.Dropout(dropout),
            nn.Linear(regime.d_e, regime.d_h),
        )
        self.project_in = nn.Sequential(
            nn.Linear(regime.d_h, regime.d_p), norm_layer(regime.d_p, **bn), nn.ReLU()
        )
        self.project_mid = nn.Sequential(
            nn.Linear(regime.d_p, regime.d_p), norm_layer(regime.d_p, **bn), nn.ReLU()
        )
        self.project_out = nn.Linear(regime.d_p, regime.d_z)

    def forward(self, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """v: (d, n) -> (H of shape (d, d_h), Z of shape (d, d_z))."""
        if self.attention is not None:
            v = self.attention(v)
        h = self.encoder(v)
        u1 = self.project_in(h)
        u2 = self.project_mid(u1)
        return h, self.project_out(u1 + u2)
