"""The project's commands: ``iclfs`` / ``kedro run`` with its own options, and ``kedro dag SOURCE``."""

from __future__ import annotations

import ast
import logging
import sys
import warnings
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner
from kedro.framework.cli.project import run as kedro_run
from kedro.framework.startup import bootstrap_project

from iclfs import cli
from iclfs._threads import DEFAULT_POLICY
from iclfs.project._sources import SourceError
from tests.project_copy import copy_project

pytestmark = pytest.mark.filterwarnings("ignore:register_new_resolver:UserWarning")  # omegaconf's, in Kedro


@pytest.fixture(autouse=True)
def root_handlers():
    """The commands swap the root logger's handlers off a terminal (plain_off_terminal): put them back."""
    root = logging.getLogger()
    handlers = list(root.handlers)
    yield
    root.handlers[:] = handlers


# --- iclfs --help -------------------------------------------------------------------------------------------


def test_help_names_the_projects_own_options_and_is_not_kedros_generic_text():
    result = CliRunner().invoke(cli.run, ["--help"])
    assert result.exit_code == 0, result.output
    for option in ("--source", "--input", "--orientation", "--method", "--k"):
        assert f"\n  {option} " in result.output, option
    assert "Run the pipeline." not in result.output
    assert "iclfs --source expr" in result.output
    assert "[samples_in_rows|features_in_rows]" in result.output
    # Kedro's own options are all still there, and the project's --verbose
    for option in ("--pipelines", "--params", "--env", "--verbose"):
        assert f" {option} " in result.output, option


def test_the_group_holds_run_and_dag():
    assert sorted(cli.cli.commands) == ["dag", "run"]


# --- the options as runtime parameters ----------------------------------------------------------------------


@pytest.mark.parametrize("own, expected", [
    ({"method": "ndfs"}, {"selection": {"method": "ndfs"}}),
    ({"k": 100}, {"selection": {"k": 100}}),
    ({"source": "expr"}, {"source": "expr"}),
    ({"input": "data/01_raw/expr.tsv", "orientation": "features_in_rows"},
     {"input": "data/01_raw/expr.tsv", "orientation": "features_in_rows"}),
    ({"source": None, "input": None, "orientation": None, "method": None, "k": None}, {}),
    ({"method": "ls", "k": 7}, {"selection": {"method": "ls", "k": 7}}),
])
def test_own_options_map_to_runtime_params(own, expected):
    assert cli._with_own_options(None, own) == expected


def test_own_options_join_the_params_given_and_leave_them_untouched():
    given = {"selection": {"k_values": [5, 10]}, "training": {"epochs": 1}}
    assert cli._with_own_options(given, {"method": "ndfs", "k": 5}) == {
        "selection": {"k_values": [5, 10], "method": "ndfs", "k": 5}, "training": {"epochs": 1}}
    assert given == {"selection": {"k_values": [5, 10]}, "training": {"epochs": 1}}


def test_an_option_given_both_ways_that_agrees_is_kept_once():
    assert cli._with_own_options({"selection": {"k": 100}}, {"k": 100}) == {"selection": {"k": 100}}


@pytest.mark.parametrize("params, own, message", [
    ({"selection": {"k": 50}}, {"k": 100}, "--k 100 and --params selection.k=50 disagree: give it once"),
    ({"selection": {"method": "ls"}}, {"method": "ndfs"},
     "--method 'ndfs' and --params selection.method='ls' disagree: give it once"),
    ({"source": "other"}, {"source": "expr"}, "--source 'expr' and --params source='other' disagree: give it once"),
])
def test_an_option_given_both_ways_that_disagrees_is_refused(params, own, message):
    with pytest.raises(click.BadParameter) as caught:
        cli._with_own_options(params, own)
    assert caught.value.message == message


