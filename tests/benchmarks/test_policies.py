"""The contention study's candidates (benchmarks/_policies.py): how each starts a cell, decided in the
benchmark's process from the load it reads there, and that the cell's fresh process runs with it. None of these
depends on whether torch is loaded in the test process: the decision takes the load and the CPUs as arguments."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from benchmarks import _contention, _policies
from iclfs import _threads

PYTHON = sys.executable


def test_the_study_keeps_every_candidate_and_takes_the_products_own_from_the_product():
    assert list(_policies.CANDIDATES) == ["spin", "passive", "short-spin", "brief-spin", "free-cpus",
                                          "passive-free-cpus", "adaptive"]
    for name, policy in _threads.POLICIES.items():
        candidate = _policies.CANDIDATES[name]
        assert (candidate.environment, candidate.about, candidate.in_product) == (policy.environment, policy.about,
                                                                                  True)
    assert not any(_policies.CANDIDATES[name].in_product for name in ("short-spin", "adaptive", "free-cpus"))


def test_a_product_policy_starts_under_its_own_name_and_the_product_applies_it():
    start = _policies.start("passive", measure_busy=lambda: pytest.fail("read the load"))
    assert (start.policy, start.environment, start.busy, start.decision) == ("passive", {}, None, None)


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
    assert _policies.free_cpus(busy, cpus) == threads
    start = _policies.decide_start("passive-free-cpus", busy, cpus)
    assert start.environment == {"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": str(threads)}
    assert (start.threads, start.busy, start.cpus, start.decision) == (threads, busy, cpus, None)
    assert _policies.decide_start("free-cpus", busy, cpus).environment == {"OMP_NUM_THREADS": str(threads)}


@pytest.mark.parametrize(("busy", "decision", "environment"), [
    (None, "spin", {}), (0.0, "spin", {}), (0.49, "spin", {}), (0.5, "passive", {"OMP_WAIT_POLICY": "PASSIVE"}),
    (1.7, "passive", {"OMP_WAIT_POLICY": "PASSIVE"})])
def test_adaptive_waits_passively_only_when_other_processes_keep_its_cpus_busy(busy, decision, environment):
    start = _policies.decide_start("adaptive", busy, 2)
    assert (start.policy, start.decision, start.environment, start.busy, start.threads) == (
        "spin", decision, environment, busy, None)  # the thread count is runtime.num_threads' (or torch's) alone


def test_start_reads_the_load_for_a_candidate_that_reads_it_and_refuses_an_unknown_name():
    assert _policies.start("adaptive", measure_busy=lambda: 1.0).decision == "passive"
    assert _policies.start("free-cpus", measure_busy=lambda: 0.0).threads == _threads.available_cpus()
    with pytest.raises(ValueError, match=r"^'fastest' is no candidate of the contention study; use one of spin, "):
        _policies.start("fastest")


def test_the_busy_cpus_are_their_busy_share_while_this_process_sleeps_times_their_count():
    samples = iter([(100, 1000), (160, 1100)])  # 60 of 100 jiffies busy
    asked, slept = [], []

    def sample(cpus):
        asked.append(cpus)
        return next(samples)

    assert _policies.busy_cpus(0.1, sample=sample, sleep=slept.append, cpus={0, 1, 2, 3}) == pytest.approx(2.4)
    assert slept == [0.1] and asked == [{0, 1, 2, 3}] * 2
    assert _policies.busy_cpus(0.1, sample=lambda cpus: None, sleep=slept.append) is None


def test_by_default_the_busy_cpus_are_read_on_the_cpus_this_process_may_use(monkeypatch):
    monkeypatch.setattr(_policies, "allowed_cpus", lambda: {3, 5})
    asked = []
    _policies.busy_cpus(0, sample=lambda cpus: asked.append(cpus) or (0, 1), sleep=lambda s: None)
    assert asked == [{3, 5}, {3, 5}]


SIXTEEN_CPUS = "cpu  {all}\n" + "".join(f"cpu{i} {{c{i}}}\n" for i in range(16)) + "intr 1 2 3\nctxt 9\n"


def proc_stat(busy: dict[int, int], idle: dict[int, int]) -> str:
    """A /proc/stat of 16 CPUs: CPU i with busy[i] user and idle[i] idle jiffies (the first line their sum)."""
    fields = {f"c{i}": f"{busy.get(i, 0)} 0 0 {idle.get(i, 0)} 0 0 0 0 0 0" for i in range(16)}
    everything = f"{sum(busy.values())} 0 0 {sum(idle.values())} 0 0 0 0 0 0"
    return SIXTEEN_CPUS.format(all=everything, **fields)


def test_under_taskset_0_1_on_sixteen_cpus_only_cpus_0_and_1_are_judged(tmp_path):
    """The other 14 CPUs run flat out, 0 and 1 sit idle: the sample of CPUs 0 and 1 reads them idle, and
    adaptive keeps the spin; with CPU 1 busy instead, it waits passively."""
    before, after = tmp_path / "before", tmp_path / "after"
    before.write_text(proc_stat({i: 1000 for i in range(2, 16)}, {0: 500, 1: 500}))
    after.write_text(proc_stat({i: 1010 for i in range(2, 16)}, {0: 510, 1: 510}))
    files = iter([before, after])
    busy = _policies.busy_cpus(0.1, sample=lambda cpus: _policies._cpu_times(next(files), cpus),
                               sleep=lambda s: None, cpus={0, 1})
    assert busy == 0.0
    assert _policies._cpu_times(after, None) == (14 * 1010, 14 * 1010 + 1020)  # the whole machine: busy
    assert _policies.decide_start("adaptive", busy, 2).decision == "spin"
    after.write_text(proc_stat({i: 1010 for i in range(2, 16)} | {1: 10}, {0: 510, 1: 500}))
    files = iter([before, after])
    busy = _policies.busy_cpus(0.1, sample=lambda cpus: _policies._cpu_times(next(files), cpus),
                               sleep=lambda s: None, cpus={0, 1})
    assert busy == pytest.approx(1.0)
    assert _policies.decide_start("adaptive", busy, 2).decision == "passive"


def test_the_per_cpu_lines_of_proc_stat_are_summed_for_the_cpus_asked(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  30 0 0 70 0 0 0 0 0 0\ncpu0 10 0 0 40 0 0 0 0 0 0\ncpu1 20 0 0 30 0 0 0 0 0 0\n"
                    "cpu10 5 0 0 5 0 0 0 0 0 0\nintr 5\n")
    assert _policies._cpu_times(stat, {1}) == (20, 50)
    assert _policies._cpu_times(stat, {0, 1}) == (30, 100)
    assert _policies._cpu_times(stat, {10}) == (5, 10)  # cpu10 is not cpu1's line
    assert _policies._cpu_times(stat, {7}) is None  # a CPU the file does not list


def test_the_cpu_times_of_proc_stat_leave_out_idle_and_iowait(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  10 2 8 70 5 1 4 0 3 0\ncpu0 1 1 1 1 1 1 1 1 1 1\n")
    assert _policies._cpu_times(stat) == (25, 100)  # total: the first eight fields; busy: less idle and iowait


# --- the decision in the benchmark's process, beside real busy processes -------------------------------------


BUSY_LOOP = "while True:\n    pass\n"


def test_adaptive_reads_a_busy_process_pinned_to_its_cpu_as_busy():
    """A real busy loop pinned to one CPU, started before the sample: about one CPU busy, so adaptive waits
    passively (the busier the shared machine, the surer)."""
    cpu = min(os.sched_getaffinity(0))
    busy = subprocess.Popen(["taskset", "-c", str(cpu), PYTHON, "-c", BUSY_LOOP])
    try:
        time.sleep(0.5)
        seen = _policies.busy_cpus(0.3, cpus={cpu})
    finally:
        busy.kill()
        busy.wait()
    assert seen is not None and seen >= 0.8
    assert _policies.decide_start("adaptive", seen, 1).environment == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_a_cell_starts_with_the_variables_decided_here_and_its_row_records_the_decision(monkeypatch):
    """measure() decides in this process right before the cell, passes the decided OpenMP variables in the
    cell's environment (under spin, which sets nothing) and records the decision and the busy share."""
    seen = {}

    def fresh(arguments, policy, openmp=None):
        seen["env"] = _contention._clean_environment(policy, openmp)
        return {"set": {}, "threads": 2, "median_seconds": 1.0, "epoch_seconds": [1.0]}

    monkeypatch.setattr(_contention, "_in_fresh_process", fresh)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # this process's own: not the cell's
    row = _contention.measure("synthetic:4x3", "adaptive", 0, 1, measure_busy=lambda: 0.9)
    assert (row["decision"], row["busy"], row["set"]) == ("passive", 0.9, {"OMP_WAIT_POLICY": "PASSIVE"})
    assert seen["env"]["OMP_WAIT_POLICY"] == "PASSIVE" and seen["env"][_threads.POLICY_VARIABLE] == "spin"
    assert "OMP_NUM_THREADS" not in seen["env"]
    row = _contention.measure("synthetic:4x3", "passive", 0, 1, measure_busy=lambda: pytest.fail("read the load"))
    assert (row["decision"], row["busy"]) == (None, None) and seen["env"][_threads.POLICY_VARIABLE] == "passive"
    assert "OMP_WAIT_POLICY" not in seen["env"]  # the product sets it in the cell


@pytest.mark.slow
def test_the_cells_product_keeps_the_decided_variables_as_a_users(tmp_path):
    """A fresh interpreter with the environment a cell of adaptive's gets when it decided passive: the product
    applies spin, sets nothing and keeps OMP_WAIT_POLICY=PASSIVE (read from its own report)."""
    import json

    report = tmp_path / "report"
    env = _contention._clean_environment("spin", {"OMP_WAIT_POLICY": "PASSIVE"}) | {
        _threads.REPORT_VARIABLE: str(report)}
    done = subprocess.run([PYTHON, "-c", "import iclfs._threads"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    (written,) = report.glob("*.json")
    applied = json.loads(written.read_text())
    assert (applied["policy"], applied["set"], applied["kept"]) == ("spin", {}, {"OMP_WAIT_POLICY": "PASSIVE"})
    assert applied["environment"]["OMP_WAIT_POLICY"] == "PASSIVE"
