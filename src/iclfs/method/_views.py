"""The five views of the inverted map, drawn fresh every epoch (docs/method.md §2).

All masks are built for every feature row at once from per-row random
permutations (``argsort`` of uniform noise), on whatever device the map lives
on, from the training's own generator (the ``vectorized`` stream). The
published code's own draws, replayed feature by feature, are the
``published`` stream of :mod:`iclfs.method._replay`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from ._config import ViewConfig

#: The random view's keep ratio (ablation WLDAR; not stated in the paper, our choice).
RANDOM_KEEP = 0.5


@dataclass
class Views:
    """One epoch's views, each of shape (d, n) like the anchor map.

    With ``positives="structured"`` the four masked views are set and ``random``
    is None; with ``"random"`` only ``random`` is.
    """

    light: torch.Tensor | None  # m1
    heavy: torch.Tensor | None  # m2
    pair_a: torch.Tensor | None  # m3
    pair_b: torch.Tensor | None  # m4
    negative: torch.Tensor  # m-
    random: torch.Tensor | None = None  # the WLDAR ablation's single positive

    @property
    def positives(self) -> tuple[torch.Tensor, ...]:
        """The positive views in order m1..m4 (four structured ones), or the one random one."""
        return tuple(v for v in (self.light, self.heavy, self.pair_a, self.pair_b, self.random) if v is not None)

    def as_dict(self) -> dict[str, torch.Tensor]:
        return _fields_as_dict(self)


def _fields_as_dict(obj: object) -> dict[str, torch.Tensor]:
    # Not dataclasses.asdict: that deep-copies every tensor. Absent views are left out.
    return {f.name: getattr(obj, f.name) for f in fields(obj) if getattr(obj, f.name) is not None}


def keep_count(n: int, ratio: float) -> int:
    """Positions a mask of keep ratio ``ratio`` keeps out of ``n``: max(1, round(ratio n))."""
    return max(1, round(ratio * n))


def pair_counts(n: int, ratio: float = 0.5, overlap_ratio: float = 0.1) -> tuple[int, int]:
    """(keep, overlap) for the complementary pair: keep = round(ratio n), overlap = round(0.1 keep)."""
    keep = min(n, max(1, round(ratio * n)))
    return keep, round(overlap_ratio * keep)


def random_permutations(d: int, n: int, generator: torch.Generator, device: torch.device | str) -> torch.Tensor:
    """(d, n) int64 tensor: row j is an independent uniform permutation of 0..n-1."""
    noise = torch.rand((d, n), generator=generator, device=device)
    return noise.argsort(dim=1)


def mask_from_positions(positions: torch.Tensor, d: int, n: int) -> torch.Tensor:
    mask = torch.zeros((d, n), dtype=torch.bool, device=positions.device)
    return mask.scatter_(1, positions, True)


def random_keep_mask(
    d: int, n: int, keep: int, generator: torch.Generator, device: torch.device | str
) -> torch.Tensor:
    """(d, n) bool mask keeping exactly ``keep`` random positions per row."""
    perm = random_permutations(d, n, generator, device)
    return mask_from_positions(perm[:, :keep], d, n)


def complementary_masks(
    d: int,
    n: int,
    keep: int,
    overlap: int,
    generator: torch.Generator,
    device: torch.device | str,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The m3/m4 pair: ``overlap`` shared positions, the rest disjoint.

    From one permutation per row: m3 keeps ``perm[:keep]``; m4 keeps the first
    ``overlap`` of those plus ``perm[keep:]``, so its extra positions are
    disjoint from m3's. When ``2 keep - overlap > n`` there are not enough
    unused positions and m4 is topped up from m3's own positions, so both masks
    always keep exactly ``keep`` positions.
    """
    perm = random_permutations(d, n, generator, device)
    mask_a = mask_from_positions(perm[:, :keep], d, n)
    order_b = torch.cat([perm[:, :overlap], perm[:, keep:], perm[:, overlap:keep]], dim=1)
    mask_b = mask_from_positions(order_b[:, :keep], d, n)
    return mask_a, mask_b


@dataclass
class ViewMasks:
    """The random draws behind one epoch's views, each (d, n)."""

    light: torch.Tensor | None  # bool
    heavy: torch.Tensor | None  # bool
    pair_a: torch.Tensor | None  # bool
    pair_b: torch.Tensor | None  # bool
    negative_order: torch.Tensor  # int64, a permutation of 0..n-1 per row
    random: torch.Tensor | None = None  # bool, positives="random" only

    def as_dict(self) -> dict[str, torch.Tensor]:
        return _fields_as_dict(self)


def generate_masks(
    d: int, n: int, config: ViewConfig, generator: torch.Generator, device: torch.device | str
) -> ViewMasks:
    """Draw the masks and the negative's permutation for a (d, n) map.

    The draw order is fixed, so the same generator state gives the same masks.
    """
    if config.positives == "random":
        random = random_keep_mask(d, n, keep_count(n, RANDOM_KEEP), generator, device)
        return ViewMasks(None, None, None, None, random_permutations(d, n, generator, device), random=random)
    light = random_keep_mask(d, n, keep_count(n, config.light_keep), generator, device)
    heavy = random_keep_mask(d, n, keep_count(n, config.heavy_keep), generator, device)
    keep, overlap = pair_counts(n, config.pair_keep, config.pair_overlap)
    pair_a, pair_b = complementary_masks(d, n, keep, overlap, generator, device)
    return ViewMasks(light, heavy, pair_a, pair_b, random_permutations(d, n, generator, device))


def apply_masks(A: torch.Tensor, masks: ViewMasks) -> Views:
    """The five views of ``A``: masked copies (zeros elsewhere) and the row-shuffled negative."""
    zero = A.new_zeros(())

    def masked(mask: torch.Tensor | None) -> torch.Tensor | None:
        return None if mask is None else torch.where(mask, A, zero)

    return Views(
        light=masked(masks.light),
        heavy=masked(masks.heavy),
        pair_a=masked(masks.pair_a),
        pair_b=masked(masks.pair_b),
        negative=A.gather(1, masks.negative_order),
        random=masked(masks.random),
    )


def generate_views(A: torch.Tensor, config: ViewConfig, generator: torch.Generator) -> Views:
    """Draw the views (five, or two with ``positives="random"``) of the (d, n) anchor map ``A``.

    ``generator`` must live on ``A.device``.
    """
    d, n = A.shape
    return apply_masks(A, generate_masks(d, n, config, generator, A.device))
