"""How torch's CPU threads wait: the thread and wait policy of every process the project starts.

torch's CPU wheel runs its intra-op threads on GNU OpenMP (``libgomp``,
``threadpoolctl.threadpool_info()`` names it). Between two parallel regions
libgomp's threads spin before they sleep (300,000 iterations unless told
otherwise). On a machine to itself that saves a wake-up; on a shared one the
spinning thread holds a core another process, or this process's own
descheduled thread, needs, and an epoch ran 6.5x slower beside three busy
processes than with the threads told not to spin (issue 59).

libgomp reads its settings once, when torch loads it, so the policy must be
in the environment before ``import torch``. Importing this module applies it
(once per process, :data:`APPLIED`): the ``iclfs`` command and ``kedro run``
import it first (``iclfs/__main__.py``, ``iclfs/settings.py``), before any
node imports torch; the DAG's task runs one of them; the workers of a Dask
LocalCluster inherit the environment (:func:`iclfs._distributed.thread_policies`
asks each worker and names one that started without it); the ``benchmarks``
package imports it first. Subprocesses inherit what was set.

Three policies, each a named :class:`ThreadPolicy` in :data:`POLICIES`:
``spin`` (libgomp's own wait), ``passive`` (threads sleep at once, for a
shared machine) and ``adaptive-timed`` (libgomp's own wait and thread
count, unless other processes keep the CPUs this one may use busy as it
starts, which it reads from their lines of /proc/stat over 0.1 s,
:func:`busy_cpus`: then passive waiting, and a training times an epoch on
torch's thread count and one on the CPUs the busy processes leave free, and
runs on the faster, :func:`counts_to_time` and
:class:`iclfs.method._runtime.ThreadChoice`). A thread count that changes
under load cannot move a list: a ``fast`` training on CPU ends in the same
bits at any count (docs/guides/performance.md, "Lists that do not depend on
the thread count"). :data:`DEFAULT_POLICY`
names the one in force, chosen by the contention benchmark's rule (``python
-m benchmarks.speed --contention``); ``ICLFS_THREAD_POLICY=<name>`` picks
another. The study's other candidates lost it and live in
``benchmarks/_policies.py``. A user's
own ``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT``, ``KMP_BLOCKTIME`` or
``OMP_NUM_THREADS`` wins. ``runtime.num_threads`` still sets torch's thread
count for a training (:func:`iclfs.method._runtime.compute_settings`).

Importing this module also sets :data:`REPRODUCIBLE_GEMM` (MKL's strict
reproducible mode), which a ``fast`` training on CPU needs to end in the same
bits at any thread count; MKL reads it at its first matrix product.

Where torch is already loaded (``ICLFSSelector`` in a user's own process),
the wait settings can no longer reach libgomp: :attr:`AppliedPolicy.torch_loaded`
says so, and docs/guides/performance.md says what to set before starting
Python.

Standard library only: this module must load before torch and numpy.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

#: Intel MKL's strict conditional numerical reproducibility: its matrix products then give the same bits at
#: any thread count (without it a 325 x 325 by 325 x 73 product, lung_small's, differed between 1 and 4
#: threads); ``AUTO`` keeps this CPU's fastest code path, and at 1 and 2 threads the products measured the
#: same speed and the same bits with it as without (docs/guides/performance.md, "Lists that do not depend on
#: the thread count"). MKL reads it at its first matrix product; set on import unless the user set it.
REPRODUCIBLE_GEMM = ("MKL_CBWR", "AUTO,STRICT")
#: Names the policy to apply instead of :data:`DEFAULT_POLICY`.
POLICY_VARIABLE = "ICLFS_THREAD_POLICY"
#: When set, each process that applies the policy writes what it applied to ``<this folder>/<pid>.json``
#: (read by the tests that start the ``iclfs`` command and ``kedro run``, and useful to support).
REPORT_VARIABLE = "ICLFS_THREAD_POLICY_REPORT"
#: How OpenMP threads wait. A user who sets any of them has chosen how they wait: the policy sets none of them.
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
#: The variables a policy may set; a user's value of any of them is kept (an ``OMP_NUM_THREADS`` of the user's
#: too: ``adaptive-timed`` then waits passively under load on the user's count, and times no other).
POLICY_VARIABLES = (*WAIT_VARIABLES, "OMP_NUM_THREADS")


@dataclass(frozen=True)
class ThreadPolicy:
    """One policy: environment variables for the OpenMP runtime.

    Attributes
    ----------
    name : str
    environment : tuple of (variable, value)
        Set where the user has not set the variable.
    about : str
        One line for the benchmark's report.
    when_busy : tuple of (variable, value), optional
        A policy that reads the load as the process starts: set instead of ``environment`` when other
        processes keep at least :data:`BUSY_THRESHOLD` of its CPUs busy.
    time_threads : bool
        With ``when_busy``: a ``fast`` training on CPU times its epochs on torch's thread count and on the
        CPUs the busy processes leave free, and runs on the faster (:func:`counts_to_time`,
        :class:`iclfs.method._runtime.ThreadChoice`).
    """

    name: str
    environment: tuple[tuple[str, str], ...] = ()
    about: str = ""
    when_busy: tuple[tuple[str, str], ...] | None = None
    time_threads: bool = False


#: Under load, a training that chooses its thread count (``adaptive-timed``) times the count it does not run on
#: again every this many epochs: the other processes come and go.
RETIME_EPOCHS = 20

POLICIES: dict[str, ThreadPolicy] = {
    policy.name: policy
    for policy in (
        ThreadPolicy("spin", (), "libgomp's default: a waiting thread spins 300,000 times before it sleeps"),
        ThreadPolicy("passive", (("OMP_WAIT_POLICY", "PASSIVE"),),
                     "OMP_WAIT_POLICY=PASSIVE: a waiting thread sleeps at once"),
        ThreadPolicy("adaptive-timed", (),
                     "libgomp's default wait and thread count, unless other processes keep at least half of one "
                     "of this process's CPUs busy when it starts (sampled over 0.1 s): then OMP_WAIT_POLICY=PASSIVE, "
                     "and a training times an epoch on torch's thread count and one on the CPUs they leave free "
                     f"(at least 1), runs on the faster, and times the other again every {RETIME_EPOCHS} epochs",
                     when_busy=(("OMP_WAIT_POLICY", "PASSIVE"),), time_threads=True),
    )
}

#: ``adaptive-timed`` waits passively when other processes keep at least this many of the CPUs this process
#: may use busy as it starts. One other runnable process on them counts about 1.0, a quiet machine's daemons about
#: 0.0-0.1 (with /proc/stat's 1/100 s ticks, 0.1 s on one CPU reads in steps of 0.1): half a CPU lies between.
BUSY_THRESHOLD = 0.5
#: How long ``adaptive-timed`` samples the CPUs' load as a process starts.
BUSY_SAMPLE_SECONDS = 0.1

#: The policy in force: the winner of the latest round of ``python -m benchmarks.speed --contention``'s rule
#: (benchmarks/results/performance.md, "Threads on a shared machine", says each round and its verdict;
#: ``--fold-round6 ... --apply-verdict`` wrote round six's winner on this line). Rounds one to three kept
#: libgomp's own (``spin``); round four made ``adaptive`` (passive waiting under load, the thread count
#: unchanged) the default once 40 processes a cell resolved its quiet test. Round five, once a run's list no
#: longer depended on the thread count, let the count follow the load: ``adaptive-threads`` (``adaptive``'s
#: settings on a quiet machine, under load the free CPUs' count) had the lower worst ratio beside busy
#: processes. Round six let the training time both counts under load: ``adaptive-timed`` had the lower worst
#: ratio again (1.33 against 1.54).
DEFAULT_POLICY = "adaptive-timed"


@dataclass(frozen=True)
class AppliedPolicy:
    """What :func:`apply_policy` did in one process.

    Attributes
    ----------
    policy : str
    set : dict
        The variables it set, with their values.
    kept : dict
        The policy's variables the environment already had (the user's), with their values.
    torch_loaded : bool
        Whether torch was loaded already: then libgomp had read its settings, and those set here reach only
        the processes this one starts.
    decision : str or None
        A policy that reads the load (``adaptive-timed``): ``"passive"`` (busy) or ``"spin"`` (quiet, or the
        load unreadable). None when the load was not read: another policy, the user's own wait, or torch loaded.
    busy : float or None
        The CPUs other processes kept busy as it was read, of ``cpus``; None when not read or unreadable.
    cpus : int or None
        How many CPUs the load was read on (those this process may use).
    """

    policy: str
    set: dict[str, str] = field(default_factory=dict)
    kept: dict[str, str] = field(default_factory=dict)
    torch_loaded: bool = False
    decision: str | None = None
    busy: float | None = None
    cpus: int | None = None


def available_cpus() -> int:
    """CPUs this process may run on: its affinity set, capped by a cgroup CPU quota (at least 1)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    if quota is not None:
        cpus = min(cpus, max(1, int(quota)))  # a fractional quota rounds down: it cannot feed a whole thread
    return max(1, cpus)


