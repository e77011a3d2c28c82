"""One epoch's views, for inspection (SPEC §2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from iclfs.core.config import config_from_dict
from iclfs.core.training import TrainingConfig, first_epoch_masks
from iclfs.core.views import ViewConfig, apply_masks, keep_count, pair_counts


def sample_views(inverted_data: np.ndarray, views: dict, training: dict, seed: int) -> tuple[dict, pd.DataFrame]:
    """Draw the views of the first training epoch on CPU, as training draws them with this seed.

    Returns:
        view_sample: ``{view name: (d, n) array}`` plus the boolean masks.
        view_statistics: one row per view: kept positions per row (min, mean,
            max), the expected count, and for the complementary pair the shared
            positions per row.
    """
    A = torch.as_tensor(inverted_data, dtype=torch.float32)
    d, n = A.shape
    config = config_from_dict(ViewConfig, views, "views")
    # Only the network's layer sizes matter here (its initialization comes
    # before the reference stream's draws); device and precision are CPU's.
    cpu = {**training, "device": "cpu", "precision": "fp32", "compile": None}
    masks = first_epoch_masks(A, config_from_dict(TrainingConfig, cpu, "training"), config, seed)
    sample = {name: view.numpy() for name, view in apply_masks(A, masks).as_dict().items()}
    sample.update({f"{name}_mask": m.numpy() for name, m in masks.as_dict().items() if m.dtype == torch.bool})

    keep, overlap = pair_counts(n, config.pair_keep, config.pair_overlap)
    expected = {
        "light": keep_count(n, config.light_keep),
        "heavy": keep_count(n, config.heavy_keep),
        "pair_a": keep,
        "pair_b": keep,
        "random": keep_count(n, config.random_keep),
    }
    if config.positives == "structured":
        shared = (masks.pair_a & masks.pair_b).sum(dim=1).numpy()
    rows = []
    for name, mask in masks.as_dict().items():
        if mask.dtype != torch.bool:
            continue
        kept = mask.sum(dim=1).numpy()
        rows.append(
            {
                "view": name,
                "expected_kept": expected[name],
                "kept_min": int(kept.min()),
                "kept_mean": float(kept.mean()),
                "kept_max": int(kept.max()),
                "shared_with_pair_min": int(shared.min()) if name.startswith("pair") else None,
                "shared_with_pair_max": int(shared.max()) if name.startswith("pair") else None,
                "expected_shared": overlap if name.startswith("pair") else None,
            }
        )
    moved = (masks.negative_order != torch.arange(n)).float().mean().item()
    rows.append({"view": "negative", "expected_kept": n, "kept_min": n, "kept_mean": float(n), "kept_max": n,
                 "shared_with_pair_min": None, "shared_with_pair_max": None, "expected_shared": None,
                 "moved_fraction": moved})
    return sample, pd.DataFrame(rows)
