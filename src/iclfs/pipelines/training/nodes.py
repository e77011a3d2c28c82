"""Train the network and embed the anchor map (SPEC §3-4)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from torch import nn

from iclfs.core.config import config_from_dict
from iclfs.core.training import TrainingConfig, embed, train
from iclfs.core.views import ViewConfig


def train_model(
    inverted_data: np.ndarray, training: dict, views: dict, seed: int
) -> tuple[nn.Module, pd.DataFrame, dict[str, np.ndarray], list[float]]:
    """Train on the (d, n) inverted map.

    Returns:
        model_state: the trained network (the catalog saves its state dict).
        training_history: one row per epoch (loss, contrastive, decorrelation,
            seconds) plus the device, precision, thread count, attention kernel,
            InfoNCE block rows, regime and schedule used.
        embeddings: ``{"H": (d, d_h), "Z": (d, d_z)}`` of the anchor map in eval mode.
        training_loss: the per-epoch loss, for the MLflow metric history.
    """
    config = config_from_dict(TrainingConfig, training, "training")
    view_config = config_from_dict(ViewConfig, views, "views")
    result = train(inverted_data, config, view_config, seed=seed)
    h, z = embed(result.model, inverted_data)
    history = pd.DataFrame(result.history)
    history["device"] = result.device
    history["precision"] = result.precision
    history["threads"] = result.threads
    history["attention_kernel"] = result.model.attention.kernel if result.model.attention is not None else "none"
    history["loss_chunk_size"] = result.loss_chunk_size  # empty for paper's dense losses
    history["regime"] = result.regime.name
    history["schedule"] = config.schedule
    return result.model.cpu(), history, {"H": h, "Z": z}, history["loss"].tolist()


def plot_training_history(training_history: pd.DataFrame) -> plt.Figure:
    """Loss per epoch, total and its two terms."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for column in ("loss", "contrastive", "decorrelation"):
        ax.plot(training_history["epoch"], training_history[column], label=column)
    ax.set_xlabel("epoch")
    ax.set_ylabel("value")
    ax.set_title(f"ICLFS training ({training_history['schedule'].iloc[0]}, {training_history['device'].iloc[0]})")
    ax.legend()
    fig.tight_layout()
    return fig
