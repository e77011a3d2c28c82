"""Issue 58's rows on the DAG writer, data sources and tables: each case a test that failed before its fix.

``kedro dag`` runs as the user runs it (the project's click command in a copy of the project, a real Kedro
config loader); the DAG it writes is imported in a subprocess, with stand-ins for Airflow and pendulum (which
live in Airflow's own venv, not the project's), to show that importing it runs no value it holds. The last test
maps each row of the issue to its test.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from kedro.framework.startup import bootstrap_project

from iclfs import cli
from iclfs.project._dag import write_dag
from iclfs.project._resolvers import DataSourceError, check_data_source
from iclfs.project._sources import SourceError, check_declarations
from tests.project_copy import copy_project
from tests.test_cli import root_handlers  # noqa: F401  (autouse: the commands swap the root logger's handlers)

pytestmark = pytest.mark.filterwarnings("ignore:register_new_resolver:UserWarning")  # omegaconf's, in Kedro

#: A value that is code once it leaves its literal: it closes a docstring, a string of either quote, a line.
PAYLOAD = '""";__import__("os").system("touch PWNED");"""\'\'\';__import__("os").system("touch PWNED");#\n'


def make_project(root: Path, monkeypatch, declaration: dict | None = None) -> Path:
    """A copy of the project at ``root`` declaring the source ``expr`` (its file exists), as the working dir."""
    local = copy_project(root)
    raw = root / "data" / "01_raw" / "expr.csv"
    raw.parent.mkdir(parents=True)
    raw.write_text("g1,g2\n1,2\n3,4\n")
    (local / "parameters_sources.yml").write_text(
        yaml.safe_dump({"sources": {"expr": declaration or {"input": "data/01_raw/expr.csv"}}}))
    monkeypatch.chdir(root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bootstrap_project(root)
    return root


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    return make_project(tmp_path / "project", monkeypatch)


STUBS = {
    # What the DAG file uses of Airflow's and pendulum's API, recording what it is given.
    "airflow/__init__.py": "",
    "airflow/sdk.py": textwrap.dedent("""\
        CALLS = {}

        def dag(**kwargs):
            CALLS["dag"] = kwargs
            return lambda function: (lambda: function())

        class task:
            @staticmethod
            def bash(**kwargs):
                CALLS["task"] = kwargs
                return lambda function: (lambda: CALLS.setdefault("command", function()))
        """),
    "pendulum.py": "def datetime(*args, **kwargs):\n    return list(args)\n\n"
                   "def duration(**kwargs):\n    return kwargs\n",
}


def import_dag(path: Path, where: Path) -> dict:
    """Import the DAG file as Airflow's scheduler does, in a subprocess run in ``where``; what it declared."""
    stubs = where / "stubs"
    for name, text in STUBS.items():
        (stubs / name).parent.mkdir(parents=True, exist_ok=True)
        (stubs / name).write_text(text)
    script = textwrap.dedent(f"""\
        import json, runpy, sys
        sys.path.insert(0, {str(stubs)!r})
        module = runpy.run_path({str(path)!r})
        from airflow.sdk import CALLS
        print(json.dumps({{"doc": module["__doc__"], "project": module["PROJECT"], "command": module["COMMAND"],
                          "dag_id": CALLS["dag"]["dag_id"], "schedule": CALLS["dag"]["schedule"],
                          "owner": CALLS["dag"]["default_args"]["owner"], "tags": CALLS["dag"]["tags"],
                          "task_command": CALLS["command"]}}))
        """)
    done = subprocess.run([sys.executable, "-c", script], cwd=where, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def only_literals(text: str) -> None:
    """The module holds a docstring, imports, constants, one decorated function and its call: no other code."""
    tree = ast.parse(text)
    assert isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant)
    for node in tree.body[1:]:
        assert isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign, ast.FunctionDef, ast.Expr)), ast.dump(node)
        if isinstance(node, ast.Assign):
            assert isinstance(node.value, ast.Constant), ast.unparse(node)
        if isinstance(node, ast.Expr):
            assert isinstance(node.value, ast.Call) and not node.value.args, ast.unparse(node)
    called = {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert called <= {"dag", "task.bash", "pendulum.datetime", "pendulum.duration", "select",
                      tree.body[-1].value.func.id}, called


def no_pwned(root: Path) -> None:
    assert not [path for path in root.rglob("PWNED")], "a value in the DAG ran as code"


# --- security: no value reaches the DAG except as a literal --------------------------------------------------


def test_a_hostile_environment_name_is_written_only_as_a_literal(project, tmp_path):
    env = "prod" + PAYLOAD
    (project / "conf" / env).mkdir()
    (project / "conf" / env / "parameters_sources.yml").write_text(
        (project / "conf" / "local" / "parameters_sources.yml").read_text())
    result = CliRunner().invoke(cli.dag, ["expr", "--env", env])
    assert result.exit_code == 0, result.output
    path = project / "airflow_dags" / "iclfs_expr.py"
    only_literals(path.read_text())
    seen = import_dag(path, tmp_path)
    no_pwned(tmp_path)
    assert repr(env) in seen["doc"]
    assert seen["command"] == seen["task_command"]
    assert seen["command"].endswith(" --env " + __import__("shlex").quote(env))


@pytest.mark.parametrize("key", ["schedule", "owner"])
def test_hostile_strings_in_airflow_conf_are_written_only_as_literals(project, tmp_path, key):
    (project / "conf" / "local" / "airflow.yml").write_text(yaml.safe_dump({"select": {key: "x" + PAYLOAD}}))
    result = CliRunner().invoke(cli.dag, ["expr"])
    assert result.exit_code == 0, result.output
    path = project / "airflow_dags" / "iclfs_expr.py"
    only_literals(path.read_text())
    seen = import_dag(path, tmp_path)
    no_pwned(tmp_path)
    assert seen[key] == "x" + PAYLOAD


def test_a_hostile_project_folder_target_folder_and_interpreter_are_written_only_as_literals(tmp_path, monkeypatch):
    root = make_project(tmp_path / ("p" + PAYLOAD.replace("/", "")), monkeypatch)
    target = root / ("dags" + PAYLOAD)
    python = str(tmp_path / ("py" + PAYLOAD) / "python")
    path = write_dag("expr", env="local", target=target, project=root, python=python)
    assert path.parent == target
    only_literals(path.read_text())
    seen = import_dag(path, tmp_path)
    no_pwned(tmp_path)
    assert seen["project"] == str(root)
    assert seen["command"].startswith(__import__("shlex").quote(python) + " -m iclfs ")


@pytest.mark.parametrize("name", ["nl\n", 'a"b', "x';import os;'", "x\"\"\"", "é"])
def test_a_hostile_source_name_is_refused_and_nothing_is_written(project, name):
    (project / "conf" / "local" / "parameters_sources.yml").write_text(
        yaml.safe_dump({"sources": {name: {"input": "data/01_raw/expr.csv"}}}))
    result = CliRunner().invoke(cli.dag, [name])
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"Error: sources: data_source {name!r} is not allowed: use letters, digits")
    assert "Traceback" not in result.output
    assert not (project / "airflow_dags").exists()


