"""The thread and wait policy (iclfs._threads): what it sets and keeps, and that it is in force in the ``iclfs``
command and ``kedro run`` before torch loads, read from the running processes' own OpenMP runtime."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from iclfs import _threads
from iclfs._threads import DEFAULT_POLICY, POLICIES, POLICY_VARIABLE, REPORT_VARIABLE, apply_policy
from tests.project_copy import copy_project

PYTHON = sys.executable


def quiet_machine() -> None:
    return None


# --- what a policy sets and keeps ----------------------------------------------------------------------------


def test_the_product_keeps_spin_passive_and_adaptive_timed_and_the_default_is_one_of_them():
    """The study's other candidates lost it and live in benchmarks/_policies.py (tests/benchmarks/test_policies.py)."""
    assert list(POLICIES) == ["spin", "passive", "adaptive-timed"] and DEFAULT_POLICY in POLICIES
    assert dict(POLICIES["passive"].environment) == {"OMP_WAIT_POLICY": "PASSIVE"} and not POLICIES["spin"].environment
    # adaptive-timed: spin's settings on a quiet machine; on a busy one passive, and the training times its threads
    assert not POLICIES["adaptive-timed"].environment
    assert dict(POLICIES["adaptive-timed"].when_busy) == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert [name for name, policy in POLICIES.items() if policy.time_threads] == ["adaptive-timed"]


def test_the_default_policy_sets_its_variables_and_names_itself_for_child_processes(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)  # so that a policy reading the load reads it
    environ: dict[str, str] = {}
    applied = apply_policy(environ=environ, measure_busy=lambda: 0.0)  # a quiet machine
    assert applied.policy == DEFAULT_POLICY == environ[POLICY_VARIABLE]
    assert applied.set == dict(POLICIES[DEFAULT_POLICY].environment)
    assert {k: environ[k] for k in applied.set} == applied.set and applied.kept == {}


@pytest.mark.parametrize("name", ["spin", "passive"])
@pytest.mark.parametrize("users", [{"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": "12345"},
                                   {"KMP_BLOCKTIME": "200"}])
def test_a_users_choice_of_how_threads_wait_is_kept_whole(name, users):
    """Any one wait variable of the user's means the policy adds none: libgomp would mix them."""
    environ = dict(users)
    applied = apply_policy(name, environ=environ)
    assert applied.kept == users
    assert not set(applied.set) & set(_threads.WAIT_VARIABLES)
    assert {k: v for k, v in environ.items() if k in _threads.WAIT_VARIABLES} == users
    assert "; kept " in _threads.describe(applied)


def test_a_users_thread_count_is_kept_beside_the_policys_wait():
    environ = {"OMP_NUM_THREADS": "3"}
    applied = apply_policy("passive", environ=environ)
    assert environ["OMP_NUM_THREADS"] == "3" and environ["OMP_WAIT_POLICY"] == "PASSIVE"
    assert applied.set == {"OMP_WAIT_POLICY": "PASSIVE"} and applied.kept == {"OMP_NUM_THREADS": "3"}
    line = _threads.describe(applied)  # torch may be loaded in this test process: the line says so between
    assert line.startswith("thread policy passive") and line.endswith("; set OMP_WAIT_POLICY=PASSIVE; kept OMP_NUM_THREADS=3")


def test_an_empty_variable_counts_as_unset():
    environ = {"OMP_WAIT_POLICY": ""}
    assert apply_policy("passive", environ=environ).set == {"OMP_WAIT_POLICY": "PASSIVE"}


@pytest.mark.parametrize("name", ["fast", "short-spin", "brief-spin", "free-cpus", "adaptive", "adaptive-threads"])
def test_the_environment_picks_another_policy_and_a_wrong_or_removed_name_is_refused_naming_the_choices(name):
    environ = {POLICY_VARIABLE: "passive"}
    assert apply_policy(environ=environ).set == {"OMP_WAIT_POLICY": "PASSIVE"}
    environ = {POLICY_VARIABLE: name}
    with pytest.raises(ValueError, match=rf"^ICLFS_THREAD_POLICY='{name}' names no thread policy; use one of spin, "
                                         rf"passive, adaptive-timed \(or unset it for '{DEFAULT_POLICY}'\)$"):
        apply_policy(environ=environ)
    assert environ == {POLICY_VARIABLE: name}  # refused before anything is set


