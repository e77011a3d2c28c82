"""The contention study's candidates: every thread and wait policy it measured (``python -m benchmarks.speed
--contention``, :mod:`benchmarks._contention`).

The product keeps the two that serve a user (:data:`iclfs._threads.POLICIES`:
``spin``, libgomp's own wait, and ``passive``, for a shared machine); the
others lost the study and live here, so that its rounds can be rendered and
measured again. A cell of the study is a fresh process: the product applies
its two policies there itself (``ICLFS_THREAD_POLICY``); for every other
candidate the benchmark's parent process decides the OpenMP variables right
before it starts the cell (the busy processes already running) and passes
them in the cell's environment, under ``spin``, which sets nothing, so they
are what the cell runs with (a user's own variables win in
:mod:`iclfs._threads`).

Three candidates read the load as the cell starts: the CPUs the process may
use (its affinity set), their own lines of /proc/stat, sampled over 0.1 s
(:func:`busy_cpus`). ``free-cpus`` and ``passive-free-cpus`` set the thread
count to the CPUs other processes leave free (:func:`free_cpus`);
``adaptive`` waits passively when other processes keep at least
:data:`BUSY_THRESHOLD` of a CPU busy, else it keeps libgomp's spin.

Standard library only, as :mod:`iclfs._threads`: the parent decides before
any cell loads torch.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from iclfs import _threads


@dataclass(frozen=True)
class Candidate:
    """One candidate of the study: environment variables for the OpenMP runtime, and whether they follow the
    load as the cell starts.

    Attributes
    ----------
    name : str
    environment : tuple of (variable, value)
        The OpenMP variables of the cell's environment.
    about : str
        One line for the benchmark's report.
    follow_load : bool
        Set ``OMP_NUM_THREADS`` to the CPUs the cell may use less those other processes keep busy
        (:func:`free_cpus`). CPU results are bit-identical only at the same thread count, so with it a
        table's lists can change with the machine's load.
    when_busy : tuple of (variable, value) or None
        Set instead of ``environment`` when other processes keep at least :data:`BUSY_THRESHOLD` CPUs of
        those the cell may use busy (:func:`busy_cpus`); None: the load is not read for it. The thread count
        is not changed.
    """

    name: str
    environment: tuple[tuple[str, str], ...] = ()
    about: str = ""
    follow_load: bool = False
    when_busy: tuple[tuple[str, str], ...] | None = None

    @property
    def in_product(self) -> bool:
        """Whether the product applies it itself (``ICLFS_THREAD_POLICY``): one of :data:`iclfs._threads.POLICIES`."""
        return self.name in _threads.POLICIES

    @property
    def reads_load(self) -> bool:
        return self.follow_load or self.when_busy is not None


#: Every candidate the study measured, by name, in the order its report lists them: the product's own (its
#: environment and line taken from :data:`iclfs._threads.POLICIES`), then those that lost the study.
CANDIDATES: dict[str, Candidate] = {
    candidate.name: candidate
    for candidate in (
        *(Candidate(policy.name, policy.environment, policy.about) for policy in _threads.POLICIES.values()),
        Candidate("short-spin", (("GOMP_SPINCOUNT", "10000"), ("KMP_BLOCKTIME", "1")),
                  "GOMP_SPINCOUNT=10000 (KMP_BLOCKTIME=1 ms for Intel OpenMP builds, not measured here): "
                  "a bounded spin, then sleep"),
        Candidate("brief-spin", (("GOMP_SPINCOUNT", "1000"), ("KMP_BLOCKTIME", "0")),
                  "GOMP_SPINCOUNT=1000 (KMP_BLOCKTIME=0 for Intel OpenMP builds, not measured here): a "
                  "tenth of short-spin's spin, then sleep"),
        Candidate("free-cpus", (),
                  "OMP_NUM_THREADS = the CPUs not busy when the process starts (sampled over 0.1 s), "
                  "libgomp's default wait", follow_load=True),
        Candidate("passive-free-cpus", (("OMP_WAIT_POLICY", "PASSIVE"),),
                  "OMP_WAIT_POLICY=PASSIVE and OMP_NUM_THREADS = the CPUs not busy at start", follow_load=True),
        Candidate("adaptive", (),
                  "libgomp's default wait, unless other processes keep at least half of one of this "
                  "process's CPUs busy when it starts (sampled over 0.1 s): then OMP_WAIT_POLICY=PASSIVE; "
                  "the thread count unchanged", when_busy=(("OMP_WAIT_POLICY", "PASSIVE"),)),
    )
}

#: ``adaptive`` waits passively when other processes keep at least this many of the CPUs the cell may use
#: busy as it starts. One other runnable process on them counts about 1.0, a quiet machine's daemons about
#: 0.0-0.1 (with /proc/stat's 1/100 s ticks, 0.1 s on one CPU reads in steps of 0.1): half a CPU lies between.
BUSY_THRESHOLD = 0.5


@dataclass(frozen=True)
class Start:
    """How one cell starts: the product policy it names and the OpenMP variables decided for it.

    Attributes
    ----------
    policy : str
        ``ICLFS_THREAD_POLICY`` in the cell: the candidate itself when the product has it, else ``spin``
        (which sets nothing: the variables below are all that is in force).
    environment : dict
        The OpenMP variables the parent puts in the cell's environment.
    threads : int or None
        The thread count chosen (``follow_load``), None otherwise.
    busy : float or None
        The CPUs other processes kept busy as the cell started, of ``cpus`` (read only for a candidate that
        reads the load; None otherwise or when /proc/stat could not be read).
    cpus : int or None
        How many CPUs that share was read on (those the cell may use).
    decision : str or None
        ``adaptive``'s choice: ``"passive"`` (busy) or ``"spin"`` (quiet, or the load unreadable).
    """

    policy: str
    environment: dict[str, str]
    threads: int | None = None
    busy: float | None = None
    cpus: int | None = None
    decision: str | None = None


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


def busy_cpus(seconds: float = 0.1, sample=_cpu_times, sleep=time.sleep, cpus: set[int] | None = None) -> float | None:
    """CPUs of ``cpus`` (default: those this process may use, :func:`allowed_cpus`) kept busy by other
    processes: their busy share over ``seconds``, while this process sleeps, times their count. Only their
    own lines of /proc/stat are read: under ``taskset -c 0,1`` CPUs 0 and 1 are judged, however busy the
    rest of the machine is. None when /proc/stat cannot be read."""
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


def decide_start(name: str, busy: float | None, cpus: int) -> Start:
    """How the candidate ``name`` starts a cell while other processes keep ``busy`` of the ``cpus`` CPUs it may
    use busy (None: unread). Everything it needs is an argument: nothing here looks at this process."""
    candidate = CANDIDATES[name]
    if candidate.in_product:
        return Start(name, {})  # the product applies its own policy in the cell
    environment, threads, decision = dict(candidate.environment), None, None
    if candidate.when_busy is not None:
        decision = "passive" if busy is not None and busy >= BUSY_THRESHOLD else "spin"
        if decision == "passive":
            environment = dict(candidate.when_busy)
    if candidate.follow_load:
        threads = free_cpus(busy, cpus)
        environment["OMP_NUM_THREADS"] = str(threads)
    return Start("spin", environment, threads, busy if candidate.reads_load else None,
                 cpus if candidate.reads_load else None, decision)


def start(name: str, measure_busy=busy_cpus) -> Start:
    """:func:`decide_start` for a cell about to start from this process: the load read now (by ``measure_busy``)
    only for a candidate that reads it. The thread count follows :func:`iclfs._threads.available_cpus` (the
    affinity set under a cgroup quota), adaptive's share is read on the affinity set."""
    if name not in CANDIDATES:
        raise ValueError(f"{name!r} is no candidate of the contention study; use one of {', '.join(CANDIDATES)}")
    candidate = CANDIDATES[name]
    if not candidate.reads_load:
        return decide_start(name, None, _threads.available_cpus())
    cpus = _threads.available_cpus() if candidate.follow_load else len(allowed_cpus() or ()) or os.cpu_count() or 1
    return decide_start(name, measure_busy(), cpus)
