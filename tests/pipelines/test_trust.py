"""Names, stage runs and refusals a scheduled job can trust: one table of cases, each with its message or output.

Every case is what a hostile but fair user does through ``kedro run`` (the
project's command, in process) on a throw-away copy of the project: an
awkward file, a typo, a device the machine lacks, a stage run on the wrong
versions. Each asserts the one message it must end with (never a traceback)
and that nothing of a refused run is left, or the exact output (feature names
byte for byte). The runs that need real processes (a killed run, a file
replaced mid-run, a script reading the summary) follow the table.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from kedro.framework.startup import bootstrap_project

from iclfs.io.datasets import CSVDataset, FeatureTableDataset
from tests.project_copy import copy_project

PYTHON = sys.executable
#: Tiny runs: two epochs, k = 5, two k-means runs, one thread.
FAST = {"training": {"epochs": 2}, "runtime": {"progress": False, "num_threads": 1},
        "selection": {"k": 5, "k_values": [5, 10]}, "evaluation": {"n_runs": 2}}
#: Names gene, m/z and sample sheets come with: each must leave exactly as it came in.
AWKWARD = ["042", "104.20", "NA", "null", "None", "TRUE", "1e3", "1,5", "", "ünïcode ☃", "x" * 5000, "1", "01",
           "1.0", "=HYPERLINK(\"http://x\")", "+1", "-5", "@sum", "'quoted", " padded "]


@dataclass
class Outcome:
    """What a run left: its exit code, its output, its project folder."""

    code: int
    output: str
    project: Path

    def versions(self, artifact: str) -> list[str]:
        folder = self.project / "data" / artifact
        return sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) if folder.is_dir() else []

    def latest(self, artifact: str) -> Path:
        folder = self.project / "data" / artifact
        return folder / self.versions(artifact)[-1] / folder.name


def project_at(root: Path, parameters: dict | None = None) -> Path:
    """A copy of the project (its own data/ and MLflow store) with tiny local parameters."""
    local = copy_project(root)
    (local / "parameters.yml").write_text(yaml.safe_dump(parameters or FAST))
    return root


def kedro(project: Path, *params: str, pipeline: str = "select") -> Outcome:
    """``kedro run --pipelines <pipeline> --params <params>`` in ``project``, in this process."""
    from iclfs.cli import run

    cwd = Path.cwd()
    os.chdir(project)
    try:
        bootstrap_project(project)
        args = ["--pipelines", pipeline] + (["--params", ",".join(params)] if params else [])
        result = CliRunner().invoke(run, args, catch_exceptions=True)
    finally:
        os.chdir(cwd)
        import mlflow

        while mlflow.active_run() is not None:
            mlflow.end_run()
        # the next session in this process, on another project, must not track into this one's store (it does
        # while the URI stays set: found by test_faults_latest's full-disk case)
        mlflow.set_tracking_uri(None)
    output = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        output += "".join(__import__("traceback").format_exception(result.exception))
    return Outcome(result.exit_code, output, project)


def data_files(project: Path) -> set[str]:
    data = project / "data"
    return {str(p.relative_to(data)) for p in data.rglob("*") if p.is_file()} if data.exists() else set()


def table(path: Path, names: list[str], n: int = 24, seed: int = 0, sep: str = ",") -> Path:
    """A samples x features CSV whose header is exactly ``names`` (written cell by cell, quoted when needed)."""
    import csv

    values = np.random.default_rng(seed).normal(size=(n, len(names))).round(5)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter=sep)
        writer.writerow(names)
        writer.writerows(values.tolist())
    return path


@dataclass
class Case:
    """One case of the issue: what the user does, and what must come of it."""

    group: str
    name: str
    act: Callable[[Path], Outcome]
    message: str | None = None  # a refused run: this regex, on one line, and nothing written
    check: Callable[[Outcome], None] | None = None  # a run that must end well: its output
    marks: tuple = field(default_factory=tuple)


# -- the acts --------------------------------------------------------------------------------------------------


def select_on(names: list[str], *params: str, seed: int = 0) -> Callable[[Path], Outcome]:
    def act(project: Path) -> Outcome:
        table(project / "t.csv", names, seed=seed)
        return kedro(project, "input=t.csv", *params)
    return act


def write_then(content: str, file: str, *params: str, pipeline: str = "select") -> Callable[[Path], Outcome]:
    def act(project: Path) -> Outcome:
        (project / file).write_text(content, encoding="utf-8")
        return kedro(project, f"input={file}", *params, pipeline=pipeline)
    return act


def params_only(*params: str, pipeline: str = "select") -> Callable[[Path], Outcome]:
    return lambda project: kedro(project, *params, pipeline=pipeline)


def after_a_run(then: Callable[[Path], Outcome], names: list[str] | None = None) -> Callable[[Path], Outcome]:
    """A complete select run on t.csv first; then ``then`` (whose own outcome is judged)."""
    def act(project: Path) -> Outcome:
        first = select_on(names or [f"g{j}" for j in range(12)])(project)
        assert first.code == 0, first.output[-3000:]
        before = data_files(project)
        outcome = then(project)
        if not hasattr(outcome, "before"):
            outcome.before = before
        return outcome
    return act


def truncate_ranking(project: Path) -> Outcome:
    ranking = Outcome(0, "", project).latest("07_model_output/t/iclfs/feature_ranking.csv")
    text = ranking.read_text()
    ranking.write_text(text[: len(text) // 2])
    return kedro(project, "data_source=t", pipeline="selection")


def processing_of_another_table(project: Path) -> Outcome:
    table(project / "u.csv", [f"h{j}" for j in range(14)], seed=3)
    done = kedro(project, "input=u.csv", "data_source=t", pipeline="data_processing")
    assert done.code == 0, done.output[-3000:]
    before = data_files(project)
    outcome = kedro(project, "data_source=t", pipeline="ranking")
    outcome.before = before
    return outcome


def selection_without_input(project: Path) -> Outcome:
    return kedro(project, "data_source=t", pipeline="selection")


def selection_after_the_file_changed(project: Path) -> Outcome:
    table(project / "t.csv", [f"g{j}" for j in range(12)], seed=9)  # same names, other values
    return kedro(project, "input=t.csv", pipeline="selection")


def on_a_full_disk(project: Path) -> Outcome:
    data = project / "data"
    data.mkdir(exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(data)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({mounted.stderr.decode().strip() or 'not root'})")
    try:
        table(project / "t.csv", [f"g{j}" for j in range(300)], n=40)
        return kedro(project, "input=t.csv")
    finally:
        subprocess.run(["umount", str(data)], check=False)


def silent_tracking_server(project: Path) -> Outcome:
    """A server that accepts connections and never answers."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(16)
    held = []
    stop = threading.Event()

    def accept() -> None:
        listening.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listening.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    mlflow_yml = project / "conf/local/mlflow.yml"
    conf = yaml.safe_load(mlflow_yml.read_text())
    conf["server"]["mlflow_tracking_uri"] = f"http://127.0.0.1:{listening.getsockname()[1]}"
    mlflow_yml.write_text(yaml.safe_dump(conf))
    started = time.monotonic()
    try:
        outcome = kedro(project)
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listening.close()
    outcome.seconds = time.monotonic() - started
    return outcome


