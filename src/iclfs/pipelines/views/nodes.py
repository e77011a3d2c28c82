"""One epoch's views, for inspection (docs/method.md §2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from iclfs.method._config import MembersConfig, TrainingConfig, ViewConfig
from iclfs.method._members import member_settings, plan_members
from iclfs.method._training import first_epoch_masks
from iclfs.method._views import RANDOM_KEEP, apply_masks, keep_count, pair_counts


def sample_views(inverted_data: np.ndarray, views: dict, training: dict, members: dict,
                 seed: int) -> tuple[dict, pd.DataFrame]:
    """Draw the views of the first member's first network's first epoch on CPU, as training draws them.

    Returns
    -------
    view_sample : dict of str to ndarray of shape (d_network, n_member)
        Every view, plus the boolean masks (``<view>_mask``).
    view_statistics : DataFrame
        One row per view: kept positions per row (min, mean, max), the
        expected count, and for the complementary pair the shared positions per row.
    """
    members_config = MembersConfig.from_dict(members)
    d_all, n_all = inverted_data.shape
    member = plan_members(n_all, members_config, seed, d_all)[0]
    features, network_seed = member.networks()[0]
    member_training, _ = member_settings(n_all, TrainingConfig.from_dict(training), members_config)
    rows = inverted_data if features is None else inverted_data[features]
    A = torch.as_tensor(rows if member.samples is None else rows[:, member.samples], dtype=torch.float32)
    d, n = A.shape
    config = ViewConfig.from_dict(views)
    # Only the network's layer sizes matter here: its initialization comes
    # before the published stream's draws.
    masks = first_epoch_masks(A, member_training, config, network_seed)
    sample = {name: view.numpy() for name, view in apply_masks(A, masks).as_dict().items()}
    sample.update({f"{name}_mask": m.numpy() for name, m in masks.as_dict().items() if m.dtype == torch.bool})

    keep, overlap = pair_counts(n, config.pair_keep, config.pair_overlap)
    expected = {
        "light": keep_count(n, config.light_keep),
        "heavy": keep_count(n, config.heavy_keep),
        "pair_a": keep,
        "pair_b": keep,
        "random": keep_count(n, RANDOM_KEEP),
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
