"""Every parameter section of ICLFS as one typed, validated dataclass.

A section is the same thing everywhere: ``conf/base/parameters_<section>.yml``
in the Kedro project, the keyword arguments of
:class:`~iclfs._selectors.ICLFSSelector`, and the ``--set`` options of the
benchmark command all build these classes, so one check, with one message,
guards every entry point::

    parameter selection.quantile = 1.2 is invalid: expected a number in [0, 1]

Each field declares its check (``metadata["check"]``); :class:`Section` runs
them when an instance is made. :class:`Settings` holds every section plus the
shared ``seed`` and reads or writes the whole Kedro ``parameters`` dict.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import logging
import math
import numbers
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

T = TypeVar("T", bound="Section")
LOGGER = logging.getLogger(__name__)

#: A check returns None when the value is fine, else what was expected.
Check = Callable[[Any], "str | None"]


class ParameterError(ValueError):
    """A parameter has a value it may not have; the message names ``section.key``."""


# -- checks -------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def integer(low: int = 1, high: int | None = None) -> Check:
    expected = f"an integer >= {low}" if high is None else f"an integer in {low}..{high:,}"

    def check(value: Any) -> str | None:
        return None if _is_int(value) and value >= low and (high is None or value <= high) else expected
    return check


#: Sane upper bounds: a typo of a few zeros must not start a job of years.
MAX_EPOCHS = 100_000
MAX_MEMBERS = 1_000


def number(low: float, high: float = float("inf"), low_open: bool = False, high_open: bool = False,
           finite: bool = True) -> Check:
    """A real number in the range; ``finite`` (the default) also refuses ``.inf`` and NaN, which every
    later computation with the value would have to survive."""
    left, right = "(" if low_open else "[", ")" if high_open else "]"
    if high == float("inf"):
        expected = f"a number > {low:g}" if low_open else f"a number >= {low:g}"
    else:
        expected = f"a number in {left}{low:g}, {high:g}{right}"
    if finite and high == float("inf"):  # a bounded range already leaves .inf out
        expected = f"a finite number{expected[len('a number'):]}"
    elif not finite:
        expected += " (.inf allowed)"

    def check(value: Any) -> str | None:
        if not _is_number(value) or math.isnan(value) or (finite and not math.isfinite(value)):
            return expected
        above = value > low if low_open else value >= low
        below = value < high if high_open else value <= high
        return None if above and below else expected
    return check


def one_of(*choices: Any) -> Check:
    def check(value: Any) -> str | None:
        return None if value in choices else "one of " + ", ".join(map(str, choices))
    return check


def boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def optional(inner: Check) -> Check:
    def check(value: Any) -> str | None:
        if value is None:
            return None
        problem = inner(value)
        return None if problem is None else f"null or {problem}"
    return check


def k_list(value: Any) -> str | None:
    if not isinstance(value, (list, tuple)) or not value or not all(_is_int(k) and k >= 1 for k in value):
        return "a non-empty list of positive integers"
    if len(set(value)) != len(value):
        return "a list without repeated k"
    return None


def method_name(value: Any) -> str | None:
    """A method's key (its membership is the registry's to check: :func:`iclfs.baselines.check_method`)."""
    return None if isinstance(value, str) and value.isidentifier() and value == value.lower() else \
        "a method's key in lower case, e.g. iclfs or ndfs"


def k_or_auto(value: Any) -> str | None:
    return None if value == "auto" or (_is_int(value) and value >= 1) else "a positive integer or 'auto'"


def closest(word: str, choices: Any) -> str:
    """`` (did you mean 'x'?)`` for the choice nearest ``word``, or nothing when none is near."""
    found = difflib.get_close_matches(str(word), sorted(map(str, choices)), n=1, cutoff=0.6)
    return f" (did you mean {found[0]!r}?)" if found else ""


def param(default: Any, check: Check, doc: str) -> Any:
    """A section field: its default, its check and one line of documentation."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"check": check, "doc": doc})
    return field(default=default, metadata={"check": check, "doc": doc})


# -- sections -----------------------------------------------------------------


