"""Evidence for a list: each feature's selection probability over the members, the stable set, and its error bound.

Stability selection (N. Meinshausen and P. Bühlmann, "Stability selection",
JRSS-B 72(4), 2010) reads many fits on half-samples as one: a feature's
**selection probability** is the share of the members whose first q include
it (q = the list's k), and the **stable set** at threshold π is the features
selected by at least a share π of them. It bounds the expected number V of
false selections in the stable set:

    E[V] <= q^2 / ((2 pi - 1) p),   p the number of features, pi in (1/2, 1].

**Meinshausen and Bühlmann's bound** (their Theorem 1) assumes that

- each member sees a random half of the samples (``members.subsample`` 0.5),
  and the probability is the one over every half-sample: a few members only
  estimate it (steps of 1 / M), so below :data:`MB_MIN_MEMBERS` members no
  bound is given;
- the noise features' selections are exchangeable (each noise feature is as
  likely to be selected as any other), and the selection does no worse than
  random guessing (a noise feature is selected no more often than q / p).

**Complementary pairs** (R. D. Shah and R. J. Samworth, "Variable selection
with error control: another look at stability selection", JRSS-B 75(1),
2013, Theorem 1): when the members come in B pairs, each pair trained on two
disjoint halves of the samples (``members.sampling: complementary``), then
for every B >= 1 and π in (1/2, 1],

    E|S_pi ∩ L_theta| <= theta / (2 pi - 1) E|S_half ∩ L_theta| <= theta q / (2 pi - 1),

where L_theta is the set of features a member on a half-sample selects with
probability at most theta, and S_half one member's selection. With theta =
q / p this is the same number as above, but it needs neither exchangeability
nor many members, and it holds for the empirical share of the 2B members,
not only its limit. It reads as a bound on false selections where every
noise feature is selected no more often than random guessing would (q / p);
a noise feature that the members favour (a noisy feature of large variance,
say) is outside L_theta and outside the bound. Shah and Samworth's tighter
bounds (their Theorems 2 and 3) also assume the distribution of the members'
selection shares is unimodal or r-concave; nothing in a run can check that,
so they are not used.

Either bound is undefined for π <= 1/2, and a bound of at least the stable
set's size says nothing (it "does not bite"); :class:`Evidence` says which.

Everything here is numpy only; a run's members' probabilities come from
:class:`iclfs.method._ranking.Ranking` ``frequency`` at the list's k.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ._config import MembersConfig
from ._ranking import Ranking

__all__ = ["COMPLEMENTARY", "MB_MIN_MEMBERS", "MEINSHAUSEN_BUHLMANN", "STABLE_MIN", "THRESHOLD", "Evidence",
           "complementary_pairs_bound", "evidence", "list_evidence", "meinshausen_buhlmann_bound", "run_evidence",
           "summary_line"]

#: The default threshold π: a feature selected by at least 90 % of the members is stable.
THRESHOLD = 0.9
#: Below this many members, Meinshausen and Bühlmann's bound is not given: their probability is the limit over
#: every half-sample, and M members estimate it in steps of 1 / M.
MB_MIN_MEMBERS = 10
#: A stable set smaller than this makes no claim: the list is ranked as without evidence (issue 60's fallback).
STABLE_MIN = 5

MEINSHAUSEN_BUHLMANN = "Meinshausen-Bühlmann"
COMPLEMENTARY = "complementary pairs"


def _check_sizes(q: int, p: int, threshold: float) -> None:
    if not 1 <= q <= p:
        raise ValueError(f"the bound needs 1 <= q <= p, got q={q} of p={p} features")
    if not 0 <= threshold <= 1:
        raise ValueError(f"the threshold pi is a share in [0, 1], got {threshold!r}")


def meinshausen_buhlmann_bound(q: int, p: int, threshold: float) -> float:
    """Meinshausen and Bühlmann's bound on the expected false selections in the stable set at ``threshold``.

    ``q^2 / ((2 threshold - 1) p)``; ``inf`` for ``threshold <= 1/2``, where it is undefined.
    Its assumptions are the module docstring's.
    """
    _check_sizes(q, p, threshold)
    if threshold <= 0.5:
        return math.inf
    return q * q / ((2.0 * threshold - 1.0) * p)


def complementary_pairs_bound(q: int, p: int, threshold: float, pairs: int) -> float:
    """Shah and Samworth's Theorem 1 bound with theta = q / p, for ``pairs`` complementary pairs of members.

    ``theta q / (2 threshold - 1)``: the same number as
    :func:`meinshausen_buhlmann_bound`, under weaker assumptions (module
    docstring). ``inf`` for ``threshold <= 1/2`` or no pair.
    """
    _check_sizes(q, p, threshold)
    if threshold <= 0.5 or pairs < 1:
        return math.inf
    theta = q / p
    return theta * q / (2.0 * threshold - 1.0)


@dataclass(frozen=True)
class Evidence:
    """The evidence for one list: selection probabilities, the stable set and its bound.

    Attributes
    ----------
    selection_frequency : ndarray of shape (d,)
        Each feature's selection frequency, the estimate of its selection probability: the (weighted) share of
        the members whose first ``q`` include it.
    threshold : float
        π: a feature is stable when its selection frequency is at least this.
    stable : ndarray of shape (s,)
        The stable features' indices, by selection frequency (highest first), ties by index.
    members : int
        How many members the probabilities rest on (0: a deterministic method, no evidence).
    q : int
        The features each member selects: the list's k.
    bound : float or None
        The bound on the expected false selections in the stable set; None where none applies (``reason``).
    kind : str or None
        The bound's theorem: :data:`COMPLEMENTARY` or :data:`MEINSHAUSEN_BUHLMANN`; None without a bound.
    reason : str or None
        Why there is no bound, or why it says nothing; None when it bites.
    """

    selection_frequency: np.ndarray
    threshold: float
    stable: np.ndarray
    members: int
    q: int
    bound: float | None
    kind: str | None
    reason: str | None

    @property
    def n_features(self) -> int:
        return int(len(self.selection_frequency))

    @property
    def claims(self) -> bool:
        """Whether the list may claim evidence: a bound that bites on a stable set of :data:`STABLE_MIN` or more."""
        return self.bound is not None and self.reason is None and len(self.stable) >= STABLE_MIN

    def stable_mask(self) -> np.ndarray:
        """(d,) boolean: which features are stable."""
        mask = np.zeros(self.n_features, dtype=bool)
        mask[self.stable] = True
        return mask

    def summary(self, listed: Sequence[int]) -> str:
        """One line for the run's summary about the ``listed`` features (column indices): :func:`summary_line`."""
        listed = np.asarray(listed, dtype=np.int64)
        return summary_line(self.as_dict(), int(self.stable_mask()[listed].sum()), len(listed))

    def as_dict(self, feature_names: Sequence[str] | None = None) -> dict:
        """The evidence for JSON: the stable features (by name with ``feature_names``), the bound and its kind."""
        stable = [int(j) for j in self.stable] if feature_names is None else [str(feature_names[j])
                                                                              for j in self.stable]
        return {"members": self.members, "q": self.q, "threshold": self.threshold, "features": self.n_features,
                "stable": stable, "stable_count": len(stable), "bound": self.bound, "bound_kind": self.kind,
                "no_bound_reason": self.reason, "claims": self.claims}