# -- the checks of runs that end well ------------------------------------------------------------------------


def names_leave_as_they_came(outcome: Outcome) -> None:
    """Every artifact that names features names them byte for byte."""
    source = "07_model_output/t/iclfs"
    ranking = CSVDataset(filepath=str(outcome.latest(f"{source}/feature_ranking.csv"))).load()
    assert sorted(ranking["feature_name"]) == sorted(AWKWARD)
    names = json.loads(outcome.latest("03_primary/t/feature_names.json").read_text())
    assert names == AWKWARD
    listing = CSVDataset(filepath=str(outcome.latest(f"{source}/feature_list.csv"))).load()
    assert set(listing["feature_name"]) <= set(AWKWARD) and len(listing) == 5
    reduced = pd.read_parquet(outcome.latest(f"{source}/reduced_data.parquet"))
    assert list(reduced.columns) == listing["feature_name"].tolist()  # the same names in both artifacts
    # spreadsheet-safe: a name that starts like a formula has a quote in front in every CSV, and only there
    raw = outcome.latest(f"{source}/feature_ranking.csv").read_text(encoding="utf-8")
    assert "'=HYPERLINK" in raw and "\n=HYPERLINK" not in raw and "''quoted" in raw and "'-5" in raw


def the_embedded_table_says_so(outcome: Outcome) -> None:
    assert "this run selects from the embedded synthetic table" in outcome.output


