"""The agreement study: do two deployments of the same job agree on their evidence and their lists? (issue 60, item 3)

    python -m benchmarks.agreement run --device cuda --datasets-dir DIR --out results.jsonl --budget-s 420 --workers 8
    python -m benchmarks.agreement report --results results.jsonl   # writes results/agreement.md

``run`` needs only torch, numpy, scipy, scikit-learn and pandas beside
``src/`` (``PYTHONPATH=src``): it imports the method core and the table
reader, never Kedro or MLflow.

**The rule** (fixed in this docstring and committed before any result of
this study existed).

*Sets.* The six reported sets of :mod:`benchmarks.refresh` (lung_small, ORL,
warpPIE10P, Prostate_GE, ALLAML, madelon) and Isolet, one of its validation
sets: seven distinct tables. The targets are judged on the six reported
sets; Isolet is shown beside them.

*Refreshes and deployments.* As :mod:`benchmarks.refresh` simulates them:
two deployments (seeds 42 and 43), 8 refreshes each; refresh r of a
deployment sees the same fresh 90 % of the samples
(:func:`refresh_samples`, the refresh study's draw), so the refresh study's
stored one run per refresh (``results/refresh/``, ``results/cells/refresh``)
is trained on the very tables this study trains on.

*Candidates.* Members per refresh M in {1, 4, 16} (64 where ``--members
64`` is given and the time allows), each trained as the product trains
them with ``members.sampling: complementary`` (pairs on disjoint halves of
the refresh's samples) at ``members.epochs`` (25), the default settings
otherwise, on the device given (``--device``). The members of a refresh
are the first M of one plan of ``--members`` members seeded
``member_seed(deployment, 64 r)`` (as :mod:`benchmarks.evidence` explains:
``per_run: 16`` trains exactly the first 16 of ``per_run: 64``), so a
refresh trains its members once for every M. (The product numbers a
history's members one by one, so its refresh r would draw from
``member_seed(deployment, M r)``: another independent draw, of the same
law.) M = 1 is one member on a half-sample: it has no pair and no bound, and
it is not a product setting (``per_run: 1`` is one full run); it is shown,
never chosen. Each candidate M is carried across the 8 refreshes with the
product's functions and defaults: :func:`iclfs.method._ranking.rank` (the
history kept to ``members.kept`` 64 members, half-life infinite, the kept
members' mean Laplacian score as the gate), LGRC with the hold and admit
(:func:`iclfs.method._lgrc.gate`, held to the last lists from the second
refresh on), and the evidence (:func:`iclfs.method._evidence.list_evidence`:
the selection frequency at k = 50 over the members kept). The Laplacian
fusion on (``members.laplacian_weight`` 0.5, today's) and off (0). The
threshold π in {0.6, 0.75, 0.9}, applied after the fact to the same
frequencies (no retraining): a candidate is (M, fusion, π).

*Today's default* is one full run per refresh (``members.per_run: 1``),
carried with the fusion on: the refresh study's stored runs and cells,
read at refresh 8 (its lists there are what an 8-refresh simulation gives).
Its stable set is the same rule's over its 8 kept runs' first 50.
*One run's mean* accuracy is the mean over refreshes 1-8 and both
deployments of the refresh study's "ICLFS, one run per refresh" cells.

*Measures,* per (set, candidate), after refresh 8:

- **stable-set agreement**: the Jaccard index of the two deployments'
  stable sets at π, where both are non-empty (with their sizes);
- **list agreement**: the Jaccard index of the two deployments' lists at
  k = 50 (Jaccard@50);
- **steadiness**: the mean over both deployments and refreshes 5-8 of the
  Jaccard@50 with the previous refresh's list;
- **accuracy**: the last list's k-means accuracy (docs/method.md §8, as
  :mod:`benchmarks.refresh` does it: the best k's mean over 20 runs on the
  refresh's table, k over the selection grid), mean of the two deployments;
- **cost**: device seconds per refresh (training the M members, the
  Laplacian score, ranking and listing), against one full default run
  (``per_run: 1``) timed on the same device at deployment 42's first
  refresh.

*Targets* (issue 60): (T1) the stable sets agree: over the reported sets
where both deployments' stable sets are non-empty, the median Jaccard is
>= 0.8, and there are at least 3 such sets (a stable set empty on most sets
gives nothing to agree on); (T2) the lists agree: the median over the six
reported sets of the list agreement is >= 0.6; (T3) the last list's
accuracy is at or above one run's mean on >= 5 of the 6 reported sets. A set
that did not finish (8 refreshes of both deployments) inside the run counts
as *not run*: it is shown as such and fails T2's and T3's count for that set.

*The decision.*

1. **Eligible**: a candidate with M >= 2 that meets T1, T2 and T3, with all
   six reported sets run. A decision that changes a default needs all six.
2. **The winner** is the eligible candidate of the fewest members M (cost);
   at that M the fusion off before on (the fusion must earn its place: on
   wins only where off is not eligible); then the highest π (the fewest
   expected false selections).
3. **CUDA default**: the winner's M (``members.per_run``, ``sampling:
   complementary``), fusion and π become the defaults on CUDA when it beats
   today's default: its median list agreement over the six reported sets is
   higher than today's, and its count of sets at or above one run's mean
   accuracy is at least today's.
4. **CPU default**, decided by cost: the winner's M is the CPU default too
   when M members cost at most twice one default run per refresh on one CPU
   thread, measured by this script with ``--device cpu`` on lung_small (a
   member's mean seconds x M against one run's seconds); otherwise the CPU
   default stays one run per refresh (``per_run: 1``).
5. **No winner** (no candidate eligible, or the winner does not beat
   today's default): every default stays. The page then gives the best
   agreement reached (the candidate with the highest median list agreement,
   and the highest median stable-set agreement) and its cost per refresh
   against one run. The selection probabilities are kept either way: they
   are honest on their own.

Cells (sets, deployments, refreshes) that did not finish inside the device
run are reported as not run; nothing is extrapolated.

**The second round: does the Laplacian fusion earn its place in today's
default?** (``python -m benchmarks.agreement fusion``; its rule fixed in this
docstring and committed before its page was generated.)

*Why.* The first round put the fusion on and off only for members on
half-samples. Today's default, one full run per refresh carried across
refreshes, was measured with the fusion on alone: its last list reached one
run's mean accuracy on 3 of the 6 reported sets, and T3 asks for 5. Issue 60
asks the fusion to earn its place again, because it cost accuracy.

*What was seen before this rule.* The refresh study's page
(``results/refresh.md``) already gives both candidates at each set's last
refresh (20 on lung_small, ORL and warpPIE10P; 10 on the others). There,
with the fusion off, the last list reached one run's mean on all six sets,
and with it on on four. The median list agreement was 0.38 off and 0.42 on.
The steadiness off was 0.86 on Prostate_GE, below the 0.9 that the lists
promise to hold. No number of either candidate at refresh 8, the study's
refresh count, was read for this rule.

*Candidates.* Today's default with ``members.laplacian_weight`` 0.5 (on,
today's) and 0 (off). Everything else is today's default: the hold, the
admit, the carried Laplacian score in the LGRC gate. Both are read from the
refresh study's cells (``results/cells/refresh``: the same stored runs,
carried by the same functions). Nothing is trained again.

*Measures.* The first round's, at refresh 8 of the six reported sets: list
agreement, steadiness (refreshes 5-8), the last list's accuracy against one
run's mean (refreshes 1-8, both deployments). The stable sets rest on the
members' own first 50 and do not depend on the fusion, so they are not a
measure here. The drift case is read over its whole run, as the refresh
study reads it (``benchmarks.refresh.drift_passes``, half-life infinite).

*Guards.* What the default already promises: steadiness >= 0.9 on every
reported set (the lists hold still), and the drift check passes. A
candidate that fails a guard cannot become the default.

*The decision.* Among the candidates that pass both guards:

1. One that meets T3 (at or above one run's mean on >= 5 of the 6) beats
   one that does not.
2. Otherwise (both meet T3, or neither does), the one with the higher
   median list agreement over the six wins.
3. On a tie, the fusion is off: it must earn its place.

The winner's weight becomes ``members.laplacian_weight``. If neither
candidate passes the guards, the weight stays 0.5.

**The third round: a weight between the two** (``python -m
benchmarks.agreement fusion --compute``; its rule fixed in this docstring and
committed before any of its cells was computed).

*Why.* The second round found that neither weight gives both: with the
fusion on (0.5) the lists held still and 3 of 6 sets reached one run's
mean; off (0), 5 of 6 did, and the steadiness fell below 0.9 on three sets.
The refresh study's fifth round had one weight between them with the same
reciprocal rank fusion, 0.25, its runner-up. This round adds that one
candidate. No other weight is tried: this is one look at a middle point,
not a search.

*What was seen before this rule.* The refresh study's fifth-round page
(``results/refresh_study_fusion.md``) gives the weight 0.25 at the last
refresh of lung_small, ORL, madelon and Isolet (20, 20, 10, 10 refreshes):
steadiness 0.92, 0.95, 0.94 and 0.88; the last list at or above one run's
mean on lung_small, ORL and madelon. It gives nothing at refresh 8, and
nothing on warpPIE10P, Prostate_GE or ALLAML.

*Cells.* Computed from the refresh study's stored runs with its own
functions (``benchmarks.refresh.refresh_runs`` and ``cells``, the
candidate ``carried (..., Laplacian weight 0.25, reciprocal rank)``), on
the six reported sets and the drift case. They are written beside the
other cells in ``results/cells/refresh``.

*The decision.* The second round's rule over three candidates, 0.5, 0.25
and 0. Among those that pass the guards: T3 first, then the higher median
list agreement. A tie goes to the lower weight: the fusion must earn its
place, so less of it wins a tie. If no candidate passes the guards, the
weight stays 0.5.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import queue
import shlex
import sys
import time
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# Only the method core and the table readers: this runs where numpy, scipy, scikit-learn, pandas and torch are all
# that is installed (no Kedro, no MLflow; iclfs.chain and iclfs.evaluation import the baselines, which need more).
from benchmarks._refreshes import refresh_samples, refresh_table
import iclfs
from iclfs.io._tables import find_dataset, read_feature_table
from iclfs.method._config import (LaplacianConfig, MembersConfig, RankingConfig, RuntimeConfig, SelectionConfig,
                                  TrainingConfig, ViewConfig)
from iclfs.method._evidence import complementary_pairs_bound, list_evidence
from iclfs.method._laplacian import laplacian_scores
from iclfs.method._lgrc import gate
from iclfs.method._members import member_settings, plan_members, train_member
from iclfs.method._preprocessing import FeatureTable, invert, prepare
from iclfs.method._ranking import Member, MemberHistory, member_seed, rank
from iclfs.method._scores import feature_order
from iclfs.method._stability import jaccard

HERE = Path(__file__).resolve().parent
PAGE = HERE / "results" / "agreement.md"
CPU_RESULTS = HERE / "results" / "agreement_cpu.jsonl"  # rule 4's measure: members and one run on one CPU thread
CELLS = HERE / "results" / "cells" / "refresh"  # the refresh study's cells: one run per refresh, today's default
REFRESH_STORE = HERE / "results" / "refresh"  # the refresh study's stored runs (their scores)
DATA_DIRS = ("../shared/datasets", "../shared/validation")
REPORTED = ("lung_small", "ORL", "warpPIE10P", "Prostate_GE", "ALLAML", "madelon")
SHOWN = ("Isolet",)  # a validation set shown beside the reported ones, not judged
#: The order the sets run in: cheapest first by the refresh study's one-run seconds on one CPU thread (lung_small
#: 3.5 s, ORL 50, warpPIE10P 97, Prostate_GE 375, madelon 410, ALLAML 446), Isolet (not judged) last.
ORDER = ("lung_small", "ORL", "warpPIE10P", "Prostate_GE", "madelon", "ALLAML", "Isolet")
DEPLOYMENTS = (42, 43)
SEED_STRIDE = 64  # refresh r's plan is seeded member_seed(deployment, 64 r), as benchmarks.evidence's
REFRESHES = 8
K = 50
STEADY_FROM = 5
MEMBER_COUNTS = (1, 4, 16, 64)
FUSIONS = (0.5, 0.0)  # members.laplacian_weight: today's, and off
THRESHOLDS = (0.6, 0.75, 0.9)
N_RUNS = 20  # k-means runs per k (method.md §8)
ONE_RUN = "iclfs-one-run-per-refresh"  # the refresh study's cell folders
TODAY = "carried-mean-rank-half-life-inf-cap-64-hold-3-carried-laplacian-admit-2-laplacian-weight-0.5-reciprocal-rank"
CPU_MEMBERS_PER_RUN = 2.0  # rule 4: M members at most twice one run per refresh on one CPU thread
#: The second round's candidates, today's default with the fusion on (today's weight) and off, and the third
#: round's weight between them, by the refresh study's cell folder of each (its Candidate names, through
#: iclfs.evaluation's slug; benchmarks.refresh.PRODUCT with each weight).
FUSION_CELLS = {0.5: TODAY,
                0.25: "carried-mean-rank-half-life-inf-cap-64-hold-3-carried-laplacian-admit-2-laplacian-weight-0.25-"
                      "reciprocal-rank",
                0.0: "carried-mean-rank-half-life-inf-cap-64-hold-3-carried-laplacian-admit-2"}
FUSION_PAGE = HERE / "results" / "agreement_fusion.md"
STEADY_GUARD = 0.9  # the second round's guard: the lists hold still (the refresh study's target)
DRIFT = "drift"  # the refresh study's drift case, read whole by its own check


def k_grid(n_features: int) -> list[int]:
    """The selection grid up to d (iclfs.chain.k_values_for on the default settings)."""
    return sorted(k for k in SelectionConfig().k_values if k <= n_features)


def counts_up_to(members: int) -> list[int]:
    """The candidate member counts a plan of ``members`` covers: 1, 4, 16, 64 up to it, and itself."""
    return sorted({m for m in MEMBER_COUNTS if m <= members} | {members})


def members_config(M: int, fusion: float, threshold: float = THRESHOLDS[-1], epochs: int | None = None
                   ) -> MembersConfig:
    """The ``members`` section a candidate ranks and reads its evidence with (M = 1: one member, no pair)."""
    epochs = MembersConfig().epochs if epochs is None else epochs
    if M == 1:
        return MembersConfig(laplacian_weight=fusion, threshold=threshold, epochs=epochs)
    return MembersConfig(per_run=M, sampling="complementary", laplacian_weight=fusion, threshold=threshold,
                         epochs=epochs)


def _protocol():
    """docs/method.md §8's k-means protocol, the module itself (iclfs.evaluation's package imports the baselines)."""
    path = Path(iclfs.__file__).parent / "evaluation" / "_protocol.py"
    spec = importlib.util.spec_from_file_location("_agreement_protocol", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def best_accuracy(X: np.ndarray, labels: np.ndarray, selections: Mapping[int, Sequence[int]]) -> dict:
    """Every k's mean k-means accuracy (20 runs, seeds 42 + r) and the best k's, as benchmarks.refresh does it."""
    protocol = _protocol()
    by_k = {}
    for k in sorted(selections):
        accuracy, _ = protocol.kmeans_scores(X[:, np.asarray(selections[k], dtype=np.int64)], labels, N_RUNS, 42)
        by_k[int(k)] = float(accuracy.mean())
    best = max(by_k, key=lambda k: (by_k[k], -k))
    return {"by_k": by_k, "best_k": best, "accuracy": by_k[best]}


# -- run: one (set, deployment) chain, refresh by refresh ------------------------------------------------------


@dataclass
class Carried:
    """One candidate's state along a chain: its history and its last lists."""

    history: MemberHistory = field(default_factory=MemberHistory)
    previous: dict[int, tuple[str, ...]] | None = None


