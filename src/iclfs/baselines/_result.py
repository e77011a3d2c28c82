"""What a baseline hands back: its selection at every k, and its scores when it scores every feature."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class BaselineResult:
    """One baseline's selections.

    Attributes
    ----------
    selections : dict of int to ndarray
        Per k: the selected feature indices, best first, shape (k,); or, for a
        method that pools several draws (``random``), shape (draws, k).
    scores : ndarray of shape (d,) or None
        Every feature's score, higher is better, when the method has one
        (the order of the largest k for methods that fit one model per k).
    history : list of dict
        One row per training step or epoch of a neural method; empty otherwise.
    """

    selections: dict[int, np.ndarray]
    scores: np.ndarray | None = None
    history: list[dict] = field(default_factory=list)
