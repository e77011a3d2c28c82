"""The paper replay: how the published code computes a run, in one place.

A researcher reproduces the paper's published number with two settings:

``training.schedule: paper``
    The literal loop (:func:`paper_step`): for each of the four positive
    views it embeds the anchor, the negative and the view (12 forward passes
    an epoch, fresh dropout each time) through ``nn.MultiheadAttention``'s
    own code path (the ``literal`` attention kernel), forms the dense logits
    and Gram matrices (:func:`info_nce_dense`, :func:`decorrelation_dense`)
    and back-propagates that view's loss before the epoch's single optimizer
    step.
``views.stream: published``
    The published code's random draws (:func:`published_masks`): torch's
    global CPU generator, one 64-bit draw per epoch (its ``DataLoader``
    iterator's base seed), then for each feature in order one
    ``torch.randperm(n)`` each for the complementary pair, the light mask, the
    heavy mask and the negative.

With both and the same seed, training on CPU equals the published loop bit
for bit (tests/method/test_replay.py). The everyday path is the ``fast``
schedule on the ``vectorized`` stream: the same objective, drawn from another
random stream, several times faster.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

from ._config import ViewConfig
from ._losses import full_precision, unit_rows
from ._runtime import ForwardContext
from ._views import ViewMasks, Views, keep_count, mask_from_positions, pair_counts


def info_nce_dense(
    z_anchor: torch.Tensor, z_positive: torch.Tensor, z_negative: torch.Tensor, temperature: float = 0.05
) -> torch.Tensor:
    """L_con written as the paper does: the full (d, d + 1) logits matrix and ``F.cross_entropy``.

    Equals :func:`iclfs.method._losses.info_nce_with_negative` up to float rounding.
    """
    with full_precision(z_anchor):
        za, zp, zn = unit_rows(z_anchor, z_positive, z_negative)
        logits = torch.cat([za @ zp.T, (za * zn).sum(dim=1, keepdim=True)], dim=1) / temperature
        return F.cross_entropy(logits, torch.arange(za.shape[0], device=za.device))


def decorrelation_dense(z_anchor: torch.Tensor) -> torch.Tensor:
    """L_dec with the (d, d) Gram matrix formed explicitly, as the paper does.

    Equals :func:`iclfs.method._losses.decorrelation_loss` up to float rounding.
    """
    with full_precision(z_anchor):
        (za,) = unit_rows(z_anchor)
        eye = torch.eye(za.shape[0], device=za.device, dtype=za.dtype)
        return ((za @ za.T - eye) ** 2).mean()


def paper_step(model: torch.nn.Module, A: torch.Tensor, views: Views, temperature: float, lam: float,
               forward_context: ForwardContext = contextlib.nullcontext) -> dict[str, float]:
    """Accumulate one epoch's gradients the way the paper's loop does (no optimizer step).

    For each positive view: embed the anchor, the negative and the view,
    back-propagate ``L_con / m + lambda L_dec``. Only the network's passes run
    in ``forward_context``; the losses are float32.
    """
    con_total = dec_total = 0.0
    m = len(views.positives)
    for view in views.positives:
        with forward_context():
            _, z_anchor = model(A)
            _, z_neg = model(views.negative)
            _, z_pos = model(view)
        con = info_nce_dense(z_anchor, z_pos, z_neg, temperature)
        dec = decorrelation_dense(z_anchor) if lam else z_anchor.new_zeros(())
        (con / m + lam * dec).backward()
        con_total += con.item() / m
        dec_total += dec.item()
    return {"loss": con_total + lam * dec_total, "contrastive": con_total, "decorrelation": dec_total / m}


def published_masks(d: int, n: int, config: ViewConfig) -> ViewMasks:
    """One epoch's masks drawn as the paper's published code draws them.

    Consumes torch's global CPU generator: one int64 draw (the published
    loop's ``DataLoader`` iterator takes its base seed so), then, feature by
    feature, ``randperm(n)`` for the pair, the light mask, the heavy mask and
    the negative. The masks keep the first positions of their permutation; m4
    keeps the pair's first ``overlap`` positions and the ``keep - overlap``
    after m3's ``keep``. Where those run out (``2 keep - overlap > n``: n = 1,
    3 or 7) m3 and m4 already cover every position, so the published top-up
    from unused positions adds none and m4 keeps fewer than ``keep`` (the
    ``vectorized`` stream tops it up from m3's positions instead).
    Returns CPU tensors. It loops over the features in Python: for fidelity
    checks, not production.
    """
    torch.empty((), dtype=torch.int64).random_()
    draws = [torch.randperm(n) for _ in range(4 * d)]
    perms = torch.stack(draws).reshape(d, 4, n) if d else torch.empty((0, 4, n), dtype=torch.int64)
    pair, light, heavy, negative = perms.unbind(1)
    keep, overlap = pair_counts(n, config.pair_keep, config.pair_overlap)
    pair_b = torch.cat([pair[:, :overlap], pair[:, keep:2 * keep - overlap]], dim=1)
    return ViewMasks(
        light=mask_from_positions(light[:, :keep_count(n, config.light_keep)], d, n),
        heavy=mask_from_positions(heavy[:, :keep_count(n, config.heavy_keep)], d, n),
        pair_a=mask_from_positions(pair[:, :keep], d, n),
        pair_b=mask_from_positions(pair_b, d, n),
        negative_order=negative.contiguous(),
    )