@dataclass(frozen=True)
class Job:
    dataset: str
    deployment: int
    refreshes: int
    members: int
    epochs: int
    device: str
    data_dirs: tuple[str, ...]
    accuracy: bool = True
    time_one_run: bool = True


def train_plan(A: np.ndarray, seed: int, members: int, epochs: int, runtime: RuntimeConfig) -> list:
    """The refresh's ``members`` members as the product trains them (complementary half-samples, ``epochs``)."""
    config = MembersConfig(per_run=members, sampling="complementary", epochs=epochs)
    training, member_epochs = member_settings(A.shape[1], TrainingConfig(), config)
    plans = plan_members(A.shape[1], config, seed, A.shape[0])
    return [train_member(A, plan, training, member_epochs, ViewConfig(), runtime) for plan in plans]


def one_run_seconds(A: np.ndarray, seed: int, runtime: RuntimeConfig) -> float:
    """Seconds of one default run (``per_run: 1``: training.epochs on every sample) on the same device."""
    config = MembersConfig()
    training, epochs = member_settings(A.shape[1], TrainingConfig(), config)
    (plan,) = plan_members(A.shape[1], config, seed, A.shape[0])
    return float(train_member(A, plan, training, epochs, ViewConfig(), runtime).seconds)


def refresh_line(job: Job, table: FeatureTable, r: int, states: dict[tuple[int, float], Carried],
                 runtime: RuntimeConfig) -> dict:
    """Refresh ``r`` (from 0) of a chain: train, then carry every candidate one refresh on; the line it writes."""
    samples = refresh_samples(np.asarray(table.X).shape[0], job.deployment, r)
    prepared = prepare(refresh_table(table, samples))
    names = list(prepared.feature_names)
    d = len(names)
    grid = k_grid(d)
    A = invert(prepared.standardized)
    seed = member_seed(job.deployment, SEED_STRIDE * r)
    trained = train_plan(A, seed, job.members, job.epochs, runtime)
    score = RankingConfig().score
    started = time.perf_counter()
    ls = laplacian_scores(prepared.standardized, n_neighbors=LaplacianConfig().n_neighbors)
    ls_seconds = time.perf_counter() - started
    last = r == job.refreshes - 1
    line = {"kind": "refresh", "dataset": job.dataset, "deployment": job.deployment, "refresh": r + 1,
            "refreshes": job.refreshes, "n_samples": int(A.shape[1]), "n_features": d, "members": job.members,
            "epochs": job.epochs, "device": job.device, "seed": int(seed),
            "member_seconds": [float(t.seconds) for t in trained], "laplacian_seconds": ls_seconds,
            "member_first": [feature_order(t.scores[score])[:K].tolist() for t in trained], "candidates": []}
    fingerprint = f"{job.dataset}/{job.deployment}/{r}"
    for M in counts_up_to(job.members):
        members = [Member(t.plan.seed, tuple(names), t.scores[score], t.seconds) for t in trained[:M]]
        for fusion in FUSIONS:
            state = states.setdefault((M, fusion), Carried())
            config = members_config(M, fusion, epochs=job.epochs)
            started = time.perf_counter()
            ranking, history = rank(members, names, ls, config, grid, state.history, fingerprint=fingerprint)
            held = state.previous if state.history.members else None  # Continuation.holds
            selections = gate(ranking.order, ranking.gate, ranking.selection_frequency, SelectionConfig(), grid,
                              names, held)
            list_seconds = time.perf_counter() - started
            states[(M, fusion)] = Carried(history, {k: tuple(names[j] for j in c) for k, c in selections.items()})
            evidence = {f"{t:g}": list_evidence(ranking, K, config.replace(threshold=t)) for t in THRESHOLDS}
            cell = {"members": M, "fusion": fusion, "list": selections[K].tolist(), "list_seconds": list_seconds,
                    "ranked_by": len(ranking.members),
                    "stable": {t: e.stable.tolist() for t, e in evidence.items()},
                    "bound": {t: e.bound for t, e in evidence.items()}}
            if last:
                cell["selections"] = {str(k): c.tolist() for k, c in selections.items()}
                if job.accuracy and prepared.labels is not None:
                    cell["accuracy"] = best_accuracy(prepared.standardized, prepared.labels, selections)
            line["candidates"].append(cell)
    if job.time_one_run and r == 0 and job.deployment == DEPLOYMENTS[0]:
        line["one_run_seconds"] = one_run_seconds(A, member_seed(job.deployment, r), runtime)
    return line