# --- the DAG writer and data sources ------------------------------------------------------------------------


def test_a_name_with_a_trailing_newline_is_refused():
    with pytest.raises(DataSourceError, match=r"data_source 'nl\\n' is not allowed"):
        check_data_source("nl\n")
    with pytest.raises(SourceError, match=r"sources: data_source 'nl\\n' is not allowed"):
        check_declarations({"nl\n": {"input": "a.csv"}})


def one_line_refusal(result, project: Path, starts: str) -> None:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    first = result.output.splitlines()[0]
    assert first.startswith("Error: " + starts), result.output
    assert not (project / "airflow_dags").exists()


def test_a_yaml_tag_in_a_declaration_is_one_line_naming_the_file_and_the_tag(project):
    (project / "conf" / "local" / "parameters_sources.yml").write_text(
        'sources:\n  expr: !!python/object/apply:os.system ["touch PWNED"]\n')
    result = CliRunner().invoke(cli.dag, ["expr"])
    one_line_refusal(result, project, "conf/local/parameters_sources.yml line 2: the YAML tag "
                                      "!!python/object/apply:os.system is not read")
    no_pwned(project)


def test_sources_given_as_a_list_is_one_line_naming_the_file(project):
    (project / "conf" / "local" / "parameters_sources.yml").write_text("sources:\n  - expr\n")
    result = CliRunner().invoke(cli.dag, ["expr"])
    one_line_refusal(result, project, "conf/local/parameters_sources.yml: sources is a list, where "
                                      "conf/base/parameters_sources.yml holds a mapping: give sources: as a mapping")