def _cgroup_cpu_quota(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPU quota in CPUs (cgroup v2 ``cpu.max``, else v1 ``cpu.cfs_quota_us``); None when unlimited or
    unreadable."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota <= 0 or period <= 0 else quota / period


def allowed_cpus() -> set[int] | None:
    """The CPUs this process may run on (its affinity set); None where the platform cannot say."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _cpu_times(stat: Path = Path("/proc/stat"), cpus: set[int] | None = None) -> tuple[int, int] | None:
    """(busy, total) jiffies of the CPUs ``cpus``, summed over their own ``cpuN`` lines of /proc/stat, or of
    all CPUs (its first line) when None; None when unreadable or when it lists none of ``cpus``."""
    try:
        lines = stat.read_text().splitlines()
        rows = ([lines[0]] if cpus is None else
                [line for line in lines if line.startswith("cpu") and line[3:4].isdigit()
                 and int(line.split()[0][3:]) in cpus])
        busy = total = 0
        for line in rows:
            values = [int(v) for v in line.split()[1:]]
            idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle and iowait
            everything = sum(values[:8])  # guest time is already counted in user time
            busy, total = busy + everything - idle, total + everything
    except (OSError, ValueError, IndexError):
        return None
    return (busy, total) if rows else None


def busy_cpus(seconds: float = BUSY_SAMPLE_SECONDS, sample=_cpu_times, sleep=time.sleep,
              cpus: set[int] | None = None) -> float | None:
    """CPUs of ``cpus`` (default: those this process may use, :func:`allowed_cpus`) kept busy by other
    processes: their busy share over ``seconds``, while this process sleeps, times their count. Only their
    own lines of /proc/stat are read: under ``taskset -c 0,1`` CPUs 0 and 1 are judged, however busy the
    rest of the machine is. None when /proc/stat cannot be read (not Linux)."""
    cpus = allowed_cpus() if cpus is None else cpus
    before = sample(cpus=cpus)
    sleep(seconds)
    after = sample(cpus=cpus)
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1]) * (len(cpus) if cpus else os.cpu_count() or 1)


def free_cpus(busy: float | None, cpus: int) -> int:
    """Threads for a process that may use ``cpus`` CPUs while others keep ``busy`` of them busy (at least 1;
    all of them when the load cannot be read)."""
    if busy is None:
        return cpus
    return max(1, min(cpus, cpus - round(busy)))


def counts_to_time(threads: int, applied: AppliedPolicy | None = None) -> tuple[int, ...]:
    """The thread counts a training on ``threads`` threads may time and choose between, the first its start:
    ``(threads, free)`` where the policy ``applied`` (default: :data:`APPLIED`) times its threads, read the
    machine as busy, and the CPUs the busy processes left free (:func:`free_cpus`) are fewer than
    ``threads``; else ``(threads,)``. A user's own ``OMP_NUM_THREADS`` is a thread count chosen: it is kept."""
    applied = APPLIED if applied is None else applied
    policy = POLICIES.get(applied.policy)
    if (policy is None or not policy.time_threads or applied.decision != "passive" or applied.cpus is None
            or "OMP_NUM_THREADS" in applied.kept):
        return (threads,)
    free = min(threads, free_cpus(applied.busy, applied.cpus))
    return (threads,) if free == threads else (threads, free)


def policy_named(name: str) -> ThreadPolicy:
    """The policy called ``name``; a ValueError naming the choices otherwise."""
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(f"{POLICY_VARIABLE}={name!r} names no thread policy; use one of "
                         f"{', '.join(POLICIES)} (or unset it for {DEFAULT_POLICY!r})") from None


def apply_policy(name: str | None = None, environ: MutableMapping[str, str] = os.environ,
                 measure_busy=busy_cpus) -> AppliedPolicy:
    """Put the policy ``name`` (default: ``$ICLFS_THREAD_POLICY``, else :data:`DEFAULT_POLICY`) in force here.

    Sets its wait variables unless the environment has one of :data:`WAIT_VARIABLES` (the user's choice of
    how threads wait: libgomp would mix them), and none that the environment has already; an empty value
    counts as unset (OpenMP rejects it). A policy that reads the load (``adaptive-timed``) reads it with
    ``measure_busy`` only when its choice can still matter here: no wait variable of the user's, torch not
    yet loaded; busy, it sets the policy's ``when_busy`` variables (the training then times its thread
    counts, :func:`counts_to_time`). Records the policy's name in ``$ICLFS_THREAD_POLICY`` for the processes
    this one starts (each of them reads the load for itself, unless this one set a wait variable: they
    inherit it as set, and time no thread count), and whether torch was loaded already (then libgomp had
    read its settings).
    """
    name = name or environ.get(POLICY_VARIABLE) or DEFAULT_POLICY
    policy = policy_named(name)
    wanted = dict(policy.environment)
    kept = {var: environ[var] for var in POLICY_VARIABLES if environ.get(var)}
    users_wait = any(var in kept for var in WAIT_VARIABLES)
    torch_loaded = "torch" in sys.modules
    decision = busy = cpus = None
    if policy.when_busy is not None and not users_wait and not torch_loaded:
        busy, cpus = measure_busy(), len(allowed_cpus() or ()) or os.cpu_count() or 1
        decision = "passive" if busy is not None and busy >= BUSY_THRESHOLD else "spin"
        if decision == "passive":
            wanted = dict(policy.when_busy)
    if users_wait:
        wanted = {var: value for var, value in wanted.items() if var not in WAIT_VARIABLES}
    done = {var: value for var, value in wanted.items() if var not in kept}
    environ.update(done)
    environ[POLICY_VARIABLE] = name
    return AppliedPolicy(name, done, kept, torch_loaded, decision, busy, cpus)


def reproducible_gemm(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Put :data:`REPRODUCIBLE_GEMM` in ``environ`` unless it has the variable (an empty value counts as unset);
    whether it was set here."""
    variable, value = REPRODUCIBLE_GEMM
    if environ.get(variable):
        return False
    environ[variable] = value
    return True


def describe(applied: AppliedPolicy) -> str:
    """One line naming the policy in force in this process and what it set and kept (a run logs it)."""
    return f"thread policy {summary(applied)}"


def summary(applied: AppliedPolicy) -> str:
    """The policy in force, what ``adaptive-timed`` read, and what it set and kept (an MLflow run's tag)."""
    line = applied.policy
    if applied.decision is not None:
        line += (f" ({applied.decision}: other processes kept {applied.busy:.1f} of {applied.cpus} CPUs busy as it "
                 "started)" if applied.busy is not None else f" ({applied.decision}: the load could not be read)")
    if applied.torch_loaded and (applied.set or POLICIES[applied.policy].when_busy is not None):
        line += ": torch was loaded before the policy, so libgomp keeps the wait it started with"
    if applied.set:
        line += "; set " + ", ".join(f"{k}={v}" for k, v in applied.set.items())
    if applied.kept:
        line += "; kept " + ", ".join(f"{k}={v}" for k, v in applied.kept.items())
    return line


def write_report(applied: AppliedPolicy, environ: MutableMapping[str, str] = os.environ) -> Path | None:
    """Write ``applied`` to ``$ICLFS_THREAD_POLICY_REPORT/<pid>.json`` when that variable names a folder."""
    folder = environ.get(REPORT_VARIABLE)
    if not folder:
        return None
    path = Path(folder) / f"{os.getpid()}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"pid": os.getpid(), "argv": sys.argv, "time": time.time(), **applied.__dict__,
                                    "environment": {v: os.environ.get(v)
                                                    for v in (*POLICY_VARIABLES, REPRODUCIBLE_GEMM[0])}}))
    except OSError:
        return None  # a report is a diagnostic: it never stops a run
    return path


#: What this process applied when it first imported this module.
APPLIED = apply_policy()
reproducible_gemm()
write_report(APPLIED)
