"""SPEC §2 — the five views of the inverted map, drawn fresh every epoch.

All masks are built for every feature row at once from per-row random
permutations (``argsort`` of uniform noise), on whatever device ``A`` lives on.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch


@dataclass(frozen=True)
class ViewConfig:
    """Keep ratios of the masked views (SPEC §2 defaults)."""

    light_keep: float = 0.90
    heavy_keep: float = 0.60
    pair_keep: float = 0.50
    pair_overlap: float = 0.10

    def __post_init__(self) -> None:
        for name in ("light_keep", "heavy_keep", "pair_keep"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"views.{name} must be in (0, 1], got {value!r}")
        if not 0.0 <= self.pair_overlap <= 1.0:
            raise ValueError(f"views.pair_overlap must be in [0, 1], got {self.pair_overlap!r}")


@dataclass
class Views:
    """One epoch's views, each of shape (d, n) like the anchor map."""

    light: torch.Tensor  # m1
    heavy: torch.Tensor  # m2
    pair_a: torch.Tensor  # m3
    pair_b: torch.Tensor  # m4
    negative: torch.Tensor  # m-

    @property
    def positives(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        return (self.light, self.heavy, self.pair_a, self.pair_b)

    def as_dict(self) -> dict[str, torch.Tensor]:
        return _fields_as_dict(self)


def _fields_as_dict(obj: object) -> dict[str, torch.Tensor]:
    # Not dataclasses.asdict: that deep-copies every tensor.
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


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


def _mask_from_positions(positions: torch.Tensor, d: int, n: int) -> torch.Tensor:
    mask = torch.zeros((d, n), dtype=torch.bool, device=positions.device)
    return mask.scatter_(1, positions, True)


def random_keep_mask(
    d: int, n: int, keep: int, generator: torch.Generator, device: torch.device | str
) -> torch.Tensor:
    """(d, n) bool mask keeping exactly ``keep`` random positions per row."""
    perm = random_permutations(d, n, generator, device)
    return _mask_from_positions(perm[:, :keep], d, n)


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
    mask_a = _mask_from_positions(perm[:, :keep], d, n)
    order_b = torch.cat([perm[:, :overlap], perm[:, keep:], perm[:, overlap:keep]], dim=1)
    mask_b = _mask_from_positions(order_b[:, :keep], d, n)
    return mask_a, mask_b


@dataclass
class ViewMasks:
    """The random draws behind one epoch's views, each (d, n)."""

    light: torch.Tensor  # bool
    heavy: torch.Tensor  # bool
    pair_a: torch.Tensor  # bool
    pair_b: torch.Tensor  # bool
    negative_order: torch.Tensor  # int64, a permutation of 0..n-1 per row

    def as_dict(self) -> dict[str, torch.Tensor]:
        return _fields_as_dict(self)


def generate_masks(
    d: int, n: int, config: ViewConfig, generator: torch.Generator, device: torch.device | str
) -> ViewMasks:
    """Draw the masks and the negative's permutation for a (d, n) map.

    The draw order is fixed, so the same generator state gives the same masks.
    """
    light = random_keep_mask(d, n, keep_count(n, config.light_keep), generator, device)
    heavy = random_keep_mask(d, n, keep_count(n, config.heavy_keep), generator, device)
    keep, overlap = pair_counts(n, config.pair_keep, config.pair_overlap)
    pair_a, pair_b = complementary_masks(d, n, keep, overlap, generator, device)
    return ViewMasks(light, heavy, pair_a, pair_b, random_permutations(d, n, generator, device))


def apply_masks(A: torch.Tensor, masks: ViewMasks) -> Views:
    """The five views of ``A``: masked copies (zeros elsewhere) and the row-shuffled negative."""
    zero = A.new_zeros(())
    return Views(
        light=torch.where(masks.light, A, zero),
        heavy=torch.where(masks.heavy, A, zero),
        pair_a=torch.where(masks.pair_a, A, zero),
        pair_b=torch.where(masks.pair_b, A, zero),
        negative=A.gather(1, masks.negative_order),
    )


def generate_views(A: torch.Tensor, config: ViewConfig, generator: torch.Generator) -> Views:
    """Draw the five views of SPEC §2 for the (d, n) anchor map ``A``.

    ``generator`` must live on ``A.device``.
    """
    d, n = A.shape
    return apply_masks(A, generate_masks(d, n, config, generator, A.device))
