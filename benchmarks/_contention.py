"""Epochs on a shared CPU: each thread policy quiet and beside busy processes (``python -m benchmarks.speed
--contention``).

For each table and each candidate of :data:`benchmarks._policies.CANDIDATES` it times
one ``fast`` epoch (:meth:`iclfs.method._training.Trainer.train_epoch`, as training
runs it): quiet, and beside N busy processes (pure-Python loops, one core
each, started a second before), N in ``--loads``. Each cell is a fresh
process whose environment holds none of this process's OpenMP variables:
it names the policy when the product has it (``iclfs._threads``), else the
OpenMP variables the candidate decided here right before the cell started,
the busy processes already running (:func:`benchmarks._policies.start`), so
the policy is in force before torch loads; the median of
``--epochs`` epochs after one warm-up epoch. A result's ratio is its epoch
against the CPU-share bound: the same policy's quiet epoch x (1 + N / cores),
what the process would take if it got exactly its share of the cores.

**The rule, fixed before the results (issue 59).** Among the policies whose
quiet epoch is within 5 % of today's (``spin``, libgomp's default) on every
table, and whose thread count does not follow the load (with it, a table's
lists could differ between a busy and a quiet run: CPU results are
bit-identical only at the same thread count), the default becomes the one
with the lowest worst-case ratio over every table and every N. The report
also says which policy would win if the thread count could follow the load.

**Second round, fixed before its results.** Round one's rule picked ``spin``
(the only policy within 5 % of its own quiet epoch), while ``passive`` met
the load target; no candidate met both. The second round's candidates are
``spin`` (today's default), ``passive`` and ``adaptive`` (libgomp's default
spin unless, when the process starts, other processes keep the CPUs it may
use busy; then passive waiting; the thread count unchanged). They are
measured on a quiet machine's 2 cores, the benchmark and its busy processes
pinned to them (``taskset -c 0,1``), so the machine's other cores neither
help nor disturb. The same rule: among the candidates whose quiet epoch is
within 5 % of ``spin``'s on every table, the lowest worst-case ratio over
every table and every N; the winner becomes
:data:`iclfs._threads.DEFAULT_POLICY`.

*Where and how round two is measured (a precision written before any of its
results on this machine).* The lent machine's run was disturbed (another
study ran on its other cores) and stopped after 14 of 36 cells: it gives no
verdict. The round is measured on the project's own 2-core machine with
every other job stopped, in steps: every candidate's quiet cells on the
three tables; then ``adaptive``'s loaded cells (N = 1, 2, 4); then
``spin``'s loaded cells on lung_small only; then ``passive``'s loaded cells
only if its quiet epoch is within 5 % of ``spin``'s on every table. The
rule reads such a partial set of cells so:

1. A policy whose quiet epoch is more than 5 % above ``spin``'s on any
   table is out, whatever its loaded cells. A quiet cell missing (its own or
   ``spin``'s) leaves it undecided.
2. Among the policies within 5 %, the winner must have every loaded cell
   (every table, every N) measured: its worst ratio is then known.
3. A policy within 5 % whose measured loaded cells already hold a ratio
   above that worst ratio cannot beat it (its other cells can only raise its
   worst): it loses without them.
4. The winner is the complete policy with the lowest worst ratio (an exact
   tie: the one named first) that every other policy within 5 % either
   exceeds in full or loses to by 3. Otherwise the rule has no verdict yet,
   and says which cells it needs.

Round two's steps, as the commands that run them on the project's 2-core
machine with every other job stopped (``/work/briefs/contention_commands.sh``
holds the same; each step adds to the same JSON, ``--resume``; delete it to
start over):

    R=benchmarks/results/contention_round2
    RUN="taskset -c 0,1 .venv/bin/python -m benchmarks.speed --contention --estimate-epochs 0 --resume"
    OUT="--json $R.json --csv $R.csv --output $R.md --minutes 120 --cell-seconds 60"
    ALL="lung_small warpPIE10P Prostate_GE"
    # 1. every candidate's quiet cells on the three tables
    $RUN $OUT --tables $ALL --policies spin passive adaptive --loads 0
    # 2. adaptive's loaded cells
    $RUN $OUT --tables $ALL --policies adaptive --loads 1 2 4
    # 3. spin's loaded cells on lung_small only (a lower bound on spin's worst ratio)
    $RUN $OUT --tables lung_small --policies spin --loads 1 2 4
    # 4. passive's loaded cells, only if its quiet epoch is within 5 % of spin's on every table
    if .venv/bin/python -m benchmarks.speed --contention-within $R.json passive; then
        $RUN $OUT --tables $ALL --policies passive --loads 1 2 4
    fi
    # the round into performance.md; its winner, if it has one, becomes DEFAULT_POLICY
    .venv/bin/python -m benchmarks.speed --fold-round2 $R.json --apply-verdict

On a lent machine (only torch, numpy, scipy, scikit-learn and pandas) the
same runs with ``PYTHONPATH=src python``, ``--datasets-dir`` naming the
folder the tables were copied to.

**Third round, fixed before its results.** Round two gave no verdict, and
its quiet cells showed why the 5 % test cannot be read from one process a
cell: ``adaptive`` ran exactly ``spin``'s settings in its quiet cells (it
read the machine as quiet each time and set nothing), yet its quiet epochs
read +15.1 %, -21.4 % and -28.4 % against ``spin``'s. Between fresh
processes of the same settings a quiet epoch varies by more than the rule
resolves. Round three therefore:

- measures the product's own ``adaptive`` (``iclfs._threads.POLICIES``: the
  cell's process reads the load itself as it imports the product, as a
  user's run does) against ``spin``, on the same three tables, N = 1, 2, 4;
- repeats every cell in fresh processes, ``--repeats 5 3``: each quiet cell
  5 times, each loaded cell 3 times, interleaved (one repeat goes through
  every table, N and policy in turn before the next starts, so a slow spell
  of the machine falls on both policies);
- reads a cell's epoch as the median, over its repeats, of each repeat's
  median epoch, and the rule (unchanged: among the candidates within 5 % of
  ``spin``'s quiet epoch on every table, the lowest worst-case ratio over
  every table and N; the same reading of a partial set of cells) on those;
- measures ``spin``'s loaded cells on lung_small only, as round two did:
  its worst ratio there already exceeds every loaded ratio round two
  measured for ``adaptive``.

Its winner becomes :data:`iclfs._threads.DEFAULT_POLICY`
(``--fold-round3 ... --apply-verdict``). Its commands, on the project's
2-core machine with every other job stopped:

    R=benchmarks/results/contention_round3
    RUN=".venv/bin/python -m benchmarks.speed --contention --estimate-epochs 0 --resume --repeats 5 3"
    OUT="--json $R.json --csv $R.csv --output $R.md --minutes 60 --cell-seconds 60"
    ALL="lung_small warpPIE10P Prostate_GE"
    $RUN $OUT --tables $ALL --policies spin adaptive --loads 0
    $RUN $OUT --tables $ALL --policies adaptive --loads 1 2 4
    $RUN $OUT --tables lung_small --policies spin --loads 1 2 4
    .venv/bin/python -m benchmarks.speed --fold-round3 $R.json --apply-verdict

*Added after those steps ran, which gave no verdict* (``adaptive`` out of
the quiet test, and ``spin``, the one policy left, lacking loaded cells,
rule 2): ``spin``'s loaded cells on the other two tables, with the same
repeats, so that the round reads a complete verdict:

    $RUN $OUT --tables warpPIE10P Prostate_GE --policies spin --loads 1 2 4

**Fourth round, fixed before its results: a quiet test that can resolve
5 %.** Round three gave ``spin`` the verdict only because ``adaptive``
failed the quiet test (+11.2 %, -4.1 %, +10.9 %), although it read the
machine as quiet in all 15 of its quiet cells and so ran exactly ``spin``'s
settings: an A/A comparison, whose five fresh processes a cell lay 29-82 %
apart. Before writing this, fresh ``spin`` processes on the quiet machine
(no results of ``adaptive``) gave each process's median epoch a spread of
about 8.5 % (standard deviation over the mean, 12 processes, warpPIE10P)
and 13 % (7, lung_small). The median of K processes then has a standard
deviation of about 1.25 s / sqrt(K), and the difference of two such medians
sqrt(2) times that: with K = 40, about 2.4 % at s = 8.5 % and 3.7 % at
s = 13 %, so that two policies whose epochs are equal pass the 5 % test
most of the time and a policy 10 % slower fails it most of the time. Round
four:

- measures only the quiet cells of ``spin`` and the product's ``adaptive``
  on the same three tables, 40 fresh processes each (``--repeats 40 1
  --loads 0``), a repeat going through every table and both policies
  before the next starts, the two policies' order swapped every other
  repeat (so that neither always runs right after the other);
- reads a cell's quiet epoch as round three did (the median over its
  repeats of each repeat's median epoch) and the quiet test unchanged: a
  policy is within 5 % when its quiet epoch is at most 1.05 times
  ``spin``'s on every table; the report adds, for information, a bootstrap
  95 % interval of each ratio (2,000 resamples of the repeats) and how many
  of ``adaptive``'s processes read the machine as busy;
- takes the loaded cells, and so each policy's worst ratio over every table
  and N, from round three, as measured there (each against its own quiet
  epoch of that round);
- decides by the rule unchanged: among the policies within 5 % of
  ``spin``'s quiet epoch on every table (round four), whose thread count
  does not follow the load, the lowest worst ratio (round three). The
  winner becomes :data:`iclfs._threads.DEFAULT_POLICY`
  (``--fold-round4 ... --apply-verdict``).

Its commands, on the project's 2-core machine with every other job stopped:

    R=benchmarks/results/contention_round4
    .venv/bin/python -m benchmarks.speed --contention --estimate-epochs 0 --resume --repeats 40 1 \
        --json $R.json --csv $R.csv --output $R.md --minutes 100 --cell-seconds 60 \
        --tables lung_small warpPIE10P Prostate_GE --policies spin adaptive --loads 0
    .venv/bin/python -m benchmarks.speed --fold-round4 $R.json --apply-verdict

The first command's own page (``$R.md``) reads a round of quiet cells alone as one without a verdict; the
round's page is its section of the speed report, which the second writes, and ``$R.md`` is not kept.

**Fifth round, fixed before its results: the thread count may follow the
load.** Rounds one to four kept every policy whose thread count follows the
load out of the verdict: a run's list then depended on its thread count
(``benchmarks/thread_count.py``). A ``fast`` training on CPU now ends in the
same bits at any thread count (``benchmarks/results/thread_count.md``: 1 to
4 threads, lung_small and warpPIE10P, identical; docs/guides/performance.md,
"Lists that do not depend on the thread count"), so that condition is
dropped from the rule. What was seen before writing this: on the new code,
three fresh processes a cell of ``adaptive`` and of ``passive-free-cpus``
(one thread and passive waiting under load) on lung_small and warpPIE10P
(``benchmarks/results/contention_fewer_threads.json``, exploratory, not read
by any verdict): against ``adaptive``'s own quiet epoch, one thread under
load read at most 1.48x on those two tables and two threads 2.20x
(lung_small, N = 4), while on warpPIE10P two threads read lower than one.
Round five's candidate is ``adaptive-threads``: ``adaptive`` on a quiet
machine (nothing set), and under load passive waiting with the thread
count of the CPUs the busy processes leave free (:func:`iclfs._threads.free_cpus`).
It:

- runs on the new code, with the machine otherwise quiet, the cells of
  ``adaptive`` and ``adaptive-threads`` on lung_small, warpPIE10P and
  Prostate_GE, quiet and beside N = 1, 2, 4 busy processes: each quiet cell
  in 5 fresh processes and each loaded cell in 3, interleaved as round three
  (``--repeats 5 3``, the two policies' order swapped every other repeat);
- reads a cell as rounds three and four (the median of its processes'
  medians) and each ratio against the policy's own quiet epoch of this round;
- takes the quiet test from round four: ``adaptive-threads`` runs
  ``adaptive``'s settings whenever it reads the machine as quiet (both set
  nothing), so round four's 40-process verdict for ``adaptive`` (within 5 %
  of ``spin`` on every table) is its verdict too; this round reports how
  many of either's quiet processes read the machine as busy, and a policy
  with any such process is judged by its own quiet cells instead;
- takes ``spin``'s worst ratio under load from round three (4.56): its
  threads spin whatever the kernels; and ``spin`` stays in the rule only as
  the quiet reference;
- decides by the rule otherwise unchanged: among the policies within 5 % of
  ``spin``'s quiet epoch on every table, the lowest worst ratio over every
  table and N (a tie: the policy in force). If ``adaptive-threads`` wins it
  enters the product under its name and becomes
  :data:`iclfs._threads.DEFAULT_POLICY`, and ``adaptive`` leaves the product
  for this study's candidates.

Its command, on the project's 2-core machine with every other job stopped:

    R=benchmarks/results/contention_round5
    .venv/bin/python -m benchmarks.speed --contention --estimate-epochs 0 --resume --repeats 5 3 \
        --json $R.json --csv $R.csv --output $R.md --minutes 60 --cell-seconds 60 \
        --tables lung_small warpPIE10P Prostate_GE --policies adaptive adaptive-threads --loads 1 2 4

**Sixth round, fixed before its results: a training that times its thread
count.** Round five's winner, ``adaptive-threads``, read at most 1.55x
(warpPIE10P and Prostate_GE, N = 4, on one thread), where ``adaptive``'s
two threads had read 1.05x and 1.40x; but on lung_small, N = 2, two threads
had read 2.03x and one 1.08x. Which count is faster beside busy processes
depends on the table: a small map's many short parallel regions each wait
for a thread the busy processes descheduled, while on a large map each of
two threads takes its own share of the machine. Round six's candidate is
``adaptive-timed``: on a quiet machine libgomp's own settings (nothing set,
as ``adaptive-threads``); when other processes keep the CPUs busy as it
starts, passive waiting, and the training times one epoch on torch's thread
count and one on the CPUs the busy processes leave free, runs on the faster
and times the other again every 20 epochs
(:class:`iclfs.method._runtime.ThreadChoice`; a ``fast`` training on CPU
ends in the same bits at any count, so the choice moves no list). A cell
runs its epochs as :func:`iclfs.method._training.train` does: the warm-up
on each count, then each epoch on the count the choice gives, the cell's
first epoch (untimed) included; its five timed epochs so hold the one
epoch timed on the other count, and none of the retimes a 100-epoch
training adds (at most five epochs on the slower count). What was seen
before writing this: one process a cell of each policy, on lung_small
(quiet and N = 2) and warpPIE10P (N = 4): warpPIE10P's timed cell ran on two
threads at 4.20 s against ``adaptive-threads``'s 4.67 s on one; lung_small's
timed cell chose one thread and read 0.090 s against 0.046 s, its epochs on
that one thread 0.045-0.095 s apart. Round six:

- runs with the machine otherwise quiet the cells of ``adaptive-threads``
  and ``adaptive-timed`` on lung_small, warpPIE10P and Prostate_GE, quiet
  and beside N = 1, 2, 4 busy processes, each quiet cell in 5 fresh
  processes and each loaded cell in 3, interleaved as round five
  (``--repeats 5 3``), with ``--cell-seconds 120``, so that a loaded
  Prostate_GE cell times its five epochs;
- reads a cell as rounds three to five (the median of its processes'
  medians); since the two policies run the same settings whenever they
  read the machine as quiet, a table's quiet epoch, against which both
  policies' ratios are taken, is the median over both policies' ten quiet
  processes (their medians), so that the noise of five quiet processes
  does not decide between two policies that are the same there; if any
  quiet process read the machine as busy, each policy's own quiet epoch
  is used instead, as round five;
- takes the quiet test from round four as round five did (both run
  ``adaptive``'s settings when they read the machine as quiet), and
  ``spin``'s worst ratio from round three;
- decides by the rule unchanged: among the policies within 5 % of
  ``spin``'s quiet epoch on every table, the lowest worst ratio over every
  table and N; a tie goes to the policy in force. If ``adaptive-timed``
  wins it becomes :data:`iclfs._threads.DEFAULT_POLICY` and
  ``adaptive-threads`` leaves the product for this study's candidates; if
  it loses, it leaves the product, its thread choice with it.

Its command, on the project's 2-core machine with every other job stopped:

    R=benchmarks/results/contention_round6
    .venv/bin/python -m benchmarks.speed --contention --estimate-epochs 0 --resume --repeats 5 3 \
        --json $R.json --csv $R.csv --output $R.md --minutes 100 --cell-seconds 120 \
        --tables lung_small warpPIE10P Prostate_GE --policies adaptive-threads adaptive-timed --loads 1 2 4

``--estimate-epochs`` then trains each table quietly under the default policy
with the progress log on and compares the first estimate it logged
(:attr:`iclfs.method._progress.Progress.first_estimate`) with the real
training time; the target is within 25 %.

Each cell's result is saved to ``--raw`` (JSON) as soon as it is measured, so
a run that stops can go on where it stopped (``--resume``); the report is the
``contention`` section of the speed report (``--output``) and a CSV beside
the raw file.
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from benchmarks import _policies
from iclfs import _threads

TABLES = {"lung_small": "../shared/validation/lung_small.mat", "warpPIE10P": "../shared/datasets/warpPIE10P.mat",
          "Prostate_GE": "../shared/datasets/Prostate_GE.mat"}
LOADS = (0, 1, 2, 4)
#: Today's default, against which the quiet time is held.
TODAY = "spin"
#: The candidates measured by default (round one's: every candidate but the combination and adaptive, for time).
MEASURED = ("spin", "passive", "short-spin", "brief-spin", "free-cpus")
QUIET_TOLERANCE = 0.05  # a candidate's quiet epoch may be at most 5 % slower than today's
ESTIMATE_TOLERANCE = 0.25  # the first estimate within 25 % of the real training time (quiet)
BUSY_LOOP = "while True:\n    pass\n"


def inverted_map(source: str) -> np.ndarray:
    """The (d, n) inverted map of ``source``: a file, or ``synthetic:DxN`` (a seeded normal table)."""
    from iclfs.io._tables import read_feature_table
    from iclfs.method._preprocessing import FeatureTable, invert, prepare

    if source.startswith("synthetic:"):
        d, n = (int(v) for v in source.split(":")[1].split("x"))
        rng = np.random.default_rng(0)
        return invert(prepare(FeatureTable(X=rng.normal(size=(n, d)).astype(np.float32))).standardized)
    return invert(prepare(read_feature_table(source)).standardized)


def table_path(name: str, folder: str | None = None) -> str:
    """The file of the table ``name``: ``<folder>/<name>.mat`` when a folder is given, else its place in
    :data:`TABLES`; a name outside it is a path (or ``synthetic:DxN``). Absolute, since each cell runs in the
    repository's root."""
    if name.startswith("synthetic:"):
        return name
    if folder is not None and name in TABLES:
        return str((Path(folder) / f"{name}.mat").resolve())
    if name in TABLES:  # the repository's layout: its root beside ../shared
        return str((Path(__file__).resolve().parents[1] / TABLES[name]).resolve())
    return str(Path(name).resolve())