def chain(job: Job, deadline: float, runtime: RuntimeConfig, emit) -> None:
    """Every refresh of one (set, deployment), in order; none is started after ``deadline``, and the chain stops
    when the refreshes left would not finish by it at the pace so far."""
    table = read_feature_table(find_dataset(job.dataset, job.data_dirs))
    states: dict[tuple[int, float], Carried] = {}
    started = time.time()
    for r in range(job.refreshes):
        now = time.time()
        pace = (now - started) / r if r else 0.0
        if now >= deadline or now + pace * (job.refreshes - r) > deadline:
            emit({"kind": "stopped", "dataset": job.dataset, "deployment": job.deployment, "refresh": r + 1,
                  "why": "the budget ran out" if now >= deadline else
                  f"at {pace:.1f} s a refresh the {job.refreshes - r} left would not finish inside the budget"})
            return
        emit(refresh_line(job, table, r, states, runtime))


def warm_up(runtime: RuntimeConfig) -> None:
    """One tiny member, untimed, so the first timed member does not pay for starting the device."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((64, 32)).astype(np.float32)
    train_plan(A, 0, 2, 2, runtime)


def worker(index: int, cores: list[int], tasks, results, deadline: float, threads: int) -> None:
    """A worker process: pinned to ``cores``, it runs the chains it takes from ``tasks`` until there are none, on
    ``threads`` torch threads."""
    if cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cores)
    emit = results.put
    device = None
    while True:
        job = tasks.get()
        if job is None:
            break
        runtime = RuntimeConfig(device=job.device, progress=False, num_threads=threads)
        try:
            if device != job.device:
                warm_up(runtime)
                device = job.device
            chain(job, deadline, runtime, emit)
        except Exception:  # one chain's failure is written, and the others go on
            emit({"kind": "error", "dataset": job.dataset, "deployment": job.deployment,
                  "error": traceback.format_exc()})
    emit({"kind": "worker_done", "worker": index})


class Receiver:
    """A worker's ``results`` in the process that writes the lines: ``put`` writes at once."""

    def __init__(self, receive) -> None:
        self.put = receive


