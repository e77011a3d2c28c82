"""The contention study's candidates (benchmarks/_policies.py): how each starts a cell, decided in the
benchmark's process from the load it reads there (the product's own policies, adaptive-timed among them,
decide in the cell: tests/test_threads.py), and that the cell's fresh process runs with it. None of these depends on
whether torch is loaded in the test process: the decision takes the load and the CPUs as arguments."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks import _contention, _policies
from iclfs import _threads

PYTHON = sys.executable


def test_the_study_keeps_every_candidate_and_takes_the_products_own_from_the_product():
    assert list(_policies.CANDIDATES) == ["spin", "passive", "adaptive-timed", "short-spin", "brief-spin",
                                          "free-cpus", "passive-free-cpus", "adaptive-threads", "adaptive"]
    for name, policy in _threads.POLICIES.items():
        candidate = _policies.CANDIDATES[name]
        assert (candidate.environment, candidate.about, candidate.in_product) == (policy.environment, policy.about,
                                                                                  True)
        assert (candidate.follow_load, candidate.when_busy, candidate.time_threads) == (
            False, policy.when_busy is not None, policy.time_threads)
    assert not any(_policies.CANDIDATES[name].in_product for name in ("short-spin", "brief-spin", "free-cpus",
                                                                       "passive-free-cpus", "adaptive-threads",
                                                                       "adaptive"))


@pytest.mark.parametrize("name", ["passive", "adaptive-timed"])
def test_a_product_policy_starts_under_its_own_name_and_the_product_applies_it(name):
    """adaptive-timed too: the cell's own process reads the load, as a user's run does."""
    start = _policies.start(name, measure_busy=lambda: pytest.fail("read the load"))
    assert (start.policy, start.environment, start.busy) == (name, {}, None)


@pytest.mark.parametrize(("name", "environment"), [
    ("short-spin", {"GOMP_SPINCOUNT": "10000", "KMP_BLOCKTIME": "1"}),
    ("brief-spin", {"GOMP_SPINCOUNT": "1000", "KMP_BLOCKTIME": "0"})])
def test_a_bounded_spin_is_passed_under_spin_which_sets_nothing(name, environment):
    start = _policies.start(name, measure_busy=lambda: pytest.fail("read the load"))
    assert (start.policy, start.environment, start.threads, start.busy) == ("spin", environment, None, None)
    assert not _threads.POLICIES["spin"].environment  # so the candidate's variables are all that is in force


@pytest.mark.parametrize(("busy", "cpus", "threads"), [(None, 2, 2), (0.1, 2, 2), (0.6, 2, 1), (1.0, 2, 1),
                                                       (3.9, 2, 1), (1.4, 8, 7), (2.6, 8, 5)])
def test_a_thread_count_from_the_free_cpus(busy, cpus, threads):
    assert _threads.free_cpus(busy, cpus) == threads
    start = _policies.decide_start("passive-free-cpus", busy, cpus)
    assert start.environment == {"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": str(threads)}
    assert (start.threads, start.busy, start.cpus) == (threads, busy, cpus)
    assert _policies.decide_start("free-cpus", busy, cpus).environment == {"OMP_NUM_THREADS": str(threads)}


@pytest.mark.parametrize(("busy", "cpus", "environment", "decision"), [
    (None, 2, {}, "spin"), (0.0, 2, {}, "spin"), (0.49, 2, {}, "spin"),
    (0.5, 2, {"OMP_WAIT_POLICY": "PASSIVE"}, "passive"), (2.6, 8, {"OMP_WAIT_POLICY": "PASSIVE"}, "passive")])
def test_round_fours_adaptive_waits_passively_under_load_on_an_unchanged_thread_count(busy, cpus, environment,
                                                                                      decision):
    """The default of round four, out of the product since round five: decided in the benchmark's process."""
    start = _policies.decide_start("adaptive", busy, cpus)
    assert (start.policy, start.environment, start.decision, start.threads) == ("spin", environment, decision, None)
    assert _policies.start("adaptive", measure_busy=lambda: 1.0).environment == {"OMP_WAIT_POLICY": "PASSIVE"}


