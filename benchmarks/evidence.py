"""The evidence study: does the stable set's bound on false selections hold on planted data?

    python -m benchmarks.evidence run       # train (resumable) and write results/evidence.md as it goes
    python -m benchmarks.evidence report    # the page again, from the members trained so far

**The rule** (fixed in this docstring before any member was trained).

*Cases.* Both use the embedded default's generator
(:func:`iclfs.io._synthetic.make_synthetic`), whose informative features are
known; data seed and training seed are the case's seed s = 0 .. 9.

- ``default``: the embedded default, 200 samples x 800 features (30
  informative, 30 redundant noisy copies of them, 740 noise). A **false
  selection** is a noise feature: neither informative nor redundant.
- ``drift``: two tables of 200 x 400 (30 informative, 370 noise; data seeds
  1000 + s and 2000 + s) with the same feature names and different
  informative features: a first refresh trains M members on the first, a
  second refresh M on the second and carries the first's (the product's
  ``rank`` with a history, half-life infinite), so the run ranks by 2M
  members. A false selection is a feature not informative in the second
  table.

*Members.* ICLFS members as the product trains them with
``members.sampling: complementary`` (pairs on disjoint halves of the
samples) at ``members.epochs`` :data:`EPOCHS` (short), the default settings
otherwise, one CPU thread. The candidates M = 1, 4, 16, 64 members per
refresh are the first M of the same 64 (the product's plan draws them so:
``per_run: 16`` trains exactly the first 16 of ``per_run: 64``). M = 1 is one
member on a half-sample: no pair, no bound; its "stable set" is its own
first q. The drift case runs M = 1, 4, 16 (64 would cost 2 x 64 members a
seed).

*Evidence.* q = 50 (``selection.k``), each member's first q;
:func:`iclfs.method._evidence.evidence` at π = 0.6, 0.75 and 0.9. The bound
is Shah and Samworth's Theorem 1 with θ = q / p, which is the number
Meinshausen and Bühlmann's gives, q² / ((2π − 1) p). Per case, M and π the
page gives the mean over the seeds of the stable set's size and of its false
selections, and the bound.

*Lists.* The list at k = 50 as the product selects it (LGRC; in the drift
case held to the first refresh's list), with the Laplacian fusion off
(``members.laplacian_weight`` 0) and on (0.5, the default; in the default
case, where one run's own members are never fused, the fused order is the
one a carried history of these members would give). Per case, M and
fusion: false selections in the list, planted features found (informative
and redundant; drift: informative of the second table) and the list's
k-means accuracy (method.md §8, 20 runs).

1. **The bound holds** at (case, M, π) when the mean false selections over
   the seeds are at or below it. It holds on planted data when it holds at
   every π for every M >= 4 in the default case.
2. If it fails there, the product does not print it (the probabilities
   only), and this page says which assumption breaks.
3. **Across tables.** If it fails in the drift case at any π for M >= 4, the
   product gives no bound where the members it ranks by were trained on
   more than one table (carried from earlier runs): a bound is printed only
   over one table's complementary pairs.
4. **Threshold.** The default π is the smallest candidate at which the bound
   holds (rule 1) and bites in the default case at M = 16: the bound is
   below the mean stable set's size, and that size is at least 5. None:
   0.9.
5. **Members per run and fusion** are not decided here: the agreement
   between deployments and the accuracy on the real sets (issue 60, item 3)
   decide them, and that study did not run (the page gives its cost). The
   page reports for them: the smallest M whose stable set at the default π
   holds >= 5 features with the bound below 1 in the default case, and
   whether the fused list found at least the planted features of the
   unfused one, mean over seeds, at every M >= 4 in both cases.

**Second round** (this paragraph written after the first round's members at
10 epochs, before any member at 25 was trained). At 10 epochs the members
were at chance: one member put 4.2 planted features among its first 50 (mean
over 10 seeds; chance is 50 x 60 / 800 = 3.75), so the stable sets were
nearly empty and the bound held on nothing
(``results/evidence_epochs_10.md``, the cells that ran before it was
stopped). The study runs again at 25 epochs, the default
``members.epochs``, where one member on a half-sample of seed 0 put 23 and
16 planted features among its first 50. Rules 1 to 5 are unchanged. The CPU
is shared, so the cells run in the order M = 1, 4, 16 (both cases, seed by
seed) and then M = 64, and the page reports the cells that finished by the
deadline, with their seed counts.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from iclfs.chain import as_members
from iclfs.evaluation._protocol import kmeans_scores
from iclfs.io._synthetic import make_synthetic
from iclfs.method._config import MembersConfig, Settings
from iclfs.method._evidence import complementary_pairs_bound, evidence
from iclfs.method._laplacian import laplacian_scores
from iclfs.method._lgrc import gate
from iclfs.method._members import member_settings, plan_members, train_member
from iclfs.method._preprocessing import FeatureTable, invert, prepare
from iclfs.method._ranking import MemberHistory, combine_run, fuse_laplacian, member_seed, rank
from iclfs.method._scores import feature_order

HERE = Path(__file__).resolve().parent
STORE = Path("data/08_reporting/benchmark/evidence")  # the members trained here (not published: they are big)
PAGE = HERE / "results" / "evidence.md"
TABLE = HERE / "results" / "evidence.csv"
EPOCHS = 25  # the second round's (module docstring); the first ran 10
SEEDS = tuple(range(10))
MEMBERS = (1, 4, 16, 64)
DRIFT_MEMBERS = (1, 4, 16)
THRESHOLDS = (0.6, 0.75, 0.9)
Q = 50
FUSION = 0.5  # members.laplacian_weight, the default
CASES = ("default", "drift")


def settings(epochs: int, members: int) -> Settings:
    return Settings().with_overrides(
        f"members.per_run={members},members.sampling=complementary,members.epochs={epochs},"
        "runtime.progress=false,runtime.num_threads=1")


def tables(case: str, seed: int) -> list[FeatureTable]:
    """The case's tables, in refresh order."""
    if case == "default":
        return [make_synthetic(seed=seed)]
    shape = {"n_samples": 200, "n_classes": 4, "n_informative": 30, "n_redundant": 0, "n_noise": 370}
    return [make_synthetic(**shape, seed=1000 + seed), make_synthetic(**shape, seed=2000 + seed)]