def spawn(jobs: Sequence[Job], workers: int, cores: list[int], per: int, threads: int, deadline: float,
          receive) -> None:
    """The chains over ``workers`` spawned processes, each pinned to ``per`` of ``cores``; every line they send
    goes to ``receive`` as it comes."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # never fork a process that may hold a CUDA context
    tasks, results = context.Queue(), context.Queue()
    for job in [*jobs, *[None] * workers]:
        tasks.put(job)
    processes = [context.Process(target=worker, args=(i, cores[i * per:(i + 1) * per], tasks, results, deadline,
                                                      threads)) for i in range(workers)]
    for process in processes:
        process.start()
    done = 0
    while done < workers:
        try:
            line = results.get(timeout=5)
        except queue.Empty:
            if not any(p.is_alive() for p in processes):
                break
            continue
        done += line["kind"] == "worker_done"
        receive(line)
    for process in processes:
        process.join(timeout=10)


def device_name(device: str) -> str:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return f"CPU ({len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()} cores)"


def run(datasets: Sequence[str], data_dirs: Sequence[str], out: Path, budget_s: float, workers: int,
        members: int, refreshes: int, epochs: int, device: str, accuracy: bool = True,
        threads: int | None = None) -> None:
    """Every (set, deployment) chain, cheapest set first and both deployments of a set side by side, over
    ``workers`` processes sharing the device (one: this process); one line per finished refresh, appended to ``out``
    and flushed at once, so a run killed keeps every refresh it finished."""
    started = time.time()
    deadline = started + budget_s
    ordered = [d for d in ORDER if d in datasets] + [d for d in datasets if d not in ORDER]
    for dataset in ordered:  # a missing table is refused before anything runs
        find_dataset(dataset, data_dirs)
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count()))
    per = max(1, len(cores) // workers)
    threads = threads or per
    jobs = [Job(dataset, deployment, refreshes, members, epochs, device, tuple(data_dirs), accuracy)
            for dataset in ordered for deployment in DEPLOYMENTS]
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as handle:
        def write(line: dict) -> None:
            handle.write(json.dumps(line) + "\n")
            handle.flush()

        def receive(line: dict) -> None:
            if line["kind"] == "worker_done":
                return
            line["elapsed_s"] = time.time() - started
            write(line)
            what = f"{line.get('dataset')} {line.get('deployment')} refresh {line.get('refresh', '-')}"
            if line["kind"] == "refresh":
                print(f"{line['elapsed_s']:.0f} s: {what}, members {sum(line['member_seconds']):.1f} s", flush=True)
            else:
                print(f"{line['elapsed_s']:.0f} s: {line['kind']} {what}: {line.get('why', line.get('error'))}",
                      flush=True)

        import torch

        write({"kind": "start", "time": started, "datasets": ordered, "members": members, "refreshes": refreshes,
               "epochs": epochs, "device": device, "device_name": device_name(device), "workers": workers,
               "threads_per_worker": threads, "budget_s": budget_s, "torch": torch.__version__,
               "python": sys.version.split()[0]})
        if workers == 1:  # in this process, on its own cores
            tasks = queue.SimpleQueue()
            for job in [*jobs, None]:
                tasks.put(job)
            worker(0, [], tasks, Receiver(receive), deadline, threads)
        else:
            spawn(jobs, workers, cores, per, threads, deadline, receive)
        write({"kind": "end", "time": time.time(), "elapsed_s": time.time() - started})


# -- report: the page from the lines -------------------------------------------------------------------------


@dataclass
class Results:
    """The lines of one or more runs: the last line of each finished refresh, and what else they said."""

    refreshes: dict[tuple[str, int, int], dict]
    starts: list[dict]
    events: list[dict]

    @property
    def planned(self) -> int:
        return max((s["refreshes"] for s in self.starts), default=REFRESHES)

    def chain(self, dataset: str, deployment: int) -> list[dict]:
        """The finished refreshes of one deployment, in order, up to the first missing one."""
        out = []
        for r in range(1, self.planned + 1):
            line = self.refreshes.get((dataset, deployment, r))
            if line is None:
                break
            out.append(line)
        return out

    def finished(self, dataset: str) -> bool:
        return all(len(self.chain(dataset, d)) == self.planned for d in DEPLOYMENTS)

    def datasets(self) -> list[str]:
        seen = {key[0] for key in self.refreshes}
        return [d for d in (*REPORTED, *SHOWN) if d in seen or any(d in s["datasets"] for s in self.starts)]

    def candidates(self) -> list[tuple[int, float]]:
        found = {(c["members"], c["fusion"]) for line in self.refreshes.values() for c in line["candidates"]}
        return sorted(found, key=lambda c: (c[0], -c[1]))


def load(paths: Iterable[Path]) -> Results:
    """The lines of every file in ``paths``. A (set, deployment) chain is taken whole from one file, the one
    where it went furthest (the first such file on a tie): a chain's refreshes build on each other, so refreshes
    of two runs are never mixed. Every line keeps its file's name (``source``)."""
    chains: dict[tuple[str, int], dict[str, dict[int, dict]]] = {}
    starts, events = [], []
    for path in paths:
        name = Path(path).name
        for number, text in enumerate(Path(path).read_text().splitlines(), 1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except json.JSONDecodeError as err:  # a run killed mid-line leaves its last line cut
                events.append({"kind": "unreadable", "why": f"{path}:{number}: {err}", "source": name})
                continue
            line["source"] = name
            if line["kind"] == "refresh":
                by_file = chains.setdefault((line["dataset"], line["deployment"]), {})
                by_file.setdefault(name, {})[line["refresh"]] = line
            elif line["kind"] == "start":
                starts.append(line)
            else:
                events.append(line)
    refreshes = {}
    for (dataset, deployment), by_file in chains.items():
        def reached(lines: dict[int, dict]) -> int:
            r = 0
            while r + 1 in lines:
                r += 1
            return r

        best = max(by_file, key=lambda name: (reached(by_file[name]), -list(by_file).index(name)))
        refreshes.update({(dataset, deployment, r): line for r, line in by_file[best].items()})
    return Results(refreshes, starts, events)


def cell_of(line: dict, M: int, fusion: float) -> dict:
    return next(c for c in line["candidates"] if c["members"] == M and c["fusion"] == fusion)


def median_or_nan(values: Sequence[float]) -> float:
    return float(np.median(values)) if len(values) else math.nan


@dataclass
class Measured:
    """One (set, candidate M and fusion)'s measures after the last refresh."""

    list_agreement: float
    steadiness: float
    accuracy: float
    stable: dict[str, tuple[int, int, float | None]]  # π -> the two sizes, and their Jaccard where both non-empty
    seconds: float  # per refresh: training the M members, the Laplacian score, ranking and listing
    one_run_seconds: float
    own: dict[str, tuple[int, int, float | None]] = field(default_factory=dict)  # the last refresh's own members
    member_seconds: float = math.nan  # a member's mean, over every member of the set's refreshes


def measure(results: Results, dataset: str, M: int, fusion: float, data_dirs: Sequence[str] = DATA_DIRS
            ) -> Measured:
    chains = {d: results.chain(dataset, d) for d in DEPLOYMENTS}
    cells = {d: [cell_of(line, M, fusion) for line in chains[d]] for d in DEPLOYMENTS}
    last = {d: cells[d][-1] for d in DEPLOYMENTS}
    steady = [jaccard(cells[d][i - 1]["list"], cells[d][i]["list"]) for d in DEPLOYMENTS
              for i in range(STEADY_FROM - 1, len(cells[d]))]
    accuracy = []
    for d in DEPLOYMENTS:
        found = last[d].get("accuracy")
        if found is None and "selections" in last[d]:  # not computed on the device: here, from the lists stored
            found = recompute_accuracy(dataset, d, chains[d][-1]["refresh"] - 1, last[d]["selections"], data_dirs)
        accuracy.append(math.nan if found is None else found["accuracy"])
    stable = {}
    for t in (f"{t:g}" for t in THRESHOLDS):
        a, b = (last[d]["stable"][t] for d in DEPLOYMENTS)
        stable[t] = (len(a), len(b), jaccard(a, b) if a and b else None)
    seconds = [sum(line["member_seconds"][:M]) + line["laplacian_seconds"] + cell["list_seconds"]
               for d in DEPLOYMENTS for line, cell in zip(chains[d], cells[d])]
    one = [line["one_run_seconds"] for d in DEPLOYMENTS for line in chains[d] if "one_run_seconds" in line]
    own = {}
    for t in THRESHOLDS:  # the stable sets of the last refresh's own M members: where a bound applies
        a, b = (own_stable(chains[d][-1], M, t) for d in DEPLOYMENTS)
        own[f"{t:g}"] = (len(a), len(b), jaccard(a, b) if a and b else None)
    member = [s for d in DEPLOYMENTS for line in chains[d] for s in line["member_seconds"]]
    return Measured(jaccard(last[DEPLOYMENTS[0]]["list"], last[DEPLOYMENTS[1]]["list"]),
                    float(np.mean(steady)) if steady else math.nan,
                    float(np.mean(accuracy)), stable, float(np.mean(seconds)),
                    float(np.mean(one)) if one else math.nan, own, float(np.mean(member)))


def own_stable(line: dict, M: int, threshold: float) -> list[int]:
    """The features a share >= ``threshold`` of a refresh's first M members put in their first 50 (``members.carry:
    false``'s stable set, over one table's complementary pairs)."""
    counts = np.zeros(line["n_features"])
    for first in line["member_first"][:M]:
        counts[np.asarray(first, dtype=np.int64)] += 1
    return np.flatnonzero(counts / M >= threshold - 1e-9).tolist()


def recompute_accuracy(dataset: str, deployment: int, r: int, selections: Mapping[str, Sequence[int]],
                       data_dirs: Sequence[str]) -> dict | None:
    try:
        table = read_feature_table(find_dataset(dataset, data_dirs))
    except Exception:
        return None
    prepared = prepare(refresh_table(table, refresh_samples(np.asarray(table.X).shape[0], deployment, r)))
    if prepared.labels is None:
        return None
    return best_accuracy(prepared.standardized, prepared.labels, {int(k): v for k, v in selections.items()})


@dataclass
class Today:
    """Today's default (one full run per refresh, carried, fusion on) and one run's mean, from the refresh study."""

    list_agreement: float
    steadiness: float
    accuracy: float
    one_run_mean: float
    stable: dict[str, tuple[int, int, float | None]]
    one_run_cpu_seconds: float


def today(dataset: str, refreshes: int, cells: Path | None = None, store: Path | None = None,
          method: str = TODAY) -> Today | None:
    """Read at refresh ``refreshes`` from the refresh study's cells and stored runs (default: :data:`CELLS`,
    :data:`REFRESH_STORE`); None where it has none. ``method``: the cell folder of the carried default read (today's,
    fusion on; the second round reads it with the fusion off too)."""
    import pandas as pd

    cells = CELLS if cells is None else cells
    store = REFRESH_STORE if store is None else store

    try:
        carried = pd.concat([pd.read_csv(cells / dataset / method / f"seed_{d}.csv") for d in DEPLOYMENTS])
        one = pd.concat([pd.read_csv(cells / dataset / ONE_RUN / f"seed_{d}.csv") for d in DEPLOYMENTS])
        runs = {d: np.load(store / dataset / f"members_seed_{d}.npz") for d in DEPLOYMENTS}
    except FileNotFoundError:
        return None
    if carried["refresh"].max() < refreshes or any(f"scores_{refreshes - 1}" not in z.files for z in runs.values()):
        return None
    at = carried[carried["refresh"] == refreshes]
    steady = carried[(carried["refresh"] >= STEADY_FROM) & (carried["refresh"] <= refreshes)]["jaccard_previous"]
    first = one[one["refresh"] <= refreshes]
    stable = {}
    kept = {}
    for d, z in runs.items():  # the same rule over its kept runs: the share of them whose first 50 hold a feature
        orders = [feature_order(z[f"scores_{r}"])[:K] for r in range(refreshes)]
        counts = np.zeros(len(z["scores_0"]))
        for order in orders:
            counts[order] += 1
        kept[d] = counts / len(orders)
    for t in THRESHOLDS:
        a, b = (np.flatnonzero(kept[d] >= t - 1e-9).tolist() for d in DEPLOYMENTS)
        stable[f"{t:g}"] = (len(a), len(b), jaccard(a, b) if a and b else None)
    seconds = float(np.mean([float(runs[d][f"seconds_{r}"]) for d in DEPLOYMENTS for r in range(refreshes)]))
    return Today(float(at["jaccard_deployments"].mean()), float(steady.mean()), float(at["accuracy"].mean()),
                 float(first["accuracy"].mean()), stable, seconds)


@dataclass
class Verdict:
    rows: list[dict]  # one per candidate (M, fusion, π): its targets
    winner: dict | None
    beats_today: bool | None
    today_median: float
    today_accurate: int
    cpu: str
    best_list: dict | None
    best_stable: dict | None
    all_run: bool
    not_run: list[str]  # the reported sets that did not finish
    could_change: bool  # whether a candidate could become eligible, were every set not run at its best


def judge(measured: dict[tuple[str, int, float], Measured], todays: dict[str, Today | None], finished: set[str],
          cpu_ratio: dict[int, float]) -> Verdict:
    """The rule's decision (module docstring) on what ran."""
    all_run = all(d in finished for d in REPORTED)
    not_run = [d for d in REPORTED if d not in finished]
    rows = []
    candidates = sorted({(M, f) for (_, M, f) in measured}, key=lambda c: (c[0], -c[1]))
    for M, fusion in candidates:
        agreement = [measured[(d, M, fusion)].list_agreement if d in finished else -math.inf for d in REPORTED]
        accurate = sum(1 for d in REPORTED if d in finished and todays.get(d) is not None
                       and measured[(d, M, fusion)].accuracy >= todays[d].one_run_mean)
        ratios = [measured[(d, M, fusion)].seconds / measured[(d, M, fusion)].one_run_seconds
                  for d in REPORTED if d in finished]
        for t in (f"{t:g}" for t in THRESHOLDS):
            stable = [measured[(d, M, fusion)].stable[t][2] for d in REPORTED if d in finished]
            stable = [s for s in stable if s is not None]
            t1 = len(stable) >= 3 and median_or_nan(stable) >= 0.8
            t2 = float(np.median(agreement)) >= 0.6
            t3 = accurate >= 5
            # the best the sets not run could do: lists and stable sets agreeing fully, accuracy above one run's
            best_case = [a if math.isfinite(a) else 1.0 for a in agreement]
            best_stable = stable + [1.0] * len(not_run)
            could = (M >= 2 and len(best_stable) >= 3 and median_or_nan(best_stable) >= 0.8
                     and float(np.median(best_case)) >= 0.6 and accurate + len(not_run) >= 5)
            rows.append({"members": M, "fusion": fusion, "threshold": float(t), "stable_median": median_or_nan(stable),
                         "stable_sets": len(stable), "list_median": float(np.median(agreement)),
                         "list_median_run": median_or_nan([a for a in agreement if math.isfinite(a)]),
                         "accurate": accurate, "t1": t1, "t2": t2, "t3": t3,
                         "list_median_best_case": float(np.median(best_case)), "could": could,
                         "cost": median_or_nan(ratios),
                         "eligible": M >= 2 and t1 and t2 and t3 and all_run})
    eligible = [r for r in rows if r["eligible"]]
    winner = min(eligible, key=lambda r: (r["members"], r["fusion"], -r["threshold"])) if eligible else None
    today_agreement = [todays[d].list_agreement if todays.get(d) is not None else -math.inf for d in REPORTED]
    today_median = float(np.median(today_agreement))
    today_accurate = sum(1 for d in REPORTED if todays.get(d) is not None
                         and todays[d].accuracy >= todays[d].one_run_mean)
    beats = None
    cpu = "stays one run per refresh (`per_run: 1`): there is no winner"
    if winner is not None:
        beats = winner["list_median"] > today_median and winner["accurate"] >= today_accurate
        if not beats:
            cpu = "stays one run per refresh (`per_run: 1`): the winner does not beat today's default"
        elif winner["members"] not in cpu_ratio:
            cpu = "stays one run per refresh (`per_run: 1`): no CPU measurement of a member and of one run was given"
        else:
            ratio = cpu_ratio[winner["members"]]
            cpu = (f"{winner['members']} members cost {ratio:.2f}x one run per refresh on one CPU thread: "
                   + (f"at most {CPU_MEMBERS_PER_RUN:g}x, so the CPU default is the winner's too"
                      if ratio <= CPU_MEMBERS_PER_RUN else
                      f"above {CPU_MEMBERS_PER_RUN:g}x, so the CPU default stays one run per refresh (`per_run: 1`)"))
    run_rows = [r for r in rows if r["members"] >= 2] or rows
    best_list = max(run_rows, key=lambda r: (r["list_median_run"], -r["members"])) if run_rows else None
    with_stable = [r for r in run_rows if r["stable_sets"]]
    best_stable = max(with_stable, key=lambda r: (r["stable_median"], r["stable_sets"], -r["members"])) \
        if with_stable else None
    return Verdict(rows, winner, beats, today_median, today_accurate, cpu, best_list, best_stable, all_run,
                   not_run, any(r["could"] for r in rows))


def cpu_ratios(results: Results | None) -> dict[int, float]:
    """Rule 4's measure: M x a member's mean seconds over one run's, from a ``--device cpu`` run on lung_small."""
    if results is None:
        return {}
    lines = [line for line in results.refreshes.values() if line["dataset"] == "lung_small"
             and line["device"] == "cpu"]
    member = [s for line in lines for s in line["member_seconds"]]
    one = [line["one_run_seconds"] for line in lines if "one_run_seconds" in line]
    if not member or not one:
        return {}
    return {M: M * float(np.mean(member)) / float(np.mean(one)) for M in MEMBER_COUNTS}


def fusion_name(fusion: float) -> str:
    return f"on ({fusion:g})" if fusion else "off"


def number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.{digits}f}"