class Section:
    """Base of every parameter section: runs the field checks, builds from a dict."""

    SECTION: ClassVar[str] = ""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, list):  # frozen and hashable: YAML lists become tuples
                object.__setattr__(self, f.name, tuple(value))
                value = getattr(self, f.name)
            problem = f.metadata["check"](value)
            if problem is not None:
                raise ParameterError(f"parameter {self.SECTION}.{f.name} = {value!r} is invalid: expected {problem}")

    @classmethod
    def from_dict(cls: type[T], options: Mapping[str, Any] | None, name: str | None = None,
                  fixed: Mapping[str, Any] | None = None, fixed_by: str = "the caller") -> T:
        """``cls(**options, **fixed)``, refusing keys ``cls`` does not know and keys ``fixed`` owns.

        Parameters
        ----------
        options : mapping or None
            The user's keys; None means none (all defaults).
        name : str, optional
            Where ``options`` came from, for messages; the section name by default.
        fixed : mapping, optional
            Keys the caller sets, which ``options`` may not repeat.
        fixed_by : str
            Who sets ``fixed``, named in the error for a key given twice.
        """
        name = name or cls.SECTION
        options = {} if options is None else options
        fixed = {} if fixed is None else dict(fixed)
        if not isinstance(options, Mapping):
            raise TypeError(f"{name} must be a dict or None, got {type(options).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(map(str, set(options) - known))
        if unknown:
            hints = [f"{name}.{key}" + closest(key, known - set(fixed)) for key in unknown]
            raise ParameterError(
                f"unknown parameter(s) {', '.join(hints)}; known keys of {name}: "
                f"{', '.join(sorted(known - set(fixed)))}"
            )
        duplicated = sorted(set(options) & set(fixed))
        if duplicated:
            raise ParameterError(f"{name} must not set {', '.join(duplicated)}: use {fixed_by}")
        return cls(**dict(options), **fixed)

    def to_dict(self) -> dict[str, Any]:
        """The section as plain YAML-ready values (tuples as lists)."""
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in fields(self)}

    def replace(self: T, **changes: Any) -> T:
        return dataclasses.replace(self, **changes)


SCHEDULES = ("fast", "paper")
REGIMES = ("auto", "small", "large")


@dataclass(frozen=True)
class TrainingConfig(Section):
    """The network's hyperparameters and its training schedule (docs/method.md §3-4)."""

    SECTION: ClassVar[str] = "training"

    epochs: int = param(100, integer(1, MAX_EPOCHS), "epochs of a single run (one optimizer step each)")
    learning_rate: float = param(1e-3, number(0, low_open=True), "Adam learning rate")
    weight_decay: float = param(1e-4, number(0), "coupled L2 (plain Adam)")
    temperature: float = param(0.05, number(0, low_open=True), "tau of the InfoNCE logits")
    schedule: str = param("fast", one_of(*SCHEDULES),
                          "fast: anchor and negative embedded once per epoch; paper: the literal loop")
    regime: str = param("auto", one_of(*REGIMES), "layer sizes (method.md §3); auto decides from n")
    dropout: float = param(0.1, number(0, 1, high_open=True), "encoder dropout")
    use_attention: bool = param(True, boolean, "false: the ablation without attention")
    use_decorrelation: bool = param(True, boolean, "false: the ablation without decorrelation")


PRECISIONS = ("auto", "fp32", "tf32", "bf16")


@dataclass(frozen=True)
class RuntimeConfig(Section):
    """Where and how training runs. None of these changes what is computed beyond float rounding."""

    SECTION: ClassVar[str] = "runtime"

    device: str = param("auto", lambda v: None if isinstance(v, str) and v else "a device name",
                        "auto (cuda if present, else cpu) | cpu | cuda | cuda:N")
    precision: str = param("auto", one_of(*PRECISIONS),
                           "auto (fp32; tf32 for fast on CUDA) | fp32 | tf32 | bf16 (CUDA only)")
    num_threads: int | None = param(None, optional(integer(1)),
                                    "torch threads; null: torch's count capped at the CPUs this process may use")
    check_memory: bool = param(True, boolean, "stop before training if the estimated memory will not fit")
    progress: bool = param(True, boolean, "log the training's progress: a line every tenth of the epochs, and its "
                                          "time")


POSITIVE_VIEWS = ("structured", "random")
STREAMS = ("vectorized", "published")


