"""The scikit-learn feature selectors of the library.

:class:`ICLFSSelector` builds the method's settings from its parameters and
runs :func:`iclfs.method.chain.run`, the same chain the Kedro pipelines run
stage by stage; :class:`BaselineSelector` runs any other method of
:mod:`iclfs.baselines` through :func:`iclfs.baselines.run`, as the benchmark
and ``select`` do. Neither holds algorithm code of its own.
"""

from __future__ import annotations

import contextlib
import numbers

import numpy as np
import torch
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from iclfs.method import chain
from iclfs.method.config import (
    SCORE_NAMES,
    ConsensusConfig,
    HistoryConfig,
    LaplacianConfig,
    RankingConfig,
    RuntimeConfig,
    SelectionConfig,
    Settings,
    TrainingConfig,
    ViewConfig,
)
from iclfs.method.history import MemberHistory, member_seed
from iclfs.method.preprocessing import MIN_SAMPLES, FeatureTable, as_numeric_matrix
from iclfs.method.runtime import resolve_device
from iclfs.method.scores import rank_positions

__all__ = ["BaselineSelector", "ICLFSSelector", "EXPECTED_FAILED_CHECKS"]

#: scikit-learn estimator checks that :class:`ICLFSSelector` is known not to
#: pass, with the reason (for ``parametrize_with_checks(expected_failed_checks=...)``
#: or ``check_estimator(expected_failed_checks=...)``). Empty: with
#: ``n_features_to_select=1`` it passes every check of scikit-learn 1.9; see
#: the class docstring for the checks that only pass through a clear error.
EXPECTED_FAILED_CHECKS: dict[str, str] = {}

_SOURCE = "ICLFSSelector.fit(X)"
_DEFAULTS = Settings()


@contextlib.contextmanager
def _torch_rng_preserved(device: str):
    """Undo the global RNG reseeding training does (``torch.manual_seed``), so
    fitting has no side effect on the caller's random stream. (Training
    restores its own thread count and TF32 flags.)"""
    dev = resolve_device(device)
    cuda = [dev.index if dev.index is not None else torch.cuda.current_device()] if dev.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda):
        yield