def render(results: Results, command: str, cpu: Results | None = None, data_dirs: Sequence[str] = DATA_DIRS,
           cells: Path | None = None, store: Path | None = None, note: str | None = None
           ) -> tuple[str, Verdict | None]:
    """The page, and the rule's verdict (None when no set finished)."""
    R = results.planned
    datasets = results.datasets()
    finished = {d for d in datasets if results.finished(d)}
    candidates = results.candidates()
    measured = {(d, M, f): measure(results, d, M, f, data_dirs) for d in finished for M, f in candidates}
    todays = {d: today(d, R, cells, store) for d in (*REPORTED, *SHOWN)}
    start = results.starts[0] if results.starts else {}
    lines = ["# The agreement study: two deployments' stable sets and lists after "
             f"{R} refreshes", "",
             f"Generated by `{command}` from the lines of `python -m benchmarks.agreement run` (the rule is the "
             "module's docstring, benchmarks/agreement.py, committed before any result). Do not edit by hand.", "",
             f"Members per refresh up to {start.get('members', '?')} at {start.get('epochs', '?')} epochs on "
             "complementary half-samples. M = 1 is one such member a refresh: shown, never chosen (`per_run: 1` is "
             "one full run, today's default).", "", "## What ran", "",
             "| run (file) | device | torch | worker processes x torch threads | budget | sets | wall time |",
             "|---|---|---|---|---|---|---|"]
    ends = {e["source"]: e for e in results.events if e["kind"] == "end" and "source" in e}
    for run_ in results.starts:
        end = ends.get(run_.get("source"))
        wall = f"{end['elapsed_s']:.0f} s" if end else "cut off"
        lines.append(f"| {run_.get('source', '?')} | {run_.get('device_name', '?')} (`{run_.get('device', '?')}`) | "
                     f"{run_.get('torch', '?')} | {run_.get('workers', '?')} x {run_.get('threads_per_worker', '?')} | "
                     f"{run_.get('budget_s', '?'):g} s | {', '.join(run_.get('datasets', []))} | "
                     f"{wall} |")
    lines += ["", note] if note else []
    lines += ["", "Each deployment's chain of refreshes is taken whole from one run, the one where it went "
              "furthest (the first on a tie); refreshes of two runs are never mixed.", "",
              "| set | judged | refreshes finished, deployment 42 / 43 | from | status |", "|---|---|---|---|---|"]
    for d in datasets:
        got = [len(results.chain(d, dep)) for dep in DEPLOYMENTS]
        where = " / ".join(results.chain(d, dep)[0]["source"] if results.chain(d, dep) else "-"
                           for dep in DEPLOYMENTS)
        lines.append(f"| {d} | {'yes' if d in REPORTED else 'no (shown)'} | {got[0]} / {got[1]} of {R} | {where} | "
                     f"{'run' if d in finished else '**not run**'} |")
    said = [event for event in results.events if event["kind"] in ("stopped", "error", "unreadable")]
    lines += ["", "What each run said when it stopped a chain or failed:", ""] if said else []
    for event in said:
        why = event.get("why") or event.get("error", "").strip().splitlines()[-1]
        where = " ".join(str(part) for part in (event.get("dataset"), event.get("deployment"),
                                                 f"refresh {event['refresh']}" if "refresh" in event else None)
                         if part is not None)
        lines.append(f"- {event.get('source', '?')}: {event['kind']}{' ' + where if where else ''}: {why}")
    lines += ["", "## Every set and candidate", "",
              "List agreement: Jaccard@50 of the two deployments' last lists. Steadiness: Jaccard@50 with the "
              f"previous list, refreshes {STEADY_FROM}-{R}, mean over the deployments. Accuracy: the last list's "
              "k-means accuracy (best k, mean of 20 runs; mean of the deployments), one run's mean beside it. "
              "Stable sets at π: the Jaccard index of the two deployments' (their sizes), - where one is empty. "
              "Cost: device seconds per refresh (members, Laplacian score, ranking and listing) over one full "
              "default run's on the same device. *Today* is the refresh study's one full run per refresh, "
              "carried with the fusion on (trained on one CPU thread; its cost is its CPU seconds).", "",
              "| set | members M | fusion | list agreement | steadiness | accuracy (one run's mean) | "
              + " | ".join(f"stable π = {t:g}" for t in THRESHOLDS) + " | seconds / refresh (x one run) |",
              "|---|---|---|---|---|---|" + "---|" * len(THRESHOLDS) + "---|"]

    def stable_text(s: tuple[int, int, float | None]) -> str:
        return f"{number(s[2])} ({s[0]}/{s[1]})"

    for d in datasets:
        base = todays.get(d)
        reference = f" ({100 * base.one_run_mean:.1f})" if base else " (-)"
        if base is not None:
            lines.append(f"| {d} | today | on (0.5) | {base.list_agreement:.2f} | {number(base.steadiness)} | "
                         f"{100 * base.accuracy:.1f}{reference} | "
                         + " | ".join(stable_text(base.stable[f"{t:g}"]) for t in THRESHOLDS)
                         + f" | {base.one_run_cpu_seconds:.1f} on CPU |")
        if d not in finished:
            lines.append("| " + " | ".join([d, "every", "-", "not run", *[""] * (3 + len(THRESHOLDS))]) + " |")
            continue
        for M, f in candidates:
            m = measured[(d, M, f)]
            lines.append(f"| {d} | {M} | {fusion_name(f)} | {m.list_agreement:.2f} | {number(m.steadiness)} | "
                         f"{number(100 * m.accuracy, 1)}{reference} | "
                         + " | ".join(stable_text(m.stable[f"{t:g}"]) for t in THRESHOLDS)
                         + f" | {m.seconds:.2f} ({number(m.seconds / m.one_run_seconds)}x) |")
    own_counts = sorted({M for M, _ in candidates if M >= 2})
    if finished and own_counts:
        lines += ["", "## Beside the rule: the last refresh's own members", "",
                  "The stable sets above are the product's with `members.carry` (every member kept, trained on "
                  f"{R} tables), for which no bound is printed. With `members.carry: false` a run's stable set "
                  "rests on its own M members, complementary pairs of one table, and Shah and Samworth's bound applies "
                  f"(q = {K}): the two deployments' stable sets at refresh {R} from those members alone, their "
                  "Jaccard (sizes) and the bound on expected false selections. Not judged by the rule.", "",
                  "| set | M | " + " | ".join(f"π = {t:g}: J (sizes), bound" for t in THRESHOLDS) + " |",
                  "|---|---|" + "---|" * len(THRESHOLDS)]
        for d in [d for d in datasets if d in finished]:
            p = results.chain(d, DEPLOYMENTS[0])[-1]["n_features"]
            for M in own_counts:
                m = measured[(d, M, candidates[0][1])]
                lines.append(f"| {d} | {M} | " + " | ".join(
                    f"{stable_text(m.own[f'{t:g}'])}, {complementary_pairs_bound(K, p, t, M // 2):.2g}"
                    for t in THRESHOLDS) + " |")
        lines += ["", "## Cost", "",
                  f"A member's mean device seconds ({start.get('epochs', '?')} epochs on a half-sample; the "
                  "workers share the device, so these are seconds under that load), one full default run's "
                  "(timed at deployment 42's first refresh, under the same load) and the seconds per refresh of "
                  "each M (fusion on) over one run's, over every refresh timed (a set not run included).", "",
                  "| set | samples x features | refreshes timed | a member | one run | " + " | ".join(
                      f"M = {M}" for M in sorted({M for M, _ in candidates})) + " |",
                  "|---|---|---|---|---|" + "---|" * len({M for M, _ in candidates})]
        for d in datasets:
            timed = [line for dep in DEPLOYMENTS for line in results.chain(d, dep)]
            if not timed:
                continue
            member = float(np.mean([s for line in timed for s in line["member_seconds"]]))
            one = [line["one_run_seconds"] for line in timed if "one_run_seconds" in line]
            one_run = float(np.mean(one)) if one else math.nan
            per_m = {M: float(np.mean([sum(line["member_seconds"][:M]) + line["laplacian_seconds"]
                                       + cell_of(line, M, f)["list_seconds"] for line in timed]))
                     for M, f in candidates if f == FUSIONS[0]}
            lines.append(f"| {d} | {timed[0]['n_samples']} x {timed[0]['n_features']} | {len(timed)} | "
                         f"{member:.2f} s | {number(one_run)} s | " + " | ".join(
                             f"{v:.1f} s ({number(v / one_run)}x)" for _, v in sorted(per_m.items())) + " |")
        lines += ["", "Cost under load: the members' seconds were measured with several worker processes sharing "
                  "the device (the runs above: their CUDA contexts take turns on it), so they are not one process's "
                  "cost, and runs with different numbers of workers load it differently."]
        ratios = cpu_ratios(cpu)
        if ratios:
            lines += ["", "On one CPU thread (rule 4, `--device cpu` on lung_small): M members cost "
                      + ", ".join(f"{ratios[M]:.2f}x" + f" (M = {M})" for M in MEMBER_COUNTS)
                      + " one run per refresh."]
    if not finished:
        lines += ["", "## By the rule", "", "No set finished: nothing is judged, and every default stays."]
        return "\n".join(lines) + "\n", None
    verdict = judge(measured, todays, finished, cpu_ratios(cpu))
    lines += ["", "## The targets, candidate by candidate", "",
              "T1: median stable-set Jaccard >= 0.8 over the reported sets where both are non-empty (at least 3 "
              "such sets). T2: median list agreement over the six reported sets >= 0.6 (a set not run counts as "
              "failing). T3: the last list's accuracy at or above one run's mean on >= 5 of 6. Cost: the median "
              "over the reported sets run of the cost per refresh over one run's, on the device.", "",
              "| M | fusion | π | T1: stable median (sets) | T2: list median | T3: sets at or above | cost | "
              "eligible |", "|---|---|---|---|---|---|---|---|"]
    for row in verdict.rows:
        lines.append(f"| {row['members']} | {fusion_name(row['fusion'])} | {row['threshold']:g} | "
                     f"{number(row['stable_median'])} ({row['stable_sets']}) {'met' if row['t1'] else 'not met'} | "
                     f"{number(row['list_median'])} {'met' if row['t2'] else 'not met'} | "
                     f"{row['accurate']} of {len(REPORTED)} {'met' if row['t3'] else 'not met'} | "
                     f"{number(row['cost'])}x | {'yes' if row['eligible'] else 'no'} |")
    lines += ["", f"Today's default: median list agreement {number(verdict.today_median)}, last list at or above one "
              f"run's mean on {verdict.today_accurate} of {len(REPORTED)}.", "", "## By the rule", ""]
    lines += decision_lines(verdict)
    lines += ["", "## Reading", ""] + reading(measured, [d for d in REPORTED if d in finished], candidates)
    return "\n".join(lines) + "\n", verdict