@pytest.mark.parametrize("select", ["select:\n  - '0 3 * * *'\n", "select: []\n", "select: 3\n"])
def test_airflow_select_given_as_a_list_is_one_line(project, select):
    (project / "conf" / "local" / "airflow.yml").write_text(select)
    result = CliRunner().invoke(cli.dag, ["expr"])
    one_line_refusal(result, project, "conf/local/airflow.yml select must be a mapping of settings")


def test_an_unknown_environment_is_named_by_kedro_dag(project):
    result = CliRunner().invoke(cli.dag, ["expr", "--env", "nosuchenv"])
    one_line_refusal(result, project, "environment 'nosuchenv' is not in ")
    assert "the environments are base, local" in result.output


def test_a_misspelt_method_in_a_declaration_is_refused_when_the_dag_is_written(project):
    (project / "conf" / "local" / "parameters_sources.yml").write_text(
        yaml.safe_dump({"sources": {"expr": {"input": "data/01_raw/expr.csv", "method": "nfds"}}}))
    result = CliRunner().invoke(cli.dag, ["expr"])
    one_line_refusal(result, project, "sources.expr.method = 'nfds' is not a method (did you mean 'ndfs'?)")


def run_refused(project: Path, args: list[str]) -> str:
    """The project's run command on ``args`` in ``project``: refused, one message, nothing written under data/."""
    result = CliRunner().invoke(cli.run, args)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert sorted(p.name for p in (project / "data").iterdir()) == ["01_raw"]
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.output
    return errors[0]


def test_another_input_for_a_source_declared_with_its_own_reading_is_refused(tmp_path, monkeypatch):
    project = make_project(tmp_path / "project", monkeypatch,
                           {"input": "data/01_raw/expr.csv", "orientation": "features_in_rows"})
    (project / "data" / "01_raw" / "other.csv").write_text("g1,g2\n1,2\n3,4\n")
    first = run_refused(project, ["--source", "expr", "--input", "data/01_raw/other.csv"])
    assert first == ("Error: --input data/01_raw/other.csv replaces the file of the data source 'expr', but its "
                     f"declaration's orientation='features_in_rows' was made for {project / 'data/01_raw/expr.csv'}: "
                     "give them for the other file too (--params orientation=...), or run the file without --source")


def test_an_empty_source_is_refused_like_an_empty_input(project):
    first = run_refused(project, ["--params", "source="])
    assert first.startswith("Error: source is empty (--params source=): give a declared data source's name")


def test_the_benchmark_without_its_files_is_one_line(project):
    (project / "conf" / "local" / "parameters.yml").write_text(
        yaml.safe_dump({"benchmark": {"folders": [str(project / "nowhere")]}}))
    bootstrap_project(project)  # the registry reads conf when the pipelines are first asked for
    result = CliRunner().invoke(cli.run, ["--pipelines", "benchmark", "--params", "benchmark.datasetz=[x]"])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert (f"pipeline 'benchmark' has no datasets: none of benchmark.datasets has its <name>.mat file in "
            f"benchmark.folders ({project / 'nowhere'}). Put the scikit-feature .mat files there") in result.output


# --- tables and methods -------------------------------------------------------------------------------------