@pytest.fixture
def kedro_callback(monkeypatch):
    """Kedro's run, replaced by one that records what it was given: the command's wiring, without a run."""
    calls: list[dict] = []
    monkeypatch.setattr(kedro_run, "callback", lambda **kwargs: calls.append(kwargs))
    return calls


def test_the_command_hands_the_options_to_kedro_as_params(kedro_callback):
    result = CliRunner().invoke(cli.run, ["--source", "expr", "--method", "ndfs", "--k", "7", "--params",
                                          "training.epochs=1"])
    assert result.exit_code == 0, result.output
    assert len(kedro_callback) == 1
    assert kedro_callback[0]["params"] == {"training": {"epochs": 1}, "source": "expr",
                                           "selection": {"method": "ndfs", "k": 7}}
    assert not {"source", "input", "orientation", "method", "k", "verbose"} & set(kedro_callback[0])


def test_the_command_refuses_an_option_given_both_ways_that_disagrees(kedro_callback):
    result = CliRunner().invoke(cli.run, ["--k", "100", "--params", "selection.k=50"])
    assert result.exit_code == 2
    assert "--k 100 and --params selection.k=50 disagree: give it once" in result.output
    assert kedro_callback == []


@pytest.mark.parametrize("args", [["--k", "0"], ["--orientation", "genes_in_rows"]])
def test_the_command_refuses_values_its_options_cannot_take(kedro_callback, args):
    result = CliRunner().invoke(cli.run, args)
    assert result.exit_code == 2
    assert f"Invalid value for '{args[0]}'" in result.output
    assert kedro_callback == []


def test_an_undeclared_source_ends_the_run_with_one_message(monkeypatch, tmp_path):
    def refuse(**kwargs):
        raise SourceError("data source 'exp' is not declared (did you mean 'expr'?): declared sources: expr")

    monkeypatch.setattr(kedro_run, "callback", refuse)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli.run, ["--source", "exp"])
    assert result.exit_code == 1
    assert "Error: data source 'exp' is not declared (did you mean 'expr'?): declared sources: expr" in result.output
    assert "Traceback" not in result.output
    assert "SourceError" in (tmp_path / "logs" / "last_error.log").read_text()


