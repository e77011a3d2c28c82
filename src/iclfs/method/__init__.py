"""The ICLFS method, framework-free (numpy, scipy, scikit-learn, torch; no Kedro).

Each step of docs/method.md is a private module: ``_preprocessing`` (§1),
``_views`` (§2), ``_model`` and ``_attention`` (§3), ``_losses`` and
``_training`` (§4), ``_scores`` (§5), ``_laplacian`` (§6) and ``_lgrc``
(§7). Beyond one network: ``_members`` trains a run's members, ``_ranking``
combines this run's and the kept members into one order, ``_k_choice`` picks
k and ``_stability`` measures how lists agree. ``_config`` holds every setting,
``_runtime`` the device, threads and memory, ``_progress`` the training's log
lines, and ``_replay`` the paper's literal loop and draws. The whole chain, for
ICLFS and every other method, is :mod:`iclfs.chain`.

What is public is imported here.
"""

from ._config import (
    SECTIONS,
    EvaluationConfig,
    LaplacianConfig,
    MembersConfig,
    ParameterError,
    RankingConfig,
    RuntimeConfig,
    SelectionConfig,
    Settings,
    TrainingConfig,
    ViewConfig,
    refuse_old_names,
)
from ._k_choice import KChoice, choose_k
from ._laplacian import laplacian_scores
from ._lgrc import gate, hold, lgrc_select, select_every_k
from ._members import MemberTraining, train_members
from ._preprocessing import DataValidationError, FeatureTable, PreparedData, invert, prepare
from ._ranking import Member, MemberHistory, Ranking, combine_kept, combine_run, member_seed, rank, start
from ._runtime import ResourceLimitError
from ._scores import feature_order, feature_scores, rank_positions
from ._stability import compare_selections, jaccard, nogueira, nogueira_of
from ._training import TrainingResult, train

__all__ = [
    "SECTIONS", "DataValidationError", "EvaluationConfig", "FeatureTable", "KChoice", "LaplacianConfig", "Member",
    "MemberHistory", "MemberTraining", "MembersConfig", "ParameterError", "PreparedData", "RankingConfig",
    "Ranking", "ResourceLimitError", "RuntimeConfig", "SelectionConfig", "Settings", "TrainingConfig",
    "TrainingResult", "ViewConfig", "choose_k", "combine_kept", "combine_run", "compare_selections",
    "feature_order", "feature_scores", "gate", "hold", "invert", "jaccard", "laplacian_scores", "lgrc_select",
    "member_seed", "nogueira", "nogueira_of", "prepare", "rank", "rank_positions", "refuse_old_names",
    "select_every_k", "start", "train", "train_members",
]