def reading(measured: dict[tuple[str, int, float], Measured], sets: Sequence[str],
            candidates: Sequence[tuple[int, float]]) -> list[str]:
    """What the table says about the stable sets and the fusion, counted over the reported ``sets`` run."""
    out = []
    for M in sorted({M for M, _ in candidates if M >= 2}):
        empty = {f"{t:g}": sum(1 for d in sets if min(measured[(d, M, FUSIONS[0])].stable[f"{t:g}"][:2]) == 0)
                 for t in THRESHOLDS}
        out.append(f"- M = {M}: the carried stable set is empty in at least one deployment on "
                   + ", ".join(f"{n} of {len(sets)} sets at π = {t}" for t, n in empty.items()) + ".")
    for M in sorted({M for M, _ in candidates}):
        if (M, 0.0) in candidates and (M, FUSIONS[0]) in candidates:
            on = [measured[(d, M, FUSIONS[0])] for d in sets]
            off = [measured[(d, M, 0.0)] for d in sets]
            agree = sum(a.list_agreement > b.list_agreement for a, b in zip(on, off))
            accurate = sum(a.accuracy >= b.accuracy for a, b in zip(on, off))
            out.append(f"- M = {M}, the fusion on against off: lists agree more on {agree} of {len(sets)} sets, "
                       f"the last list at least as accurate on {accurate} of {len(sets)}.")
    return out