def distinct_look_alike_names(outcome: Outcome) -> None:
    names = json.loads(outcome.latest("03_primary/t/feature_names.json").read_text())
    assert names[:5] == ["1", "01", "1.0", "NA", "null"]


def r_export_read_whole(outcome: Outcome) -> None:
    names = json.loads(outcome.latest("03_primary/r/feature_names.json").read_text())
    assert names == [f"gene{j}" for j in range(12)]
    reduced = pd.read_parquet(outcome.latest("07_model_output/r/iclfs/reduced_data.parquet"))
    assert reduced["sample_id"].tolist() == [f"S{i}" for i in range(20)]  # every sample, S0 too


def pipes_read_as_columns(outcome: Outcome) -> None:
    assert json.loads(outcome.latest("03_primary/p/feature_names.json").read_text()) == [f"g{j}" for j in range(8)]


def parquet_index_kept(outcome: Outcome) -> None:
    reduced = pd.read_parquet(outcome.latest("07_model_output/q/iclfs/reduced_data.parquet"))
    assert reduced.columns[0] == "patient" and reduced["patient"].tolist() == [f"p{i:02d}" for i in range(24)]


def continuous_labels_warned(outcome: Outcome) -> None:
    assert re.search(r"the labels have 24 distinct values for 24 samples: about one class per sample", outcome.output)


def stage_uses_the_complete_run(outcome: Outcome) -> None:
    assert "Stage run on the versions of the complete run(s)" in outcome.output


def r_export(project: Path) -> Outcome:
    values = np.random.default_rng(4).normal(size=(12, 20)).round(4)
    lines = [" ".join(f'"S{i}"' for i in range(20))] + [f'"gene{j}" ' + " ".join(map(str, row))
                                                      for j, row in enumerate(values)]
    (project / "r.txt").write_text("\n".join(lines) + "\n")
    return kedro(project, "input=r.txt", "orientation=features_in_rows")


def parquet_with_index(project: Path) -> Outcome:
    frame = pd.DataFrame(np.random.default_rng(5).normal(size=(24, 12)), columns=[f"g{j}" for j in range(12)],
                         index=pd.Index([f"p{i:02d}" for i in range(24)], name="patient"))
    frame.to_parquet(project / "q.parquet")
    return kedro(project, "input=q.parquet")


def continuous_labels(project: Path) -> Outcome:
    frame = pd.DataFrame(np.random.default_rng(6).normal(size=(24, 12)), columns=[f"g{j}" for j in range(12)])
    frame["dose"] = np.linspace(0.1, 2.4, 24)
    frame.to_csv(project / "t.csv", index=False)
    return kedro(project, "input=t.csv", "label_column=dose")


PIPES = "|".join(f"g{j}" for j in range(8)) + "\n" + "\n".join(
    "|".join(f"{v:.4f}" for v in row) for row in np.random.default_rng(2).normal(size=(20, 8))) + "\n"
DECIMAL_COMMAS = ";".join(f"g{j}" for j in range(8)) + "\n" + "\n".join(
    ";".join(f"{v:.4f}".replace(".", ",") for v in row) for row in np.random.default_rng(2).normal(size=(20, 8))) + "\n"
SAMPLES_IN_ROWS = ",".join(f"g{j}" for j in range(8)) + "\n" + "\n".join(
    ",".join(f"{v:.4f}" for v in row) for row in np.random.default_rng(2).normal(size=(20, 8))) + "\n"
GENES = [f"g{j}" for j in range(12)]
slow = pytest.mark.slow

