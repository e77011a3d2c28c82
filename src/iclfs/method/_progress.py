"""How far a training is, in log lines: a line every tenth of the epochs, and the time it will take.

A progress bar is one line of carriage returns in a log file; a scheduled
run's log wants lines. :class:`Progress` logs, over every epoch of every
network of a run, one line at each tenth (the epoch, the loss, the time so
far and an estimate of the time left) and what the whole training will
take: before it starts on a wide table (:meth:`Progress.forecast`, from one
timed epoch), else after its first epoch. Past :data:`LONG` seconds that
estimate is a warning with what shortens it.
"""

from __future__ import annotations

import logging
import time

LOGGER = logging.getLogger("iclfs.training")
LONG = 3600.0  # an estimate past this is said as a warning, with the remedies
REMEDIES = ("fewer features (filter them first, e.g. by variance: selection.method=variance gives the list), "
            "members.feature_blocks (one network per block of features), or a GPU (runtime.device=cuda)")


def duration(seconds: float) -> str:
    """``42 s``, ``3.5 min``, ``2.1 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


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
    """

    def __init__(self, total: int, label: str, enabled: bool = True) -> None:
        self.total = max(int(total), 1)
        self.label = label
        self.enabled = enabled
        self.done = 0
        self.started = time.perf_counter()
        self._next_tenth = 1
        self._forecast = False

    def forecast(self, epoch_seconds: float, how: str) -> None:
        """Say, before the training starts, what it will take at ``epoch_seconds`` an epoch (``how``: how that
        was measured); the first epoch then says nothing more."""
        self._forecast = True
        if self.enabled:
            self._say(epoch_seconds, how)

    def _say(self, epoch_seconds: float, how: str) -> None:
        estimate = epoch_seconds * self.total
        if estimate > LONG:
            LOGGER.warning("%s: the %d epochs will take about %s (%s). To shorten it: %s", self.label, self.total,
                           duration(estimate), how, REMEDIES)
        else:
            LOGGER.info("%s: the %d epochs will take about %s (%s)", self.label, self.total, duration(estimate),
                        how)

    def update(self, loss: float | None = None) -> None:
        """One epoch done."""
        self.done += 1
        if not self.enabled:
            return
        spent = time.perf_counter() - self.started
        if self.done == 1 and self.total > 1 and not self._forecast:
            self._say(spent, f"its first epoch took {duration(spent)}")
        tenth = self.done * 10 // self.total
        if tenth >= self._next_tenth or self.done == self.total:
            self._next_tenth = tenth + 1
            left = spent / self.done * (self.total - self.done)
            shown = "" if loss is None else f", loss {loss:.4f}"
            LOGGER.info("%s: epoch %d of %d (%d %%)%s, %s so far, about %s left", self.label, self.done, self.total,
                        100 * self.done // self.total, shown, duration(spent), duration(left))