def test_a_loaded_torch_is_recorded_and_the_line_says_its_wait_stays(monkeypatch):
    """libgomp read its settings when torch loaded: what the policy sets reaches only the processes this one
    starts, and the run's line says so."""
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace())
    applied = apply_policy("passive", environ={})
    assert applied.torch_loaded and applied.set == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert "torch was loaded before the policy, so libgomp keeps the wait it started with" in \
        _threads.describe(applied)
    monkeypatch.delitem(sys.modules, "torch")
    assert _threads.describe(apply_policy("passive", environ={})) == "thread policy passive; set OMP_WAIT_POLICY=PASSIVE"


# --- adaptive-timed: the load read as the process starts ---------------------------------------------------------


@pytest.mark.parametrize(("busy", "decision"), [(None, "spin"), (0.0, "spin"), (0.49, "spin"), (0.5, "passive"),
                                                (1.7, "passive"), (6.0, "passive")])
def test_adaptive_timed_waits_passively_only_when_other_processes_keep_its_cpus_busy(monkeypatch, busy, decision):
    """It sets no thread count: the training times its counts under load (counts_to_time, below); a fast
    training's list is the same at any count (tests/method/test_thread_invariance.py)."""
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    environ: dict[str, str] = {}
    applied = apply_policy("adaptive-timed", environ=environ, measure_busy=lambda: busy)
    set_ = {"OMP_WAIT_POLICY": "PASSIVE"} if decision == "passive" else {}
    assert (applied.decision, applied.busy, applied.set) == (decision, busy, set_)
    assert environ == {**set_, POLICY_VARIABLE: "adaptive-timed"}
    line = _threads.describe(applied)
    assert line.startswith(f"thread policy adaptive-timed ({decision}: ")
    assert ("the load could not be read" in line) is (busy is None)


@pytest.mark.parametrize(("busy", "cpus", "threads"), [(None, 2, 2), (0.1, 2, 2), (0.6, 2, 1), (1.0, 2, 1),
                                                       (3.9, 2, 1), (1.4, 8, 7), (2.6, 8, 5)])
def test_the_thread_count_under_load_is_the_cpus_left_free_and_at_least_one(busy, cpus, threads):
    assert _threads.free_cpus(busy, cpus) == threads


def test_a_users_thread_count_is_kept_when_adaptive_timed_reads_the_machine_busy(monkeypatch):
    """Its threads wait passively, on the user's count alone: no other count is timed."""
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    environ = {"OMP_NUM_THREADS": "4"}
    applied = apply_policy("adaptive-timed", environ=environ, measure_busy=lambda: 1.5)
    assert applied.decision == "passive" and environ["OMP_NUM_THREADS"] == "4"
    assert applied.set == {"OMP_WAIT_POLICY": "PASSIVE"} and applied.kept == {"OMP_NUM_THREADS": "4"}
    assert _threads.counts_to_time(4, applied) == (4,)


@pytest.mark.parametrize("why", ["users-wait", "torch-loaded"])
def test_adaptive_timed_does_not_read_the_load_where_its_choice_cannot_matter(monkeypatch, why):
    """A user's own wait variable wins, and after torch loaded libgomp has read its settings: no 0.1 s sample."""
    environ = {"OMP_WAIT_POLICY": "ACTIVE"} if why == "users-wait" else {}
    if why == "torch-loaded":
        monkeypatch.setitem(sys.modules, "torch", SimpleNamespace())
    else:
        monkeypatch.delitem(sys.modules, "torch", raising=False)
    applied = apply_policy("adaptive-timed", environ=environ, measure_busy=lambda: pytest.fail("read the load"))
    assert (applied.decision, applied.busy, applied.set) == (None, None, {})
    if why == "torch-loaded":
        assert "torch was loaded before the policy" in _threads.describe(applied)


def _applied(policy="adaptive-timed", decision="passive", busy=1.0, cpus=2, kept=None):
    return _threads.AppliedPolicy(policy, {}, kept or {}, False, decision, busy, cpus)


@pytest.mark.parametrize(("applied", "threads", "counts"), [
    (_applied(), 2, (2, 1)),  # one of two CPUs busy: torch's two threads, and the one left free
    (_applied(busy=3.0, cpus=8), 8, (8, 5)),
    (_applied(busy=3.0, cpus=8), 4, (4,)),  # five free: no fewer than the four torch runs on
    (_applied(busy=0.2), 2, (2,)),  # reads as no CPU busy: nothing to choose between
    (_applied(decision="spin"), 2, (2,)),  # a quiet machine
    (_applied(decision=None, busy=None, cpus=None), 2, (2,)),  # the load not read (torch loaded, the user's wait)
    (_applied(kept={"OMP_NUM_THREADS": "2"}), 2, (2,)),  # the user chose the count
    (_applied(policy="passive", decision=None), 2, (2,)),
])
def test_only_adaptive_timed_on_a_busy_machine_times_a_second_thread_count(applied, threads, counts):
    assert _threads.counts_to_time(threads, applied) == counts