def summary_line(facts: Mapping, stable_listed: int, listed: int) -> str:
    """The run summary's line on the evidence, from :meth:`Evidence.as_dict` (as a run's artifacts keep it).

    "of the 50 listed, 12 are selected by >= 90 % of 24 members; expected false selections among them <= 0.4
    (complementary pairs)"; or the same with why there is no bound; or, below :data:`STABLE_MIN` stable features,
    that the list claims no evidence; or why there are no probabilities at all.

    Parameters
    ----------
    facts : mapping
        :meth:`Evidence.as_dict`.
    stable_listed : int
        How many of the listed features are stable.
    listed : int
        How many features the list holds.
    """
    members = int(facts["members"])
    if members == 0:
        return "no members: this method is deterministic, so the list has no selection probabilities"
    if members == 1:
        return ("one member: the list is one run's, with no selection probabilities to bound "
                "(members.per_run 2 or more gives them)")
    share = f"{facts['threshold']:.0%}".replace("%", " %")
    head = f"of the {listed} listed, {stable_listed} are selected by >= {share} of {members} members"
    if facts["stable_count"] < STABLE_MIN:
        return (f"{head}; fewer than {STABLE_MIN} stable features: no evidence is claimed, the list is ranked as "
                "without it")
    if facts["bound"] is None or facts["no_bound_reason"] is not None:
        return f"{head}; no bound on false selections: {facts['no_bound_reason']}"
    return f"{head}; expected false selections among them <= {facts['bound']:.2g} ({facts['bound_kind']})"