def decision_lines(verdict: Verdict) -> list[str]:
    out = []
    if not verdict.all_run:
        out.append("- Not every reported set ran: no default can change (rule 1).")
        sets = ", ".join(verdict.not_run)
        candidates = [r for r in verdict.rows if r["members"] >= 2]
        if verdict.could_change:
            out.append(f"- The sets not run ({sets}) could still change that: at their best (lists and stable sets "
                       "agreeing fully, accuracy above one run's mean) a candidate would meet T1, T2 and T3.")
        elif candidates:
            top = max(candidates, key=lambda r: (r["list_median_best_case"], -r["members"]))
            out.append(f"- The sets not run ({sets}) cannot change the verdict: even at their best (lists and stable "
                       "sets agreeing fully, accuracy above one run's mean) no candidate with M >= 2 would meet T1, "
                       f"T2 and T3; the highest median list agreement any could then reach is "
                       f"{top['list_median_best_case']:.2f} (M = {top['members']}, fusion "
                       f"{fusion_name(top['fusion'])})"
                       + (", below T2's 0.6." if top["list_median_best_case"] < 0.6 else
                          ", and T1 or T3 fails even then."))
    w = verdict.winner
    if w is None:
        out.append("- No candidate with M >= 2 meets T1, T2 and T3 on the six reported sets: there is no winner, "
                   "and every default stays (rule 5). The selection probabilities stay on every list.")
    else:
        out.append(f"- The winner (rule 2): M = {w['members']}, fusion {fusion_name(w['fusion'])}, π = "
                   f"{w['threshold']:g}; cost {number(w['cost'])}x one run per refresh on the device.")
        if verdict.beats_today:
            out.append(f"- It beats today's default (rule 3: median list agreement {w['list_median']:.2f} against "
                       f"{verdict.today_median:.2f}, {w['accurate']} sets at or above one run's mean against "
                       f"{verdict.today_accurate}): on CUDA `members.per_run: {w['members']}`, `members.sampling: "
                       f"complementary`, `members.laplacian_weight: {w['fusion']:g}`, `members.threshold: "
                       f"{w['threshold']:g}`.")
        else:
            out.append(f"- It does not beat today's default (rule 3: median list agreement {w['list_median']:.2f} "
                       f"against {verdict.today_median:.2f}, {w['accurate']} sets at or above one run's mean "
                       f"against {verdict.today_accurate}): every default stays.")
    out.append(f"- CPU default (rule 4): {verdict.cpu}.")
    if w is None or not verdict.beats_today:
        b, s = verdict.best_list, verdict.best_stable
        if b is not None:
            out.append(f"- The best list agreement reached: median {b['list_median_run']:.2f} over the reported sets "
                       "that ran, "
                       f"M = {b['members']}, fusion {fusion_name(b['fusion'])}, at {number(b['cost'])}x one run's "
                       "cost per refresh on the device.")
        if s is not None:
            out.append(f"- The best stable-set agreement reached: median {s['stable_median']:.2f} over "
                       f"{s['stable_sets']} reported set(s) with both stable sets non-empty, M = {s['members']}, "
                       f"fusion {fusion_name(s['fusion'])}, π = {s['threshold']:g}, at {number(s['cost'])}x one "
                       "run's cost per refresh.")
    return out


# -- the second round: the fusion in today's default -----------------------------------------------------------


def drift_check(method: str, cells: Path | None = None) -> tuple[bool, int | None] | None:
    """The refresh study's drift check (``benchmarks.refresh.drift_passes``, half-life infinite) on the cells of
    ``method``; None where it has none."""
    import pandas as pd

    from benchmarks.refresh import drift_passes  # the refresh study's own check (it imports more than the core)

    cells = CELLS if cells is None else cells
    try:
        table = pd.concat([pd.read_csv(cells / DRIFT / method / f"seed_{d}.csv") for d in DEPLOYMENTS])
    except FileNotFoundError:
        return None
    return drift_passes(table, math.inf)


def fusion_candidate(weight: float):
    """The refresh study's carried candidate of today's default with the Laplacian weight ``weight``."""
    from dataclasses import replace

    from benchmarks.refresh import PRODUCT

    return replace(PRODUCT, laplacian_weight=weight, laplacian_fusion="reciprocal_rank")


def compute_fusion_cells(data_dirs: Sequence[str] = DATA_DIRS, cells: Path | None = None,
                         store: Path | None = None) -> list[Path]:
    """The cells of every :data:`FUSION_CELLS` weight not stored yet, on the reported sets and the drift case, from
    the refresh study's stored runs by its own functions (the third round, module docstring); the files written."""
    from benchmarks import refresh
    from iclfs.evaluation._benchmark import slug
    from iclfs.io.datasets import CellsDataset

    cells = CELLS if cells is None else cells
    store = REFRESH_STORE if store is None else store
    candidates = {}
    for weight, folder in FUSION_CELLS.items():
        candidate = fusion_candidate(weight)
        if slug(candidate.name) != folder:
            raise ValueError(f"FUSION_CELLS[{weight:g}] is {folder!r}, the refresh study names it "
                             f"{slug(candidate.name)!r}")
        candidates[folder] = candidate
    written = []
    for dataset in (*REPORTED, DRIFT):
        missing = [candidate for folder, candidate in candidates.items()
                   if not all((cells / dataset / folder / f"seed_{d}.csv").is_file() for d in DEPLOYMENTS)]
        if not missing:
            continue
        # one pass over the stored refreshes for every weight missing (each refresh's table and Laplacian scores)
        runs = {d: refresh.refresh_runs(dataset, d, store, data_dirs, missing, baselines=False) for d in DEPLOYMENTS}
        computed = refresh.cells(dataset, runs, [c.name for c in missing])
        CellsDataset(path=str(cells)).save(computed)  # as the refresh study stores its cells: each file whole
        written += [cells / f"{key}.csv" for key in computed]
    return written


def fusion_rows(refreshes: int = REFRESHES, cells: Path | None = None, store: Path | None = None) -> list[dict]:
    """Each candidate of the second round (:data:`FUSION_CELLS`): its sets read at refresh ``refreshes``, its
    guards and targets (module docstring, the second round)."""
    rows = []
    for weight, method in FUSION_CELLS.items():
        sets = {d: today(d, refreshes, cells, store, method) for d in REPORTED}
        read = [t for t in sets.values() if t is not None]
        drift = drift_check(method, cells)
        accurate = sum(1 for t in read if t.accuracy >= t.one_run_mean)
        steady = [t.steadiness for t in read]
        rows.append({"weight": weight, "sets": sets, "drift": drift, "accurate": accurate, "t3": accurate >= 5,
                     "list_median": float(np.median([t.list_agreement if t is not None else -math.inf
                                                     for t in sets.values()])),
                     "steady_min": min(steady) if steady else math.nan,
                     "complete": len(read) == len(REPORTED),
                     "guards": (len(read) == len(REPORTED) and all(v >= STEADY_GUARD for v in steady)
                                and drift is not None and drift[0])})
    return rows


def _fusion_order(row: dict) -> tuple:
    """The decision's order of two candidates that pass the guards: T3 first, then the median list agreement; on a
    tie the lower weight comes first."""
    return row["t3"], row["list_median"], -row["weight"]


def fusion_winner(rows: Sequence[dict]) -> dict | None:
    """The rule: the first by :func:`_fusion_order` among the candidates that pass the guards. None when no
    candidate passes them (the weight then stays today's)."""
    passing = [r for r in rows if r["guards"]]
    return max(passing, key=_fusion_order) if passing else None