@dataclass(frozen=True)
class ViewConfig(Section):
    """Keep ratios of the masked views and the random stream that draws them (method.md §2)."""

    SECTION: ClassVar[str] = "views"

    light_keep: float = param(0.90, number(0, 1, low_open=True), "m1 keeps max(1, round(ratio n)) positions")
    heavy_keep: float = param(0.60, number(0, 1, low_open=True), "m2")
    pair_keep: float = param(0.50, number(0, 1, low_open=True), "m3/m4 each keep round(ratio n)")
    pair_overlap: float = param(0.10, number(0, 1), "of which round(ratio keep) are shared")
    positives: str = param("structured", one_of(*POSITIVE_VIEWS),
                           "structured (the four views) | random (one random view: ablation WLDAR)")
    stream: str = param("vectorized", one_of(*STREAMS),
                        "vectorized | published (the published code's draws, replayed: fidelity checks)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.stream == "published" and self.positives != "structured":
            raise ParameterError(
                "views.stream 'published' replays the published code, which draws only the four structured "
                f"positives; views.positives {self.positives!r} needs stream 'vectorized'")


SCORE_NAMES = ("z_norm", "h_norm", "weighted_sum", "harmonic")


@dataclass(frozen=True)
class RankingConfig(Section):
    """Which embedding score orders the features, and how (method.md §5)."""

    SECTION: ClassVar[str] = "ranking"

    score: str = param("z_norm", one_of(*SCORE_NAMES),
                       "z_norm | h_norm | weighted_sum | harmonic (the paper's score and its ablation's)")


@dataclass(frozen=True)
class LaplacianConfig(Section):
    """The sample graph of the Laplacian score (method.md §6)."""

    SECTION: ClassVar[str] = "laplacian"

    n_neighbors: int = param(3, integer(1), "kNN graph over samples, cosine distance")


@dataclass(frozen=True)
class SelectionConfig(Section):
    """How many features, and the Laplacian-gated correction that picks them (method.md §7)."""

    SECTION: ClassVar[str] = "selection"

    k: int | str = param(50, k_or_auto, "the size of the list handed on; auto: chosen from the members' agreement")
    k_values: tuple[int, ...] = param([50, 100, 150, 200, 250, 300], k_list,
                                      "every k selected (and evaluated when labels exist)")
    use_lgrc: bool = param(True, boolean, "false: the first k of the ranking (ablation WL)")
    alpha: float = param(1.5, number(1), "LGRC pool size p = min(d, round(alpha k))")
    quantile: float = param(0.75, number(0, 1), "LGRC gate: this quantile of the finite Laplacian scores")
    method: str = param("iclfs", method_name, "iclfs, or another method of iclfs.baselines: ls, spec, mcfs, ndfs, "
                                              "cae, lscae, variance, dispersion")
    n_clusters: int | None = param(None, optional(integer(2)), "the number of clusters MCFS and NDFS are told")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.k != "auto" and self.k not in self.k_values:
            grid = sorted({*self.k_values, self.k}) if isinstance(self.k, int) else list(self.k_values)
            raise ParameterError(f"parameter selection.k = {self.k!r} is invalid: expected 'auto' or one of "
                                 f"selection.k_values {list(self.k_values)}. To allow it, add it to the grid: "
                                 f"--params selection.k_values={str(grid).replace(' ', '')} (or selection.k_values "
                                 "in conf/local/parameters.yml)")


@dataclass(frozen=True)
class MembersConfig(Section):
    """The members: the networks a run trains and a data source keeps (docs/members.md).

    A run trains ``per_run`` members (one, the paper's single run, by
    default). With ``carry`` the data source keeps them in its member history,
    and each run orders the features by every member kept: their mean rank,
    each weighted ``2^(-age / half_life)``, fused with the rank of their mean
    Laplacian scores by ``laplacian_weight``.
    """

    SECTION: ClassVar[str] = "members"

    per_run: int = param(1, integer(1, MAX_MEMBERS),
                         "members a run trains; 1: the paper's single run (training.epochs, every sample)")
    epochs: int = param(25, integer(1, MAX_EPOCHS), "epochs of each member when per_run >= 2")
    subsample: float = param(0.5, number(0, 1, low_open=True), "share of the samples each member sees when "
                                                                "per_run >= 2")
    sampling: str = param("random", one_of("random", "complementary"),
                          "random: each member its own subsample; complementary: members in pairs on two "
                          "disjoint halves of the samples (per_run even; subsample is then 0.5)")
    threshold: float = param(0.9, number(0.5, 1, low_open=True),
                             "pi: a feature selected by at least this share of the members is stable, and the "
                             "bound on false selections is given for that set (docs/method.md §10)")
    feature_blocks: int = param(1, integer(1, MAX_MEMBERS), "blocks each member deals its features into, one "
                                                            "network per block (1: one network on every feature)")
    carry: bool = param(True, boolean, "keep this run's members in the data source's history and select from all")
    reset: bool = param(False, boolean, "true: this run starts the data source's history afresh")
    kept: int = param(64, integer(1, MAX_MEMBERS), "the newest members a data source keeps")
    half_life: float = param(math.inf, number(0, low_open=True, finite=False),
                             "a kept member's weight halves every this many runs (.inf: never)")
    laplacian_weight: float = param(0.5, number(0, 1), "weight of the Laplacian-score rank in the order of two "
                                                       "or more kept members (0: none)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sampling == "complementary" and self.per_run % 2:
            raise ParameterError(f"parameter members.sampling 'complementary' trains members in pairs: it needs "
                                 f"members.per_run even, got {self.per_run}")


@dataclass(frozen=True)
class EvaluationConfig(Section):
    """The k-means protocol, when labels exist (method.md §8)."""

    SECTION: ClassVar[str] = "evaluation"

    n_runs: int = param(20, integer(1, MAX_MEMBERS), "k-means runs per k, random_state = seed + r")


SECTIONS: dict[str, type[Section]] = {
    cls.SECTION: cls for cls in (TrainingConfig, RuntimeConfig, ViewConfig, RankingConfig, LaplacianConfig,
                                 SelectionConfig, MembersConfig, EvaluationConfig)
}


#: Keys of an earlier version that were renamed, ``old: new``: refused, naming the new name (their one version of
#: working under the old name has passed).
RENAMED = {
    "consensus.members": "members.per_run",
    "consensus.member_epochs": "members.epochs",
    "consensus.subsample": "members.subsample",
    "consensus.feature_blocks": "members.feature_blocks",
    "history.carry": "members.carry",
    "history.reset": "members.reset",
    "history.max_members": "members.kept",
    "history.half_life": "members.half_life",
    "history.laplacian_weight": "members.laplacian_weight",
}
#: Keys of an earlier version that are no longer settings, with the value the method now always uses: the
#: alternatives lost their studies (docs/members.md), or the value is the paper's. Refused, saying so.
REMOVED = {
    "consensus.combine": ("mean_rank", "the mean rank won the study of members"),
    "consensus.laplacian_weight": (0.0, "a run's own members are combined without the Laplacian score; "
                                        "members.laplacian_weight weighs it once members of two runs are kept"),
    "history.rule": ("mean_rank", "the mean rank won the refresh study's first round"),
    "history.hold": (3.0, "the refresh study's second round chose 3"),
    "history.admit": (2.0, "the refresh study's third round chose 2"),
    "history.laplacian": ("carried", "the refresh study's second round chose the members' mean Laplacian scores"),
    "history.laplacian_fusion": ("reciprocal_rank", "the refresh study's fifth round chose reciprocal rank fusion"),
    "training.regime_threshold": (1000, "the paper's rule: the large regime from 1000 samples"),
    "training.leaky_slope": (0.2, "the paper's network"),
    "training.bn_momentum": (0.01, "the paper's network"),
    "training.decorrelation_weight": (None, "the paper's lambda of each regime (training.use_decorrelation "
                                            "false is the ablation)"),
    "views.random_keep": (0.5, "the random view's keep ratio of the ablation"),
    "selection.auto_frequency": (0.5, "selection.k auto's agreement threshold"),
    "baselines.cae.mean_max_target": (0.99, "the reference implementation's"),
    "baselines.cae.stop_mean_max": (0.998, "the reference implementation's"),
    "baselines.lscae.lr_decay": (0.1, "the reference implementation's"),
    "baselines.lscae.lr_step": (100, "the reference implementation's"),
    "baselines.lscae.min_decoder_lr": (1e-5, "the reference implementation's"),
}
#: Sections of an earlier version whose keys all moved or went.
OLD_SECTIONS = {"consensus": "members", "history": "members"}


def refuse_old_names(names: Collection[str]) -> None:
    """Raise :class:`ParameterError` for the first of the dotted ``names`` an earlier version used, in one line
    naming what replaced it (:data:`RENAMED`, :data:`REMOVED`, :data:`OLD_SECTIONS`)."""
    for name in sorted(names):
        if name in RENAMED:
            raise ParameterError(f"parameter {name} is now {RENAMED[name]}: rename it where it is set "
                                 "(conf/local/parameters*.yml or --params)")
        if name in REMOVED:
            fixed, why = REMOVED[name]
            raise ParameterError(f"parameter {name} is no longer a setting: the method always uses {fixed!r} "
                                 f"({why}). Remove it; benchmarks/ keeps the study's alternatives")
    for name in sorted(names):
        section = name.split(".")[0]
        if section in OLD_SECTIONS:
            raise ParameterError(f"parameter {name}: the section {section} is gone, its settings are "
                                 f"{OLD_SECTIONS[section]}.* (docs/guides/configuration.md). Remove it")


def dotted_names(tree: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Every leaf of a nested parameters dict as a dotted name: ``{"a": {"b": 1}}`` -> ``["a.b"]``."""
    names = []
    for key, value in tree.items():
        name = f"{prefix}{key}"
        names += dotted_names(value, f"{name}.") if isinstance(value, Mapping) and value else [name]
    return names


@dataclass(frozen=True)
class Settings:
    """Every section and the shared seed: what one run of the method is told."""

    seed: int = 42
    training: TrainingConfig = field(default_factory=TrainingConfig)
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)
    views: ViewConfig = field(default_factory=ViewConfig)
    ranking: RankingConfig = field(default_factory=RankingConfig)
    laplacian: LaplacianConfig = field(default_factory=LaplacianConfig)
    selection: SelectionConfig = field(default_factory=SelectionConfig)
    members: MembersConfig = field(default_factory=MembersConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)

    def __post_init__(self) -> None:
        if not _is_int(self.seed) or not 0 <= self.seed < 2**32:
            raise ParameterError(f"parameter seed = {self.seed!r} is invalid: expected an integer in 0..2**32 - 1")
        if self.views.stream == "published" and self.members.per_run > 1:
            raise ParameterError("views.stream 'published' replays the paper's single run; it needs "
                                 "members.per_run 1")
        if self.views.stream == "published" and self.members.feature_blocks > 1:
            raise ParameterError("views.stream 'published' replays the paper's single run; it needs "
                                 "members.feature_blocks 1")
        if self.selection.k == "auto" and self.selection.method != "iclfs":
            raise ParameterError(f"selection.k 'auto' chooses k from ICLFS members' agreement; selection.method "
                                 f"{self.selection.method!r} needs a number (selection.k: 50)")
        if self.selection.k == "auto" and self.members.per_run < 2:
            raise ParameterError("selection.k 'auto' chooses k from the members' agreement; it needs "
                                 "members.per_run 2 or more (or give selection.k a number)")

    @classmethod
    def from_parameters(cls, parameters: Mapping[str, Any]) -> Settings:
        """Every section from Kedro's ``parameters`` dict; sections it lacks take their defaults.

        Keys of an earlier version are refused, naming their new name (:func:`refuse_old_names`).
        Keys that are not sections (``benchmark``, ``data_source``) are left to their own readers.
        """
        refuse_old_names(dotted_names(parameters))
        sections = {name: section.from_dict(parameters.get(name)) for name, section in SECTIONS.items()}
        return cls(seed=parameters.get("seed", 42), **sections)

    def to_parameters(self) -> dict[str, Any]:
        return {"seed": self.seed, **{name: getattr(self, name).to_dict() for name in SECTIONS}}

    def with_overrides(self, text: str | None) -> Settings:
        """These settings with overrides as ``--params`` takes them, ``"selection.use_lgrc=false,training.epochs=5"``.

        Values are read as YAML; a list stays whole (``selection.k_values=[50,100]``). Keys of an earlier
        version are refused as :meth:`from_parameters` refuses them.
        """
        parameters = self.to_parameters()
        overrides = parse_overrides(text)
        refuse_old_names(overrides)
        for name, value in overrides.items():
            section, _, key = name.partition(".")
            if name == "seed":
                parameters["seed"] = value
            elif section not in SECTIONS or key not in parameters[section]:
                names = ["seed", *(f"{s}.{k}" for s in SECTIONS for k in parameters[s])]
                raise ParameterError(f"unknown parameter {name!r}{closest(name, names)}; known: {', '.join(names)}")
            else:
                parameters[section][key] = value
        return Settings.from_parameters(parameters)


def split_overrides(text: str | None) -> list[str]:
    """``"a.b=1,c.d=[1,2]"`` -> ``["a.b=1", "c.d=[1,2]"]``: split at the commas outside brackets."""
    items, depth, current = [], 0, ""
    for char in text or "":
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    return [*items, current]


def parse_overrides(text: str | None) -> dict[str, Any]:
    """``"a.b=1,c.d=[1,2]"`` -> ``{"a.b": 1, "c.d": [1, 2]}`` (values as YAML, commas inside brackets kept)."""
    import yaml  # here, not at the top: the method core imports with numpy, scipy and torch alone

    out: dict[str, Any] = {}
    for item in split_overrides(text):
        if not item.strip():
            continue
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise ParameterError(f"override {item!r} is not key=value")
        try:
            out[name.strip()] = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError as err:
            raise ParameterError(f"the value of {name.strip()!r} is not valid YAML ({raw!r})") from err
    return out


def canonical(overrides: Mapping[str, Any]) -> str:
    """Overrides in one stable text form, sorted (names a variant)."""
    return ",".join(f"{key}={json.dumps(value)}" for key, value in sorted(overrides.items()))