def _clean_environment(policy: str, openmp: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without the OpenMP variables, naming the product's ``policy``, with the
    OpenMP variables ``openmp`` (a candidate's, decided here: the cell's product keeps them as a user's)."""
    env = {k: v for k, v in os.environ.items()
           if k not in (*_threads.POLICY_VARIABLES, _threads.POLICY_VARIABLE, _threads.REPORT_VARIABLE)}
    return env | (openmp or {}) | {_threads.POLICY_VARIABLE: policy}


def cell(source: str, epochs: int, limit: float = float("inf")) -> dict:
    """In a fresh process under its policy: ``epochs`` epochs timed after one warm-up epoch, fewer (at least
    two) once the warm-up and the timed epochs have taken ``limit`` seconds: a policy that spins beside busy
    processes can take minutes an epoch, and two epochs show it as well as five."""
    from collections import Counter

    import torch

    from iclfs.method._config import RuntimeConfig, TrainingConfig, ViewConfig
    from iclfs.method._runtime import compute_settings, thread_choice
    from iclfs.method._training import Trainer, warm_up_each

    A = inverted_map(source)
    runtime = RuntimeConfig(device="cpu", progress=False, check_memory=False)
    trainer = Trainer(A, TrainingConfig(), ViewConfig(), runtime, seed=0)
    with compute_settings(trainer.device, trainer.precision, runtime.num_threads) as threads:
        # as train() runs its epochs: the warm-up, then each epoch on the thread count the policy chooses
        choice = thread_choice(trainer.plan, runtime.num_threads, threads)
        warm_up_each(trainer, choice)
        seconds: list[float] = []
        counts: list[int] = []
        spent = 0.0
        while len(seconds) < epochs + 1 and (len(seconds) < 3 or spent < limit):
            with choice.epoch() as count:
                seconds.append(trainer.train_epoch()["seconds"])
            counts.append(count)
            spent += seconds[-1]
    seconds, counts = seconds[1:], counts[1:]  # the first is the cell's warm-up epoch
    applied = _threads.APPLIED
    return {"policy": applied.policy, "set": applied.set, "threads": Counter(counts).most_common(1)[0][0],
            "epoch_threads": counts, "counts": list(choice.counts), "torch_threads": torch.get_num_threads(),
            "epoch_seconds": seconds, "median_seconds": statistics.median(seconds), "d": A.shape[0], "n": A.shape[1],
            "load_average": os.getloadavg()[0], "decision": applied.decision, "busy": applied.busy}


def estimate(source: str, epochs: int) -> dict:
    """In a fresh process under the default policy: one training of ``epochs`` epochs with the progress log;
    its first estimate against its real time."""
    import logging

    from iclfs.method._config import RuntimeConfig, TrainingConfig
    from iclfs.method._progress import Progress
    from iclfs.method._training import train

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    A = inverted_map(source)
    progress = Progress(epochs, f"ICLFS d={A.shape[0]} n={A.shape[1]}")
    train(A, TrainingConfig(epochs=epochs), runtime=RuntimeConfig(device="cpu", check_memory=False),
          seed=0, progress=progress)
    real = sum(progress.seconds)
    return {"policy": _threads.APPLIED.policy, "epochs": epochs, "first_estimate": progress.first_estimate,
            "real_seconds": real, "epoch_seconds": progress.seconds,
            # too few epochs for a steady one: no estimate to judge
            "error": None if progress.first_estimate is None else progress.first_estimate / real - 1,
            "load_average": os.getloadavg()[0]}


def _in_fresh_process(arguments: list[str], policy: str, openmp: dict[str, str] | None = None) -> dict:
    done = subprocess.run([sys.executable, "-m", "benchmarks.speed", *arguments], capture_output=True, text=True,
                          env=_clean_environment(policy, openmp), cwd=Path(__file__).resolve().parents[1])
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(source: str, policy: str, load: int, epochs: int, limit: float = float("inf"),
            measure_busy=_threads.busy_cpus) -> dict:
    """One cell (:func:`cell`) of the candidate ``policy`` beside ``load`` busy processes, each stopped after
    it. The candidate's start is decided here, right before the cell (:func:`benchmarks._policies.start`);
    the row records what it set, and for a candidate that reads the load its decision and the busy share
    (the product's ``adaptive`` reads it in the cell: the cell's own record)."""
    busy = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(load)]
    try:
        if busy:
            time.sleep(1.0)  # running before the cell starts, so a policy that reads the load sees them
        start = _policies.start(policy, measure_busy)
        result = _in_fresh_process(["--contention-cell", source, str(epochs), str(limit)], start.policy,
                                   start.environment)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    if "error" not in result:
        result["set"] = start.environment | result.get("set", {})
    # adaptive's decision and reading are the cell's own (the product reads the load there)
    return result | {"decision": start.decision or result.get("decision"),
                     "busy": start.busy if start.busy is not None else result.get("busy")}


def _union(before: list, added) -> list:
    return [*before, *(a for a in added if a not in before)]


def _key(row: dict) -> tuple:
    """A cell: its table, policy and N."""
    return row["table"], row["policy"], row["load"]


def _repeat_key(row: dict) -> tuple:
    """One measurement of a cell: the cell and its repeat (0 for rounds measured once a cell)."""
    return (*_key(row), row.get("repeat", 0))


def merge_repeats(rows: list[dict]) -> list[dict]:
    """One row per cell from the measured ``rows`` (one per repeat): its epoch the median over its repeats of
    each repeat's median epoch (round three's reading; a cell measured once is its own row). A failed repeat
    is left out; a cell whose every repeat failed keeps its first failure."""
    grouped: dict[tuple, list[dict]] = {}
    for r in rows:
        grouped.setdefault(_key(r), []).append(r)
    merged = []
    for key, group in grouped.items():
        good = sorted((r for r in group if "error" not in r), key=lambda r: r.get("repeat", 0))
        if not good:
            merged.append(group[0])
            continue
        if len(good) == 1:
            merged.append(good[0])
            continue
        medians = [r["median_seconds"] for r in good]
        merged.append(good[0] | {
            "median_seconds": statistics.median(medians), "repeat_medians": medians,
            # the fewest epochs any repeat timed: the report marks a cell cut short by its time limit
            "epoch_seconds": min((r["epoch_seconds"] for r in good), key=len),
            # the count each repeat ran most of its epochs on, each once: "1,2" where they differed
            "threads": ",".join(dict.fromkeys(str(r["threads"]) for r in good)),
            "decision": "/".join(dict.fromkeys(r["decision"] for r in good if r.get("decision"))) or None})
    return merged


def _ratios(rows: list[dict], cores: int, quiet: dict[str, dict]) -> dict[str, dict]:
    """{policy: {(table, N): ratio}}: each loaded cell of ``rows`` (a failed one left out) against the CPU-share
    bound, ``quiet[policy][table]`` x (1 + N / ``cores``); a cell without that quiet epoch has no ratio."""
    ratios: dict[str, dict] = {}
    for r in rows:
        if r["load"] and "error" not in r and r["table"] in quiet.get(r["policy"], {}):
            bound = quiet[r["policy"]][r["table"]] * (1 + r["load"] / cores)
            ratios.setdefault(r["policy"], {})[(r["table"], r["load"])] = r["median_seconds"] / bound
    return ratios


def decide(rows: list[dict], cores: int, policies=_policies.CANDIDATES, tables=None, loads=None,
           order=None) -> dict:
    """The rule of the module docstring over the measured ``rows`` (one per table, policy and load), read as
    its round two states for a partial set of cells (a full set reads as round one did).

    Parameters
    ----------
    rows : list of dict
    cores : int
    policies : dict
        Every policy by name (whether its thread count follows the load).
    tables, loads : sequence, optional
        The round's tables and its N (quiet excluded): default, those of the rows.
    order : sequence of str, optional
        The candidates in the order named (an exact tie goes to the first): default, the rows' order.

    Returns
    -------
    dict
        ``quiet`` {policy: {table: seconds}}; ``ratios`` {policy: {(table, N): ratio}}; ``worst`` {policy:
        its worst measured ratio: the worst ratio once ``complete``, a lower bound before}; ``eligible``
        (within 5 % quiet on every table), ``out`` (over it on one), ``complete`` (every loaded cell
        measured); ``winner`` among the policies whose thread count does not follow the load, ``winner_any``
        among all; ``missing`` {policy: [(table, N), ...]}: the cells the verdict still needs (empty when
        there is one); ``beaten``: incomplete policies whose measured cells already exceed the winner's worst.
    """
    good = [r for r in rows if "error" not in r]
    order = list(order or dict.fromkeys(r["policy"] for r in good))
    tables = list(tables or dict.fromkeys(r["table"] for r in good))
    loads = sorted(set(loads) - {0}) if loads is not None else sorted({r["load"] for r in good if r["load"]})
    quiet: dict[str, dict] = {}
    for r in good:
        if r["load"] == 0:
            quiet.setdefault(r["policy"], {})[r["table"]] = r["median_seconds"]
    ratios = _ratios(good, cores, quiet)
    today = quiet.get(TODAY, {})

    def within(policy: str) -> bool | None:
        """Within 5 % of today's quiet epoch on every table; None while a quiet cell is missing."""
        mine = quiet.get(policy, {})
        over = [t for t in tables if t in mine and t in today and mine[t] > (1 + QUIET_TOLERANCE) * today[t]]
        if over:
            return False  # out on one table, whatever the others
        return None if any(t not in mine or t not in today for t in tables) else True

    needed = [(t, n) for t in tables for n in loads]
    eligible = [p for p in order if within(p) is True]
    out = [p for p in order if within(p) is False]
    # with no loaded cell in the round yet, no policy's worst ratio is known: none is complete
    complete = [p for p in eligible if needed and all(cell in ratios.get(p, {}) for cell in needed)]
    worst = {p: max(ratios[p].values()) for p in order if ratios.get(p)}
    wanted = needed or [(t, n) for t in tables for n in LOADS[1:]]  # the rule's N when none is planned yet

    def verdict(pool: list[str]) -> tuple[str | None, dict, list]:
        """The winner among ``pool`` (not out), the cells still needed, the policies beaten unmeasured."""
        full = [p for p in pool if p in complete]
        missing = {p: [c for c in wanted if c not in ratios.get(p, {})] +
                   [(t, 0) for t in tables if t not in quiet.get(p, {}) or t not in today]
                   for p in pool if p not in complete}
        if not full:
            return None, missing, []
        best = min(full, key=lambda p: (worst[p], order.index(p)))
        beaten = [p for p in missing if worst.get(p, -1.0) > worst[best]]
        missing = {p: cells for p, cells in missing.items() if p not in beaten}
        return (None if missing else best), missing, beaten

    pool = [p for p in order if p not in out]
    winner, missing, beaten = verdict([p for p in pool if not policies[p].follow_load])
    winner_any, _, _ = verdict(pool)
    return {"quiet": quiet, "ratios": ratios, "worst": worst, "eligible": eligible, "out": out,
            "complete": complete, "winner": winner, "winner_any": winner_any, "missing": missing,
            "beaten": beaten}


#: The file whose DEFAULT_POLICY line a verdict sets: the repository's, not an installed copy.
THREADS_SOURCE = Path(__file__).resolve().parents[1] / "src" / "iclfs" / "_threads.py"


def apply_verdict(winner: str, source: Path = THREADS_SOURCE) -> bool:
    """Make ``winner`` :data:`iclfs._threads.DEFAULT_POLICY`: its line in ``source`` and its value in this
    process (the report rendered next names it in force). Whether the line changed."""
    import re

    if winner not in _threads.POLICIES:  # a candidate that lost its place in the product must come back first
        raise SystemExit(f"the winner {winner!r} is no policy of the product (iclfs._threads.POLICIES: "
                         f"{', '.join(_threads.POLICIES)}): move it from benchmarks/_policies.py into "
                         "src/iclfs/_threads.py, with its tests, before it can be the default")
    text = source.read_text()
    lines = re.findall(r'^DEFAULT_POLICY = "[^"]*"$', text, flags=re.M)
    if len(lines) != 1:
        raise SystemExit(f"{source}: expected one line 'DEFAULT_POLICY = \"...\"', found {len(lines)}")
    line = f'DEFAULT_POLICY = "{winner}"'
    if lines[0] != line:
        source.write_text(text.replace(lines[0], line))
    _threads.DEFAULT_POLICY = winner
    return lines[0] != line


def within_quiet(section: dict, policy: str) -> bool | None:
    """Whether ``policy``'s quiet epoch is within 5 % of ``spin``'s on every table of ``section`` (None while
    a quiet cell is missing): the round's step 4 measures ``passive``'s loaded cells only if so."""
    verdict = section_verdict(section)
    return True if policy in verdict["eligible"] else False if policy in verdict["out"] else None


def section_verdict(section: dict) -> dict:
    """:func:`decide` over a measured section: its cells (:func:`merge_repeats`, the median of a cell's
    repeats), on its tables, loads and policies."""
    return decide(merge_repeats(section["rows"]), section["cores"], tables=section.get("tables"),
                  loads=section.get("loads"), order=section.get("policies"))


def quiet_comparison(section: dict, resamples: int = 2000, seed: int = 0) -> dict:
    """Each policy's quiet epoch on each table of ``section`` against ``spin``'s, from their repeats.

    Returns
    -------
    dict
        {(policy, table): {"seconds": the cell's epoch (:func:`merge_repeats`), "repeats": its repeats'
        medians, "ratio": against spin's, "interval": a bootstrap 95 % interval of the ratio (``resamples``
        resamples of both cells' repeats, for information), "mean_ratio": its repeats' mean against spin's
        (for information: where fresh processes' epochs fall into two groups, the median reads the share of
        each), "busy": how many of its repeats read the machine as busy (``adaptive``'s decision passive),
        "decided": how many read it at all}}
    """
    rng = np.random.default_rng(seed)
    good = [r for r in section["rows"] if "error" not in r and r["load"] == 0]
    repeats: dict[tuple, list[float]] = {}
    busy: dict[tuple, int] = {}
    decided: dict[tuple, int] = {}
    for r in good:
        key = (r["policy"], r["table"])
        repeats.setdefault(key, []).append(r["median_seconds"])
        busy[key] = busy.get(key, 0) + (r.get("decision") == "passive")
        decided[key] = decided.get(key, 0) + (r.get("decision") is not None)
    cells = {_key(r): r["median_seconds"] for r in merge_repeats(good)}  # the cells as the rule reads them
    out = {}
    for (policy, table), values in repeats.items():
        today = repeats.get((TODAY, table))
        seconds = cells[(table, policy, 0)]
        entry = {"seconds": seconds, "repeats": values, "busy": busy[(policy, table)],
                 "decided": decided[(policy, table)], "ratio": None, "interval": None, "mean_ratio": None}
        if today:
            entry["ratio"] = seconds / cells[(table, TODAY, 0)]
            entry["mean_ratio"] = statistics.mean(values) / statistics.mean(today)
        if today and resamples:
            draws = [np.median(rng.choice(values, len(values))) / np.median(rng.choice(today, len(today)))
                     for _ in range(resamples)]
            entry["interval"] = (float(np.quantile(draws, 0.025)), float(np.quantile(draws, 0.975)))
        out[(policy, table)] = entry
    return out


def quiet_round_verdict(quiet: dict, loaded: dict, policies=_policies.CANDIDATES) -> dict:
    """Round four's rule: the quiet test from ``quiet`` (a round of quiet cells, many repeats), each policy's
    worst ratio under load from ``loaded`` (round three's section, each ratio against its own quiet epoch).

    Returns
    -------
    dict
        ``eligible`` and ``out`` (within 5 % of ``spin``'s quiet epoch on every table of ``quiet``, or over it
        on one; a policy lacking a quiet cell is neither), ``worst`` {policy: its worst ratio in ``loaded``},
        ``complete`` (every loaded cell measured there), ``winner`` (the eligible, complete policy whose
        thread count does not follow the load with the lowest worst ratio; None if none), ``missing`` {policy:
        what it lacks}.
    """
    order = quiet["policies"]
    now, before = section_verdict(quiet), section_verdict(loaded)  # the quiet test is decide's, on this round
    eligible, out = now["eligible"], now["out"]
    # every loaded cell of round three measured (its own verdict counts only the policies it found within 5 %)
    needed = [(t, n) for t in loaded["tables"] for n in loaded["loads"] if n]
    complete = [p for p in order if needed and all(c in before["ratios"].get(p, {}) for c in needed)]
    missing = {p: ["quiet cells"] for p in order if p not in eligible and p not in out}
    missing |= {p: ["loaded cells (round three)"] for p in eligible if p not in complete}
    pool = [p for p in eligible if p in complete and not policies[p].follow_load]
    winner = min(pool, key=lambda p: (before["worst"][p], order.index(p))) if pool else None
    return {"eligible": eligible, "out": out, "worst": before["worst"], "complete": complete,
            "winner": winner, "missing": missing}


def render_quiet_round(section: dict, loaded: dict, title: str) -> list[str]:
    """The Markdown lines of a quiet round (round four) under ``title``, judged with ``loaded``'s worst ratios."""
    compared = quiet_comparison(section)
    verdict = quiet_round_verdict(section, loaded)
    env = section["environment"]
    counts = sorted({len(c["repeats"]) for c in compared.values()})
    lines = ["", title, "",
             f"Measured on {section['cores']} cores, last {env['date']} (load average {env['load_before']:.2f} "
             f"before it), {section['epochs']} epochs a process after one warm-up, each quiet cell in "
             f"{'-'.join(map(str, (counts[0], counts[-1]))) if len(counts) > 1 else counts[0]} fresh processes "
             "taken in turn with the other policy's (their order swapped every other repeat), its epoch the median "
             "of its processes' medians (the rule: `benchmarks/_contention.py`, \"Fourth round\"):", "",
             "```bash", *env["commands"], "```", "",
             "| table | policy | processes | quiet s | against `spin` | bootstrap 95 % interval | mean against `spin` "
             "| processes that read the machine as busy | within 5 % |", "|---|---|---|---|---|---|---|---|---|"]
    for table in section["tables"]:
        for policy in section["policies"]:
            c = compared.get((policy, table))
            if c is None:
                lines.append(f"| {table} | `{policy}` | 0 | — | — | — | — | — | — |")
                continue
            ratio, interval = c["ratio"], c["interval"]
            lines.append(
                f"| {table} | `{policy}` | {len(c['repeats'])} | {c['seconds']:.3g} | "
                + ("—" if ratio is None else f"{ratio - 1:+.1%}") + " | "
                + ("—" if interval is None or policy == TODAY else
                   f"{interval[0] - 1:+.1%} to {interval[1] - 1:+.1%}") + " | "
                + ("—" if c["mean_ratio"] is None or policy == TODAY else f"{c['mean_ratio'] - 1:+.1%}")
                + (f" | {c['busy']} of {c['decided']} | " if c["decided"] else " | — | ")
                + ("—" if ratio is None else "yes" if ratio <= 1 + QUIET_TOLERANCE else "no") + " |")
    lines += ["", "The rule reads the medians. The interval (2,000 bootstrap resamples of both cells' processes) and "
                  "the mean are for information: where fresh processes' epochs fall into two groups, the median "
                  "reads the share of the processes in each, and the mean reads both.",
              "", "Each policy's worst ratio under load, from the third round (every table and N = 1, 2, 4, each "
                  "against the policy's own quiet epoch there):", "",
              "| policy | within 5 % quiet on every table | worst ratio under load (round three) |", "|---|---|---|"]
    for policy in section["policies"]:
        within = "yes" if policy in verdict["eligible"] else "no" if policy in verdict["out"] else "not yet known"
        worst = verdict["worst"].get(policy)
        lines.append(f"| `{policy}` | {within} | {'—' if worst is None else f'{worst:.2f}'} |")
    winner = verdict["winner"]
    lines += ["", "**The rule** (unchanged): among the policies whose quiet epoch is within 5 % of `spin`'s on every "
                  "table and whose thread count does not follow the load, the lowest worst-case ratio. "
              + (f"**Winner: `{winner}`** (worst ratio {verdict['worst'][winner]:.2f})." if winner else
                 f"**No verdict yet**: {verdict['missing']}." if verdict["missing"] else
                 "**No policy qualifies.**"),
              "", f"In force now (`iclfs._threads.DEFAULT_POLICY`): `{_threads.DEFAULT_POLICY}`."]
    return lines


def _cell_table(section: dict, rows: list[dict], ratios: dict, decisions: bool = True) -> list[str]:
    """The Markdown table of a section's cells (``rows``, one per table, policy and N): a row per table and
    policy, its epoch quiet and beside each N with its ratio (``ratios``), what a policy that reads the load
    decided there (with ``decisions``), and its worst ratio on the table."""
    loads = section["loads"]
    lines = ["| table | n x d | policy | threads | " + " | ".join(
        "quiet s" if n == 0 else f"N={n} s (ratio)" for n in loads) + " | worst ratio |",
        "|---|---|---|---|" + "---|" * len(loads) + "---|"]
    by_key = {_key(r): r for r in rows}
    for table in section["tables"]:
        for policy in section["policies"]:
            cells, shape, threads = [], "", []
            for load in loads:
                r = by_key.get((table, policy, load))
                if r is None or "error" in r:
                    cells.append("—" if r is None else f"failed: {r['error']}")
                    continue
                shape = f"{r['n']} x {r['d']}"
                threads.append(f"({r['threads']})" if "," in str(r["threads"]) else str(r["threads"]))
                ratio = ratios.get(policy, {}).get((table, load))
                cells.append(f"{r['median_seconds']:.3g}" + (f" ({ratio:.2f})" if ratio is not None else "")
                             + (f" {r['decision']}" if decisions and r.get("decision") else "")
                             + ("" if len(r["epoch_seconds"]) >= section["epochs"] else
                                f" [{len(r['epoch_seconds'])} epochs]"))
            table_worst = max((v for (t, _), v in ratios.get(policy, {}).items() if t == table), default=None)
            lines.append(f"| {table} | {shape} | `{policy}` | {'/'.join(threads)} | " + " | ".join(cells) +
                         f" | {'—' if table_worst is None else f'{table_worst:.2f}'} |")
    return lines


def shared_quiet(section: dict) -> dict[str, float] | None:
    """Round six's quiet epoch of each table, which every policy of ``section`` shares: the median over every
    policy's quiet processes of each process's median epoch (the policies run the same settings whenever they
    read the machine as quiet). None when a quiet process read the machine as busy (then the policies did
    not run the same settings) or a table lacks a quiet process."""
    quiet = [r for r in section["rows"] if r["load"] == 0 and "error" not in r]
    if any(r.get("decision") == "passive" for r in quiet):
        return None
    epochs = {table: [r["median_seconds"] for r in quiet if r["table"] == table] for table in section["tables"]}
    return None if not all(epochs.values()) else {table: statistics.median(e) for table, e in epochs.items()}


def load_round_verdict(section: dict, quiet: dict, loaded: dict, policies=_policies.CANDIDATES,
                       share_quiet: bool = False) -> dict:
    """Round five's rule (and round six's, ``share_quiet``): each policy's worst ratio under load from
    ``section`` (its own cells, each against the policy's own quiet epoch there, or with ``share_quiet``
    against the quiet epoch every policy there shares, :func:`shared_quiet`, when it can be read), the quiet
    test from ``quiet`` (round four: 40 processes a cell) and ``spin``'s worst ratio from ``loaded`` (round
    three).

    A policy of ``section`` that is not in round four takes the quiet verdict of the one whose settings it
    runs when it reads the machine as quiet (``adaptive-threads`` and ``adaptive-timed``: ``adaptive``'s,
    each setting nothing there), as long as none of its quiet processes here read the machine as busy.

    Returns
    -------
    dict
        ``worst`` {policy: its worst ratio}, ``ratios`` {policy: {(table, N): ratio}}, ``quiet_busy``
        {policy: (quiet processes that read the machine as busy, those that read it)}, ``eligible`` (within
        5 % quiet, by round four), ``complete`` (every loaded cell measured), ``winner`` (the eligible,
        complete policy with the lowest worst ratio; a tie goes to the policy in force; None while a cell is
        missing), ``missing`` {policy: what it lacks}, ``shared`` {table: the shared quiet epoch} or None
        (each policy's own).
    """
    here = section_verdict(section)
    shared = shared_quiet(section) if share_quiet else None
    if shared is not None:
        here["ratios"] = _ratios(merge_repeats(section["rows"]), section["cores"],
                                 dict.fromkeys(section["policies"], shared))
        here["worst"] = {p: max(ratios.values()) for p, ratios in here["ratios"].items()}
    before = quiet_round_verdict(quiet, loaded, policies)
    quiet_busy: dict[str, tuple[int, int]] = {}
    for r in section["rows"]:
        if r["load"] == 0 and "error" not in r and r.get("decision"):
            busy, read = quiet_busy.get(r["policy"], (0, 0))
            quiet_busy[r["policy"]] = (busy + (r["decision"] == "passive"), read + 1)
    eligible = [p for p in before["eligible"] if p not in section["policies"]]  # spin, the quiet reference
    for policy in section["policies"]:
        busy, read = quiet_busy.get(policy, (0, 0))
        stand_in = policy if policy in quiet["policies"] else "adaptive" if policies[policy].when_busy else None
        if stand_in in before["eligible"] and read and not busy:
            eligible.append(policy)
    needed = [(t, n) for t in section["tables"] for n in section["loads"] if n]
    complete = [p for p in section["policies"] if all(c in here["ratios"].get(p, {}) for c in needed)]
    worst = {p: here["worst"][p] for p in complete}
    if TODAY in before["worst"]:
        worst[TODAY] = before["worst"][TODAY]
        complete.append(TODAY)
    missing = {p: [f"{t} N={n}" for t, n in needed if (t, n) not in here["ratios"].get(p, {})]
               for p in section["policies"] if p not in complete}
    pool = [p for p in eligible if p in complete]
    in_force = _threads.DEFAULT_POLICY
    winner = (min(pool, key=lambda p: (worst[p], p != in_force)) if pool and not missing else None)
    return {"worst": worst, "ratios": here["ratios"], "quiet": here["quiet"], "quiet_busy": quiet_busy,
            "eligible": eligible, "complete": complete, "winner": winner, "missing": missing, "shared": shared}


@dataclass(frozen=True)
class LoadRound:
    """A round judged by :func:`load_round_verdict`: how it reads its cells and what its report says.

    Attributes
    ----------
    title : str
        Its section's heading in the speed report.
    heading : str
        The heading of its rule in this module's docstring.
    stand_in : str
        The sentence on its quiet test.
    rule : str
        The rule's name in its verdict.
    share_quiet : bool
        Its ratios against the quiet epoch its policies share (:func:`shared_quiet`), not each policy's own.
    """

    title: str
    heading: str
    stand_in: str
    rule: str
    share_quiet: bool = False


#: The rounds :func:`load_round_verdict` judges, by their key in the speed report.
LOAD_ROUNDS = {
    "contention_round5": LoadRound(
        "### Fifth round: the thread count may follow the load", "Fifth round",
        "(`adaptive-threads` runs `adaptive`'s settings whenever it reads the machine as quiet)",
        "round five: the thread count may follow the load"),
    "contention_round6": LoadRound(
        "### Sixth round: a training that times its thread count", "Sixth round",
        "(`adaptive-threads` and `adaptive-timed` run `adaptive`'s settings whenever they read the machine as "
        "quiet)", "round six, unchanged", share_quiet=True),
}


def render_load_round(section: dict, quiet: dict, loaded: dict, key: str = "contention_round5") -> list[str]:
    """The Markdown lines of the round the speed report holds at ``key`` (:data:`LOAD_ROUNDS`), under its title,
    judged by :func:`load_round_verdict`."""
    judged = LOAD_ROUNDS[key]
    verdict = load_round_verdict(section, quiet, loaded, share_quiet=judged.share_quiet)
    rows, env, cores = merge_repeats(section["rows"]), section["environment"], section["cores"]
    shared = verdict["shared"]
    lines = ["", judged.title, "",
             f"Measured on {cores} cores, last {env['date']} (load average {env['load_before']:.2f} before it), "
             f"{section['epochs']} epochs a process after one warm-up (fewer, at least 2, in square brackets, once "
             f"a cell has taken {section.get('cell_limit', float('inf')):g} s), each quiet cell in "
             f"{section['repeats'][0]} fresh processes and each loaded cell in {section['repeats'][1]}, taken in "
             "turn with the other policy's, its epoch the median of its processes' medians (the rule: "
             f"`benchmarks/_contention.py`, \"{judged.heading}\"); a fast training on CPU here ends in the same bits "
             "at any thread count:", "", "```bash", *env["commands"], "```", "",
             "The epoch's median, quiet and beside N busy processes (pure-Python loops); in brackets its ratio "
             "to the CPU-share bound, "
             + ("the table's quiet epoch that both policies share (the median of their quiet processes) x "
                "(1 + N / cores)" if shared is not None else "the policy's quiet epoch x (1 + N / cores)")
             + "; the threads each cell ran on (most of its epochs; in brackets where its processes differed). "
             "Policies:", ""]
    lines += [f"- `{name}`: {_policies.CANDIDATES[name].about}" for name in section["policies"]]
    lines += ["", *_cell_table(section, rows, verdict["ratios"], decisions=False)]
    if shared is not None:
        lines += ["", "The quiet epoch both policies share: " + ", ".join(
            f"{table} {seconds:.3g} s" for table, seconds in shared.items()) + "."]
    lines += ["", f"Each policy against the rule: the quiet test from round four {judged.stand_in}, `spin`'s worst "
                  "ratio under load from round three.", "",
              "| policy | within 5 % of `spin` quiet | quiet processes here that read the machine as busy | "
              "worst ratio under load |", "|---|---|---|---|"]
    for policy in [TODAY, *section["policies"]]:
        busy, read = verdict["quiet_busy"].get(policy, (0, 0))
        worst = verdict["worst"].get(policy)
        lines.append(f"| `{policy}` | {'yes' if policy in verdict['eligible'] else 'no'} | "
                     + (f"{busy} of {read}" if read else "—") + " | "
                     + ("—" if worst is None else f"{worst:.2f}" + (" (round three)" if policy == TODAY else ""))
                     + " |")
    winner = verdict["winner"]
    lines += ["", f"**The rule** ({judged.rule}): among the policies within 5 % "
                  "of `spin`'s quiet epoch on every table, the lowest worst ratio over every table and N. "
              + (f"**Winner: `{winner}`** (worst ratio {verdict['worst'][winner]:.2f})." if winner else
                 "**No verdict yet**: " + "; ".join(f"`{p}` needs {', '.join(c)}"
                                                   for p, c in verdict["missing"].items()) + "."
                 if verdict["missing"] else "**No policy qualifies.**"),
              "", f"In force now (`iclfs._threads.DEFAULT_POLICY`): `{_threads.DEFAULT_POLICY}`."]
    return lines


def render(section: dict, title: str = "## Threads on a shared machine") -> list[str]:
    """The Markdown lines of the speed report's contention section, under ``title`` (its own subsections one
    level below)."""
    rows, cores = merge_repeats(section["rows"]), section["cores"]
    verdict = section_verdict(section)
    repeats = section.get("repeats")
    env = section["environment"]
    below = "#" * (len(title) - len(title.lstrip("#")) + 1)
    lines = ["", title, "",
             f"Measured on {cores} cores" + (f" (CPUs {', '.join(map(str, env['cpus']))} of the machine's "
                                              f"{env['machine_cpus']}, busy processes pinned with them)"
                                              if env.get("cpus") and len(env["cpus"]) < env["machine_cpus"] else "")
             + f", last {env['date']} (load average {env['load_before']:.2f} before it; each "
             "row's own is in the CSV beside the raw numbers), "
             f"{section['epochs']} epochs a cell after one warm-up (fewer, at least 2, shown in square brackets, once a cell "
             f"has taken {section.get('cell_limit', float('inf')):g} s), each cell a fresh process"
             + (f", each quiet cell measured {repeats[0]} times and each loaded cell {repeats[1]} times, in "
                "turn, its epoch the median of its repeats' medians" if repeats and max(repeats) > 1 else "")
             + ":", "",
             "```bash", *env["commands"], "```", "",
             "The epoch's median, quiet and beside N busy processes (pure-Python loops); in brackets its ratio "
             "to the CPU-share bound, the policy's quiet epoch x (1 + N / cores). Policies "
             "(`benchmarks._policies.CANDIDATES`):", ""]
    lines += [f"- `{name}`: {_policies.CANDIDATES[name].about}" for name in section["policies"]]
    lines += ["", *_cell_table(section, rows, verdict["ratios"])]
    lines += ["", "Against today's (`spin`): each policy's quiet epoch, and its worst ratio over every table and N.",
              "", "| policy | " + " | ".join(f"{t} quiet vs spin" for t in section["tables"]) +
              " | worst ratio | within 5 % quiet | thread count follows the load |",
              "|---|" + "---|" * len(section["tables"]) + "---|---|---|"]
    today = verdict["quiet"].get(TODAY, {})
    for policy in section["policies"]:
        quiet = verdict["quiet"].get(policy, {})
        shares = [f"{quiet[t] / today[t] - 1:+.1%}" if t in quiet and t in today else "—" for t in section["tables"]]
        worst = verdict["worst"].get(policy)
        shown = "—" if worst is None else f"{worst:.2f}" if policy in verdict["complete"] or policy in \
            verdict["out"] else f"≥ {worst:.2f} (in part)"
        within = "yes" if policy in verdict["eligible"] else "no" if policy in verdict["out"] else "not yet known"
        lines.append(f"| `{policy}` | " + " | ".join(shares) + f" | {shown} | {within} | "
                     f"{'yes' if _policies.CANDIDATES[policy].follow_load else 'no'} |")
    rule = ("**The rule** (fixed before the results, `benchmarks/_contention.py`, which also says how it reads a "
            "partial set of cells): among the policies whose quiet "
            "epoch is within 5 % of `spin`'s on every table and whose thread count does not follow the load, the "
            "lowest worst-case ratio. ")
    winner, any_load = verdict["winner"], verdict["winner_any"]
    if verdict["missing"]:
        needs = "; ".join(f"`{p}` needs " + ", ".join(f"{t} {'quiet' if n == 0 else f'N={n}'}" for t, n in cells)
                          for p, cells in verdict["missing"].items())
    rule += (f"**Winner: `{winner}`** (worst ratio {verdict['worst'][winner]:.2f})." if winner else
             f"**No verdict yet**: {needs}." if verdict["missing"] else
             "**No policy qualifies** (none measured in full within 5 % of `spin`'s quiet epoch).")
    lines += ["", rule]
    spread = [r for r in rows if len(r.get("repeat_medians", ())) > 1]
    if spread:
        lines += ["", "How far a cell's repeats lie apart: each repeat's median epoch, in the order measured, and "
                      "the lowest and highest against the cell's median (the quiet test resolves 5 %).", "",
                  "| table | policy | N | repeats s | lowest | highest |", "|---|---|---|---|---|---|"]
        for r in spread:
            medians, middle = r["repeat_medians"], r["median_seconds"]
            lines.append(f"| {r['table']} | `{r['policy']}` | {r['load']} | "
                         + " ".join(f"{m:.3g}" for m in medians)
                         + f" | {min(medians) / middle - 1:+.0%} | {max(medians) / middle - 1:+.0%} |")
    for policy in verdict["beaten"] if winner else []:
        lines += ["", f"`{policy}` loses without its other loaded cells: its measured worst ratio, "
                      f"{verdict['worst'][policy]:.2f}, already exceeds the winner's."]
    if any_load and any_load != winner:
        lines += ["", f"Were the thread count allowed to follow the load: `{any_load}` (worst ratio "
                      f"{verdict['worst'][any_load]:.2f})."]
    lines += ["", f"In force now (`iclfs._threads.DEFAULT_POLICY`): `{_threads.DEFAULT_POLICY}`."]
    if section.get("estimates"):
        lines += ["", f"{below} The first estimate against the real training time", "",
                  f"Each table trained quietly under the default policy for the epochs shown, with the progress log; "
                  f"the target is within {ESTIMATE_TOLERANCE:.0%}.", "",
                  "| table | epochs | first estimate s | real s | error | met |", "|---|---|---|---|---|---|"]
        for table, e in section["estimates"].items():
            if "error" in e and isinstance(e["error"], str):
                lines.append(f"| {table} | failed: {e['error']} | | | | |")
                continue
            if e.get("first_estimate") is None:
                lines.append(f"| {table} | {e['epochs']} | none (too few epochs to estimate from a steady one) | "
                             f"{e['real_seconds']:.1f} | | |")
                continue
            lines.append(f"| {table} | {e['epochs']} | {e['first_estimate']:.1f} | {e['real_seconds']:.1f} | "
                         f"{e['error']:+.1%} | {'yes' if abs(e['error']) <= ESTIMATE_TOLERANCE else 'no'} |")
    return lines


def run(args) -> dict:
    """Measure the cells the command line names (skipping those in ``--raw`` with ``--resume``); save each."""
    raw = Path(args.raw)
    section = json.loads(raw.read_text()) if args.resume and raw.is_file() else {"rows": []}
    tables = {name: table_path(name, args.datasets_dir) for name in args.tables}
    loads = sorted({0, *args.loads})  # quiet is always measured; --loads 0 asks for it alone
    missing = [path for path in tables.values() if not path.startswith("synthetic:") and not Path(path).is_file()]
    if missing:
        raise SystemExit(f"no table at {', '.join(missing)} (--tables names one of {', '.join(TABLES)} or a "
                         "path; --datasets-dir the folder of <name>.mat)")
    repeats = (list(args.repeats) * 2)[:2] if getattr(args, "repeats", None) else [1, 1]  # quiet, loaded
    if min(repeats) < 1:
        raise SystemExit(f"--repeats {' '.join(map(str, args.repeats))}: each count must be at least 1")
    if section.get("repeats", repeats) != repeats:
        raise SystemExit(f"{raw} holds cells measured with --repeats {' '.join(map(str, section['repeats']))}; "
                         f"this command asks for {' '.join(map(str, repeats))}: give the same, or another --json")
    section |= {"repeats": repeats, "tables": _union(section.get("tables", []), tables),
                "policies": _union(section.get("policies", []), args.policies),
                "loads": sorted(set(section.get("loads", [])) | set(loads)),
                "epochs": args.epochs, "cell_limit": args.cell_seconds, "cores": _threads.available_cpus(),
                "environment": {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                                "load_before": os.getloadavg()[0],
                                # the CPUs the cells and their busy processes (which inherit it) may use
                                "cpus": sorted(_threads.allowed_cpus() or []), "machine_cpus": os.cpu_count(),
                                "commands": [*section.get("environment", {}).get("commands", []),
                                             "python -m benchmarks.speed " + " ".join(sys.argv[1:])]}}
    done = {_repeat_key(r) for r in section["rows"] if "error" not in r}
    # interleaved: one repeat goes through every table, N and policy before the next starts; the policies'
    # order swapped every other repeat, so that none always runs right after another (round four)
    plan = [(t, p, n, k) for k in range(max(repeats)) for t in tables for n in loads
            for p in (args.policies if k % 2 == 0 else args.policies[::-1])
            if k < repeats[0 if n == 0 else 1] and (t, p, n, k) not in done]
    started = time.perf_counter()
    budget, longest, left = 60 * args.minutes, 0.0, []
    raw.parent.mkdir(parents=True, exist_ok=True)
    for i, (table, policy, load, repeat) in enumerate(plan, 1):
        if longest and time.perf_counter() - started + longest > budget:  # the next may not fit: stop, resumable
            left = plan[i - 1:]
            break
        cell_started = time.perf_counter()
        result = measure(tables[table], policy, load, args.epochs, args.cell_seconds) | {
            "table": table, "policy": policy, "load": load, "repeat": repeat}
        section["rows"] = [r for r in section["rows"] if _repeat_key(r) != _repeat_key(result)] + [result]
        raw.write_text(json.dumps(section, indent=1))
        spent = time.perf_counter() - started
        longest = max(longest, time.perf_counter() - cell_started)
        shown = result.get("error") or f"{result['median_seconds']:.3g} s/epoch on {result['threads']} thread(s)"
        print(f"[{i}/{len(plan)} {spent / 60:.1f} min] {table} {policy} N={load} #{repeat + 1}: {shown} "
              f"(load average {os.getloadavg()[0]:.1f})", flush=True)
    if left:
        print(f"stopped at the {args.minutes:g}-minute budget with {len(left)} cell(s) left: run the same command "
              "with --resume to measure them", flush=True)
    elif args.estimate_epochs:
        section.setdefault("estimates", {})
        for table, source in tables.items():
            if args.resume and not isinstance(section["estimates"].get(table, {"error": "none"}).get("error"), str):
                continue  # measured by an earlier run of this command
            quiet = [r["median_seconds"] for r in section["rows"] if r["table"] == table and r["load"] == 0
                     and r["policy"] == _threads.DEFAULT_POLICY and "error" not in r]
            needs = 20 + 1.2 * args.estimate_epochs * (quiet[0] if quiet else 0)  # start-up, then the epochs
            if time.perf_counter() - started + needs > budget:
                print(f"stopped at the {args.minutes:g}-minute budget before {table}'s estimate: run the same "
                      "command with --resume to measure it", flush=True)
                break
            result = _in_fresh_process(["--contention-estimate", source, str(args.estimate_epochs)],
                                       _threads.DEFAULT_POLICY)
            section["estimates"][table] = result
            raw.write_text(json.dumps(section, indent=1))
            print(f"estimate {table}: {json.dumps({k: result.get(k) for k in ('first_estimate', 'real_seconds', 'error')})}",
                  flush=True)
    table_file = Path(args.csv) if getattr(args, "csv", None) else raw.with_suffix(".csv")
    table_file.parent.mkdir(parents=True, exist_ok=True)
    with table_file.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["table", "policy", "load", "repeat", "threads", "median_seconds", "epoch_seconds",
                         "load_average", "decision", "busy_cpus"])
        for r in section["rows"]:
            if "error" not in r:
                writer.writerow([r["table"], r["policy"], r["load"], r.get("repeat", 0), r["threads"],
                                 r["median_seconds"],
                                 " ".join(f"{s:.4f}" for s in r["epoch_seconds"]), r["load_average"],
                                 r.get("decision") or "", "" if r.get("busy") is None else f"{r['busy']:.2f}"])
    verdict = section_verdict(section)
    print(f"rule: winner {verdict['winner']} (worst ratios {json.dumps({p: round(w, 2) for p, w in verdict['worst'].items()})}; "
          f"within 5 % quiet: {verdict['eligible']}; out: {verdict['out']}; still needed: {verdict['missing']}; "
          f"with a load-following thread count: {verdict['winner_any']}); in force: {_threads.DEFAULT_POLICY}",
          flush=True)
    return section