def render_fusion(rows: Sequence[dict], command: str, refreshes: int = REFRESHES) -> str:
    """The second and third rounds' page."""
    today_weight = FUSIONS[0]  # the weight the rules were fixed against
    weights = ", ".join(f"{r['weight']:g}" for r in rows)
    lines = ["# The agreement study's second and third rounds: the Laplacian fusion in today's default", "",
             f"Generated by `{command}` from the refresh study's cells and stored runs (`results/cells/refresh`, "
             "`results/refresh`); nothing was trained for it. The rules are the second and third rounds' in the "
             "docstring of `benchmarks/agreement.py`, each committed before its cells were read. Do not edit by "
             "hand.", "",
             "Today's default is one full run per refresh, carried across refreshes. The candidates differ only in "
             f"`members.laplacian_weight` ({weights}; {today_weight:g} is today's): the weight of the "
             "Laplacian-score rank fused into the order of the members kept (0: none). All keep the carried "
             "Laplacian score in the LGRC gate, the hold and the admit. The second round judged 0.5 and 0; the "
             "third added 0.25 and judged the three by the same guards and decision. Read at refresh "
             f"{refreshes}, as the first round read today's default.", "",
             "## Every reported set", "",
             f"List agreement: Jaccard@50 of the two deployments' lists at refresh {refreshes}. Steadiness: "
             f"Jaccard@50 with the previous list, refreshes {STEADY_FROM}-{refreshes}, mean over the deployments. "
             f"Accuracy: the last list's k-means accuracy (best k, mean of 20 runs; mean of the deployments), one "
             f"run's mean over refreshes 1-{refreshes} beside it.", "",
             "| set | fusion | list agreement | steadiness | accuracy (one run's mean) | at or above one run's mean |",
             "|---|---|---|---|---|---|"]
    for d in REPORTED:
        for row in rows:
            t = row["sets"][d]
            if t is None:
                lines.append(f"| {d} | {fusion_name(row['weight'])} | no cells | | | |")
                continue
            lines.append(f"| {d} | {fusion_name(row['weight'])} | {t.list_agreement:.2f} | {t.steadiness:.2f} | "
                         f"{100 * t.accuracy:.1f} ({100 * t.one_run_mean:.1f}) | "
                         f"{'yes' if t.accuracy >= t.one_run_mean else 'no'} |")
    lines += ["", "## The guards and targets", "",
              f"Guards: steadiness >= {STEADY_GUARD:g} on every reported set (the lists hold still) and the drift "
              "check (half the new informative features in the first 50 after the change, in every deployment; "
              "read over the drift case's whole run). T3: the last list at or above one run's mean on >= 5 of "
              f"{len(REPORTED)}. T2's measure: the median list agreement over the {len(REPORTED)}.", "",
              "| fusion | lowest steadiness | drift check | guards | T3: sets at or above | median list agreement |",
              "|---|---|---|---|---|---|"]
    for row in rows:
        drift = ("no cells" if row["drift"] is None else
                 f"{'pass' if row['drift'][0] else 'fail'} ({row['drift'][1] + 1} refreshes after the change)"
                 if row["drift"][1] is not None else "fail (never)")
        lines.append(f"| {fusion_name(row['weight'])} | {number(row['steady_min'])} | {drift} | "
                     f"{'pass' if row['guards'] else 'fail'} | {row['accurate']} of {len(REPORTED)} "
                     f"{'met' if row['t3'] else 'not met'} | {number(row['list_median'])} |")
    lines += ["", "## By the rule", ""]
    incomplete = [fusion_name(r["weight"]) for r in rows if not r["complete"]]
    if incomplete:
        lines.append(f"- Not every reported set has cells for: {', '.join(incomplete)}; such a candidate fails the "
                     "guards.")
    for row in rows:
        if not row["guards"] and row["complete"]:
            low = [d for d, t in row["sets"].items() if t is not None and t.steadiness < STEADY_GUARD]
            why = ([f"steadiness below {STEADY_GUARD:g} on {', '.join(low)}"] if low else []) + \
                  (["the drift check fails"] if row["drift"] is None or not row["drift"][0] else [])
            lines.append(f"- The fusion {fusion_name(row['weight'])} fails the guards: {'; '.join(why)}.")
    winner = fusion_winner(rows)
    if winner is None:
        lines.append(f"- No candidate passes the guards: `members.laplacian_weight` stays {today_weight:g}.")
    else:
        others = [r for r in rows if r is not winner and r["guards"]]
        runner_up = max(others, key=_fusion_order) if others else None
        if runner_up is None:
            why = "the only candidate that passes the guards"
        elif winner["t3"] != runner_up["t3"]:
            why = f"it meets T3 and the fusion {fusion_name(runner_up['weight'])} does not (step 1)"
        elif winner["list_median"] != runner_up["list_median"]:
            why = (f"it and the fusion {fusion_name(runner_up['weight'])} both "
                   f"{'meet' if winner['t3'] else 'miss'} T3, and its lists agree more: median "
                   f"{winner['list_median']:.2f} against {runner_up['list_median']:.2f} (step 2)")
        else:
            why = (f"a tie with the fusion {fusion_name(runner_up['weight'])} on T3 and on the median list "
                   "agreement, which goes to the lower weight (step 3)")
        change = ("stays" if winner["weight"] == today_weight else "becomes")
        lines.append(f"- The winner is the fusion {fusion_name(winner['weight'])}: {why}. "
                     f"`members.laplacian_weight` {change} {winner['weight']:g}.")
        t2 = "met" if winner["list_median"] >= 0.6 else "not met"
        lines.append(f"- T3 with it: {winner['accurate']} of {len(REPORTED)} sets at or above one run's mean "
                     f"({'met' if winner['t3'] else 'not met'}); the median list agreement "
                     f"{winner['list_median']:.2f} (T2 asks 0.6: {t2}).")
    on, off = (next(r for r in rows if r["weight"] == w) for w in (today_weight, 0.0))
    both = [d for d in REPORTED if on["sets"][d] is not None and off["sets"][d] is not None]
    if both:
        accurate = sum(off["sets"][d].accuracy >= on["sets"][d].accuracy for d in both)
        agree = sum(on["sets"][d].list_agreement > off["sets"][d].list_agreement for d in both)
        steadier = sum(on["sets"][d].steadiness > off["sets"][d].steadiness for d in both)
        lines += ["", "## Reading", "",
                  f"- The fusion on against off, over the {len(both)} sets: the lists agree more with it on {agree}, "
                  f"they are steadier with it on {steadier}, and the last list is at least as accurate without it "
                  f"on {accurate}."]
    return "\n".join(lines) + "\n"


# -- the command line ----------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m benchmarks.agreement", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    go = commands.add_parser("run", help="train and carry every candidate; one line per finished refresh")
    go.add_argument("--device", default="cpu", help="cuda, cuda:N or cpu")
    go.add_argument("--datasets", nargs="+", default=list(ORDER))
    go.add_argument("--datasets-dir", nargs="+", default=list(DATA_DIRS), dest="data_dirs")
    go.add_argument("--out", type=Path, required=True, help="the .jsonl the lines are appended to")
    go.add_argument("--budget-s", type=float, default=math.inf, help="start no refresh after this many seconds")
    go.add_argument("--workers", type=int, default=1, help="processes sharing the device, each on its own cores")
    go.add_argument("--members", type=int, default=16, help="members per refresh (even); M = 1, 4, 16, 64 up to it")
    go.add_argument("--refreshes", type=int, default=REFRESHES)
    go.add_argument("--epochs", type=int, default=MembersConfig().epochs)
    go.add_argument("--threads", type=int, default=None,
                    help="torch threads per worker (default: its share of the CPU cores)")
    go.add_argument("--no-accuracy", action="store_true",
                    help="leave the last lists' k-means accuracy to the report (it stores every k's list)")
    page = commands.add_parser("report", help="the page from the lines")
    page.add_argument("--results", type=Path, nargs="+", required=True)
    page.add_argument("--cpu-results", type=Path, nargs="*",
                      default=[CPU_RESULTS] if CPU_RESULTS.is_file() else [],
                      help="a --device cpu run on lung_small: rule 4's cost of a member against one run")
    page.add_argument("--page", type=Path, default=PAGE)
    page.add_argument("--note", default=None, help="a line on where and how the runs ran, for the page")
    page.add_argument("--datasets-dir", nargs="+", default=list(DATA_DIRS), dest="data_dirs")
    second = commands.add_parser("fusion", help="the second round: today's default with the fusion on and off, "
                                                "from the refresh study's cells")
    second.add_argument("--page", type=Path, default=FUSION_PAGE)
    second.add_argument("--compute", action="store_true",
                        help="first compute the cells of a weight that has none (the third round's 0.25)")
    second.add_argument("--datasets-dir", nargs="+", default=list(DATA_DIRS), dest="data_dirs")
    args = parser.parse_args(argv)
    if args.command == "fusion":
        if args.compute:
            for path in compute_fusion_cells(args.data_dirs):
                print(f"wrote {path}", flush=True)
        text = render_fusion(fusion_rows(), "python -m benchmarks.agreement " + shlex.join(argv))
        args.page.parent.mkdir(parents=True, exist_ok=True)
        args.page.write_text(text)
        print(text)
        return
    if args.command == "run":
        if args.members < 2 or args.members % 2:
            parser.error(f"--members {args.members}: complementary pairs need an even count of at least 2")
        if args.refreshes < 1 or args.workers < 1 or args.epochs < 1:
            parser.error("--refreshes, --workers and --epochs are at least 1")
        if args.device.startswith("cuda"):
            import torch

            if not torch.cuda.is_available():
                parser.error(f"--device {args.device}: torch {torch.__version__} sees no CUDA device here")
        unknown = [d for d in args.datasets if not any((Path(f) / f"{d}.mat").is_file() for f in args.data_dirs)]
        if unknown:
            parser.error(f"no .mat file for {', '.join(unknown)} in {', '.join(args.data_dirs)}")
        run(args.datasets, args.data_dirs, args.out, args.budget_s, args.workers, args.members, args.refreshes,
            args.epochs, args.device, not args.no_accuracy, args.threads)
        return
    missing = [str(p) for p in [*args.results, *args.cpu_results] if not p.is_file()]
    if missing:
        parser.error(f"no such results file: {', '.join(missing)}")
    cpu = load(args.cpu_results) if args.cpu_results else None
    text, _ = render(load(args.results), "python -m benchmarks.agreement " + shlex.join(argv), cpu, args.data_dirs,
                     note=args.note)
    args.page.parent.mkdir(parents=True, exist_ok=True)
    args.page.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