@pytest.mark.parametrize(("busy", "cpus", "environment", "decision"), [
    (None, 2, {}, "spin"), (0.3, 2, {}, "spin"),
    (1.0, 2, {"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"}, "passive"),
    (2.6, 8, {"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "5"}, "passive")])
def test_round_fives_adaptive_threads_waits_passively_under_load_on_the_free_cpus(busy, cpus, environment, decision):
    """The default of round five, out of the product since round six: decided in the benchmark's process."""
    start = _policies.decide_start("adaptive-threads", busy, cpus)
    assert (start.policy, start.environment, start.decision) == ("spin", environment, decision)


def test_start_reads_the_load_for_a_candidate_that_reads_it_and_refuses_an_unknown_name():
    assert _policies.start("free-cpus", measure_busy=lambda: 0.0).threads == _threads.available_cpus()
    assert _policies.start("free-cpus", measure_busy=lambda: 9.0).threads == 1
    with pytest.raises(ValueError, match=r"^'fastest' is no candidate of the contention study; use one of spin, "):
        _policies.start("fastest")


# --- the decision in the benchmark's process ---------------------------------------------------------------


def test_a_cell_starts_with_the_variables_decided_here_and_its_row_records_the_decision(monkeypatch):
    """measure() decides in this process right before the cell, passes the decided OpenMP variables in the
    cell's environment (under spin, which sets nothing) and records the busy share; a product policy goes
    by name, and adaptive-timed's row takes the decision the cell's own process reported."""
    seen = {}

    def fresh(arguments, policy, openmp=None):
        seen["env"] = _contention._clean_environment(policy, openmp)
        decided = {"decision": "passive", "busy": 1.9} if policy == "adaptive-timed" else {}
        return {"set": {}, "threads": 2, "median_seconds": 1.0, "epoch_seconds": [1.0], **decided}

    monkeypatch.setattr(_contention, "_in_fresh_process", fresh)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # this process's own: not the cell's
    row = _contention.measure("synthetic:4x3", "passive-free-cpus", 0, 1, measure_busy=lambda: 0.9)
    threads = str(_threads.free_cpus(0.9, _threads.available_cpus()))
    assert (row["decision"], row["busy"]) == (None, 0.9)
    assert row["set"] == {"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": threads}
    assert seen["env"]["OMP_WAIT_POLICY"] == "PASSIVE" and seen["env"][_threads.POLICY_VARIABLE] == "spin"
    assert seen["env"]["OMP_NUM_THREADS"] == threads  # decided here (about one CPU busy), not this process's "1"
    row = _contention.measure("synthetic:4x3", "adaptive-timed", 0, 1,
                              measure_busy=lambda: pytest.fail("read the load"))
    assert (row["decision"], row["busy"]) == ("passive", 1.9)
    assert seen["env"][_threads.POLICY_VARIABLE] == "adaptive-timed"
    assert "OMP_WAIT_POLICY" not in seen["env"] and "OMP_NUM_THREADS" not in seen["env"]


@pytest.mark.slow
def test_the_cells_product_keeps_the_decided_variables_as_a_users(tmp_path):
    """A fresh interpreter with the environment a cell of a bounded spin's gets: the product applies spin, sets
    nothing and keeps the candidate's GOMP_SPINCOUNT (read from its own report)."""
    import json

    report = tmp_path / "report"
    env = _contention._clean_environment("spin", {"GOMP_SPINCOUNT": "1000"}) | {
        _threads.REPORT_VARIABLE: str(report)}
    done = subprocess.run([PYTHON, "-c", "import iclfs._threads"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    (written,) = report.glob("*.json")
    applied = json.loads(written.read_text())
    assert (applied["policy"], applied["set"], applied["kept"]) == ("spin", {}, {"GOMP_SPINCOUNT": "1000"})
    assert applied["environment"]["GOMP_SPINCOUNT"] == "1000"