def test_a_first_column_of_sample_ids_is_named_as_id_column_in_the_refusal(tmp_path):
    import gzip

    from iclfs.io._tables import read_feature_table
    from iclfs.method._preprocessing import DataValidationError, prepare

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.random((6, 12)), columns=[f"g{j}" for j in range(12)])
    frame.insert(0, "sample_id", [f"s{i}" for i in range(6)])
    path = tmp_path / "expr.tsv.gz"
    path.write_bytes(gzip.compress(frame.to_csv(sep="\t", index=False).encode()))
    with pytest.raises(DataValidationError) as caught:
        prepare(read_feature_table(path))
    assert "The first column 'sample_id' holds a distinct name on every row ('s0', 's1', 's2', ...): if these are " \
           "the sample ids, say so with id_column=sample_id (--params id_column=sample_id" in str(caught.value)
    # and with it, the table reads: the ids kept aside, the twelve genes the features
    table = read_feature_table(path, id_column="sample_id")
    assert prepare(table).feature_names == [f"g{j}" for j in range(12)]
    assert list(table.sample_ids) == [f"s{i}" for i in range(6)]


def test_variance_on_a_standardized_table_warns_that_every_variance_is_equal(caplog):
    from iclfs import BaselineSelector

    X = np.random.default_rng(1).normal(size=(30, 6))
    X = (X - X.mean(0)) / X.std(0, ddof=1)
    with caplog.at_level("WARNING", logger="iclfs.baselines._variance"):
        BaselineSelector("variance", 2).fit(X)
    assert "variance: all 6 varying features have the same variance (1): the order among them is rounding's" \
        in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="iclfs.baselines._variance"):
        BaselineSelector("variance", 2).fit(X * np.arange(1, 7))  # unequal: no warning
    assert "same variance" not in caplog.text


def test_variance_on_values_near_1e_300_that_vary_ranks_them_as_at_scale_1(caplog):
    from iclfs import BaselineSelector

    X = np.random.default_rng(2).random((30, 6)) * np.array([1, 5, 2, 4, 3, 6])
    expected = BaselineSelector("variance", 6).fit(X).selected_features_
    with caplog.at_level("WARNING", logger="iclfs.baselines._variance"):
        tiny = BaselineSelector("variance", 6).fit(X * 1e-300)
    np.testing.assert_array_equal(tiny.selected_features_, expected)
    assert np.all(tiny.scores_ > 0)  # not "constant"
    assert "the scores are those of the table times 2**" in caplog.text


def test_dispersion_refusal_names_the_gene_and_the_sample_of_a_genes_in_rows_file(tmp_path):
    from iclfs.chain import prepare_checked
    from iclfs.io._tables import read_feature_table
    from iclfs.method._config import Settings
    from iclfs.method._preprocessing import DataValidationError

    rng = np.random.default_rng(3)
    values = rng.uniform(1, 5, size=(12, 8))  # 12 genes x 8 samples, as the file holds them
    values[7, 5] = -0.25  # gene ENSG7 in sample GSM105
    frame = pd.DataFrame(values, columns=[f"GSM10{j}" for j in range(8)])
    frame.insert(0, "gene", [f"ENSG{i}" for i in range(12)])
    path = tmp_path / "genes.csv"
    frame.to_csv(path, index=False)
    table = read_feature_table(path, orientation="features_in_rows")
    settings = Settings().with_overrides("selection.method=dispersion,selection.k=2,selection.k_values=[2]")
    with pytest.raises(DataValidationError) as caught:
        prepare_checked(table, settings)
    assert "1 value(s) are negative, the first for feature 'ENSG7' in sample 'GSM105': -0.25." in str(caught.value)


def test_names_that_differ_by_a_trailing_space_are_shown_quoted_in_the_summary_sentences():
    from iclfs.pipelines.report._report import change_sentences, shown_name

    changes = {"previous_version": "v1", "features_dropped": 1, "dropped": ["h10"], "features_added": 1,
               "added": ["h10 "]}
    text = " | ".join(change_sentences(changes))
    assert "1 feature(s) dropped from the table: h10;" in text
    assert "1 feature(s) new to the table: 'h10 '" in text
    assert [shown_name(name) for name in ("h10", " h10", "", "a\tb", "gène")] == [
        "h10", "' h10'", "''", "'a\\tb'", "gène"]


