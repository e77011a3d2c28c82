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

Two policies, each a named :class:`ThreadPolicy` in :data:`POLICIES`:
``spin`` (libgomp's own wait) and ``passive`` (threads sleep at once, for a
shared machine). :data:`DEFAULT_POLICY` names the one in force, chosen by
the contention benchmark's rule (``python -m benchmarks.speed
--contention``); ``ICLFS_THREAD_POLICY=<name>`` picks the other. The study's
other candidates lost it and live in ``benchmarks/_policies.py``. A user's
own ``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT``, ``KMP_BLOCKTIME`` or
``OMP_NUM_THREADS`` wins. ``runtime.num_threads`` still sets torch's thread
count for a training (:func:`iclfs.method._runtime.compute_settings`).

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

#: Names the policy to apply instead of :data:`DEFAULT_POLICY`.
POLICY_VARIABLE = "ICLFS_THREAD_POLICY"
#: When set, each process that applies the policy writes what it applied to ``<this folder>/<pid>.json``
#: (read by the tests that start the ``iclfs`` command and ``kedro run``, and useful to support).
REPORT_VARIABLE = "ICLFS_THREAD_POLICY_REPORT"
#: How OpenMP threads wait. A user who sets any of them has chosen how they wait: the policy sets none of them.
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
#: The variables a policy may set; a user's value of any of them is kept.
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
    """

    name: str
    environment: tuple[tuple[str, str], ...] = ()
    about: str = ""


POLICIES: dict[str, ThreadPolicy] = {
    policy.name: policy
    for policy in (
        ThreadPolicy("spin", (), "libgomp's default: a waiting thread spins 300,000 times before it sleeps"),
        ThreadPolicy("passive", (("OMP_WAIT_POLICY", "PASSIVE"),),
                     "OMP_WAIT_POLICY=PASSIVE: a waiting thread sleeps at once"),
    )
}

#: The policy in force: the winner of the latest round of ``python -m benchmarks.speed --contention``'s rule
#: (benchmarks/results/performance.md, "Threads on a shared machine", says each round and its verdict;
#: ``--fold-round2 ... --apply-verdict`` writes round two's winner on this line). Both rounds kept libgomp's
#: own (``spin``), the only policy within 5 % of its quiet epoch on all three tables, though ``passive`` stayed
#: within 1.19x the CPU-share bound beside busy processes where ``spin`` reached 7x.
DEFAULT_POLICY = "spin"


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
    """

    policy: str
    set: dict[str, str] = field(default_factory=dict)
    kept: dict[str, str] = field(default_factory=dict)
    torch_loaded: bool = False


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


def policy_named(name: str) -> ThreadPolicy:
    """The policy called ``name``; a ValueError naming the choices otherwise."""
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(f"{POLICY_VARIABLE}={name!r} names no thread policy; use one of "
                         f"{', '.join(POLICIES)} (or unset it for {DEFAULT_POLICY!r})") from None


def apply_policy(name: str | None = None, environ: MutableMapping[str, str] = os.environ) -> AppliedPolicy:
    """Put the policy ``name`` (default: ``$ICLFS_THREAD_POLICY``, else :data:`DEFAULT_POLICY`) in force here.

    Sets its wait variables unless the environment has one of :data:`WAIT_VARIABLES` (the user's choice of
    how threads wait: libgomp would mix them), and none that the environment has already; an empty value
    counts as unset (OpenMP rejects it). Records the policy's name in ``$ICLFS_THREAD_POLICY`` for the
    processes this one starts, and whether torch was loaded already (then libgomp had read its settings).
    """
    name = name or environ.get(POLICY_VARIABLE) or DEFAULT_POLICY
    wanted = dict(policy_named(name).environment)
    kept = {var: environ[var] for var in POLICY_VARIABLES if environ.get(var)}
    if any(var in kept for var in WAIT_VARIABLES):
        wanted = {var: value for var, value in wanted.items() if var not in WAIT_VARIABLES}
    done = {var: value for var, value in wanted.items() if var not in kept}
    environ.update(done)
    environ[POLICY_VARIABLE] = name
    return AppliedPolicy(name, done, kept, "torch" in sys.modules)


def describe(applied: AppliedPolicy) -> str:
    """One line naming the policy in force in this process and what it set and kept (a run logs it)."""
    line = f"thread policy {applied.policy}"
    if applied.torch_loaded and applied.set:
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
                                    "environment": {v: os.environ.get(v) for v in POLICY_VARIABLES}}))
    except OSError:
        return None  # a report is a diagnostic: it never stops a run
    return path


#: What this process applied when it first imported this module.
APPLIED = apply_policy()
write_report(APPLIED)