def evidence(selection_frequency: np.ndarray, q: int, members: int, threshold: float = THRESHOLD,
             complementary: bool = False, half_samples: bool = True, caveat: str | None = None) -> Evidence:
    """The stable set of ``selection_frequency`` at ``threshold`` and the bound that applies to it.

    Parameters
    ----------
    selection_frequency : array of shape (d,)
        Each feature's share of the ``members`` that select it (each selects its first ``q``): the estimate of its
        selection probability.
    q : int
        The features each member selects (the list's k).
    members : int
        How many members the probability rests on; 0 for a method without members (no stable set, no bound).
    threshold : float, default=THRESHOLD
        π.
    complementary : bool
        The members are complementary pairs of half-samples (Shah and Samworth's bound applies).
    half_samples : bool
        Each member saw a random half of the samples (Meinshausen and Bühlmann's bound needs it).
    caveat : str, optional
        Why no bound applies whatever the members (the members span several tables, say); None: none.

    Returns
    -------
    Evidence
    """
    probability = np.asarray(selection_frequency, dtype=np.float64)
    if probability.ndim != 1:
        raise ValueError(f"selection probabilities are one per feature, shape (d,), got {probability.shape}")
    if np.any((probability < 0) | (probability > 1)) or not np.all(np.isfinite(probability)):
        raise ValueError("selection probabilities are shares in [0, 1]")
    p = len(probability)
    _check_sizes(int(q), p, threshold)
    if members < 0:
        raise ValueError(f"members is a count, got {members}")
    if members == 0:
        return Evidence(probability, threshold, np.empty(0, dtype=np.int64), 0, int(q), None, None,
                        "no members: a deterministic method has no selection probabilities")
    # a small tolerance: a share of 9 in 10 members is 0.9 whatever the float sum gave
    chosen = np.flatnonzero(probability >= threshold - 1e-9)
    stable = chosen[np.lexsort((chosen, -probability[chosen]))]
    kind, bound, reason = (None, None, caveat) if caveat else _bound(int(q), p, threshold, members, complementary,
                                                                       half_samples)
    if bound is not None and reason is None and bound >= len(stable):
        reason = f"the bound ({bound:.2g}) is not below the stable set's size ({len(stable)}): it says nothing"
    return Evidence(probability, float(threshold), stable.astype(np.int64), int(members), int(q), bound, kind,
                    reason)


def _bound(q: int, p: int, threshold: float, members: int, complementary: bool, half_samples: bool
           ) -> tuple[str | None, float | None, str | None]:
    if threshold <= 0.5:
        return None, None, f"a threshold of {threshold:g} is not above 1/2, where both bounds are undefined"
    if complementary:
        if members < 2 or members % 2:
            return None, None, f"{members} member(s) are not whole complementary pairs"
        return COMPLEMENTARY, complementary_pairs_bound(q, p, threshold, members // 2), None
    if not half_samples:
        return None, None, "the members did not each see half of the samples (members.subsample 0.5)"
    if members < MB_MIN_MEMBERS:
        return None, None, (f"{members} member(s) are too few for Meinshausen-Bühlmann's bound (it needs the "
                            f"probability over every half-sample; {MB_MIN_MEMBERS} members or more, or complementary "
                            "pairs)")
    return MEINSHAUSEN_BUHLMANN, meinshausen_buhlmann_bound(q, p, threshold), None


def run_evidence(selection_frequency: np.ndarray, q: int, members: int, config: MembersConfig, carried_runs: int = 0
                 ) -> Evidence:
    """The evidence of a run's list: :func:`evidence` with the bound its members' settings allow.

    Parameters
    ----------
    selection_frequency : array of shape (d,)
        The selection frequency at the list's k (``Ranking.selection_frequency[k]``).
    q : int
        The list's k.
    members : int
        The members the run ranks by; 0 for a deterministic method (it has none).
    config : MembersConfig
        ``sampling``, ``subsample`` and ``per_run`` say which bound applies; ``threshold`` is π.
    carried_runs : int
        How many earlier runs' members the run ranks by beside its own. Their tables differ from this one's
        (a refresh draws other samples; the drift case of benchmarks/results/evidence.md), so none of the
        theorems' half-samples of one table describe them: no bound, the probabilities only.

    Returns
    -------
    Evidence
    """
    caveat = None
    if members == 1:
        caveat = "one member: its list is its own first k, with no probabilities to bound (members.per_run 2 or more)"
    elif carried_runs:
        caveat = ("members carried from earlier runs were trained on other tables, and the bounds hold for "
                  "half-samples of one table (members.carry false gives them)")
    complementary = config.sampling == "complementary"
    half = config.sampling == "random" and config.subsample == 0.5
    return evidence(selection_frequency, q, members, config.threshold, complementary, half, caveat)


def list_evidence(ranking: Ranking, k: int, config: MembersConfig, has_members: bool = True) -> Evidence:
    """The evidence of the list at ``k`` from the members a run ranks by (:func:`iclfs.method._ranking.rank`).

    The frequency is ``ranking.selection_frequency[k]``; the members are ``ranking.members``, and those of
    earlier runs (kept members) are counted as carried (:func:`run_evidence`). ``has_members`` False: a
    deterministic method, which has none.
    """
    members = ranking.members
    carried = len({m.run for m in members}) - 1 if ranking.seen is not None else 0
    return run_evidence(ranking.selection_frequency[k], k, len(members) if has_members else 0, config, carried)