CASES = [
    # 1. names are data
    Case("names", "gene and m/z names, NA, null, empty, unicode, 5,000 characters, formula prefixes",
         select_on(AWKWARD), check=names_leave_as_they_came, marks=(slow,)),
    Case("names", "'1', '01' and '1.0', 'NA' and 'null' are distinct names",
         select_on(["1", "01", "1.0", "NA", "null", *GENES]), check=distinct_look_alike_names, marks=(slow,)),
    Case("names", "R's write.table export (no row-name cell) read genes x samples", r_export,
         check=r_export_read_whole, marks=(slow,)),
    # 2. a stage combines one run's versions
    Case("stages", "a stage run on the newest complete run", after_a_run(params_only("data_source=t",
                                                                                     pipeline="ranking")),
         check=stage_uses_the_complete_run, marks=(slow,)),
    Case("stages", "a stage whose inputs come from runs that disagree", after_a_run(processing_of_another_table),
         r"the newest complete versions of this stage's inputs come from runs on different tables: "
         r"feature_names \(run \S+\), ground_truth \(run \S+\) from the table \w+; history_start \(run \S+\), "
         r"laplacian_scores \(run \S+\), member_scores \(run \S+\) from the table \w+", marks=(slow,)),
    # 3. typos
    Case("typos", "a misspelled section", params_only("trainng.epochs=2"),
         r"unknown parameter\(s\) 'trainng' \(did you mean 'training'\?\)"),
    Case("typos", "a misspelled key", params_only("training.epoch=2"),
         r"unknown parameter\(s\) training.epoch \(did you mean 'epochs'\?\)"),
    Case("typos", "a misspelled input", params_only("inptu=t.csv"),
         r"unknown parameter\(s\) 'inptu' \(did you mean 'input'\?\)"),
    Case("typos", "an empty input (an unset shell variable)", params_only("input="), r"input is empty"),
    Case("typos", "a misspelled method", params_only("selection.method=ndsf"),
         r"selection.method 'ndsf' is not a method \(did you mean 'ndfs'\?\)"),
    Case("typos", "a method that needs the number of clusters, without it", params_only("selection.method=mcfs"),
         r"selection.method 'mcfs' \(MCFS\) needs the number of clusters: set selection.n_clusters"),
    Case("typos", "no input: the embedded table, said so", params_only("selection.k=5"),
         check=the_embedded_table_says_so, marks=(slow,)),
    # 4. refused runs write nothing
    Case("refusals", "a selection stage run refused (the input changed since the run)",
         after_a_run(selection_after_the_file_changed),
         r"the input changed while this run was training", marks=(slow,)),
    # 5. one message, never a traceback
    Case("tracebacks", "runtime.device=cuda on a CPU machine", params_only("runtime.device=cuda"),
         r"runtime.device is 'cuda' but no CUDA device is available"),
    Case("tracebacks", "runtime.device=tpu", params_only("runtime.device=tpu"),
         r"runtime.device 'tpu' is not a device name"),
    Case("tracebacks", "runtime.precision=bf16 on CPU", params_only("runtime.device=cpu", "runtime.precision=bf16"),
         r"runtime.precision 'bf16' needs a CUDA device"),
    Case("tracebacks", "data_source=*", params_only("data_source=*"),
         r"'data_source=\*' holds a value YAML cannot read .*data_source='\*'"),
    Case("tracebacks", "data_source='*' (quoted)", params_only("data_source='*'"),
         r"data_source '\*' is not allowed"),
    Case("tracebacks", "an input path that is a folder", lambda p: (p / "folder").mkdir() or kedro(p, "input=folder"),
         r"folder: is a folder, not a file"),
    Case("tracebacks", "a full disk", on_a_full_disk, r"the disk is full.*nothing of this run was kept",
         marks=(slow,)),
    Case("tracebacks", "a stage run on a data source that has never run", params_only("data_source=never",
                                                                                       pipeline="ranking"),
         r"data source 'never': no complete run wrote \w+, which this pipeline reads"),
    Case("tracebacks", "a truncated feature_ranking.csv", after_a_run(truncate_ranking),
         r"feature_ranking: version \S+ is not what its run wrote .*Delete the folder", marks=(slow,)),
    # 6. messages that point to the cause
    Case("messages", "';' with decimal commas", write_then(DECIMAL_COMMAS, "c.csv", "sep=;"),
         r"not numeric: 'g0'.*decimal commas \(1,5\): .*--params decimal=comma"),
    Case("messages", "';' with decimal commas, read as such", write_then(DECIMAL_COMMAS, "p.csv", "sep=;",
                                                                          "decimal=comma"),
         check=pipes_read_as_columns, marks=(slow,)),
    Case("messages", "a pipe-delimited .txt", write_then(PIPES, "p.txt"), check=pipes_read_as_columns,
         marks=(slow,)),
    Case("messages", "sep=| (YAML reads it as an empty block)", write_then(PIPES, "p.txt", "sep=|"),
         r"sep is empty.*quote the value: --params \"sep='\|'\""),
    Case("messages", "label_column and id_column the same column", select_on(GENES, "label_column=g1",
                                                                             "id_column=g1"),
         r"label_column and id_column are both 'g1'"),
    Case("messages", "a samples-in-rows file declared features_in_rows",
         write_then(SAMPLES_IN_ROWS, "s.csv", "orientation=features_in_rows"),
         r"the first column holds the feature names, but it holds numbers .*Drop orientation=features_in_rows"),
    Case("messages", "a selection stage run without input=", after_a_run(selection_without_input),
         r"this run's list was selected from \S+t.csv, .*Give the run's input: --params input=", marks=(slow,)),
    # 7. other cases
    Case("other", "a tracking server that accepts connections and never answers", silent_tracking_server,
         r"accepts connections but does not answer within 5 s"),
    Case("other", "a continuous label column", continuous_labels, check=continuous_labels_warned, marks=(slow,)),
    Case("other", "training.epochs=100000000000000000000", params_only("training.epochs=100000000000000000000"),
         r"training.epochs = 100000000000000000000 is invalid: expected an integer in 1..100,000"),
    Case("other", "members.per_run=100000", params_only("members.per_run=100000"),
         r"members.per_run = 100000 is invalid: expected an integer in 1..1,000"),
    Case("other", "a parquet file's named index", parquet_with_index, check=parquet_index_kept, marks=(slow,)),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c.group}: {c.name}", marks=c.marks) for c in CASES])