def test_the_busy_cpus_are_their_busy_share_while_this_process_sleeps_times_their_count():
    samples = iter([(100, 1000), (160, 1100)])  # 60 of 100 jiffies busy
    asked, slept = [], []

    def sample(cpus):
        asked.append(cpus)
        return next(samples)

    assert _threads.busy_cpus(0.1, sample=sample, sleep=slept.append, cpus={0, 1, 2, 3}) == pytest.approx(2.4)
    assert slept == [0.1] and asked == [{0, 1, 2, 3}] * 2
    assert _threads.busy_cpus(0.1, sample=lambda cpus: None, sleep=slept.append) is None


def test_by_default_the_busy_cpus_are_read_on_the_cpus_this_process_may_use(monkeypatch):
    monkeypatch.setattr(_threads, "allowed_cpus", lambda: {3, 5})
    asked = []
    _threads.busy_cpus(0, sample=lambda cpus: asked.append(cpus) or (0, 1), sleep=lambda s: None)
    assert asked == [{3, 5}, {3, 5}]


SIXTEEN_CPUS = "cpu  {all}\n" + "".join(f"cpu{i} {{c{i}}}\n" for i in range(16)) + "intr 1 2 3\nctxt 9\n"


def proc_stat(busy: dict[int, int], idle: dict[int, int]) -> str:
    """A /proc/stat of 16 CPUs: CPU i with busy[i] user and idle[i] idle jiffies (the first line their sum)."""
    fields = {f"c{i}": f"{busy.get(i, 0)} 0 0 {idle.get(i, 0)} 0 0 0 0 0 0" for i in range(16)}
    everything = f"{sum(busy.values())} 0 0 {sum(idle.values())} 0 0 0 0 0 0"
    return SIXTEEN_CPUS.format(all=everything, **fields)


def test_under_taskset_0_1_on_sixteen_cpus_only_cpus_0_and_1_are_judged(monkeypatch, tmp_path):
    """The other 14 CPUs run flat out, 0 and 1 sit idle: the sample of CPUs 0 and 1 reads them idle, and
    adaptive-timed keeps the spin; with CPU 1 busy instead, it waits passively."""
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    before, after = tmp_path / "before", tmp_path / "after"
    before.write_text(proc_stat({i: 1000 for i in range(2, 16)}, {0: 500, 1: 500}))
    after.write_text(proc_stat({i: 1010 for i in range(2, 16)}, {0: 510, 1: 510}))

    def reading() -> float | None:
        files = iter([before, after])
        return _threads.busy_cpus(0.1, sample=lambda cpus: _threads._cpu_times(next(files), cpus),
                                  sleep=lambda s: None, cpus={0, 1})

    assert reading() == 0.0
    assert _threads._cpu_times(after, None) == (14 * 1010, 14 * 1010 + 1020)  # the whole machine: busy
    assert apply_policy("adaptive-timed", environ={}, measure_busy=reading).decision == "spin"
    after.write_text(proc_stat({i: 1010 for i in range(2, 16)} | {1: 10}, {0: 510, 1: 500}))
    assert reading() == pytest.approx(1.0)
    assert apply_policy("adaptive-timed", environ={}, measure_busy=reading).decision == "passive"


def test_the_per_cpu_lines_of_proc_stat_are_summed_for_the_cpus_asked(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  30 0 0 70 0 0 0 0 0 0\ncpu0 10 0 0 40 0 0 0 0 0 0\ncpu1 20 0 0 30 0 0 0 0 0 0\n"
                    "cpu10 5 0 0 5 0 0 0 0 0 0\nintr 5\n")
    assert _threads._cpu_times(stat, {1}) == (20, 50)
    assert _threads._cpu_times(stat, {0, 1}) == (30, 100)
    assert _threads._cpu_times(stat, {10}) == (5, 10)  # cpu10 is not cpu1's line
    assert _threads._cpu_times(stat, {7}) is None  # a CPU the file does not list
    assert _threads._cpu_times(tmp_path / "absent", {0}) is None  # not Linux: adaptive-timed keeps the spin


