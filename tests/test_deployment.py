"""The deployment, walked as a user walks it: a declared data source, its Airflow DAG run by a real Airflow 3,
the latest list read with ``cat``, another method on the same source, and a refresh on a changed table.

Everything runs in a throw-away copy of the project through real processes: ``python -m kedro dag``,
``airflow db migrate`` and ``airflow dags test`` (Airflow's own venv, whose task runs this project's
interpreter), and ``python -m iclfs``. Airflow does not install beside the project's pins, so it lives in a
venv of its own: ``$ICLFS_AIRFLOW`` (the ``airflow`` executable) or ``<project>/.venv-airflow/bin/airflow``
(.ci/run makes it); without either the test skips.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from iclfs._threads import DEFAULT_POLICY
from tests.project_copy import copy_project

pytestmark = pytest.mark.slow  # two Airflow DAG runs and two runs by hand, each a real process: a minute or more

PROJECT_ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
SOURCE = "expr"
TIMEOUT = 600  # seconds, for each process
FAST = {"training": {"epochs": 2}, "runtime": {"num_threads": 1, "progress": False},
        "selection": {"k": 10, "k_values": [10, 20]}, "evaluation": {"n_runs": 2}}
K = 10
#: The thread policy the DAG's task runs under (airflow.yml's thread_policy): one that is not the default, and
#: reads no load, so that its tag is its name alone.
DAG_POLICY = "passive" if DEFAULT_POLICY != "passive" else "spin"

# A genes x samples expression table: 120 Ensembl ids x 30 GEO samples in 3 groups of 10, 15 genes (5 a group)
# raised in their group, the rest noise around a gene's own level.
GENES = [f"ENSG00000{100001 + 137 * j}" for j in range(120)]
SAMPLES = [f"GSM{10001 + i}" for i in range(30)]
GROUPS = np.repeat([0, 1, 2], 10)
MARKERS = sorted(np.random.default_rng(7).choice(120, size=15, replace=False).tolist())
NEW_GENES = ["ENSG00000990001", "ENSG00000990002", "ENSG00000990003"]
REMOVED_SAMPLES = ["GSM10012", "GSM10025"]


# The README's deployment, word for word (its "Scheduled refreshes" section): the test runs these commands.
README_STEPS = [
    ".venv/bin/kedro dag expr",
    'export AIRFLOW__CORE__DAGS_FOLDER="$PWD/airflow_dags"',
    "airflow db migrate",
    "airflow dags test iclfs_expr 2026-01-01",
    "airflow dags test iclfs_expr 2026-01-02",
    "cat data/latest/expr/iclfs/feature_list.csv",
    ".venv/bin/iclfs --source expr --method ndfs --params selection.n_clusters=3",
    "cat data/latest/expr/ndfs/feature_list.csv",
]
README_SOURCE = {"sources": {SOURCE: {"input": "data/01_raw/expr.tsv.gz", "orientation": "features_in_rows"}}}


def readme_section() -> tuple[dict, list[str]]:
    """The README's "Scheduled refreshes": its YAML declaration and the lines of its bash block."""
    text = (PROJECT_ROOT / "README.md").read_text()
    section = text.split("## Scheduled refreshes", 1)[1].split("\n## ", 1)[0]
    declared = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    commands = re.search(r"```bash\n(.*?)```", section, re.S).group(1).strip().splitlines()
    return declared, commands


def step(line: str, airflow: str) -> list[str]:
    """A README command as this test runs it: the project's commands with this interpreter, Airflow's with its."""
    words = shlex.split(line)
    if words[0] in (".venv/bin/kedro", ".venv/bin/iclfs"):
        return [PYTHON, "-m", words[0].rsplit("/", 1)[1], *words[1:]]
    assert words[0] == "airflow", line
    return [airflow, *words[1:]]


def airflow_executable() -> str:
    """``$ICLFS_AIRFLOW``, else ``<project>/.venv-airflow/bin/airflow``; skips when neither is there."""
    given = os.environ.get("ICLFS_AIRFLOW")
    if given:
        return given
    beside = PROJECT_ROOT / ".venv-airflow" / "bin" / "airflow"
    if beside.exists():
        return str(beside)
    pytest.skip("no Apache Airflow to run the generated DAG: set ICLFS_AIRFLOW to an `airflow` executable (3.x, "
                "in its own venv: it does not install beside the project's pins) or make <project>/.venv-airflow "
                "with scripts/install-airflow.sh (.ci/run does)")


