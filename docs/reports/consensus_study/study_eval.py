"""What round 1's scripts share: the members' saved checkpoint scores and the protocol on a ranking.

Members are read from ``$STUDY/study`` (written by study_train.py); the
validation tables from ``$SHARED`` (default ``../shared``).
"""

import glob
import os

import numpy as np

from exploration import Dataset

STUDY = os.environ.get("STUDY", ".")
SHARED = os.environ.get("SHARED", "../shared")
MEMBERS = os.path.join(STUDY, "study")

_datasets: dict[str, Dataset] = {}


def data(name: str) -> Dataset:
    """The validation set ``name`` (for example ``lung_small``), prepared once."""
    if name not in _datasets:
        paths = glob.glob(f"{SHARED}/*/{name}.mat")
        if not paths:
            raise SystemExit(f"no {name}.mat under {SHARED}/*/")
        _datasets[name] = Dataset(paths[0])
    return _datasets[name]


def member_path(name: str, config: str, seed: int) -> str:
    return os.path.join(MEMBERS, f"{name}__{config}__{seed}.npz")


def load(name: str, config: str) -> dict[int, dict]:
    """Every saved member of one configuration, by seed: z-norm and h-norm scores at each checkpoint."""
    members = {}
    for path in sorted(glob.glob(member_path(name, config, "*"))):
        seed = int(path.rsplit("__", 1)[1].split(".")[0])
        saved = np.load(path)
        members[seed] = dict(z=saved["z"], h=saved["h"], checkpoints=list(saved["checkpoints"]),
                             seconds=saved["seconds"])
    if not members:
        raise SystemExit(f"no members {member_path(name, config, '*')}: run study_train.py first")
    return members


def at(member: dict, epoch: int, score: str = "z") -> np.ndarray:
    """A member's scores after ``epoch`` epochs (``z``: z-norm, the method's score; ``h``: h-norm)."""
    return member[score][member["checkpoints"].index(epoch)]