def test_the_cpu_times_of_proc_stat_leave_out_idle_and_iowait(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  10 2 8 70 5 1 4 0 3 0\ncpu0 1 1 1 1 1 1 1 1 1 1\n")
    assert _threads._cpu_times(stat) == (25, 100)  # total: the first eight fields; busy: less idle and iowait


BUSY_LOOP = "while True:\n    pass\n"


def test_a_real_busy_process_pinned_to_a_cpu_reads_as_busy():
    """A real busy loop pinned to one CPU, started before the sample: about one CPU busy (the busier the
    shared machine, the surer)."""
    cpu = min(os.sched_getaffinity(0))
    busy = subprocess.Popen(["taskset", "-c", str(cpu), PYTHON, "-c", BUSY_LOOP])
    try:
        time.sleep(0.5)
        seen = _threads.busy_cpus(0.3, cpus={cpu})
    finally:
        busy.kill()
        busy.wait()
    assert seen is not None and seen >= 0.8


def test_the_report_is_written_where_asked_and_only_there(tmp_path):
    applied = apply_policy("passive", environ={})
    assert _threads.write_report(applied, environ={}) is None
    path = _threads.write_report(applied, environ={REPORT_VARIABLE: str(tmp_path / "r")})
    assert path == tmp_path / "r" / f"{os.getpid()}.json"
    assert json.loads(path.read_text())["set"] == {"OMP_WAIT_POLICY": "PASSIVE"}


# --- in force in the processes the project starts --------------------------------------------------------------


def policy_environment(report: dict) -> dict[str, str]:
    """The wait variables the policy a process reported (``report``) sets: for adaptive-timed, those of its
    decision."""
    policy = POLICIES[report["policy"]]
    return dict(policy.when_busy if report.get("decision") == "passive" else policy.environment)


def expected_spin_count(environ: dict[str, str]) -> str:
    """The spin count libgomp reports (OMP_DISPLAY_ENV=VERBOSE) for these variables: its documented defaults."""
    if environ.get("GOMP_SPINCOUNT"):
        return environ["GOMP_SPINCOUNT"]
    return "0" if environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE" else "300000"


@pytest.fixture
def project(tmp_path) -> Path:
    """A copy of the project with a tiny table and no MLflow store of its own beyond the project's default."""
    local = copy_project(tmp_path / "project")
    (local / "mlflow.yml").unlink()  # the project's own mlflow.yml, with its store under the copy
    X = np.random.default_rng(0).normal(size=(24, 16))
    pd.DataFrame(X, columns=[f"g{i}" for i in range(16)]).to_csv(tmp_path / "project" / "tiny.csv", index=False)
    return tmp_path / "project"


COMMANDS = {
    "iclfs": ["-m", "iclfs", "--input", "tiny.csv", "--method", "variance", "--k", "3", "--params",
              "selection.k_values=[3]"],
    "kedro run": ["-m", "kedro", "run", "--params",
                  "input=tiny.csv,selection.method=variance,selection.k=3,selection.k_values=[3]"],
}


@pytest.mark.slow
@pytest.mark.parametrize(("command", "users"), [("iclfs", {}), ("kedro run", {}),
                                               ("kedro run", {"GOMP_SPINCOUNT": "12345"})],
                         ids=["iclfs", "kedro-run", "kedro-run-users-own-wait"])
def test_the_policy_is_in_force_before_torch_loads_in_the_command_and_kedro_run(project, tmp_path, command, users):
    """The real command in a fresh process: the process reports the policy it applied, before torch was
    loaded, and libgomp itself, as torch loads it, prints the wait it runs with (OMP_DISPLAY_ENV) before the
    first node runs; MKL's reproducible mode is set there too."""
    report = tmp_path / "report"
    env = {k: v for k, v in os.environ.items()
           if k not in (*_threads.POLICY_VARIABLES, POLICY_VARIABLE, _threads.REPRODUCIBLE_GEMM[0])}
    env |= {REPORT_VARIABLE: str(report), "OMP_DISPLAY_ENV": "VERBOSE", "KEDRO_DISABLE_TELEMETRY": "1",
            "OMP_NUM_THREADS": "1", **users}
    done = subprocess.run([PYTHON, *COMMANDS[command]], cwd=project, env=env, capture_output=True, text=True,
                          timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    written = json.loads((report / f"{done.args and _pid_of(report)}.json").read_text())
    assert written["policy"] == DEFAULT_POLICY and written["torch_loaded"] is False
    assert written["kept"] == {"OMP_NUM_THREADS": "1", **users}
    assert written["environment"]["MKL_CBWR"] == "AUTO,STRICT"
    policy_env = {**written["set"], **written["kept"]}
    # libgomp prints its settings as it loads (torch's copy, and scikit-learn's where it bundles one)
    spin = re.findall(r"GOMP_SPINCOUNT = '(\d+)'", done.stderr)
    assert spin and set(spin) == {expected_spin_count(policy_env)}, done.stderr[:2000]
    if not users:
        assert set(spin) == {expected_spin_count(policy_environment(written))}
    first_node = done.stderr.find("Running node")
    assert 0 <= done.stderr.find("OPENMP DISPLAY ENVIRONMENT END") < first_node, done.stderr[-3000:]
    if command == "kedro run":  # the run's log names the policy in force, in one line, before the first node
        assert 0 <= done.stderr.find(f"thread policy {DEFAULT_POLICY}") < first_node, done.stderr[-3000:]


@pytest.mark.slow
def test_adaptive_timed_in_the_command_times_both_thread_counts_beside_busy_processes(project, tmp_path):
    """The real ``iclfs`` command under ``adaptive-timed``, pinned to two CPUs that two busy loops keep busy: it
    reads them busy as it starts, libgomp runs with no spin, and each network of the run trains its first epoch
    on two threads and its second on the one left free, then on the faster (the training log's rows)."""
    cpus = sorted(os.sched_getaffinity(0))[:2]
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    report = tmp_path / "report"
    # a thread count in the caller's environment (a user's, or one a Dask nanny wrote there: the runner and the
    # cluster fixtures put those back) would start torch on fewer threads than the two this test times
    counts = ("MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    env = {k: v for k, v in os.environ.items() if k not in (*_threads.POLICY_VARIABLES, POLICY_VARIABLE, *counts)}
    env |= {REPORT_VARIABLE: str(report), "OMP_DISPLAY_ENV": "VERBOSE", "KEDRO_DISABLE_TELEMETRY": "1",
            POLICY_VARIABLE: "adaptive-timed"}
    command = ["-m", "iclfs", "--input", "tiny.csv", "--k", "3", "--params",
               "selection.k_values=[3],members.per_run=2,members.epochs=4"]
    busy = [subprocess.Popen(["taskset", "-c", str(cpu), PYTHON, "-c", BUSY_LOOP]) for cpu in cpus]
    try:
        time.sleep(0.5)
        done = subprocess.run(["taskset", "-c", ",".join(map(str, cpus)), PYTHON, *command], cwd=project, env=env,
                              capture_output=True, text=True, timeout=600)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    written = json.loads((report / f"{_pid_of(report)}.json").read_text())
    assert (written["policy"], written["decision"], written["set"]) == (
        "adaptive-timed", "passive", {"OMP_WAIT_POLICY": "PASSIVE"}), written
    assert set(re.findall(r"GOMP_SPINCOUNT = '(\d+)'", done.stderr)) == {"0"}, done.stderr[:2000]
    [log] = project.glob("data/07_model_output/**/training_log.csv/*/training_log.csv")
    frame = pd.read_csv(log)
    assert frame["member"].nunique() == 2, frame
    for _, network in frame.groupby(["member", "block"]):
        counts = network.sort_values("epoch")["threads"].tolist()
        assert counts[:2] == [2, 1] and set(counts) <= {1, 2}, (counts, written)


def _pid_of(report: Path) -> str:
    """The one process that wrote a report (the command itself: no other process of the run applies it)."""
    written = sorted(p.stem for p in report.glob("*.json"))
    assert len(written) == 1, written
    return written[0]


@pytest.mark.slow
@pytest.mark.parametrize(("first", "in_force"), [("from iclfs import ICLFSSelector", True),
                                                 ("import torch", False)], ids=["iclfs-first", "torch-first"])
def test_in_a_users_own_python_the_selector_sets_the_policy_unless_torch_came_first(first, in_force):
    """The selector's import applies the policy; after ``import torch`` libgomp has read its settings already,
    which is why the docs say to set them before Python starts."""
    code = f"{first}\nfrom iclfs import ICLFSSelector, _threads\nimport torch\ntorch.ones(2) + 1\n" \
           "import json\nprint(json.dumps(_threads.APPLIED.__dict__))"
    env = {k: v for k, v in os.environ.items() if k not in (*_threads.POLICY_VARIABLES, POLICY_VARIABLE)}
    done = subprocess.run([PYTHON, "-c", code], env=env | {"OMP_DISPLAY_ENV": "VERBOSE"}, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    applied = json.loads(done.stdout.strip().splitlines()[-1])
    assert applied["torch_loaded"] is (not in_force)
    # the first libgomp to print is torch's (scikit-learn's own copy, where it has one, loads later)
    spin = re.findall(r"GOMP_SPINCOUNT = '(\d+)'", done.stderr)
    assert spin[0] == (expected_spin_count(policy_environment(applied)) if in_force else "300000")