def expression_table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    level = rng.uniform(4.0, 10.0, size=(120, 1))
    values = level + rng.normal(scale=0.6, size=(120, 30))
    for position, gene in enumerate(MARKERS):
        values[gene, GROUPS == position % 3] += 3.0
    frame = pd.DataFrame(values.round(3), index=pd.Index(GENES, name="gene_id"), columns=SAMPLES)
    return frame


def write_table(path: Path, frame: pd.DataFrame) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8", newline="") as handle:
        frame.to_csv(handle, sep="\t")


def environment(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("AIRFLOW", "MLFLOW_", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"))}
    env.update(KEDRO_DISABLE_TELEMETRY="1", PYTHONUNBUFFERED="1", **extra)
    return env


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=False, cwd=cwd, env=env or environment(), capture_output=True, text=True,
                          timeout=TIMEOUT, **kwargs)


def succeeded(done: subprocess.CompletedProcess, what: str, logs: Path) -> str:
    """The process's standard output; fails, showing the end of both streams, unless it exited 0. Both are kept in
    ``logs/<what>.stdout`` and ``.stderr``, to read when something fails."""
    logs.mkdir(exist_ok=True)
    name = re.sub(r"[^\w.-]+", "_", what).strip("_")
    (logs / f"{name}.stdout").write_text(done.stdout)
    (logs / f"{name}.stderr").write_text(done.stderr)
    assert done.returncode == 0, (f"{what} exited {done.returncode}:\n{done.stdout[-4000:]}\n"
                                  f"--- stderr:\n{done.stderr[-4000:]}")
    return done.stdout


def versions(project: Path, artifact: str) -> list[str]:
    """The version folders of ``data/<artifact>``, oldest first."""
    folder = project / "data" / artifact
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def version_file(project: Path, artifact: str, version: str) -> Path:
    return project / "data" / artifact / version / Path(artifact).name


def stability(project: Path, version: str, method: str = "iclfs") -> dict:
    return json.loads(version_file(project, f"08_reporting/{SOURCE}/{method}/selection_stability.json",
                                   version).read_text())


def members(project: Path, method: str) -> int:
    from iclfs.io.datasets import MemberHistoryView

    view = MemberHistoryView(filepath=str(project / f"data/07_model_output/{SOURCE}/member_history.npz"),
                             data_source=SOURCE)
    return len(view.load().of(method).members)


def listed(project: Path, version: str) -> list[str]:
    return pd.read_csv(version_file(project, f"07_model_output/{SOURCE}/iclfs/feature_list.csv", version),
                       dtype={"feature_name": str})["feature_name"].tolist()


def cat_latest(project: Path, method: str = "iclfs") -> list[str]:
    """The README's ``cat data/latest/<source>/<method>/feature_list.csv``, through a shell, as its lines."""
    line = f"cat data/latest/{SOURCE}/{method}/feature_list.csv"
    assert line in README_STEPS
    done = subprocess.run(line, shell=True, check=False, cwd=project, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def pipeline_artifacts(project: Path) -> list[str]:
    """Every versioned artifact folder of the data source: ``<layer>/expr/<file>`` (the table's, the run records,
    the member history) and ``<layer>/expr/<method>/<file>`` (what a method made)."""
    data = project / "data"
    folders = [p for p in data.glob(f"0*/{SOURCE}/*") if p.is_dir() and p.suffix]
    folders += [p for p in data.glob(f"0*/{SOURCE}/*/*") if p.is_dir() and p.suffix and not p.parent.suffix]
    return sorted(str(p.relative_to(data)) for p in folders)


def mlflow_runs(project: Path) -> tuple:
    """An MLflow client on the copy's store, and the runs of its experiment, oldest first."""
    from mlflow.tracking import MlflowClient

    uri = yaml.safe_load((project / "conf/local/mlflow.yml").read_text())["server"]["mlflow_tracking_uri"]
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("iclfs")
    assert experiment is not None, f"no MLflow experiment 'iclfs' in {uri}"
    return client, client.search_runs([experiment.experiment_id], order_by=["attributes.start_time ASC"],
                                      max_results=100)


def run_version(mlflow_run, method: str) -> str:
    name = mlflow_run.info.run_name
    found = re.fullmatch(rf"{SOURCE} · {method} · (\S+)", name)
    assert found, f"MLflow run named {name!r}, expected '{SOURCE} · {method} · <version>'"
    return found.group(1)


def test_the_readme_deployment_is_the_one_this_test_walks():
    assert readme_section() == (README_SOURCE, README_STEPS)


def test_a_declared_source_refreshes_on_airflow_then_by_hand_with_another_method_and_a_changed_table(tmp_path):
    airflow = airflow_executable()
    logs = tmp_path / "logs"  # every process's output, to read when something fails

    # 1. The user's table, declared once by name; tiny settings so each run takes seconds.
    project = tmp_path / "project"
    local = copy_project(project)
    table = expression_table()
    write_table(project / "data/01_raw/expr.tsv.gz", table)
    (local / "parameters_sources.yml").write_text(yaml.safe_dump(README_SOURCE))
    (local / "parameters.yml").write_text(yaml.safe_dump(FAST))
    # retries 0: a failure fails at once; the task's own thread policy, not the default (the tracked runs say so)
    (local / "airflow.yml").write_text(yaml.safe_dump({"select": {"retries": 0, "thread_policy": DAG_POLICY}}))

    # 2. The DAG, written by the project's command.
    wrote = succeeded(run(step(README_STEPS[0], airflow), project), "kedro dag expr", logs)
    dag_file = project / "airflow_dags" / f"iclfs_{SOURCE}.py"
    assert dag_file.is_file(), wrote
    assert f"iclfs_{SOURCE}" in wrote and '"retries": 0' in dag_file.read_text()

    # 3. Two DAG runs on a real Airflow, as its scheduler would start them on two days.
    # the README's export, in the project's folder: $PWD/airflow_dags
    airflow_env = environment(AIRFLOW_HOME=str(tmp_path / "airflow_home"),
                              AIRFLOW__CORE__DAGS_FOLDER=str(project / "airflow_dags"),
                              AIRFLOW__CORE__LOAD_EXAMPLES="False")
    succeeded(run(step(README_STEPS[2], airflow), project, airflow_env), README_STEPS[2], logs)
    dag_runs = []
    for line in README_STEPS[3:5]:
        output = succeeded(run(step(line, airflow), project, airflow_env), line, logs)
        assert "Run summary" in output and f"data source: {SOURCE}" in output, output[-6000:]  # the task's output
        dag_runs.append(output)

    client, runs = mlflow_runs(project)
    assert len(runs) == 2, [r.info.run_name for r in runs]
    dag_versions = versions(project, f"07_model_output/{SOURCE}/iclfs/feature_list.csv")
    assert len(dag_versions) == 2
    first, second = dag_versions
    assert [run_version(r, "iclfs") for r in runs] == dag_versions  # named by the artifacts' version
    for tracked in runs:
        assert tracked.info.status == "FINISHED"
        assert [i.dataset.name for i in tracked.inputs.dataset_inputs] == [SOURCE]
        metrics = tracked.data.metrics
        assert metrics["k"] == K and {"samples", "features", "members"} <= set(metrics), metrics
        assert not [name for name in metrics if re.search(r"@|k=|_k\d|\.\d+$", name)], metrics  # plain names
        history = client.get_metric_history(tracked.info.run_id, "k")
        assert [(h.value, h.step) for h in history] == [(K, 0)]  # no step per k
        assert tracked.data.tags["data_source"] == SOURCE
        assert tracked.data.tags["airflow.dag_id"] == f"iclfs_{SOURCE}"
        # the policy in force in the task's own process, as it started: airflow.yml's
        assert tracked.data.tags["thread_policy"].split(";")[0] == DAG_POLICY, tracked.data.tags["thread_policy"]
    for tracked, output in zip(runs, dag_runs):  # each MLflow run names its own DAG run
        assert tracked.data.tags["airflow.run_id"] and tracked.data.tags["airflow.run_id"] in output
    assert runs[0].data.tags["airflow.run_id"] != runs[1].data.tags["airflow.run_id"]
    assert "jaccard" in runs[1].data.metrics and len(client.get_metric_history(runs[1].info.run_id, "jaccard")) == 1

    artifacts = pipeline_artifacts(project)
    for artifact in (f"07_model_output/{SOURCE}/iclfs/feature_list.csv", f"08_reporting/{SOURCE}/iclfs/run_report.html",
                     f"08_reporting/{SOURCE}/iclfs/selection_stability.json",
                     f"07_model_output/{SOURCE}/iclfs/selections.csv", f"08_reporting/{SOURCE}/run_record.json",
                     f"03_primary/{SOURCE}/feature_names.json"):
        assert artifact in artifacts
    for artifact in artifacts:  # one version per DAG run, each run's own
        if artifact.endswith("member_history.npz"):
            continue  # one store per method (below)
        assert versions(project, artifact) == dag_versions, artifact
    assert versions(project, f"07_model_output/{SOURCE}/member_history.npz/iclfs") == dag_versions
    assert members(project, "iclfs") == 2

    assert stability(project, first)["previous_version"] is None
    assert stability(project, second)["previous_version"] == first

    # 4. The latest list, as the README reads it: one header, k rows, the second run's.
    second_list = version_file(project, f"07_model_output/{SOURCE}/iclfs/feature_list.csv",
                               second).read_text().splitlines()
    latest = cat_latest(project)
    assert latest[0].startswith("rank,feature_name") and len(latest) == K + 1
    assert latest == second_list

    # 5. NDFS on the same source: its own member history, its own first comparison, its own latest list.
    done = run(step(README_STEPS[6], airflow), project)
    assert "method: NDFS (selection.method = ndfs)" in succeeded(done, "iclfs --method ndfs", logs)
    (ndfs,) = versions(project, f"07_model_output/{SOURCE}/ndfs/feature_list.csv")  # in its own folder
    assert ndfs > second and versions(project, f"07_model_output/{SOURCE}/iclfs/feature_list.csv") == dag_versions
    assert members(project, "iclfs") == 2 and members(project, "ndfs") == 1
    ndfs_stability = stability(project, ndfs, "ndfs")
    assert ndfs_stability["method"] == "ndfs" and ndfs_stability["previous_version"] is None, ndfs_stability
    assert (project / f"data/latest/{SOURCE}/ndfs/feature_list.csv").is_file()
    assert cat_latest(project, "ndfs") == version_file(
        project, f"07_model_output/{SOURCE}/ndfs/feature_list.csv", ndfs).read_text().splitlines()
    assert Path(os.readlink(project / f"data/latest/{SOURCE}/iclfs")).name == second
    assert cat_latest(project) == second_list  # still the second ICLFS run's: one header, k rows
    client, runs = mlflow_runs(project)
    assert len(runs) == 3
    assert run_version(runs[-1], "ndfs") == ndfs and runs[-1].info.status == "FINISHED"
    assert runs[-1].data.metrics["k"] == K and runs[-1].data.tags["method"] == "ndfs"
    assert [i.dataset.name for i in runs[-1].inputs.dataset_inputs] == [SOURCE]
    ndfs_params = runs[-1].data.params
    assert ndfs_params.get("selection.method") == "ndfs"
    assert not [p for p in ndfs_params if p.startswith(("training.", "baselines.cae"))], sorted(ndfs_params)
    assert "airflow.run_id" not in runs[-1].data.tags  # run by hand
    assert runs[-1].data.tags["thread_policy"].startswith(DEFAULT_POLICY)  # the DAG's policy is the DAG's alone

    # 6. A refresh on a changed table: 5 genes dropped (one of them on the last ICLFS list), 3 new, 2 samples gone.
    last_list = listed(project, second)
    dropped = [last_list[0]] + [g for g in GENES if g not in set(last_list) and g not in MARKERS][:4]
    changed = table.drop(index=dropped, columns=REMOVED_SAMPLES)
    rng = np.random.default_rng(1)
    new = pd.DataFrame(rng.uniform(4, 10, size=(3, 1)) + rng.normal(scale=0.6, size=(3, changed.shape[1])),
                       index=pd.Index(NEW_GENES, name="gene_id"), columns=changed.columns).round(3)
    write_table(project / "data/01_raw/expr.tsv.gz", pd.concat([changed, new]))
    done = run([PYTHON, "-m", "iclfs", "--source", SOURCE], project)
    output = succeeded(done, "iclfs --source expr on the changed table", logs)
    third = versions(project, f"07_model_output/{SOURCE}/iclfs/feature_list.csv")[-1]
    assert third > ndfs
    found = stability(project, third)
    assert found["previous_version"] == second  # the previous ICLFS run, not NDFS's
    changes = found["changes"]
    assert changes["previous_version"] == ndfs  # the table changed since the last run of any method
    assert json.loads(version_file(project, f"08_reporting/{SOURCE}/iclfs/table_changes.json",
                                   third).read_text()) == changes
    assert (changes["features_dropped"], changes["features_added"], changes["samples_removed"],
            changes["samples_added"]) == (5, 3, 2, 0), changes
    assert sorted(changes["dropped"]) == sorted(dropped) and sorted(changes["added"]) == NEW_GENES
    assert sorted(changes["samples_out"]) == REMOVED_SAMPLES
    assert dropped[0] in found["per_k"][str(K)]["left_table"], found["per_k"]
    for row in found["per_k"].values():
        assert set(row["left_table"]) <= set(dropped)
    assert "5 feature(s) dropped" in output and "3 feature(s) new to the table" in output, output[-6000:]
    assert "2 sample(s) removed" in output
    (gone,) = [line for line in output.splitlines() if "left the table" in line]  # the summary: on stdout
    assert dropped[0] in gone
    assert members(project, "iclfs") == 3 and members(project, "ndfs") == 1
    agreement = re.search(r"Nogueira's Phi over the 3 members' first k: (-?\d+\.\d\d) \(95 % interval "
                          r"(-?\d+\.\d\d) to (-?\d+\.\d\d)\)", output)
    assert agreement, output[-6000:]
    signal = found["signal"]
    assert signal is not None and signal["members"] == 3, found
    assert agreement.groups() == tuple(f"{signal[part]:.2f}" for part in ("phi", "lower", "upper"))
    warned = "WARNING: the 3 members agree no more than chance" in output
    assert warned == (not signal["above_chance"]), (signal, output[-3000:])
    latest = cat_latest(project)
    assert len(latest) == K + 1 and latest == version_file(
        project, f"07_model_output/{SOURCE}/iclfs/feature_list.csv", third).read_text().splitlines()
    assert dropped[0] not in "\n".join(latest)

    client, runs = mlflow_runs(project)
    assert len(runs) == 4  # two DAG runs, NDFS, the refresh by hand
    assert run_version(runs[-1], "iclfs") == third and runs[-1].info.status == "FINISHED"
    metrics = runs[-1].data.metrics
    assert metrics["table.features_dropped"] == 5 and metrics["table.features_added"] == 3, metrics
    assert metrics["table.samples_removed"] == 2 and metrics["samples"] == 28 and metrics["features"] == 118


# --- the other steps of a deployment: the wheel, Airflow's install and the notebook --------------------------


def scheduling_guide_block(heading: str, language: str = "bash") -> list[str]:
    """The lines of the ``language`` blocks under ``heading`` in docs/guides/scheduling.md, in order."""
    text = (PROJECT_ROOT / "docs" / "guides" / "scheduling.md").read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return [line for block in re.findall(rf"```{language}\n(.*?)```", section, re.S)
            for line in block.strip().splitlines()]


# This interpreter as one where only the core was installed (the wheel without its extra): kedro cannot be imported.
NO_KEDRO = """import sys
class NoKedro:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "kedro":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoKedro())
"""


def test_the_packaged_job_says_what_to_install_and_where_its_sources_live(tmp_path):
    """`kedro package`, the wheel installed as the guide says, then `iclfs`: without the kedro extra it names
    the extra in one line; with it, a source that the archive cannot hold is refused naming conf/base.

    The wheel is installed without its dependencies (--no-deps --target), on this interpreter's packages: the
    step without the extra blocks kedro's import (a sitecustomize), where a real venv would not have it."""
    install = [line for line in scheduling_guide_block("## 10. The packaged job") if "pip install" in line]
    assert install and all("[kedro]" in line for line in install), install  # the guide's install names the extra
    build = tmp_path / "build"
    build.mkdir()
    for item in ("src", "conf", "pyproject.toml", "README.md", "LICENSE"):
        source = PROJECT_ROOT / item
        if source.is_dir():
            shutil.copytree(source, build / item, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "local"))
        elif source.exists():
            shutil.copy(source, build / item)
    (build / "conf" / "local").mkdir()
    logs = tmp_path / "logs"
    succeeded(run([PYTHON, "-m", "kedro", "package"], build), "kedro package", logs)
    (wheel,) = (build / "dist").glob("iclfs-*.whl")
    archive = build / "dist" / "conf-iclfs.tar.gz"
    site = tmp_path / "site"
    succeeded(run([PYTHON, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)], tmp_path),
              "pip install the wheel", logs)
    entry = site / "bin" / "iclfs"
    assert entry.is_file()  # the wheel's console script, as pip wrote it
    job = tmp_path / "srv"
    job.mkdir()

    blocked = tmp_path / "no_kedro"
    blocked.mkdir()
    (blocked / "sitecustomize.py").write_text(NO_KEDRO)
    done = run([str(entry), "--conf-source", str(archive), "--source", SOURCE], job,
               environment(PYTHONPATH=f"{blocked}{os.pathsep}{site}"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        "Error: the iclfs command runs the Kedro project, and kedro is not installed here: install iclfs with its "
        "kedro extra, pip install 'iclfs[kedro]' (from a wheel: pip install 'iclfs-<version>-py3-none-any.whl"
        "[kedro]'). The selector alone (from iclfs import ICLFSSelector) needs no extra."], done.stderr

    done = run([str(entry), "--conf-source", str(archive), "--source", SOURCE], job,
               environment(PYTHONPATH=str(site)))
    assert done.returncode == 1, done.stdout + done.stderr
    errors = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert errors[0].startswith(f"Error: data source {SOURCE!r} is not declared: declared sources: none yet. A conf "
                                "archive holds no conf/local (kedro package leaves it out): declare it in "
                                "conf/base/parameters_sources.yml before packaging"), errors[0]
    assert not (job / "data").exists()


def test_the_airflow_install_command_gives_an_airflow_home_without_example_dags(tmp_path):
    """scripts/install-airflow.sh, as the scheduling guide runs it: a venv with Airflow and an airflow.env that
    sets AIRFLOW_HOME inside it and turns the example DAGs off, so `airflow dags list` shows the project's DAG only.

    The install itself takes minutes from the package index: with ICLFS_TEST_AIRFLOW_INSTALL=1 the test runs it
    into tmp_path; otherwise it checks the venv the same script made for the deployment test (.ci/run)."""
    steps = scheduling_guide_block("## 3. Run it on Airflow 3")
    assert steps[0].split("#")[0].strip() == "scripts/install-airflow.sh", steps
    assert steps[1].split("#")[0].strip() == "source .venv-airflow/airflow.env", steps
    if os.environ.get("ICLFS_TEST_AIRFLOW_INSTALL") == "1":
        venv = tmp_path / "venv airflow"  # a space: the env file must keep the path one word
        succeeded(run(["bash", str(PROJECT_ROOT / "scripts" / "install-airflow.sh"), str(venv)], tmp_path),
                  "install-airflow", tmp_path / "logs")
    else:
        venv = Path(airflow_executable()).parent.parent
        if not (venv / "airflow.env").is_file():
            pytest.skip(f"{venv} was not made by scripts/install-airflow.sh (no airflow.env): set "
                        "ICLFS_TEST_AIRFLOW_INSTALL=1 to run the install here (minutes)")
    project = tmp_path / "project"
    local = copy_project(project)
    write_table(project / "data/01_raw/expr.tsv.gz", expression_table())
    (local / "parameters_sources.yml").write_text(yaml.safe_dump(README_SOURCE))
    succeeded(run([PYTHON, "-m", "kedro", "dag", SOURCE], project), "kedro dag", tmp_path / "logs")
    # the guide's two lines in one shell; the DAGs folder then pointed at this copy's (the env file names the
    # project the script lives in)
    script = (f"source {shlex.quote(str(venv / 'airflow.env'))} && "
              'export AIRFLOW__CORE__DAGS_FOLDER="$PWD/airflow_dags" && '
              'echo "home=$AIRFLOW_HOME examples=$AIRFLOW__CORE__LOAD_EXAMPLES airflow=$(command -v airflow)" && '
              "airflow db migrate >/dev/null && airflow dags list --local -o json")
    output = succeeded(run(["bash", "-c", script], project), "airflow dags list", tmp_path / "logs")
    assert f"home={venv / 'home'} examples=False airflow={venv / 'bin' / 'airflow'}" in output, output
    (listing,) = [line for line in output.splitlines() if line.startswith("[")]  # Airflow logs to stdout too
    assert [dag["dag_id"] for dag in json.loads(listing)] == [f"iclfs_{SOURCE}"], output[-3000:]  # no examples


def test_the_notebook_shows_the_method_it_is_given_not_the_newest_run(tmp_path):
    """Two methods on one declared source, then notebooks/inspect_run.ipynb with ICLFS_DATA_SOURCE and ICLFS_METHOD
    set: it shows ICLFS's latest run (though NDFS ran last), and counts the members its list combined."""
    import nbformat

    project = tmp_path / "project"
    local = copy_project(project)
    write_table(project / "data/01_raw/expr.tsv.gz", expression_table())
    (local / "parameters_sources.yml").write_text(yaml.safe_dump(README_SOURCE))
    (local / "parameters.yml").write_text(yaml.safe_dump(FAST))
    logs = tmp_path / "logs"
    for method in ("iclfs", "iclfs", "ndfs"):  # two ICLFS refreshes (2 members combined), then NDFS
        extra = ["--params", "selection.n_clusters=3"] if method == "ndfs" else []
        succeeded(run([PYTHON, "-m", "iclfs", "--source", SOURCE, "--method", method, *extra], project),
                  f"iclfs {method}", logs)
    notebook = nbformat.read(PROJECT_ROOT / "notebooks" / "inspect_run.ipynb", as_version=4)
    (project / "notebooks").mkdir()
    code = "\n".join(["import matplotlib", "matplotlib.use('Agg')",
                      *(cell.source for cell in notebook.cells if cell.cell_type == "code"),
                      "import json",
                      "print('RESULT', json.dumps({'method': method, 'combined': combined, 'trained': trained, "
                      "'version': version, 'report': str(report_path)}))"])
    (project / "notebooks" / "run_all.py").write_text(code)
    output = succeeded(run([PYTHON, "run_all.py"], project / "notebooks",
                           environment(ICLFS_DATA_SOURCE=SOURCE, ICLFS_METHOD="iclfs", MPLBACKEND="Agg")),
                       "the notebook", logs)
    result = json.loads(output.split("RESULT ", 1)[1].splitlines()[0])
    runs = versions(project, f"08_reporting/{SOURCE}/run_record.json")  # the three runs, oldest first
    assert result["method"] == "ICLFS", result  # not NDFS, the newest run
    assert result["version"] == Path(os.readlink(project / f"data/latest/{SOURCE}/iclfs")).name == runs[1]
    assert (result["combined"], result["trained"]) == (2, 1), result
    assert f"/{result['version']}/" in result["report"]



def test_a_dag_written_for_a_hostile_environment_name_is_parsed_by_airflow_without_running_it(tmp_path):
    """Airflow's own DAG parsing (what its DAG processor does) of a DAG whose environment folder's name holds
    code: the DAG is listed, and the code never ran."""
    airflow = airflow_executable()
    payload = 'x""";__import__("os").system("touch PWNED");"""\'\'\';__import__("os").system("touch PWNED");#\n'
    project = tmp_path / "project"
    local = copy_project(project)
    write_table(project / "data/01_raw/expr.tsv.gz", expression_table())
    (project / "conf" / payload).mkdir()
    (project / "conf" / payload / "parameters_sources.yml").write_text(yaml.safe_dump(README_SOURCE))
    assert local.is_dir()
    logs = tmp_path / "logs"
    succeeded(run([PYTHON, "-m", "kedro", "dag", SOURCE, "--env", payload], project), "kedro dag", logs)
    airflow_env = environment(AIRFLOW_HOME=str(tmp_path / "airflow_home"), AIRFLOW__CORE__LOAD_EXAMPLES="False",
                              AIRFLOW__CORE__DAGS_FOLDER=str(project / "airflow_dags"))
    succeeded(run([airflow, "db", "migrate"], project, airflow_env), "airflow db migrate", logs)
    output = succeeded(run([airflow, "dags", "list", "--local", "-o", "json"], project, airflow_env),
                       "airflow dags list", logs)
    (listing,) = [line for line in output.splitlines() if line.startswith("[")]
    assert [dag["dag_id"] for dag in json.loads(listing)] == [f"iclfs_{SOURCE}"], output[-3000:]
    assert not list(tmp_path.rglob("PWNED")), "a value in the DAG ran as code when Airflow parsed it"
