"""The scikit-learn feature selectors of the library.

:class:`ICLFSSelector` builds the method's settings from its parameters and
runs :func:`iclfs.chain.run`, the same chain the Kedro pipelines run
stage by stage; :class:`BaselineSelector` runs any other method of
:mod:`iclfs.baselines` through :func:`iclfs.baselines.run`, as the benchmark
and ``select`` do. Neither holds algorithm code of its own.
"""

from __future__ import annotations

import iclfs._threads  # noqa: F401  (first: the OpenMP thread policy, while torch may not be loaded)
import contextlib
import numbers
from collections.abc import Mapping

import numpy as np
import torch
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from iclfs import chain
from iclfs.method._config import SECTIONS, ParameterError, RuntimeConfig, SelectionConfig, Settings, closest
from iclfs.method._preprocessing import MIN_SAMPLES, FeatureTable, as_numeric_matrix, validate_shape
from iclfs.method._ranking import MemberHistory
from iclfs.method._runtime import resolve_device

__all__ = ["BaselineSelector", "ICLFSSelector", "EXPECTED_FAILED_CHECKS"]

#: scikit-learn estimator checks that :class:`ICLFSSelector` is known not to
#: pass, with the reason (for ``parametrize_with_checks(expected_failed_checks=...)``
#: or ``check_estimator(expected_failed_checks=...)``). Empty: with
#: ``n_features_to_select=1`` it passes every check of scikit-learn 1.9; see
#: the class docstring for the checks that only pass through a clear error.
EXPECTED_FAILED_CHECKS: dict[str, str] = {}

_SOURCE = "ICLFSSelector.fit(X)"

#: The settings ICLFSSelector sets from its own parameters, by (section, key): what to use instead, named when
#: ``settings`` repeats one.
_OWN_PARAMETERS = {
    ("training", "epochs"): "ICLFSSelector(epochs=...)",
    ("members", "epochs"): "ICLFSSelector(epochs=...)",
    ("members", "per_run"): "ICLFSSelector(members=...)",
    ("members", "carry"): "fit (one run) or partial_fit (members carried)",
    ("selection", "k"): "ICLFSSelector(n_features_to_select=...)",
    ("selection", "k_values"): "ICLFSSelector(n_features_to_select=...)",
    ("selection", "use_lgrc"): "ICLFSSelector(use_lgrc=...)",
    ("runtime", "device"): "ICLFSSelector(device=...)",
    ("runtime", "progress"): "ICLFSSelector(progress=...)",
}


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

    def _set_evidence(self, result: chain.ChainResult, settings: Settings) -> None:
        """``evidence_`` and ``stable_support_`` (docs/method.md §10)."""
        self.evidence_ = chain.evidence(result, settings)
        self.stable_support_ = self.evidence_.stable_mask()

    def _get_support_mask(self):
        check_is_fitted(self, "support_")
        return self.support_