def planted(table: FeatureTable) -> np.ndarray:
    """The planted features: informative and their redundant copies."""
    return np.union1d(table.informative_features, table.metadata.get("redundant_features", []))


def members_path(store: Path, case: str, seed: int, refresh: int, epochs: int) -> Path:
    return store / f"{case}_seed_{seed}_refresh_{refresh}_epochs_{epochs}.npz"


def train_up_to(table: FeatureTable, seed: int, count: int, total: int, epochs: int, path: Path) -> np.ndarray:
    """The first ``count`` of ``total`` complementary members' scores (count, d), trained where not stored yet."""
    done = np.load(path)["scores"] if path.exists() else np.empty((0, len(table.feature_names)))
    if len(done) >= count:
        return done[:count]
    config = settings(epochs, total)
    prepared = prepare(table)
    A = invert(prepared.standardized)
    training, member_epochs = member_settings(A.shape[1], config.training, config.members)
    plans = plan_members(A.shape[1], config.members, seed, A.shape[0])
    rows, seconds = list(done), list(np.load(path)["seconds"]) if path.exists() else []
    for plan in plans[len(done):count]:
        trained = train_member(A, plan, training, member_epochs, config.views, config.runtime)
        rows.append(trained.scores[config.ranking.score])
        seconds.append(trained.seconds)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial.npz")
        np.savez(partial, scores=np.array(rows), seconds=np.array(seconds))
        partial.replace(path)  # a killed run leaves the last whole file
    return np.array(rows)


def refresh_seed(seed: int, refresh: int) -> int:
    """The seed a carried refresh trains from: the history's next member number is refresh x 64."""
    return member_seed(seed, refresh * max(MEMBERS))


def list_at_q(order: np.ndarray, laplacian: np.ndarray, names: Sequence[str], previous=None) -> np.ndarray:
    selection = Settings().selection
    return gate(order, laplacian, {}, selection, [Q], names, previous)[Q]


def evaluate_default(seed: int, M: int, epochs: int, store: Path) -> tuple[list[dict], list[dict]]:
    table = tables("default", seed)[0]
    scores = train_up_to(table, seed, M, max(MEMBERS), epochs, members_path(store, "default", seed, 0, epochs))
    prepared = prepare(table)
    names = list(prepared.feature_names)
    p = len(names)
    signal = planted(table)
    false = np.setdiff1d(np.arange(p), signal)
    ranking = combine_run(scores, [Q])
    stable_rows = [stable_row("default", seed, M, ranking.selection_frequency[Q], M, false, p, threshold)
                   for threshold in THRESHOLDS]
    laplacian = laplacian_scores(prepared.standardized, n_neighbors=Settings().laplacian.n_neighbors)
    lists = {0.0: ranking.order, FUSION: feature_order(fuse_laplacian(ranking.scores, laplacian, FUSION))}
    list_rows = [list_row("default", seed, M, weight, list_at_q(order, laplacian, names), prepared, false, signal)
                 for weight, order in lists.items()]
    return stable_rows, list_rows