#: Issue 58's rows "The DAG writer and data sources" and "Tables and methods", and its rule on generated code,
#: each with its test.
ROWS = {
    "kedro dag SRC --env '<name>' whose name holds code (security)":
        test_a_hostile_environment_name_is_written_only_as_a_literal,
    "no value from a name, path or environment reaches generated code (airflow.yml strings)":
        test_hostile_strings_in_airflow_conf_are_written_only_as_literals,
    "no value from a name, path or environment reaches generated code (project folder, target, interpreter)":
        test_a_hostile_project_folder_target_folder_and_interpreter_are_written_only_as_literals,
    "no value from a name, path or environment reaches generated code (source names)":
        test_a_hostile_source_name_is_refused_and_nothing_is_written,
    "a source declared with a trailing newline in its name": test_a_name_with_a_trailing_newline_is_refused,
    "a declaration with a YAML tag (!!python/object/apply:os.system)":
        test_a_yaml_tag_in_a_declaration_is_one_line_naming_the_file_and_the_tag,
    "sources: given as a YAML list": test_sources_given_as_a_list_is_one_line_naming_the_file,
    "airflow.yml's select: given as a list": test_airflow_select_given_as_a_list_is_one_line,
    "kedro dag SRC --env nosuchenv": test_an_unknown_environment_is_named_by_kedro_dag,
    "a declared method: nfds (typo)": test_a_misspelt_method_in_a_declaration_is_refused_when_the_dag_is_written,
    "--source SRC --input other.csv": test_another_input_for_a_source_declared_with_its_own_reading_is_refused,
    "--params source= (empty)": test_an_empty_source_is_refused_like_an_empty_input,
    "kedro run --pipelines benchmark with no scikit-feature files, plus a misspelt key":
        test_the_benchmark_without_its_files_is_one_line,
    "a samples-in-rows .tsv.gz whose first column sample_id holds s0, s1, ...":
        test_a_first_column_of_sample_ids_is_named_as_id_column_in_the_refusal,
    "five feature names given a trailing space":
        test_names_that_differ_by_a_trailing_space_are_shown_quoted_in_the_summary_sentences,
    "variance on a table already standardized":
        test_variance_on_a_standardized_table_warns_that_every_variance_is_equal,
    "variance on values around 1e-300 that vary":
        test_variance_on_values_near_1e_300_that_vary_ranks_them_as_at_scale_1,
}


def test_every_dag_source_and_table_row_of_issue_58_has_its_test():
    assert len(ROWS) == 17 and all(test.__name__.startswith("test_") for test in ROWS.values())
    assert len(set(ROWS.values())) == len(ROWS)


def test_a_missing_value_in_a_genes_in_rows_file_is_named_by_its_gene_and_sample(tmp_path):
    """Issue 61 item 7, for every message about a cell: the names read the same in the file's own layout."""
    from iclfs.io._tables import read_feature_table
    from iclfs.method._preprocessing import DataValidationError, prepare

    values = np.random.default_rng(4).uniform(1, 5, size=(6, 5))
    frame = pd.DataFrame(values, columns=[f"GSM20{j}" for j in range(5)])
    frame.iloc[4, 2] = np.nan  # gene ENSG4 in sample GSM202
    frame.insert(0, "gene", [f"ENSG{i}" for i in range(6)])
    frame.to_csv(tmp_path / "genes.csv", index=False)
    with pytest.raises(DataValidationError) as caught:
        prepare(read_feature_table(tmp_path / "genes.csv", orientation="features_in_rows"))
    assert "found 1 NaN and 0 infinite value(s) in the data matrix (samples x features), first at (row 2, column 4); " \
           "the first is feature 'ENSG4' in sample 'GSM202'. Impute or drop them first." in str(caught.value)