class ICLFSSelector(_Selector):
    """Unsupervised feature selection by Inverted Contrastive Learning (ICLFS).

    The data matrix is standardized and inverted so that every feature becomes
    one training instance (its profile over the samples). Small attention +
    MLP networks, the members, are trained contrastively on masked views of
    those profiles; features are ordered by the norm of their embedding, the
    members' orders are combined, and the Laplacian-Gated Ranking Correction
    (LGRC) swaps out top-ranked features whose Laplacian score is poor. ``y``
    is never used. The method is described in ``docs/method.md`` and
    ``docs/members.md``; this class runs :func:`iclfs.chain.run`, the
    chain the Kedro pipelines run stage by stage, and gives the same selection
    for the same settings and seed.

    Parameters
    ----------
    n_features_to_select : int, float or "auto", default=50
        k, the number of features to select. An int must lie in ``1..n_features``;
        a float in (0, 1] is a fraction of the features,
        ``k = max(1, int(fraction * n_features))``; ``"auto"`` picks k from the
        members' agreement (needs ``members >= 2``; ``k_reason_`` says why).
    members : int, default=1
        Members trained per fit (``members.per_run``); 1 is the paper's single run on every sample.
    epochs : int or None, default=None
        Epochs of each member: ``training.epochs`` (100) for one member, ``members.epochs`` (25) for several;
        None keeps those defaults.
    use_lgrc : bool, default=True
        Apply the Laplacian-Gated Ranking Correction; ``False`` keeps the first
        k features of the order (the paper's "ICLFS-WL" ablation).
    random_state : int, RandomState instance or None, default=42
        Seeds every member's weights, dropout, views and samples. An int in
        ``0..2**32 - 1`` is the seed itself (the pipeline's ``seed``); ``None``
        draws a fresh seed from NumPy's global random state at every fit, and
        a ``RandomState`` draws one from that generator. The seed used is
        ``seed_``. Training on GPU may not be bit-for-bit reproducible.
    device : str, default="auto"
        ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    progress : bool, default=False
        Log the training's progress.
    settings : dict or None, default=None
        Any other setting, by section as in ``conf/base/parameters*.yml``
        (``docs/guides/configuration.md``), e.g. ``{"training":
        {"learning_rate": 1e-3}, "members": {"subsample": 0.8}, "runtime":
        {"num_threads": 1}, "laplacian": {"n_neighbors": 5}}``. Keys this class
        sets from its own parameters are refused there.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during fit; only defined when ``X`` is a
        pandas DataFrame whose column names are all strings.
    n_features_to_select_ : int
        k, the number of features selected.
    k_reason_ : str
        Why that k (``"auto"`` gives the members' agreement at every k).
    seed_ : int
        The seed of this fit's first member (see ``random_state``).
    scores_ : ndarray of shape (n_features_in_,)
        The score that orders the features, higher is better: the single run's
        ``ranking.score``, or the members' combination.
    feature_order_ : ndarray of shape (n_features_in_,)
        Feature indices, best first (ties by index), before LGRC.
    ranking_ : ndarray of shape (n_features_in_,)
        As in :class:`sklearn.feature_selection.RFE`: ``ranking_[j]`` is
        feature j's rank, 1 for every selected feature, then 2, 3, ... for
        the others in the order of ``feature_order_``.
    selected_features_ : ndarray of shape (n_features_to_select_,)
        Indices of the selected features, best first: ``X.columns[selector.selected_features_]`` are
        their names in that order.
    support_ : ndarray of shape (n_features_in_,), dtype=bool
        Mask of the selected features.
    member_ranks_ : ndarray of shape (members, n_features_in_)
        Each member's rank of every feature (1 = best; 0 where a kept member did not see it).
    selection_frequency_ : ndarray of shape (n_features_in_,)
        The fraction of the members whose first k include each feature.
    stable_support_ : ndarray of shape (n_features_in_,), dtype=bool
        The stable features: selected by at least ``members.threshold`` of the members (docs/method.md §10).
    evidence_ : Evidence
        The list's evidence: the stable set, the bound on its expected false selections or why there is none
        (``evidence_.summary(selected_features_)`` says it in one line).
    laplacian_scores_ : ndarray of shape (n_features_in_,)
        Laplacian score of every feature (lower is better; ``inf`` for constant features).
    models_ : list of torch.nn.Module
        The trained networks, on CPU, in eval mode: one per member, or with
        ``settings={"members": {"feature_blocks": m}}`` m per member, member after member.
    training_log_ : list of dict
        One dict per network and epoch: ``member``, ``block`` (0 without
        feature blocks), ``epoch``, ``loss``, ``contrastive``, ``decorrelation``, ``seconds``.
        After :meth:`partial_fit`, this call's networks only.
    history_ : MemberHistory
        :meth:`partial_fit` only: every member kept so far (their rank
        scores, seeds and ages), as the pipeline's ``member_history``.
    n_members_ : int
        :meth:`partial_fit` only: the members combined.

    With :meth:`partial_fit`, ``scores_``, ``feature_order_`` and the
    selection come from every kept member, ``member_ranks_`` has one row
    per kept member and ``selection_frequency_`` is each feature's
    age-weighted share of the members whose first k include it.

    See Also
    --------
    BaselineSelector : every other method of the library, with the same attributes.
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
    (``settings={"runtime": {"num_threads": 1}}``) is often faster than several.

    scikit-learn estimator checks (scikit-learn 1.9, estimator
    ``ICLFSSelector(n_features_to_select=1, epochs=1)``): all pass;
    none needs ``expected_failed_checks``. Two pass only because ICLFS
    refuses their data with a clear ``ValueError``, as those checks allow:
    ``check_fit2d_1sample`` (ICLFS needs at least 4 samples) and
    ``check_fit2d_1feature`` (the features are the training batch).

    Examples
    --------
    >>> from iclfs import ICLFSSelector
    >>> from iclfs.io._synthetic import make_synthetic
    >>> table = make_synthetic(n_samples=40, n_classes=2, n_informative=6,
    ...                        n_redundant=4, n_noise=30, seed=3)
    >>> selector = ICLFSSelector(n_features_to_select=5, members=2, epochs=2, device="cpu")
    >>> selector.fit_transform(table.X).shape
    (40, 5)
    >>> int((selector.ranking_ == 1).sum())
    5
    """

    def __init__(self, n_features_to_select=50, *, members=1, epochs=None, use_lgrc=True, random_state=42,
                 device="auto", progress=False, settings=None):
        self.n_features_to_select = n_features_to_select
        self.members = members
        self.epochs = epochs
        self.use_lgrc = use_lgrc
        self.random_state = random_state
        self.device = device
        self.progress = progress
        self.settings = settings

    @staticmethod
    def _auto_grid(n_features: int) -> list[int]:
        """The k ``"auto"`` chooses from: the pipelines' grid below d, else 10 %, 20 %, ..., 50 % of d."""
        grid = [k for k in SelectionConfig().k_values if k < n_features]
        return grid or sorted({max(1, round(f * n_features)) for f in (0.1, 0.2, 0.3, 0.4, 0.5)})

    def _settings(self, n_features: int, seed: int, carry: bool = False) -> Settings:
        """The method's settings from this estimator's parameters (each section validated as in the pipelines)."""
        given = {} if self.settings is None else self.settings
        if not isinstance(given, Mapping):
            raise TypeError(f"settings must be a dict of sections, e.g. {{'training': {{'learning_rate': 1e-3}}}}, "
                            f"got {type(given).__name__}")
        unknown = sorted(map(str, set(given) - set(SECTIONS)))
        if unknown:
            raise ValueError(f"settings has no section {', '.join(map(repr, unknown))}"
                             f"{closest(unknown[0], SECTIONS)}; the sections are {', '.join(SECTIONS)}")
        k = self._resolve_k(n_features)
        grid = [k] if k != "auto" else self._auto_grid(n_features)
        members = self.members
        if isinstance(members, bool) or not isinstance(members, numbers.Integral):
            raise ValueError(f"members must be an int >= 1, got {members!r}")
        if self.epochs is not None and (isinstance(self.epochs, bool) or not isinstance(self.epochs, numbers.Integral)):
            raise ValueError(f"epochs must be an int >= 1 or None, got {self.epochs!r}")
        epochs = {} if self.epochs is None else {"epochs": int(self.epochs)}
        own = {
            "training": epochs if members == 1 else {},
            "members": {"per_run": int(members), "carry": carry, **(epochs if members != 1 else {})},
            "selection": {"k": k, "k_values": grid, "use_lgrc": self.use_lgrc},
            "runtime": {"device": self.device, "progress": bool(self.progress)},
        }
        sections = {}
        try:
            for name, section in SECTIONS.items():
                options = given.get(name)
                if options is not None and not isinstance(options, Mapping):
                    raise TypeError(f"settings[{name!r}] must be a dict, got {type(options).__name__}")
                owners = sorted({_OWN_PARAMETERS[(name, key)] for key in set(options or ()) & set(own.get(name, ()))})
                sections[name] = section.from_dict(options, f"settings['{name}']", fixed=own.get(name),
                                                   fixed_by=" and ".join(owners) or "the ICLFSSelector parameter")
            return Settings(seed=seed, **sections)
        except ParameterError as err:
            raise ParameterError(_in_python(str(err))) from None

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
        for name in ("history_", "n_members_", "history_seed_", "_lists"):  # fit starts afresh: no kept members
            self.__dict__.pop(name, None)
        settings = self._settings(X.shape[1], self._resolve_seed())
        self._check_samples(X, settings)
        with _torch_rng_preserved(settings.runtime.device):
            result = chain.run(self._table(X), settings)
        self._store(result)
        self._set_evidence(result, settings)
        return self

    def partial_fit(self, X, y=None):
        """Add one run on ``X`` to the kept members and select from all of them.

        The scheduled refresh of the pipelines (``members.carry``), in
        scikit-learn's incremental convention: the first call starts the
        history (the same run :meth:`fit` makes at ``random_state``), each
        later call trains the member(s) of one more run, seeded by their
        number in the history, and selects from every member kept, each
        weighted by ``2^(-age / members.half_life)`` with age counted in calls,
        each list held to the last call's.
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
        if first:
            self.history_seed_ = self._resolve_seed()
        settings = self._settings(X.shape[1], self.history_seed_, carry=True)
        self._check_samples(X, settings)
        history = MemberHistory() if first else self.history_
        with _torch_rng_preserved(settings.runtime.device):
            result = chain.run(self._table(X), settings, history=history, previous=getattr(self, "_lists", None))
        self._store(result)
        self._set_evidence(result, settings)
        self.history_ = result.history
        self._lists = result.lists
        self.n_members_ = len(result.history.members)
        return self

    def _check_samples(self, X, settings: Settings) -> None:
        n_samples, n_neighbors = X.shape[0], settings.laplacian.n_neighbors
        if MIN_SAMPLES <= n_samples <= n_neighbors:
            raise ValueError(f"{_SOURCE}: laplacian n_neighbors={n_neighbors} needs more samples than neighbours, "
                             f"but X has {n_samples} sample(s); lower settings={{'laplacian': {{'n_neighbors': ...}}}} "
                             "or add samples.")

    def _table(self, X) -> FeatureTable:
        return FeatureTable(X=X, feature_names=getattr(self, "feature_names_in_", None), source=_SOURCE)

    def _store(self, result: chain.ChainResult) -> None:
        """The fitted attributes of one run of the chain."""
        n_features = result.prepared.standardized.shape[1]
        ranking = result.ranking
        self.n_features_to_select_ = int(result.k)
        self.k_reason_ = result.k_reason
        self.seed_ = int(result.continuation.seed)
        self.scores_ = ranking.scores
        self.feature_order_ = ranking.order
        self._set_selection(result.selected, ranking.order)
        self.member_ranks_ = np.array([_ranks_of(order, n_features) for order in ranking.member_orders])
        self.selection_frequency_ = ranking.selection_frequency.get(result.k, np.ones(n_features))
        self.laplacian_scores_ = result.laplacian_scores
        trainings = result.trained.trainings
        self.models_ = [r.model.eval() for m in trainings for r in m.results]
        self.training_log_ = [{"member": m.plan.index, "block": b, **row} for m in trainings
                              for b, r in enumerate(m.results) for row in r.history]


def _in_python(message: str) -> str:
    """A settings message as the selector's user writes the fix: its parameters by their names in Python
    (``members.per_run`` is ``ICLFSSelector(members=...)``), every other key as ``settings={...}``."""
    import re

    def spelled(found: re.Match) -> str:
        section, key = found.group(1), found.group(2)
        own = _OWN_PARAMETERS.get((section, key))
        return own if own else f"settings={{'{section}': {{'{key}': ...}}}}"

    names = "|".join(SECTIONS)
    message = re.sub(rf"\bparameter ({names})\.(\w+) = ", lambda m: f"{spelled(m)}: the value ", message)
    return re.sub(rf"(?<![\w'])({names})\.(\w+)\b", spelled, message)


def _ranks_of(order: np.ndarray, n_features: int) -> np.ndarray:
    """Each feature's rank (1 = best) in ``order``; 0 for a feature a kept member did not see."""
    ranks = np.zeros(n_features, dtype=np.int64)
    ranks[np.asarray(order, dtype=np.int64)] = np.arange(1, len(order) + 1)
    return ranks