class _Selector(SelectorMixin, BaseEstimator):
    """What both selectors share: their input checks, k and seed, and the selection as RFE's ranking."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        # transform only picks columns, so it keeps any float dtype.
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    # -- parameters -------------------------------------------------------

    def _validate_X(self, X, reset: bool = True):
        """Validate X, set (``reset``) or check n_features_in_ / feature_names_in_, return a dense float array."""
        if hasattr(X, "dtypes") and hasattr(X, "columns"):
            # A pandas DataFrame: the method names the non-numeric columns,
            # where sklearn would only say which value failed to convert.
            as_numeric_matrix(X, _SOURCE)
        # NaN/Inf are left for the method, whose message counts and locates them.
        X = validate_data(self, X, accept_sparse=("csr", "csc", "coo"), dtype=(np.float64, np.float32),
                          ensure_all_finite=False, reset=reset)
        if sparse.issparse(X):
            X = X.toarray()
        return X

    def _resolve_k(self, n_features: int) -> int | str:
        k = self.n_features_to_select
        if k == "auto":
            return k
        if isinstance(k, bool) or not isinstance(k, numbers.Real):
            raise TypeError(f"n_features_to_select must be an int >= 1, a float in (0, 1] or 'auto', got {k!r}")
        if isinstance(k, numbers.Integral):
            if k < 1:
                raise ValueError(f"n_features_to_select must be >= 1, got {k}")
            k = int(k)
        else:
            if not 0.0 < k <= 1.0:
                raise ValueError(
                    f"n_features_to_select as a float is a fraction of the features and must be in (0, 1], got {k!r}")
            k = max(1, int(k * n_features))
        if k > n_features:
            raise ValueError(
                f"n_features_to_select={k} is larger than the number of features in X ({n_features}); "
                f"choose at most {n_features} or a fraction in (0, 1].")
        return k

    def _resolve_seed(self) -> int:
        rs = self.random_state
        if isinstance(rs, numbers.Integral) and not isinstance(rs, bool):
            if not 0 <= rs < 2**32:
                raise ValueError(f"random_state must be an int in 0..2**32 - 1, got {rs}")
            return int(rs)
        # None: NumPy's global RandomState (a fresh seed every fit); a RandomState instance: that one.
        return int(check_random_state(rs).randint(0, 2**31 - 1))

    def _set_selection(self, selected: np.ndarray, order: np.ndarray) -> None:
        """``selected_features_`` (best first), ``support_`` and ``ranking_``: 1 for the selected, then the
        rest of ``order`` (indices best first) from 2."""
        n_features = len(order)
        self.selected_features_ = np.asarray(selected, dtype=np.int64)
        rest = order[~np.isin(order, self.selected_features_)]
        ranking = np.ones(n_features, dtype=np.int64)
        ranking[rest] = np.arange(2, len(rest) + 2)
        self.ranking_ = ranking
        support = np.zeros(n_features, dtype=bool)
        support[self.selected_features_] = True
        self.support_ = support

    def _get_support_mask(self):
        check_is_fitted(self, "support_")
        return self.support_


class ICLFSSelector(_Selector):
    """Unsupervised feature selection by Inverted Contrastive Learning (ICLFS).

    The data matrix is standardized and inverted so that every feature becomes
    one training instance (its profile over the samples). Small attention +
    MLP networks are trained contrastively on masked views of those profiles;
    features are ordered by the norm of their embedding, the orders of the
    consensus members are combined, and the Laplacian-Gated Ranking
    Correction (LGRC) swaps out top-ranked features whose Laplacian score is
    poor. ``y`` is never used. The method is described in ``docs/method.md``
    and ``docs/consensus.md``; this class gives exactly the selection of the
    Kedro pipeline for the same settings and seed.

    Parameters
    ----------
    n_features_to_select : int, float or "auto", default=50
        Number of features k to select. An int must lie in ``1..n_features``;
        a float in (0, 1] is a fraction of the features,
        ``k = max(1, int(fraction * n_features))``; ``"auto"`` picks k from the
        members' agreement (needs ``members >= 2``; ``k_reason_`` says why).
    members : int, default=1
        Runs trained and combined; 1 is the paper's single run
        (``epochs`` epochs on every sample), the default (``docs/consensus.md``).
    member_epochs : int, default=25
        Epochs of each member when ``members >= 2``.
    subsample : float, default=0.5
        Fraction of the samples each member sees when ``members >= 2``.
    epochs : int, default=100
        Epochs of the single run (``members=1``).
    schedule : {"fast", "paper"}, default="fast"
        ``"paper"`` is the paper's literal training loop; ``"fast"`` computes the
        same objective with fewer forward passes.
    ranking_score : {"z_norm", "h_norm", "weighted_sum", "harmonic"}, default="z_norm"
        Feature score of each member (the pipeline's ``ranking.score``). Not
        called ``score``: scikit-learn reserves that name for ``score(X, y)``.
    use_lgrc : bool, default=True
        Apply the Laplacian-Gated Ranking Correction; ``False`` keeps the first
        k features of the order (the paper's "ICLFS-WL" ablation).
    alpha : float, default=1.5
        LGRC pool size factor (pool = first ``round(alpha * k)`` features), >= 1.
    quantile : float, default=0.75
        LGRC gate: the quantile of the finite Laplacian scores above which a
        pool member is replaced. In [0, 1].
    n_neighbors : int, default=3
        Neighbours of the cosine kNN graph of the Laplacian score. Needs
        ``n_samples > n_neighbors``.
    device : str, default="auto"
        ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    random_state : int, RandomState instance or None, default=42
        Seeds every member's weights, dropout, views and samples. An int in
        ``0..2**32 - 1`` is the seed itself (the pipeline's ``seed``); ``None``
        draws a fresh seed from NumPy's global random state at every fit, and
        a ``RandomState`` draws one from that generator. The seed used is
        ``seed_``. Training on GPU may not be bit-for-bit reproducible.
    half_life : float, default=inf
        :meth:`partial_fit` only: a carried member's weight halves every
        ``half_life`` calls (``float("inf")``: every member kept weighs the same).
    max_members : int, default=64
        :meth:`partial_fit` only: the newest members kept.
    history_rule : {"mean_rank", "frequency"}, default="mean_rank"
        :meth:`partial_fit` only: how the carried members are combined
        (the pipeline's ``history.rule``).
    hold : float >= 1, default=3.0
        :meth:`partial_fit` only: a feature of the last call's selection stays
        selected while it is among the first ``hold`` x k features this call
        would select (1: no hold; the pipeline's ``history.hold``).
    admit : float >= 1, default=2.0
        :meth:`partial_fit` only: a feature among the first k / ``admit``
        this call would select always enters the selection, in place of the
        held features it ranks lowest (``float("inf")``: none is forced in;
        the pipeline's ``history.admit``).
    history_laplacian : {"run", "carried"}, default="carried"
        :meth:`partial_fit` only: the Laplacian scores LGRC gates by, this
        call's table's or their mean over the carried members (the pipeline's
        ``history.laplacian``).
    history_laplacian_weight : float in [0, 1], default=0.5
        :meth:`partial_fit` only: the weight of the rank of those Laplacian
        scores in the carried order (0: none; the pipeline's
        ``history.laplacian_weight``).
    history_laplacian_fusion : {"rank_mean", "reciprocal_rank"}, default="reciprocal_rank"
        :meth:`partial_fit` only: how that rank is fused in, the weighted mean
        of the rank scores or weighted reciprocal rank fusion (the pipeline's
        ``history.laplacian_fusion``).
    progress : bool, default=False
        Show a progress bar over members x epochs.
    training_options, view_options, consensus_options, runtime_options : dict or None
        Further keys of the ``training``, ``views``, ``consensus`` and
        ``runtime`` sections (``docs/guides/configuration.md``), e.g.
        ``training_options={"learning_rate": 1e-3}``,
        ``runtime_options={"num_threads": 1}``. They may not repeat a key this
        class has as a parameter.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during fit; only defined when ``X`` is a
        pandas DataFrame whose column names are all strings.
    n_features_to_select_ : int
        The number of features k actually selected.
    k_reason_ : str
        Why that k (``"auto"`` gives the members' agreement at every k).
    seed_ : int
        The seed used (see ``random_state``).
    scores_ : ndarray of shape (n_features_in_,)
        The score that ranks the features, higher is better: the single run's
        ``ranking_score``, or the consensus of the members'.
    ranking_ : ndarray of shape (n_features_in_,)
        As in :class:`sklearn.feature_selection.RFE`: ``ranking_[j]`` is
        feature j's rank, 1 for every selected feature, then 2, 3, ... for
        the others in the order of ``feature_order_``, so
        ``X.columns[selector.ranking_ == 1]`` are the selected columns.
    feature_order_ : ndarray of shape (n_features_in_,)
        Feature indices, best first (ties by index), before LGRC.
    member_ranks_ : ndarray of shape (members, n_features_in_)
        Each member's rank of every feature (1 = best).
    selection_frequency_ : ndarray of shape (n_features_in_,)
        The fraction of the members whose first k include each feature.
    laplacian_scores_ : ndarray of shape (n_features_in_,)
        Laplacian score of every feature (lower is better; ``inf`` for constant features).
    selected_features_ : ndarray of shape (n_features_to_select_,)
        Indices of the selected features, best first.
    support_ : ndarray of shape (n_features_in_,), dtype=bool
        Mask of the selected features.
    models_ : list of torch.nn.Module
        The trained networks, on CPU, in eval mode: one per member, or with
        ``consensus_options={"feature_blocks": m}`` m per member, member after member.
    training_history_ : list of dict
        One dict per network and epoch: ``member``, ``block`` (0 without
        feature blocks), ``epoch``, ``loss``, ``contrastive``, ``decorrelation``, ``seconds``.
        After :meth:`partial_fit`, this call's networks only.
    history_ : MemberHistory
        :meth:`partial_fit` only: every member carried so far (their rank
        scores, seeds and ages), as the pipeline's ``member_history``.
    n_members_ : int
        :meth:`partial_fit` only: the members combined.

    With :meth:`partial_fit`, ``scores_``, ``feature_order_`` and the
    selection come from every carried member, ``member_ranks_`` has one row
    per carried member and ``selection_frequency_`` is each feature's
    age-weighted share of the members whose first k include it.

    See Also
    --------
    sklearn.feature_selection.RFE : the ``ranking_`` convention.
    sklearn.feature_selection.SequentialFeatureSelector : the float ``n_features_to_select`` convention.

    Notes
    -----
    Input: a dense array, scipy sparse matrix (densified: the inverted map is
    dense anyway) or pandas DataFrame with numeric columns, at least
    ``max(4, n_neighbors + 1)`` samples and 2 features, no NaN/Inf. Invalid
    data raises a ``ValueError`` that says what and where.

    Fitting leaves the caller's torch state as it found it (global RNG, thread
    count, TF32 flags). On tiny data a single torch thread
    (``runtime_options={"num_threads": 1}``) is often faster than several.

    scikit-learn estimator checks (scikit-learn 1.9, estimator
    ``ICLFSSelector(n_features_to_select=1, members=1, epochs=1)``): all pass;
    none needs ``expected_failed_checks``. Two pass only because ICLFS
    refuses their data with a clear ``ValueError``, as those checks allow:
    ``check_fit2d_1sample`` (ICLFS needs at least 4 samples) and
    ``check_fit2d_1feature`` (the features are the training batch).

    Examples
    --------
    >>> from iclfs import ICLFSSelector
    >>> from iclfs.io.synthetic import make_synthetic
    >>> table = make_synthetic(n_samples=40, n_classes=2, n_informative=6,
    ...                        n_redundant=4, n_noise=30, seed=3)
    >>> selector = ICLFSSelector(n_features_to_select=5, members=2, member_epochs=2, device="cpu")
    >>> selector.fit_transform(table.X).shape
    (40, 5)
    >>> int((selector.ranking_ == 1).sum())
    5
    """

    def __init__(
        self,
        n_features_to_select=50,
        *,
        members=_DEFAULTS.consensus.members,
        member_epochs=_DEFAULTS.consensus.member_epochs,
        subsample=_DEFAULTS.consensus.subsample,
        epochs=_DEFAULTS.training.epochs,
        schedule=_DEFAULTS.training.schedule,
        ranking_score=_DEFAULTS.ranking.score,
        use_lgrc=_DEFAULTS.selection.use_lgrc,
        alpha=_DEFAULTS.selection.alpha,
        quantile=_DEFAULTS.selection.quantile,
        n_neighbors=_DEFAULTS.laplacian.n_neighbors,
        device="auto",
        random_state=42,
        half_life=_DEFAULTS.history.half_life,
        max_members=_DEFAULTS.history.max_members,
        history_rule=_DEFAULTS.history.rule,
        hold=_DEFAULTS.history.hold,
        admit=_DEFAULTS.history.admit,
        history_laplacian=_DEFAULTS.history.laplacian,
        history_laplacian_weight=_DEFAULTS.history.laplacian_weight,
        history_laplacian_fusion=_DEFAULTS.history.laplacian_fusion,
        progress=False,
        training_options=None,
        view_options=None,
        consensus_options=None,
        runtime_options=None,
    ):
        self.n_features_to_select = n_features_to_select
        self.members = members
        self.member_epochs = member_epochs
        self.subsample = subsample
        self.epochs = epochs
        self.schedule = schedule
        self.ranking_score = ranking_score
        self.use_lgrc = use_lgrc
        self.alpha = alpha
        self.quantile = quantile
        self.n_neighbors = n_neighbors
        self.device = device
        self.random_state = random_state
        self.half_life = half_life
        self.max_members = max_members
        self.history_rule = history_rule
        self.hold = hold
        self.admit = admit
        self.history_laplacian = history_laplacian
        self.history_laplacian_weight = history_laplacian_weight
        self.history_laplacian_fusion = history_laplacian_fusion
        self.progress = progress
        self.training_options = training_options
        self.view_options = view_options
        self.consensus_options = consensus_options
        self.runtime_options = runtime_options

    @staticmethod
    def _auto_grid(n_features: int) -> list[int]:
        """The k ``"auto"`` chooses from: the pipelines' grid below d, else 10 %, 20 %, ..., 50 % of d."""
        grid = [k for k in SelectionConfig().k_values if k < n_features]
        return grid or sorted({max(1, round(f * n_features)) for f in (0.1, 0.2, 0.3, 0.4, 0.5)})

    def _settings(self, n_features: int, seed: int, carry: bool = False) -> Settings:
        """The method's settings from this estimator's parameters (each section validated as in the pipelines)."""
        if self.ranking_score not in SCORE_NAMES:
            raise ValueError(f"ranking_score must be one of {SCORE_NAMES}, got {self.ranking_score!r}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, numbers.Real) or not self.alpha >= 1:
            raise ValueError(f"alpha must be a number >= 1, got {self.alpha!r}")
        k = self._resolve_k(n_features)
        grid = [k] if k != "auto" else self._auto_grid(n_features)
        owner = "the ICLFSSelector parameter of that name"
        training = TrainingConfig.from_dict(self.training_options, "training_options", fixed_by=owner,
                                            fixed={"epochs": self.epochs, "schedule": self.schedule})
        runtime = RuntimeConfig.from_dict(self.runtime_options, "runtime_options", fixed_by=owner,
                                          fixed={"device": self.device, "progress": bool(self.progress)})
        consensus = ConsensusConfig.from_dict(
            self.consensus_options, "consensus_options", fixed_by=owner,
            fixed={"members": self.members, "member_epochs": self.member_epochs, "subsample": self.subsample})
        selection = SelectionConfig(k=k, k_values=tuple(grid), use_lgrc=self.use_lgrc, alpha=float(self.alpha),
                                    quantile=self.quantile)
        history = HistoryConfig(carry=carry, rule=self.history_rule, half_life=self.half_life,
                                max_members=self.max_members, hold=self.hold, admit=self.admit,
                                laplacian=self.history_laplacian, laplacian_weight=self.history_laplacian_weight,
                                laplacian_fusion=self.history_laplacian_fusion)
        return Settings(seed=seed, training=training, runtime=runtime, views=ViewConfig.from_dict(
            self.view_options, "view_options"), ranking=RankingConfig(self.ranking_score),
            laplacian=LaplacianConfig(self.n_neighbors), selection=selection, consensus=consensus, history=history)

    # -- fitting ----------------------------------------------------------

    def fit(self, X, y=None):
        """Train ICLFS on ``X`` and select ``n_features_to_select`` features.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Training data, numeric, finite; at least ``max(4, n_neighbors + 1)``
            samples and 2 features.
        y : None
            Ignored (ICLFS is unsupervised); present for API consistency.

        Returns
        -------
        self : ICLFSSelector
            The fitted selector.
        """
        X = self._validate_X(X)
        self._check_samples(X)
        for name in ("history_", "n_members_", "history_seed_"):  # fit starts afresh: no carried members
            self.__dict__.pop(name, None)
        settings = self._settings(X.shape[1], self._resolve_seed())
        with _torch_rng_preserved(settings.runtime.device):
            result = chain.run(self._table(X), settings)
        self._store(result, settings.seed)
        return self

    def partial_fit(self, X, y=None):
        """Add one run on ``X`` to the carried members and select from all of them.

        The scheduled refresh of the pipelines (``history.carry``), in
        scikit-learn's incremental convention: the first call starts the
        history (the same run :meth:`fit` makes at ``random_state``), each
        later call trains the member(s) of one more run, seeded by their
        number in the history, and selects from every member kept, each
        weighted by ``2^(-age / half_life)`` with age counted in calls.
        Every call must have the same features (the same columns, and the
        same names for a DataFrame); the samples may change.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            This refresh's data.
        y : None
            Ignored.

        Returns
        -------
        self : ICLFSSelector
        """
        first = not hasattr(self, "history_")
        X = self._validate_X(X, reset=first)
        self._check_samples(X)
        if first:
            self.history_seed_ = self._resolve_seed()
            history = MemberHistory()
        else:
            history = self.history_
        settings = self._settings(X.shape[1], self.history_seed_, carry=True)
        seed = member_seed(settings.seed, history.next_index)
        with _torch_rng_preserved(settings.runtime.device):
            result = chain.run(self._table(X), settings, history=history)
        self._store(result, seed)
        self.history_ = result.history
        self.n_members_ = len(result.history.members)
        return self

    def _check_samples(self, X) -> None:
        n_samples = X.shape[0]
        if (isinstance(self.n_neighbors, numbers.Integral) and not isinstance(self.n_neighbors, bool)
                and MIN_SAMPLES <= n_samples <= self.n_neighbors):
            raise ValueError(f"{_SOURCE}: n_neighbors={self.n_neighbors} needs more samples than neighbours, "
                             f"but X has {n_samples} sample(s); lower n_neighbors or add samples.")

    def _table(self, X) -> FeatureTable:
        return FeatureTable(X=X, feature_names=getattr(self, "feature_names_in_", None), source=_SOURCE)

    def _store(self, result: chain.ChainResult, seed: int) -> None:
        """The fitted attributes of one run of the chain."""
        n_features = result.prepared.standardized.shape[1]
        combined = result.consensus
        selected = result.selected
        self.n_features_to_select_ = int(result.k)
        self.k_reason_ = result.k_reason
        self.seed_ = int(seed)
        self.scores_ = combined.scores
        self.feature_order_ = combined.order
        self._set_selection(selected, combined.order)
        self.member_ranks_ = np.array([rank_positions(order) for order in combined.member_orders])
        self.selection_frequency_ = combined.frequency.get(result.k, np.ones(n_features))
        self.laplacian_scores_ = result.laplacian_scores
        self.models_ = [r.model.eval() for m in result.members for r in m.results]
        self.training_history_ = [{"member": m.plan.index, "block": b, **row} for m in result.members
                                  for b, r in enumerate(m.results) for row in r.history]


class BaselineSelector(_Selector):
    """Unsupervised feature selection by another method of the library: LS, SPEC, MCFS, NDFS, CAE or LS-CAE.

    The same code the benchmark measures and ``select`` runs with
    ``selection.method`` (:func:`iclfs.baselines.run`), on the data
    standardized as ICLFS standardizes it (zero mean, unit variance per
    feature). ``y`` is never used.

    Parameters
    ----------
    method : {"ls", "spec", "mcfs", "ndfs", "cae", "lscae"}, default="ls"
        The method (``docs/guides/methods.md``).
    n_features_to_select : int or float, default=50
        k: an int in ``1..n_features``, or a float in (0, 1], the fraction
        ``max(1, int(fraction * n_features))``.
    n_clusters : int or None, default=None
        The number of clusters; MCFS and NDFS need it (>= 2).
    options : dict or None, default=None
        The method's options (``baselines.<method>`` in conf), e.g.
        ``{"epochs": 100}`` for CAE.
    random_state : int, RandomState instance or None, default=42
        The seed of NDFS's k-means and of CAE's and LS-CAE's training; as
        :class:`ICLFSSelector`'s.
    device : str, default="auto"
        CAE and LS-CAE: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    num_threads : int or None, default=None
        CAE and LS-CAE: torch threads (None: torch's, capped at the CPUs available).

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` is a DataFrame with string column names.
    n_features_to_select_ : int
    seed_ : int
    scores_ : ndarray of shape (n_features_in_,)
        The method's score of every feature, higher is better (for the methods
        that fit one model per k, that of the model at this k).
    ranking_ : ndarray of shape (n_features_in_,)
        RFE's convention: 1 for the selected features, then 2, 3, ... by score.
    selected_features_ : ndarray of shape (n_features_to_select_,)
        The selected features' indices.
    support_ : ndarray of shape (n_features_in_,), dtype=bool
    training_history_ : list of dict
        CAE and LS-CAE: one row per epoch; empty for the others.

    Examples
    --------
    >>> from iclfs.selectors import BaselineSelector
    >>> from iclfs.io.synthetic import make_synthetic
    >>> table = make_synthetic(n_samples=40, n_classes=2, n_informative=6,
    ...                        n_redundant=4, n_noise=30, seed=3)
    >>> BaselineSelector("ndfs", n_features_to_select=5, n_clusters=2).fit_transform(table.X).shape
    (40, 5)
    """

    def __init__(self, method="ls", n_features_to_select=50, *, n_clusters=None, options=None, random_state=42,
                 device="auto", num_threads=None):
        self.method = method
        self.n_features_to_select = n_features_to_select
        self.n_clusters = n_clusters
        self.options = options
        self.random_state = random_state
        self.device = device
        self.num_threads = num_threads

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.method in ("cae", "lscae") and self.random_state is None
        return tags

    def fit(self, X, y=None):
        """Select ``n_features_to_select`` features of ``X`` with ``method``.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : BaselineSelector
        """
        from iclfs import baselines
        from iclfs.method.preprocessing import prepare

        if self.method == "iclfs" or self.method not in baselines.METHODS:
            known = ", ".join(m for m in baselines.METHODS if m != "iclfs")
            raise ValueError(f"method must be one of {known} (ICLFS is ICLFSSelector), got {self.method!r}")
        X = self._validate_X(X)
        n_features = X.shape[1]
        k = self._resolve_k(n_features)
        seed = self._resolve_seed()
        baselines.check_method(self.method, self.n_clusters)
        prepared = prepare(FeatureTable(X=X, feature_names=getattr(self, "feature_names_in_", None),
                                        source=f"BaselineSelector({self.method!r}).fit(X)"))
        runtime = RuntimeConfig(device=self.device, progress=False, num_threads=self.num_threads)
        result = baselines.run(self.method, prepared.standardized, [k], n_clusters=self.n_clusters, seed=seed,
                               options=self.options, runtime=runtime)
        selected = np.asarray(result.selections[k], dtype=np.int64)
        scores = np.zeros(n_features) if result.scores is None else np.asarray(result.scores, dtype=np.float64)
        self.n_features_to_select_ = int(k)
        self.seed_ = seed
        self.scores_ = scores
        self._set_selection(selected, np.lexsort((np.arange(n_features), -scores)))
        self.training_history_ = list(result.history)
        return self