def test_every_case_ends_in_its_message_or_its_output(case, tmp_path, caplog):
    project = project_at(tmp_path / "project")
    outcome = case.act(project)
    output = outcome.output + "\n".join(r.getMessage() for r in caplog.records)
    assert "Traceback" not in outcome.output, outcome.output[-4000:]
    if case.message is not None:
        assert outcome.code != 0, output[-3000:]
        line = next((line for line in outcome.output.splitlines() if re.search(case.message, line)), None)
        assert line is not None, output[-3000:]  # the message, whole on one line
        # nothing of the refused run is left: no file beyond those of the runs before it
        assert data_files(project) <= getattr(outcome, "before", set()), sorted(
            data_files(project) - getattr(outcome, "before", set()))
        if hasattr(outcome, "seconds"):
            assert outcome.seconds < 60
    else:
        assert outcome.code == 0, output[-3000:]
        case.check(Outcome(outcome.code, output, project))


def test_the_table_holds_every_case_of_the_issue():
    """Seven groups, as the issue lists them; their counts go in the closing note."""
    groups = {}
    for case in CASES:
        groups.setdefault(case.group, []).append(case.name)
    assert list(groups) == ["names", "stages", "typos", "refusals", "tracebacks", "messages", "other"]
    assert sum(map(len, groups.values())) == len(CASES) == len({c.name for c in CASES})


# -- what needs real processes ----------------------------------------------------------------------------------


