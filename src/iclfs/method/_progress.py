"""How far a training is, in log lines: a line every tenth of the epochs, the time it will take, and a busy machine.

A progress bar is one line of carriage returns in a log file; a scheduled
run's log wants lines. :class:`Progress` logs, over every epoch of every
network of a run, one line at each tenth (the epoch, the loss, the time so
far and the time left at the pace of the last epochs) and what the whole
training will take: before it starts on a wide table
(:meth:`Progress.forecast`, from one timed epoch), else after its second
epoch. The first epoch is not the pace: it pays for the warm-up (a spare
epoch on two threads or more, :func:`iclfs.method._training.warm_up`) and
the first calls of torch's kernels, and an estimate from it said 2.9 min for
a training of 0.3 min. Past :data:`LONG` seconds the estimate is a warning
with what shortens it. When the epochs slow to :data:`BUSY` times the run's
own steady pace, the machine is busy with other work: a warning says by how
much and what to do, again each time the slowdown doubles.
"""

from __future__ import annotations

import logging
import statistics
import time

LOGGER = logging.getLogger("iclfs.training")
LONG = 3600.0  # an estimate past this is said as a warning, with the remedies
REMEDIES = ("fewer features (filter them first, e.g. by variance: selection.method=variance gives the list), "
            "members.feature_blocks (one network per block of features), or a GPU (runtime.device=cuda)")
STEADY = 3  # epochs after the first whose median is the run's own pace at its start
RECENT = 3  # the last epochs whose median is its pace now
BUSY = 2.0  # epochs this many times slower than the start: the machine is busy, and the log says so
QUIET = 1.25  # back under this, a later slowdown is said again
# for the next run: OpenMP read how its threads wait when torch loaded, so this run keeps its own (the default,
# adaptive-timed, decided as it started, perhaps on a quiet machine)
BUSY_REMEDIES = ("fewer threads (runtime.num_threads: 1), threads that sleep at once while they wait "
                 "(ICLFS_THREAD_POLICY=passive, or thread_policy: passive in airflow.yml for a scheduled refresh; "
                 "docs/guides/performance.md), or another time of day")


def duration(seconds: float) -> str:
    """``42 s``, ``3.5 min``, ``2.1 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _epoch(seconds: float) -> str:
    """An epoch's time: ``0.31 s``, ``4.2 s``, then as :func:`duration`."""
    return f"{seconds:.2g} s" if seconds < 10 else duration(seconds)


class Progress:
    """Counts the epochs of a training of ``total`` epochs and logs its progress (module docstring).

    Parameters
    ----------
    total : int
        Every epoch of every network the run trains.
    label : str
        What trains, for the log lines (``ICLFS d=325 n=73``).
    enabled : bool
        False logs nothing (``runtime.progress: false``).

    Attributes
    ----------
    seconds : list of float
        Each epoch's wall time so far, from one :meth:`update` to the next (the first from the start).
    first_estimate : float or None
        The first estimate of the whole training's seconds (the forecast's, else the second epoch's), once
        said; the contention benchmark checks it against the training's real time.
    estimate_at : int
        The epoch whose time gives the first estimate: the second, or a later one when the epochs before it
        timed other thread counts (:class:`iclfs.method._runtime.ThreadChoice`; :func:`~iclfs.method._training.train`
        sets it).
    """

    def __init__(self, total: int, label: str, enabled: bool = True) -> None:
        self.total = max(int(total), 1)
        self.label = label
        self.enabled = enabled
        self.done = 0
        self.started = time.perf_counter()
        self._last = self.started
        self.seconds: list[float] = []
        self._next_tenth = 1
        self._forecast: float | None = None
        self._busy_from = BUSY  # the slowdown that is said next
        self.first_estimate: float | None = None
        self.estimate_at = 2

    def forecast(self, epoch_seconds: float, how: str) -> None:
        """Say, before the training starts, what it will take at ``epoch_seconds`` an epoch (``how``: how that
        was measured); the second epoch then corrects it only when it is more than a quarter off."""
        self._forecast = epoch_seconds * self.total
        if self.enabled:
            self._say(self._forecast, how)

    def _say(self, estimate: float, how: str) -> None:
        if self.first_estimate is None:
            self.first_estimate = estimate
        if estimate > LONG:
            LOGGER.warning("%s: the %d epochs will take about %s (%s). To shorten it: %s", self.label, self.total,
                           duration(estimate), how, REMEDIES)
        else:
            LOGGER.info("%s: the %d epochs will take about %s (%s)", self.label, self.total, duration(estimate),
                        how)

    def steady(self) -> float | None:
        """The run's steady pace: the median of its first :data:`STEADY` epochs after the first; None before
        its second epoch."""
        return statistics.median(self.seconds[1:1 + STEADY]) if len(self.seconds) > 1 else None

    def pace(self) -> float:
        """Seconds an epoch now: the median of the last :data:`RECENT` epochs, the first left out once there
        are others."""
        recent = self.seconds[1:] or self.seconds
        return statistics.median(recent[-RECENT:]) if recent else 0.0

    def update(self, loss: float | None = None) -> None:
        """One epoch done."""
        now = time.perf_counter()
        self.seconds.append(now - self._last)
        self._last = now
        self.done += 1
        if not self.enabled:
            return
        spent = now - self.started
        if self.done == self.estimate_at and self.total > self.estimate_at:
            self._first_estimate(spent)
        if len(self.seconds) > 1 + STEADY:
            self._check_busy()
        tenth = self.done * 10 // self.total
        if tenth >= self._next_tenth or self.done == self.total:
            self._next_tenth = tenth + 1
            left = self.pace() * (self.total - self.done)
            shown = "" if loss is None else f", loss {loss:.4f}"
            LOGGER.info("%s: epoch %d of %d (%d %%)%s, %s so far, about %s left", self.label, self.done, self.total,
                        100 * self.done // self.total, shown, duration(spent), duration(left))

    def _first_estimate(self, spent: float) -> None:
        """After epoch :attr:`estimate_at` (the second): the time so far and the rest at that epoch's pace."""
        first, latest = self.seconds[0], self.seconds[-1]
        estimate = spent + latest * (self.total - self.done)
        ordinal = {2: "second", 3: "third"}.get(self.done, f"{self.done}th")
        how = (f"at its {ordinal} epoch's {_epoch(latest)} an epoch; "
               + ("" if self.done == 2 else "the epochs before it timed other thread counts; ")
               + f"the first, with the warm-up, took {_epoch(first)}")
        if self._forecast is None:
            self._say(estimate, how)
        elif abs(estimate / self._forecast - 1) > 0.25:
            self._say(estimate, f"corrected: {how}")

    def _check_busy(self) -> None:
        """Warn when the epochs run more than :data:`BUSY` times slower than the run's steady pace, and each time the
        slowdown more than doubles; once back under :data:`QUIET` times, a later slowdown is said again."""
        steady, now = self.steady(), self.pace()
        slower = now / steady if steady else 1.0
        if slower < QUIET:
            self._busy_from = BUSY
        if slower <= self._busy_from:
            return
        self._busy_from = 2 * slower
        left = now * (self.total - self.done)
        LOGGER.warning("%s: the epochs now take %.1fx as long as at this run's start (%s against %s): the machine "
                       "is busy with other work, and at this pace the rest takes about %s. To speed it up: %s",
                       self.label, slower, _epoch(now), _epoch(steady), duration(left), BUSY_REMEDIES)