class BaselineSelector(_Selector):
    """Unsupervised feature selection by another method of the library: LS, SPEC, MCFS, NDFS, CAE, LS-CAE,
    variance or dispersion.

    The same code the benchmark measures and ``select`` runs with
    ``selection.method`` (:func:`iclfs.baselines.run`), on the data
    standardized as ICLFS standardizes it (zero mean, unit variance per
    feature); variance and dispersion on ``X`` as given, before
    standardization. ``y`` is never used.

    Parameters
    ----------
    method : str, default="ls"
        A method of :data:`iclfs.baselines.REGISTRY` that is not a reference point: ``ls``, ``spec``, ``mcfs``,
        ``ndfs``, ``cae``, ``lscae``, ``variance``, ``dispersion`` (``docs/guides/methods.md``).
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
    feature_order_ : ndarray of shape (n_features_in_,)
        Feature indices, best first by ``scores_`` (ties by index), as :class:`ICLFSSelector`'s.
    ranking_ : ndarray of shape (n_features_in_,)
        RFE's convention: 1 for the selected features, then 2, 3, ... in the order of ``feature_order_``.
    selected_features_ : ndarray of shape (n_features_to_select_,)
        The selected features' indices.
    support_ : ndarray of shape (n_features_in_,), dtype=bool
    training_log_ : list of dict
        CAE and LS-CAE: one row per epoch; empty for the others.

    Examples
    --------
    >>> from iclfs._selectors import BaselineSelector
    >>> from iclfs.io._synthetic import make_synthetic
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
        from iclfs.baselines import REGISTRY

        entry = REGISTRY.get(self.method)
        tags.non_deterministic = entry is not None and entry.neural and self.random_state is None
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

        if self.method == "iclfs" or self.method not in baselines.METHODS:
            known = [m for m in baselines.METHODS if m != "iclfs"]
            hint = "" if self.method == "iclfs" else closest(str(self.method), known)
            raise ValueError(f"method must be one of {', '.join(known)} (ICLFS is ICLFSSelector), got "
                             f"{self.method!r}{hint}")
        if self.n_features_to_select == "auto":
            raise ValueError("n_features_to_select='auto' chooses k from ICLFS members' agreement; "
                             f"BaselineSelector({self.method!r}) needs an int or a fraction: e.g. "
                             f"BaselineSelector({self.method!r}, 50) or BaselineSelector({self.method!r}, 0.1)")
        X = self._validate_X(X)
        source = f"BaselineSelector({self.method!r}).fit(X)"
        validate_shape(X, source=source)  # too few samples or features: said before any parameter is checked
        k = self._resolve_k(X.shape[1])
        # Only MCFS and NDFS use n_clusters; the other methods ignore it, as before the chain ran them
        # (scikit-learn's estimator checks set n_clusters=1 on any estimator that has it).
        n_clusters = self.n_clusters if baselines.REGISTRY[self.method].needs_clusters else None
        if n_clusters is not None and (isinstance(n_clusters, bool) or not isinstance(n_clusters, numbers.Integral)
                                       or not 2 <= n_clusters <= X.shape[0]):
            raise ValueError(f"n_clusters must be an int in 2..{X.shape[0]} (the samples), got {n_clusters!r}")
        baselines.check_method(self.method, n_clusters, selector=True)
        baselines.options_of(self.method, self.options)
        settings = Settings(seed=self._resolve_seed(),
                            runtime=RuntimeConfig(device=self.device, progress=False, num_threads=self.num_threads),
                            selection=SelectionConfig(k=k, k_values=(k,), method=self.method,
                                                      n_clusters=n_clusters))
        table = FeatureTable(X=X, feature_names=getattr(self, "feature_names_in_", None), source=source)
        result = chain.run(table, settings, options=self.options)
        self.n_features_to_select_ = int(k)
        self.seed_ = int(result.continuation.seed)
        self.scores_ = result.ranking.scores
        self.feature_order_ = result.ranking.order
        self._set_selection(result.selected, result.ranking.order)
        self._set_evidence(result, settings)
        self.training_log_ = list(result.trained.log)
        return self