def environment() -> dict[str, str]:
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def start(project: Path, *params: str, pipeline: str = "select") -> subprocess.Popen:
    log = (project / f"{pipeline}-{len(list(project.glob('*.log')))}.log").open("w")
    return subprocess.Popen([PYTHON, "-m", "kedro", "run", "--pipelines", pipeline, "--params", ",".join(params)],
                            cwd=project, env=environment(), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def wait_for(condition: Callable[[], bool], process: subprocess.Popen, timeout: float = 300,
             poll: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, "the run ended before the awaited moment"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(poll)


@pytest.mark.slow
def test_a_stage_after_a_killed_run_reads_the_last_complete_run_only(tmp_path):
    """Run A completes on a 60-feature file; run B (a 70-feature file, the same data source) is killed while it
    trains, after writing its first artifacts; every stage alone then reads A's versions, never B's."""
    project = project_at(tmp_path / "project")
    a_names, b_names = [f"a{j}" for j in range(60)], [f"b{j}" for j in range(70)]
    table(project / "a.csv", a_names, seed=1)
    table(project / "b.csv", b_names, seed=2)
    run_a = start(project, f"input={project / 'a.csv'}", "data_source=shared")
    assert run_a.wait(timeout=300) == 0
    run_b = start(project, f"input={project / 'b.csv'}", "data_source=shared", "training.epochs=100000")
    try:
        wait_for(lambda: len(Outcome(0, "", project).versions("03_primary/shared/feature_names.json")) == 2, run_b)
        time.sleep(1.0)  # training is under way
    finally:
        os.killpg(run_b.pid, signal.SIGKILL)
        run_b.wait()
    outcome = Outcome(0, "", project)
    assert len(outcome.versions("03_primary/shared/feature_names.json")) == 2  # B's partial versions are there
    assert len(outcome.versions("08_reporting/shared/run_record.json")) == 1  # but only A completed
    for stage in ("ranking", "selection", "report"):
        done = start(project, "data_source=shared", f"input={project / 'a.csv'}", pipeline=stage)
        assert done.wait(timeout=300) == 0, stage
    ranked = CSVDataset(filepath=str(outcome.latest("07_model_output/shared/iclfs/feature_ranking.csv"))).load()
    assert len(ranked) == 60 and set(ranked["feature_name"]) == set(a_names)  # A's scores under A's names
    names = CSVDataset(filepath=str(outcome.latest("07_model_output/shared/iclfs/feature_list.csv"))).load()[
        "feature_name"].tolist()
    assert set(names) <= set(a_names)
    reduced = pd.read_parquet(outcome.latest("07_model_output/shared/iclfs/reduced_data.parquet"))
    source = pd.read_csv(project / "a.csv")
    np.testing.assert_allclose(reduced[names].to_numpy(), source[names].to_numpy())


@pytest.mark.slow
def test_an_input_replaced_while_training_leaves_nothing_of_the_run(tmp_path):
    """The run refuses at the end (the file changed), and removes every version it had written."""
    project = project_at(tmp_path / "project")
    table(project / "t.csv", GENES, seed=1)
    run = start(project, f"input={project / 't.csv'}", "training.epochs=200")
    try:
        wait_for(lambda: bool(Outcome(0, "", project).versions("05_model_input/t/inverted_data.npy")), run, poll=0.02)
        os.killpg(run.pid, signal.SIGSTOP)  # held still while training, however fast the machine
        table(project / "t.csv", GENES, seed=2)  # a refresh lands while the run trains
        os.killpg(run.pid, signal.SIGCONT)
        assert run.wait(timeout=600) == 1
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    log = next(project.glob("select-*.log")).read_text()
    assert "the input changed while this run was training" in log and "Traceback" not in log
    assert data_files(project) == set(), sorted(data_files(project))  # not one artifact of the refused run


@pytest.mark.slow
def test_the_summary_a_scheduled_jobs_log_carries_is_plain_and_whole(tmp_path):
    """Through a pipe (no terminal), as a scheduler reads it: one item per line, the list's path whole."""
    project = project_at(tmp_path / "project")
    table(project / "t.csv", GENES, seed=1)
    done = subprocess.run([PYTHON, "-m", "kedro", "run", "--pipelines", "select", "--params",
                           f"input={project / 't.csv'}"], cwd=project, env=environment(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    start_at = lines.index("Run summary")
    summary = lines[start_at + 1:start_at + 7]
    assert summary[0] == "  data source: t" and summary[1] == "  table: 12 features x 24 samples"
    path = Outcome(0, "", project).latest("07_model_output/t/iclfs/feature_list.csv")
    assert f"  the list: {path}" in summary
    assert all(line.startswith("  ") for line in summary)


def test_feature_table_readers_keep_names_exact_in_every_format(tmp_path):
    """CSV, TSV, parquet and h5ad: the names as written, never numbers or missing values."""
    names = ["042", "104.20", "NA", "null", "", "ü"]
    values = np.random.default_rng(0).normal(size=(6, len(names)))
    table(tmp_path / "t.csv", names)
    table(tmp_path / "t.tsv", names, sep="\t")
    frame = pd.DataFrame(values, columns=names)
    frame.to_parquet(tmp_path / "t.parquet")
    for name in ("t.csv", "t.tsv", "t.parquet"):
        assert FeatureTableDataset(filepath=str(tmp_path / name)).load().feature_names == names, name
    anndata = pytest.importorskip("anndata")
    # plain object strings: anndata's writer cannot write pandas 3's string arrays (tests/io/test_h5ad.py)
    anndata.AnnData(X=values, obs=pd.DataFrame(index=pd.Index([f"c{i}" for i in range(6)], dtype=object)),
                    var=pd.DataFrame(index=pd.Index(names, dtype=object))).write_h5ad(tmp_path / "t.h5ad")
    assert FeatureTableDataset(filepath=str(tmp_path / "t.h5ad")).load().feature_names == names
