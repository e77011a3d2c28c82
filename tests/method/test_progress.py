"""Progress: a log line at every tenth of the epochs, the training's estimated time from a steady epoch, a
warning when it is long, and one when the machine gets busy."""

from __future__ import annotations

import itertools
import logging
import re
from types import SimpleNamespace

import pytest

from iclfs.method import _progress
from iclfs.method._progress import BUSY_REMEDIES, LONG, REMEDIES, Progress, duration

LOGGER = "iclfs.training"


class Clock:
    """A perf_counter that moves ``step`` seconds at each reading after the first (the start)."""

    def __init__(self, step: float) -> None:
        self.step, self.now, self.readings = step, 0.0, 0

    def __call__(self) -> float:
        if self.readings:
            self.now += self.step
        self.readings += 1
        return self.now


@pytest.fixture
def clock(monkeypatch):
    """Progress's clock, 10 s an epoch (one reading at the start, one an update)."""
    fake = Clock(10.0)
    monkeypatch.setattr(_progress, "time", SimpleNamespace(perf_counter=fake))
    return fake


def train(progress: Progress, epochs: int, loss: float | None = None) -> None:
    for _ in range(epochs):
        progress.update(loss)


def messages(caplog) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == LOGGER]


def test_over_100_epochs_one_line_a_tenth_and_one_estimate(caplog, clock):
    with caplog.at_level(logging.INFO, logger=LOGGER):
        train(Progress(100, "ICLFS d=30 n=20"), 100, loss=0.5)
    logged = messages(caplog)
    assert len(logged) == 11
    assert logged[0] == (logging.INFO, "ICLFS d=30 n=20: the 100 epochs will take about 16.7 min (at its second "
                                       "epoch's 10 s an epoch; the first, with the warm-up, took 10 s)")
    epochs = [int(m.group(1)) for _, text in logged if (m := re.search(r": epoch (\d+) of 100 ", text))]
    assert epochs == [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    assert logged[1] == (logging.INFO, "ICLFS d=30 n=20: epoch 10 of 100 (10 %), loss 0.5000, 1.7 min so far, "
                                       "about 15.0 min left")
    assert logged[-1] == (logging.INFO, "ICLFS d=30 n=20: epoch 100 of 100 (100 %), loss 0.5000, 16.7 min so far, "
                                        "about 0 s left")
    assert all(level == logging.INFO for level, _ in logged)


def test_a_total_that_tenths_do_not_divide_still_logs_ten_lines_ending_at_the_last_epoch(caplog, clock):
    with caplog.at_level(logging.INFO, logger=LOGGER):
        train(Progress(15, "net"), 15)
    epochs = [int(m.group(1)) for _, text in messages(caplog) if (m := re.search(r": epoch (\d+) of 15 ", text))]
    assert epochs == [2, 3, 5, 6, 8, 9, 11, 12, 14, 15]
    assert "net: epoch 15 of 15 (100 %), 2.5 min so far, about 0 s left" in [t for _, t in messages(caplog)]


def test_without_a_loss_the_line_names_none(caplog, clock):
    with caplog.at_level(logging.INFO, logger=LOGGER):
        train(Progress(10, "net"), 1)
    assert messages(caplog)[-1] == (logging.INFO, "net: epoch 1 of 10 (10 %), 10 s so far, about 1.5 min left")


def test_disabled_it_logs_nothing_but_still_counts(caplog, clock):
    progress = Progress(100, "net", enabled=False)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        train(progress, 100, loss=1.0)
        progress.forecast(100.0, "one timed epoch")
    assert messages(caplog) == []
    assert progress.done == 100


def test_an_estimate_past_long_is_a_warning_naming_the_remedies(caplog, monkeypatch):
    monkeypatch.setattr(_progress, "time", SimpleNamespace(perf_counter=Clock(40.0)))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        train(Progress(100, "ICLFS d=20000 n=300"), 2)
    level, text = messages(caplog)[0]
    assert level == logging.WARNING
    assert text == ("ICLFS d=20000 n=300: the 100 epochs will take about 66.7 min (at its second epoch's 40 s an "
                    f"epoch; the first, with the warm-up, took 40 s). To shorten it: {REMEDIES}")
    assert "members.feature_blocks" in text and "a GPU (runtime.device=cuda)" in text


def test_an_estimate_just_under_long_is_not_a_warning(caplog, monkeypatch):
    monkeypatch.setattr(_progress, "time", SimpleNamespace(perf_counter=Clock(36.0)))  # 3600 s: not past LONG
    with caplog.at_level(logging.INFO, logger=LOGGER):
        train(Progress(100, "net"), 2)
    assert LONG == 3600.0
    assert messages(caplog)[0] == (logging.INFO, "net: the 100 epochs will take about 60.0 min (at its second "
                                                 "epoch's 36 s an epoch; the first, with the warm-up, took 36 s)")


def test_a_lower_long_turns_the_same_estimate_into_a_warning(caplog, clock, monkeypatch):
    monkeypatch.setattr(_progress, "LONG", 500.0)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        train(Progress(100, "net"), 2)
    assert messages(caplog)[0][0] == logging.WARNING
    assert messages(caplog)[0][1].endswith("To shorten it: " + REMEDIES)


def test_a_one_epoch_training_logs_no_estimate(caplog, clock):
    with caplog.at_level(logging.INFO, logger=LOGGER):
        train(Progress(1, "net"), 1)
    assert messages(caplog) == [(logging.INFO, "net: epoch 1 of 1 (100 %), 10 s so far, about 0 s left")]


def test_a_forecast_says_the_estimate_before_training_and_a_right_one_is_not_said_again(caplog, clock):
    progress = Progress(200, "net")
    with caplog.at_level(logging.INFO, logger=LOGGER):
        progress.forecast(11.0, "one timed epoch")  # 2200 s; the epochs take 10 s: 2000 s, within a quarter
        train(progress, 20)
    logged = messages(caplog)
    assert logged[0] == (logging.INFO, "net: the 200 epochs will take about 36.7 min (one timed epoch)")
    assert [t for _, t in logged if "will take" in t] == [logged[0][1]]
    assert len(logged) == 2  # the forecast and the line at the first tenth (epoch 20)


def test_a_forecast_more_than_a_quarter_off_is_corrected_at_the_second_epoch(caplog, clock):
    progress = Progress(200, "net")
    with caplog.at_level(logging.INFO, logger=LOGGER):
        progress.forecast(30.0, "one timed epoch")  # 6000 s; the epochs take 10 s: 2000 s
        train(progress, 2)
    logged = messages(caplog)
    assert logged[0] == (logging.WARNING, f"net: the 200 epochs will take about 1.7 h (one timed epoch). To shorten "
                                          f"it: {REMEDIES}")
    assert logged[1] == (logging.INFO, "net: the 200 epochs will take about 33.3 min (corrected: at its second "
                                       "epoch's 10 s an epoch; the first, with the warm-up, took 10 s)")


class Epochs:
    """A perf_counter whose readings after the first (the start) are each given epoch's end."""

    def __init__(self, seconds: list[float]) -> None:
        self.ends = iter([0.0, *itertools.accumulate(seconds)])

    def __call__(self) -> float:
        return next(self.ends)


def test_the_first_estimate_leaves_out_the_warm_up_of_the_first_epoch(caplog, monkeypatch):
    """The embedded default's first epoch took 2 s, the next ones 0.2-0.3 s: the first estimate, 2.9 min,
    was six times the training's 0.4 min (issue 59)."""
    seconds = [2.0] + [0.25] * 99
    monkeypatch.setattr(_progress, "time", SimpleNamespace(perf_counter=Epochs(seconds)))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        train(Progress(100, "net"), 100)
    first = messages(caplog)[0][1]
    assert first == ("net: the 100 epochs will take about 27 s (at its second epoch's 0.25 s an epoch; the first, "
                     "with the warm-up, took 2 s)")
    assert sum(seconds) == pytest.approx(26.75)  # the estimate, 2.25 + 98 x 0.25 s, is the training's time
    assert messages(caplog)[-1][1].endswith(", 27 s so far, about 0 s left")


def test_with_a_thread_count_to_choose_the_first_estimate_waits_for_the_count_kept(caplog, monkeypatch):
    """Under load adaptive-timed times its second epoch on another thread count (here twice as slow): the first
    estimate then comes from the third epoch, on the count the training keeps."""
    seconds = [2.0, 0.5] + [0.25] * 98
    monkeypatch.setattr(_progress, "time", SimpleNamespace(perf_counter=Epochs(seconds)))
    progress = Progress(100, "net")
    progress.estimate_at = 3
    with caplog.at_level(logging.INFO, logger=LOGGER):
        train(progress, 100)
    first = messages(caplog)[0][1]
    assert first == ("net: the 100 epochs will take about 27 s (at its third epoch's 0.25 s an epoch; the epochs "
                     "before it timed other thread counts; the first, with the warm-up, took 2 s)")
    assert progress.first_estimate == pytest.approx(sum(seconds))  # 2.75 + 97 x 0.25 s


def test_the_time_left_follows_the_pace_of_the_last_epochs(caplog, monkeypatch):
    seconds = [2.0] + [0.5] * 9 + [1.0] * 10  # the pace doubles at epoch 11: said as the time left, not a warning
    monkeypatch.setattr(_progress, "time", SimpleNamespace(perf_counter=Epochs(seconds)))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        train(Progress(100, "net"), 20)
    lines = [t for _, t in messages(caplog) if ": epoch " in t]
    assert lines == ["net: epoch 10 of 100 (10 %), 6 s so far, about 45 s left",  # 90 x 0.5 s
                     "net: epoch 20 of 100 (20 %), 16 s so far, about 80 s left"]  # 80 x 1 s
    assert all(level == logging.INFO for level, _ in messages(caplog))


def test_epochs_twice_as_slow_as_the_start_say_the_machine_is_busy_by_how_much_and_what_to_do(caplog, monkeypatch):
    seconds = [2.0] + [0.5] * 9 + [1.5] * 10 + [0.5] * 10 + [1.2] * 10 + [6.0] * 10
    monkeypatch.setattr(_progress, "time", SimpleNamespace(perf_counter=Epochs(seconds)))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        train(Progress(100, "net"), 50)
    busy = [(level, t) for level, t in messages(caplog) if "busy" in t]
    assert busy[0] == (logging.WARNING, "net: the epochs now take 3.0x as long as at this run's start (1.5 s "
                                        "against 0.5 s): the machine is busy with other work, and at this pace the "
                                        f"rest takes about 2.2 min. To speed it up: {BUSY_REMEDIES}")  # at epoch 12
    assert "runtime.num_threads: 1" in BUSY_REMEDIES and "ICLFS_THREAD_POLICY=passive" in BUSY_REMEDIES
    assert "thread_policy: passive in airflow.yml" in BUSY_REMEDIES
    # 2.4x (epochs 31-40, after a quiet spell) is said again; 12x at the end, more than twice 2.4x, too
    assert [t.split(" as long")[0].rsplit(" ", 1)[1] for _, t in busy] == ["3.0x", "2.4x", "12.0x"]


def test_epochs_under_twice_the_start_are_not_a_busy_machine(caplog, monkeypatch):
    seconds = [2.0] + [0.5] * 9 + [0.95] * 40
    monkeypatch.setattr(_progress, "time", SimpleNamespace(perf_counter=Epochs(seconds)))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        train(Progress(50, "net"), 50)
    assert not [t for _, t in messages(caplog) if "busy" in t]


@pytest.mark.parametrize("seconds, text", [
    (0.2, "0 s"), (42, "42 s"), (89.4, "89 s"),
    (90, "1.5 min"), (210, "3.5 min"), (5399, "90.0 min"),
    (5400, "1.5 h"), (7560, "2.1 h"),
])
def test_duration_in_seconds_minutes_or_hours(seconds, text):
    assert duration(seconds) == text
