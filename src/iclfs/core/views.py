"""SPEC §2 — the five views of the inverted map, drawn fresh every epoch.

Two random streams draw the same law (but for m4 when n is 1, 3 or 7, see
:func:`reference_masks`):

``vectorized`` (the default)
    All masks are built for every feature row at once from per-row random
    permutations (``argsort`` of uniform noise), on whatever device ``A``
    lives on, from the training's own generator.
``reference``
    The draws of the paper's published code, replayed: torch's global CPU
    generator, one 64-bit draw per epoch (its ``DataLoader`` iterator's base
    seed), then for each feature in order one ``torch.randperm(n)`` each for
    the complementary pair, the light mask, the heavy mask and the negative.
    With the ``paper`` schedule and the same seed, training repeats the
    published loop's arithmetic exactly on CPU (tested), so a result of the
    paper can be checked draw for draw. It loops over the features in Python:
    for fidelity checks, not production.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

POSITIVE_VIEWS = ("structured", "random")
STREAMS = ("vectorized", "reference")


@dataclass(frozen=True)
class ViewConfig:
    """Keep ratios of the masked views (SPEC §2 defaults)."""

    light_keep: float = 0.90
    heavy_keep: float = 0.60
    pair_keep: float = 0.50
    pair_overlap: float = 0.10
    # "random": one random-masked positive view instead of the four structured
    # ones (the paper's WLDAR ablation). Its keep ratio is not stated in the
    # paper; 0.5 is our choice, the pair views' ratio.
    positives: str = "structured"
    random_keep: float = 0.50
    # Which random stream draws the views (see the module docstring).
    stream: str = "vectorized"

    def __post_init__(self) -> None:
        if self.positives not in POSITIVE_VIEWS:
            raise ValueError(f"views.positives must be one of {POSITIVE_VIEWS}, got {self.positives!r}")
        if self.stream not in STREAMS:
            raise ValueError(f"views.stream must be one of {STREAMS}, got {self.stream!r}")
        if self.stream == "reference" and self.positives != "structured":
            raise ValueError("views.stream 'reference' replays the published code, which draws only the four "
                             f"structured positives; views.positives {self.positives!r} needs stream 'vectorized'")
        for name in ("light_keep", "heavy_keep", "pair_keep", "random_keep"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"views.{name} must be in (0, 1], got {value!r}")
        if not 0.0 <= self.pair_overlap <= 1.0:
            raise ValueError(f"views.pair_overlap must be in [0, 1], got {self.pair_overlap!r}")


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
        """The positive views in SPEC order (four structured ones, or the one random one)."""
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
        random = random_keep_mask(d, n, keep_count(n, config.random_keep), generator, device)
        return ViewMasks(None, None, None, None, random_permutations(d, n, generator, device), random=random)
    light = random_keep_mask(d, n, keep_count(n, config.light_keep), generator, device)
    heavy = random_keep_mask(d, n, keep_count(n, config.heavy_keep), generator, device)
    keep, overlap = pair_counts(n, config.pair_keep, config.pair_overlap)
    pair_a, pair_b = complementary_masks(d, n, keep, overlap, generator, device)
    return ViewMasks(light, heavy, pair_a, pair_b, random_permutations(d, n, generator, device))


def reference_masks(d: int, n: int, config: ViewConfig) -> ViewMasks:
    """One epoch's masks drawn as the paper's published code draws them (stream ``reference``).

    Consumes torch's global CPU generator: one int64 draw (the published
    loop's ``DataLoader`` iterator takes its base seed so), then, feature by
    feature, ``randperm(n)`` for the pair, the light mask, the heavy mask and
    the negative. The masks keep the first positions of their permutation; m4
    keeps the pair's first ``overlap`` positions and the ``keep - overlap``
    after m3's ``keep``. Where those run out (``2 keep - overlap > n``: n = 1,
    3 or 7) m3 and m4 already cover every position, so the published top-up
    from unused positions adds none and m4 keeps fewer than ``keep`` (the
    ``vectorized`` stream tops it up from m3's positions instead).
    Returns CPU tensors.
    """
    torch.empty((), dtype=torch.int64).random_()
    draws = [torch.randperm(n) for _ in range(4 * d)]
    perms = torch.stack(draws).reshape(d, 4, n) if d else torch.empty((0, 4, n), dtype=torch.int64)
    pair, light, heavy, negative = perms.unbind(1)
    keep, overlap = pair_counts(n, config.pair_keep, config.pair_overlap)
    pair_b = torch.cat([pair[:, :overlap], pair[:, keep:2 * keep - overlap]], dim=1)
    return ViewMasks(
        light=_mask_from_positions(light[:, :keep_count(n, config.light_keep)], d, n),
        heavy=_mask_from_positions(heavy[:, :keep_count(n, config.heavy_keep)], d, n),
        pair_a=_mask_from_positions(pair[:, :keep], d, n),
        pair_b=_mask_from_positions(pair_b, d, n),
        negative_order=negative.contiguous(),
    )


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
    """Draw the views of SPEC §2 (five, or two with ``positives="random"``) for the (d, n) anchor map ``A``.

    ``generator`` must live on ``A.device``; the ``reference`` stream ignores
    it and draws from torch's global CPU generator (:func:`reference_masks`).
    """
    d, n = A.shape
    if config.stream == "reference":
        masks = reference_masks(d, n, config)
        return apply_masks(A, ViewMasks(**{name: m.to(A.device) for name, m in masks.as_dict().items()}))
    return apply_masks(A, generate_masks(d, n, config, generator, A.device))