def evaluate_drift(seed: int, M: int, epochs: int, store: Path) -> tuple[list[dict], list[dict]]:
    before, after = tables("drift", seed)
    stable_rows, list_rows = [], []
    for weight in (0.0, FUSION):
        config = MembersConfig(laplacian_weight=weight)
        history, previous = MemberHistory(), None
        for refresh, table in enumerate((before, after)):
            train_seed = refresh_seed(seed, refresh)
            scores = train_up_to(table, train_seed, M, max(MEMBERS), epochs,
                                 members_path(store, "drift", seed, refresh, epochs))
            prepared = prepare(table)
            names = list(prepared.feature_names)
            laplacian = laplacian_scores(prepared.standardized, n_neighbors=Settings().laplacian.n_neighbors)
            members = as_members(scores, range(train_seed, train_seed + M), [0.0] * M, names)
            ranking, history = rank(members, names, laplacian, config, [Q], history, fingerprint=f"{seed}-{refresh}")
            held = {Q: [names[j] for j in previous]} if previous is not None else None
            previous = list_at_q(ranking.order, ranking.gate, names, held)
        p = len(names)
        signal = np.asarray(after.informative_features)
        false = np.setdiff1d(np.arange(p), signal)
        if weight == 0.0:  # the probabilities do not depend on the fusion
            shares = ranking.selection_frequency[Q]
            stable_rows = [stable_row("drift", seed, M, shares, len(history.members), false, p, t) for t in THRESHOLDS]
        list_rows.append(list_row("drift", seed, M, weight, previous, prepared, false, signal))
    return stable_rows, list_rows


