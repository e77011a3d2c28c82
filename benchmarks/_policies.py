"""The contention study's candidates: every thread and wait policy it measured (``python -m benchmarks.speed
--contention``, :mod:`benchmarks._contention`).

The product keeps those that serve a user (:data:`iclfs._threads.POLICIES`:
``spin``, libgomp's own wait; ``passive``, for a shared machine;
``adaptive-timed``, which reads the load as a process starts and, when
other processes keep its CPUs busy, waits passively, and whose training
times an epoch on torch's thread count and one on the CPUs they leave free
and runs on the faster); the others lost the study and live here, so that
its rounds can be rendered and measured again. A cell of the study is a
fresh process: the product applies its own policies there itself
(``ICLFS_THREAD_POLICY``), ``adaptive-timed`` reading the load in the cell
as a user's run does, and the cell running its epochs as a training does; for
every other candidate the benchmark's parent process
decides the OpenMP variables right before it starts the cell (the busy
processes already running) and passes them in the cell's environment, under
``spin``, which sets nothing, so they are what the cell runs with (a user's
own variables win in :mod:`iclfs._threads`).

Four candidates here read the load as the cell starts, with the product's
own reading (:func:`iclfs._threads.busy_cpus`: the CPUs the process may use,
their own lines of /proc/stat, sampled over 0.1 s): ``free-cpus`` and
``passive-free-cpus`` set the thread count to the CPUs other processes leave
free (:func:`iclfs._threads.free_cpus`); ``adaptive`` (the default of round
four, which lost round five) waits passively when they keep its CPUs busy,
the thread count unchanged, and runs libgomp's own settings otherwise; and
``adaptive-threads`` (the default of round five, which lost round six) does
the same on the CPUs they leave free.

Standard library only, as :mod:`iclfs._threads`: the parent decides before
any cell loads torch.
"""

from __future__ import annotations

from dataclasses import dataclass

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
        (:func:`iclfs._threads.free_cpus`). Until a ``fast`` training on CPU ended in the same bits at any
        thread count (rounds one to four), a table's lists could change with the machine's load under it.
    when_busy : bool
        Apply ``environment`` and ``follow_load`` only when other processes keep at least
        :data:`iclfs._threads.BUSY_THRESHOLD` of the cell's CPUs busy as it starts; else set nothing
        (libgomp's own spin), as the product's ``adaptive-timed`` decides.
    time_threads : bool
        Under load the training times an epoch on torch's thread count and one on the CPUs left free, and
        runs on the faster: the product's own training loop does it (:class:`iclfs.method._runtime.ThreadChoice`),
        so only a policy of the product can.
    """

    name: str
    environment: tuple[tuple[str, str], ...] = ()
    about: str = ""
    follow_load: bool = False
    when_busy: bool = False
    time_threads: bool = False

    @property
    def in_product(self) -> bool:
        """Whether the product applies it itself (``ICLFS_THREAD_POLICY``): one of :data:`iclfs._threads.POLICIES`."""
        return self.name in _threads.POLICIES


#: Every candidate the study measured, by name, in the order its report lists them: the product's own (its
#: environment and line taken from :data:`iclfs._threads.POLICIES`), then those that lost the study.
CANDIDATES: dict[str, Candidate] = {
    candidate.name: candidate
    for candidate in (
        *(Candidate(policy.name, policy.environment, policy.about, when_busy=policy.when_busy is not None,
                    time_threads=policy.time_threads)
          for policy in _threads.POLICIES.values()),
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
        Candidate("adaptive-threads", (("OMP_WAIT_POLICY", "PASSIVE"),),
                  "libgomp's default wait and thread count, unless other processes keep at least half of one of "
                  "this process's CPUs busy when it starts (sampled over 0.1 s): then OMP_WAIT_POLICY=PASSIVE and "
                  "OMP_NUM_THREADS = the CPUs they leave free (at least 1)", follow_load=True, when_busy=True),
        Candidate("adaptive", (("OMP_WAIT_POLICY", "PASSIVE"),),
                  "libgomp's default wait, unless other processes keep at least half of one of this "
                  "process's CPUs busy when it starts (sampled over 0.1 s): then OMP_WAIT_POLICY=PASSIVE; "
                  "the thread count unchanged", when_busy=True),
    )
}


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
    decision : str or None
        A ``when_busy`` candidate's: ``"passive"`` (busy: its variables set) or ``"spin"`` (nothing set).
    busy : float or None
        The CPUs other processes kept busy as the cell started, of ``cpus`` (read only for a candidate that
        reads the load; None otherwise or when /proc/stat could not be read).
    cpus : int or None
        How many CPUs that share was read on (those the cell may use).
    """

    policy: str
    environment: dict[str, str]
    threads: int | None = None
    busy: float | None = None
    cpus: int | None = None
    decision: str | None = None


def decide_start(name: str, busy: float | None, cpus: int) -> Start:
    """How the candidate ``name`` starts a cell while other processes keep ``busy`` of the ``cpus`` CPUs it may
    use busy (None: unread). Everything it needs is an argument: nothing here looks at this process."""
    candidate = CANDIDATES[name]
    if candidate.in_product:
        return Start(name, {})  # the product applies its own policy in the cell
    if candidate.when_busy and (busy is None or busy < _threads.BUSY_THRESHOLD):
        return Start("spin", {}, None, busy, cpus, "spin")  # quiet (or unread): libgomp's own, as adaptive
    environment, threads = dict(candidate.environment), None
    if candidate.follow_load:
        threads = _threads.free_cpus(busy, cpus)
        environment["OMP_NUM_THREADS"] = str(threads)
    reads = candidate.follow_load or candidate.when_busy
    return Start("spin", environment, threads, busy if reads else None, cpus if reads else None,
                 "passive" if candidate.when_busy else None)


def start(name: str, measure_busy=_threads.busy_cpus) -> Start:
    """:func:`decide_start` for a cell about to start from this process: the load read now (by ``measure_busy``)
    only for a candidate that reads it here. The thread count follows :func:`iclfs._threads.available_cpus`
    (the affinity set under a cgroup quota)."""
    if name not in CANDIDATES:
        raise ValueError(f"{name!r} is no candidate of the contention study; use one of {', '.join(CANDIDATES)}")
    candidate = CANDIDATES[name]
    if candidate.in_product or not (candidate.follow_load or candidate.when_busy):
        return decide_start(name, None, _threads.available_cpus())  # the product reads it in the cell itself
    return decide_start(name, measure_busy(), _threads.available_cpus())