# --- kedro dag SOURCE ---------------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A copy of the project declaring the source ``expr`` (its file exists), as the working directory."""
    root = tmp_path / "project"
    local = copy_project(root)
    raw = root / "data" / "01_raw" / "expr.csv"
    raw.parent.mkdir(parents=True)
    raw.write_text("g1,g2\n1,2\n3,4\n")
    (local / "parameters_sources.yml").write_text(
        yaml.safe_dump({"sources": {"expr": {"input": "data/01_raw/expr.csv"}}}))
    monkeypatch.chdir(root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bootstrap_project(root)
    return root


def dag_call(tree: ast.Module) -> dict:
    """The keyword arguments of the ``@dag(...)`` decorator, as Python values where they are literals."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "dag":
            return {kw.arg: kw.value for kw in node.keywords}
    raise AssertionError("no @dag(...) call")


def written_dag(project, said: str) -> tuple[Path, str, ast.Module]:
    """``kedro dag expr`` in ``project``: its file, text and tree, once its one line says ``said`` after the
    path and the file compiles."""
    result = CliRunner().invoke(cli.dag, ["expr"])
    assert result.exit_code == 0, result.output
    path = project / "airflow_dags" / "iclfs_expr.py"
    assert result.output.strip() == f"wrote {path}: the DAG 'iclfs_expr' refreshes 'expr' ({said})"
    text = path.read_text()
    compile(text, str(path), "exec")
    return path, text, ast.parse(text)


def test_dag_writes_a_dag_that_compiles_with_the_schedule_and_the_command(project):
    path, text, tree = written_dag(project, 'schedule "0 3 * * *"')
    call = dag_call(tree)
    assert ast.literal_eval(call["dag_id"]) == "iclfs_expr"
    assert ast.literal_eval(call["schedule"]) == "0 3 * * *"  # conf/base/airflow.yml's
    assert ast.literal_eval(call["max_active_runs"]) == 1
    assert ast.literal_eval(call["catchup"]) is False
    assert "max_active_runs=1" in text and "skip_on_exit_code=None" in text
    assert f"PROJECT = {str(project)!r}" in text
    assert f"COMMAND = '{sys.executable} -m iclfs --pipelines select --source expr --env local'" in text
    assert "def iclfs_expr():" in text
    # no thread policy of its own: the task runs the one in force where Airflow starts it
    assert task_environment(tree) == {"KEDRO_DISABLE_TELEMETRY": "1"}
    assert sorted(p.name for p in path.parent.iterdir()) == ["iclfs_expr.py"]  # no partial file left


def task_environment(tree) -> dict:
    """The ``env`` the DAG's task sets over Airflow's environment."""
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "env":
            return ast.literal_eval(node.value)
    raise AssertionError("no env= in the DAG")


def test_dag_sets_the_thread_policy_airflow_conf_names_in_its_tasks_environment(project):
    (project / "conf" / "local" / "airflow.yml").write_text(yaml.safe_dump({"select": {"thread_policy": "passive"}}))
    _, _, tree = written_dag(project, 'schedule "0 3 * * *"; thread policy passive')
    assert task_environment(tree) == {"KEDRO_DISABLE_TELEMETRY": "1", "ICLFS_THREAD_POLICY": "passive"}


@pytest.mark.parametrize("policy, hint", [("adaptive", " (did you mean 'adaptive-timed'?)"),
                                          ("adaptive-threads", " (did you mean 'adaptive-timed'?)"),
                                          ("Passive", " (did you mean 'passive'?)"),
                                          ("spin\"}; import os; {\"", ""), (3, "")])
def test_dag_refuses_a_thread_policy_the_product_lacks_naming_the_three(project, policy, hint):
    (project / "conf" / "local" / "airflow.yml").write_text(yaml.safe_dump({"select": {"thread_policy": policy}}))
    result = CliRunner().invoke(cli.dag, ["expr"])
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"Error: conf/local/airflow.yml select: thread_policy = {policy!r} is invalid: "
                                    f"expected one of spin, passive, adaptive-timed{hint}, or null (the policy in "
                                    f"force where the task runs: {DEFAULT_POLICY!r} unless its environment sets "
                                    "ICLFS_THREAD_POLICY)")
    assert not (project / "airflow_dags").exists()


def test_dag_takes_its_schedule_and_retries_from_conf_local(project):
    (project / "conf" / "local" / "airflow.yml").write_text(
        yaml.safe_dump({"select": {"schedule": "30 4 * * 1", "retries": 0, "retry_delay": 9}}))
    result = CliRunner().invoke(cli.dag, ["expr"])
    assert result.exit_code == 0, result.output
    text = (project / "airflow_dags" / "iclfs_expr.py").read_text()
    call = dag_call(ast.parse(text))
    assert ast.literal_eval(call["schedule"]) == "30 4 * * 1"
    assert ast.literal_eval(call["max_active_runs"]) == 1  # the default, where conf/local leaves it out
    assert '"retries": 0' in text and "pendulum.duration(minutes=9)" in text
    assert "(schedule \"30 4 * * 1\")" in result.output


def test_dag_refuses_an_undeclared_source_and_writes_nothing(project):
    result = CliRunner().invoke(cli.dag, ["exp"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: data source 'exp' is not declared (did you mean 'expr'?): declared "
                                    "sources: expr.")
    assert not (project / "airflow_dags").exists()


def test_dag_refuses_a_declared_source_whose_file_is_gone(project):
    (project / "data" / "01_raw" / "expr.csv").unlink()
    result = CliRunner().invoke(cli.dag, ["expr"])
    assert result.exit_code == 1
    assert f"Error: sources.expr.input: {project / 'data/01_raw/expr.csv'} does not exist" in result.output
    assert not (project / "airflow_dags").exists()


def test_dag_refuses_an_unknown_key_in_airflow_conf_and_writes_nothing(project):
    (project / "conf" / "local" / "airflow.yml").write_text(yaml.safe_dump({"select": {"schedul": "0 4 * * *"}}))
    result = CliRunner().invoke(cli.dag, ["expr"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: conf/local/airflow.yml select: unknown key(s) schedul; known: schedule, "
                                    "start_date, catchup, max_active_runs, owner, retries, retry_delay, "
                                    "thread_policy")
    assert not (project / "airflow_dags").exists()


def test_dag_writes_where_target_dir_says(project):
    result = CliRunner().invoke(cli.dag, ["expr", "--target-dir", "deploy/dags"])
    assert result.exit_code == 0, result.output
    assert (project / "deploy" / "dags" / "iclfs_expr.py").is_file()
    assert not (project / "airflow_dags").exists()


@pytest.mark.parametrize("select, key", [
    ('{start_date: "2026-01-01"}', "start_date"),
    ("{start_date: 2026-01-01}", "start_date"),
    ("{schedule: null}", "schedule"),
    ('{catchup: "no"}', "catchup"),
])
def test_dag_values_that_python_cannot_hold_are_refused_or_written_as_python(project, select, key):
    (project / "conf" / "local" / "airflow.yml").write_text(f"select: {select}\n")
    result = CliRunner().invoke(cli.dag, ["expr"])
    path = project / "airflow_dags" / "iclfs_expr.py"
    if result.exit_code == 1:  # refused: naming the key, writing nothing
        assert key in result.output and not path.exists()
        return
    assert result.exit_code == 0, result.output
    text = path.read_text()
    compile(text, str(path), "exec")
    value = dag_call(ast.parse(text))[key]
    for node in ast.walk(value):  # every name the value uses is defined: literals, and pendulum's calls
        assert not isinstance(node, ast.Name) or node.id == "pendulum", ast.unparse(value)


def test_params_keep_a_list_whole_where_kedro_would_split_it_at_every_comma():
    option = next(p for p in cli.run.params if p.name == "params")
    context = click.Context(cli.run)
    assert option.callback(context, option, "selection.k_values=[50,100],training.epochs=3") == {
        "selection": {"k_values": [50, 100]}, "training": {"epochs": 3}}
    assert option.callback(context, option, "training.epochs=3,selection.k=5") == {
        "training": {"epochs": 3}, "selection": {"k": 5}}
    with pytest.raises(click.UsageError, match=r"Item `\[1,2\]` must contain a key and a value"):
        option.callback(context, option, "selection.k=5,[1,2]")


def test_dag_refuses_a_section_it_does_not_read_naming_it(project):
    # kedro-airflow's airflow.yml had a `default:` section: not read now, so refused rather than ignored
    (project / "conf" / "local" / "airflow.yml").write_text("default: {schedule: '@hourly'}\n")
    result = CliRunner().invoke(cli.dag, ["expr"])
    assert result.exit_code == 1
    assert "conf/local/airflow.yml: section(s) default are not read; the DAG's settings are the keys of select:" \
        in result.output
    assert not (project / "airflow_dags").exists()


# --- issue 61: the packaged job without Kedro, --k outside the grid, --verbose, one --params parser -------------


BLOCK_KEDRO = """
import sys
class NoKedro:  # this interpreter as one where only the core was installed: kedro cannot be imported
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "kedro":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoKedro())
"""


def test_the_command_without_kedro_says_in_one_line_what_to_install(tmp_path):
    import subprocess

    done = subprocess.run([sys.executable, "-c", BLOCK_KEDRO + "from iclfs.__main__ import main\nmain()"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        "Error: the iclfs command runs the Kedro project, and kedro is not installed here: install iclfs with its "
        "kedro extra, pip install 'iclfs[kedro]' (from a wheel: pip install 'iclfs-<version>-py3-none-any.whl"
        "[kedro]'). The selector alone (from iclfs import ICLFSSelector) needs no extra."]


def test_a_k_outside_the_grid_says_how_to_allow_it(project):
    from iclfs.method._config import Settings

    result = CliRunner().invoke(cli.run, ["--k", "75", "--params", "selection.k_values=[50,100]"])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert errors == ["Error: parameter selection.k = 75 is invalid: expected 'auto' or one of selection.k_values "
                      "[50, 100]. To allow it, add it to the grid: --params selection.k_values=[50,75,100] (or "
                      "selection.k_values in conf/local/parameters.yml)"], result.output
    # the line it gives is one the run reads: the same k accepted on that grid
    option = next(p for p in cli.run.params if p.name == "params")
    given = option.callback(click.Context(cli.run), option, "selection.k_values=[50,75,100],selection.k=75")
    assert Settings().with_overrides("selection.k_values=[50,75,100],selection.k=75").selection.k == \
        given["selection"]["k"] == 75


def test_verbose_shows_the_lines_a_quiet_conf_holds_back():
    catalog = logging.getLogger("kedro.io.data_catalog")
    before = catalog.level
    catalog.setLevel(logging.WARNING)  # the quiet default of logging.yml
    try:
        cli.verbose_logs()
        assert catalog.getEffectiveLevel() == logging.INFO
        assert logging.getLogger("iclfs").getEffectiveLevel() <= logging.INFO
    finally:
        catalog.setLevel(before)


@pytest.mark.parametrize("given, expected", [
    ("training.epochs=3", {"training": {"epochs": 3}}),
    ("selection.k_values=[50,100],training.epochs=3",
     {"selection": {"k_values": [50, 100]}, "training": {"epochs": 3}}),
    ("members.carry=true,data_source=expr", {"members": {"carry": True}, "data_source": "expr"}),
    ("input=", {"input": None}),  # as Kedro reads it; the run refuses an empty input by name
    (" a.b = 1 , c=x", {"a": {"b": 1}, "c": "x"}),
])
def test_params_are_read_by_one_parser_whether_or_not_a_value_holds_a_list(given, expected):
    option = next(p for p in cli.run.params if p.name == "params")
    assert option.callback(click.Context(cli.run), option, given) == expected


@pytest.mark.slow  # kedro-viz starts in seconds to a minute
def test_iclfs_viz_serves_the_project_and_sigterm_stops_its_server(tmp_path):
    import os
    import signal
    import socket
    import subprocess
    import time
    import urllib.request

    from tests.conftest import PROJECT_ROOT
    from tests.pipelines.test_viz import free_port

    port = free_port()
    log = tmp_path / "viz.log"
    with log.open("w") as handle:
        process = subprocess.Popen([sys.executable, "-m", "iclfs", "viz", "--no-browser", "--port", str(port)],
                                   cwd=PROJECT_ROOT, stdout=handle, stderr=subprocess.STDOUT,
                                   env={**os.environ, "KEDRO_DISABLE_TELEMETRY": "1"})
    try:
        deadline = time.time() + 180
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/main", timeout=10) as response:
                    assert response.status == 200
                break
            except OSError:
                assert process.poll() is None and time.time() < deadline, log.read_text()[-3000:]
                time.sleep(1)
        process.send_signal(signal.SIGTERM)  # what a terminal's close or a service manager sends: to iclfs only
        assert process.wait(timeout=60) == 0, log.read_text()[-3000:]
        deadline = time.time() + 30
        while True:  # the server went with it: nothing listens on the port any more
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) != 0:
                    break
            assert time.time() < deadline, "kedro-viz's server still listens after iclfs viz stopped"
            time.sleep(0.5)
        assert "kedro-viz stopped" in log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