def stable_row(case: str, seed: int, M: int, probability: np.ndarray, members: int, false: np.ndarray, p: int,
               threshold: float) -> dict:
    found = evidence(probability, Q, members, threshold, complementary=members >= 2)
    return {"case": case, "seed": seed, "members": M, "ranked_by": members, "threshold": threshold,
            "stable": len(found.stable), "false": int(np.isin(found.stable, false).sum()),
            "bound": complementary_pairs_bound(Q, p, threshold, members // 2) if members >= 2 else math.nan}


def list_row(case: str, seed: int, M: int, weight: float, chosen: np.ndarray, prepared, false: np.ndarray,
             signal: np.ndarray) -> dict:
    accuracy, _ = kmeans_scores(prepared.standardized[:, chosen], prepared.labels)
    return {"case": case, "seed": seed, "members": M, "fusion": weight, "list_false": int(np.isin(chosen, false).sum()),
            "list_planted": int(np.isin(chosen, signal).sum()), "accuracy": float(accuracy.mean())}


def work(seeds: Sequence[int], members: Sequence[int] = MEMBERS) -> list[tuple[str, int, int]]:
    """(case, seed, M) in the order they run: every M of both cases first, then the default case's largest M
    (not run on the drift case) seed by seed."""
    first = [(case, s, M) for M in members[:-1] for case in CASES for s in seeds]
    return first + [("default", s, members[-1]) for s in seeds]


def run(seeds: Sequence[int], epochs: int, store: Path, page: Path, table: Path, stop_at: float | None,
        members: Sequence[int] = MEMBERS) -> None:
    stable, lists = [], []
    for case, seed, M in work(seeds, members):
        if stop_at is not None and time.time() > stop_at:
            print(f"stopped before {case} seed {seed} M={M}: the time given ran out", flush=True)
            break
        started = time.perf_counter()
        rows = (evaluate_default if case == "default" else evaluate_drift)(seed, M, epochs, store)
        stable += rows[0]
        lists += rows[1]
        print(f"{case} seed {seed} M={M}: {time.perf_counter() - started:.0f} s", flush=True)
        write(pd.DataFrame(stable), pd.DataFrame(lists), store, epochs, page, table)


def member_seconds(store: Path, epochs: int) -> dict[str, float]:
    """The mean training time of a member, per case, over every member stored."""
    times = {}
    for case in CASES:
        files = sorted(store.glob(f"{case}_seed_*_epochs_{epochs}.npz"))
        values = np.concatenate([np.load(f)["seconds"] for f in files]) if files else np.empty(0)
        times[case] = float(values.mean()) if len(values) else math.nan
    return times


def write(stable: pd.DataFrame, lists: pd.DataFrame, store: Path, epochs: int, page: Path, table: Path) -> None:
    """The page and its table from the rows so far."""
    both = pd.concat([stable.assign(kind="stable"), lists.assign(kind="list")], ignore_index=True)
    table.parent.mkdir(parents=True, exist_ok=True)
    both.to_csv(table, index=False)
    page.write_text(render(stable, lists, member_seconds(store, epochs), epochs))


def render(stable: pd.DataFrame, lists: pd.DataFrame, seconds: dict[str, float], epochs: int) -> str:
    lines = ["# The evidence study: the stable set's false selections against the bound", "",
             f"Generated by `python -m benchmarks.evidence run --epochs {epochs}` (the rule is the module's "
             f"docstring, benchmarks/evidence.py), members at {epochs} epochs on complementary half-samples, one "
             f"CPU thread. A member took {seconds['default']:.1f} s on the default case (200 x 800, 100 samples "
             f"each) and {seconds['drift']:.1f} s on the drift case (200 x 400), mean wall time over the members "
             "trained, on a CPU shared with other jobs.", "",
             "## The stable set against the bound", "",
             "| case | members M (ranked by) | seeds | π | mean stable | mean false (max) | bound | holds |",
             "|---|---|---|---|---|---|---|---|"]
    verdicts = {}
    for (case, M, threshold), cell in stable.groupby(["case", "members", "threshold"], sort=True):
        bound = float(cell["bound"].iloc[0])
        mean_false = float(cell["false"].mean())
        holds = "n/a (no pair)" if math.isnan(bound) else ("yes" if mean_false <= bound else "**no**")
        verdicts[(case, int(M), float(threshold))] = (holds, float(cell["stable"].mean()), bound)
        lines.append(f"| {case} | {M} ({int(cell['ranked_by'].iloc[0])}) | {len(cell)} | {threshold:g} | "
                     f"{cell['stable'].mean():.1f} | {mean_false:.2f} ({int(cell['false'].max())}) | "
                     f"{'-' if math.isnan(bound) else f'{bound:.2f}'} | {holds} |")
    lines += ["", "## The list at k = 50, the Laplacian fusion off and on", "",
              "| case | members M | seeds | fusion | false in list | planted found | accuracy |",
              "|---|---|---|---|---|---|---|"]
    for (case, M, weight), cell in lists.groupby(["case", "members", "fusion"], sort=True):
        lines.append(f"| {case} | {M} | {len(cell)} | {'on (0.5)' if weight else 'off'} | "
                     f"{cell['list_false'].mean():.2f} | {cell['list_planted'].mean():.1f} | "
                     f"{cell['accuracy'].mean():.3f} |")
    lines += ["", "## By the rule", ""] + decisions(verdicts, lists)
    lines += ["", "## Not run: the agreement between deployments on the real sets", ""] + not_run(seconds)
    return "\n".join(lines) + "\n"


#: The features of the reported and validation sets (their MANIFEST.csv): lung_small, madelon, Isolet, ORL,
#: warpPIE10P, Prostate_GE, ALLAML.
REAL_SETS = {"lung_small": 325, "madelon": 500, "Isolet": 617, "ORL": 1024, "warpPIE10P": 2420,
             "Prostate_GE": 5966, "ALLAML": 7129}
AGREEMENT_PAGE = HERE / "results" / "agreement.md"  # the agreement study's page (benchmarks/agreement.py)
UNSHARED_MEMBER_SECONDS = 7.3  # one 25-epoch member of the default case on one thread, before the CPU was shared


def not_run(seconds: dict[str, float]) -> list[str]:
    """Issue 60's second study, and what it would cost on this CPU: an estimate, scaled from a member measured
    here by the square of the feature count (the attention's and InfoNCE's work)."""
    scale = sum((d / 800) ** 2 for d in REAL_SETS.values())
    members = 8 * 2 * max(MEMBERS)  # 8 refreshes x 2 deployments, 64 members each (1, 4 and 16 are their first)
    hours = members * scale * UNSHARED_MEMBER_SECONDS / 3600
    return [f"The agreement of two deployments' stable sets and lists after 8 refreshes, their steadiness, accuracy "
            f"and cost on the {len(REAL_SETS)} distinct reported and validation sets did not run on this CPU. "
            f"Estimate: a member costs the default case's times (d / 800)², {scale:.0f} default-case members for one "
            "member on every set; "
            f"{members} members a set (8 refreshes x 2 deployments x {max(MEMBERS)}) at "
            f"{UNSHARED_MEMBER_SECONDS} s each (one thread, unshared) is about {hours:,.0f} CPU hours, "
            f"{hours / 4:,.0f} for 16 members a refresh; at this page's shared-CPU rate "
            f"({seconds['default']:.1f} s a member) {seconds['default'] / UNSHARED_MEMBER_SECONDS:.1f} times that. "
            + ("It is `python -m benchmarks.agreement` (its rule in benchmarks/agreement.py), run on a GPU: "
               f"[{AGREEMENT_PAGE.name}]({AGREEMENT_PAGE.name}) gives what ran and what its rule decided about "
               "the members per run on CPU and on CUDA and the fusion (rule 5)." if AGREEMENT_PAGE.is_file() else
               "It is `python -m benchmarks.agreement` (its rule in benchmarks/agreement.py), for a GPU; it has not "
               "run yet, and the defaults of members per run, on CPU and on CUDA, and of the fusion (rule 5) wait "
               "for it.")]


def decisions(verdicts: dict, lists: pd.DataFrame) -> list[str]:
    """The rule's outcomes (module docstring), as far as the cells run so far decide them."""
    out = []
    for case, rule in (("default", 1), ("drift", 3)):
        cells = {key: v for key, v in verdicts.items() if key[0] == case and key[1] >= 4}
        failed = [f"M={M}, π={t:g}" for (_, M, t), v in cells.items() if v[0] == "**no**"]
        if not cells:
            out.append(f"- Rule {rule} ({case}): no cell with M >= 4 has run yet.")
        elif failed:
            out.append(f"- Rule {rule} ({case}): the bound fails at {', '.join(failed)}.")
        else:
            out.append(f"- Rule {rule} ({case}): the bound holds at every π for every M >= 4 run.")
    chosen = next((t for t in THRESHOLDS if (v := verdicts.get(("default", 16, t))) and v[0] == "yes"
                   and v[2] < v[1] and v[1] >= 5), None)
    out.append(f"- Rule 4: the default π is {chosen if chosen is not None else 0.9:g}"
               + ("" if chosen is not None else " (no candidate held and bit at M = 16)") + ".")
    pi = chosen if chosen is not None else 0.9
    enough = next((M for M in MEMBERS if (v := verdicts.get(("default", M, pi))) and v[1] >= 5 and v[2] < 1), None)
    out.append(f"- Rule 5, members: at π = {pi:g} the smallest M with a stable set of >= 5 and a bound below 1 is "
               f"{enough if enough is not None else 'none of those run'}.")
    largest = max((M for (case, M, _) in verdicts if case == "default"), default=None)
    if largest is not None:
        sizes = ", ".join(f"{verdicts[('default', largest, t)][1]:.1f} features at π = {t:g}" for t in THRESHOLDS
                          if ("default", largest, t) in verdicts)
        out.append(f"- Reading: with {largest} members the default case's stable set holds on average {sizes}. "
                   "Where it is this small the bound holds on a handful of features and says little; the "
                   "product then claims no evidence (fewer than 5 stable features) and shows the frequencies.")
    means = lists[lists["members"] >= 4].groupby(["case", "members", "fusion"])["list_planted"].mean().unstack()
    if FUSION in means and 0.0 in means:
        earns = bool((means[FUSION] >= means[0.0]).all())
        out.append(f"- Rule 5, fusion: the fused list found {'at least' if earns else 'fewer than'} the planted "
                   f"features of the unfused one {'everywhere' if earns else 'somewhere'} (M >= 4, both cases).")
    return out


def report(store: Path, epochs: int, page: Path, table: Path) -> None:
    both = pd.read_csv(table)
    stable = both[both["kind"] == "stable"].dropna(axis=1, how="all")
    lists = both[both["kind"] == "list"].dropna(axis=1, how="all")
    page.write_text(render(stable, lists, member_seconds(store, epochs), epochs))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.evidence", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("run", "report"))
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--store", type=Path, default=STORE)
    parser.add_argument("--page", type=Path, default=PAGE)
    parser.add_argument("--table", type=Path, default=TABLE)
    parser.add_argument("--members", type=int, nargs="+", default=list(MEMBERS))
    parser.add_argument("--until", type=float, default=None, help="stop before a cell after this Unix time")
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args.seeds, args.epochs, args.store, args.page, args.table, args.until, args.members)
    else:
        report(args.store, args.epochs, args.page, args.table)


if __name__ == "__main__":
    main()
