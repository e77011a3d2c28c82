"""Data sources declared in conf (``sources:`` in parameters_sources.yml), run by name with ``source=<name>``.

The checks of :mod:`iclfs.project._sources` on their own, then through a real Kedro session in a copy of the
project: the declaration becomes the run's parameters and its raw_data, and a bad one is refused before anything
is written under data/.
"""

from __future__ import annotations

import logging
import re
import warnings
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
import yaml
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project

from iclfs.project._sources import SourceError, check_declarations, expand, merge
from tests.project_copy import copy_project, run_session

pytestmark = pytest.mark.filterwarnings("ignore:register_new_resolver:UserWarning")  # omegaconf's, in Kedro


@pytest.fixture
def table(tmp_path) -> Path:
    """A file a declaration can point at: tmp_path/data/01_raw/expr.csv."""
    path = tmp_path / "data" / "01_raw" / "expr.csv"
    path.parent.mkdir(parents=True)
    path.write_text("g1,g2\n1,2\n3,4\n")
    return path


# --- the declarations ---------------------------------------------------------------------------------------


def test_an_undeclared_source_is_refused_naming_the_declared_ones_with_a_did_you_mean(table, tmp_path):
    sources = {"expr": {"input": str(table)}, "proteome": {"input": str(table)}}
    with pytest.raises(SourceError) as caught:
        expand("exrp", sources, tmp_path)
    assert str(caught.value).startswith(
        "data source 'exrp' is not declared (did you mean 'expr'?): declared sources: expr, proteome. "
        "Declare it under sources: in conf/local/parameters_sources.yml")


def test_a_source_with_nothing_declared_says_none_yet(tmp_path):
    with pytest.raises(SourceError, match=r"data source 'expr' is not declared: declared sources: none yet\."):
        expand("expr", {}, tmp_path)
    with pytest.raises(SourceError, match=r"declared sources: none yet"):
        expand("expr", None, tmp_path)


def test_an_unknown_key_is_refused_with_a_did_you_mean():
    with pytest.raises(SourceError) as caught:
        check_declarations({"expr": {"input": "data/01_raw/expr.csv", "orientaton": "features_in_rows"}})
    message = str(caught.value)
    assert message.startswith("sources.expr: unknown key(s) 'orientaton' (did you mean 'orientation'?); ")
    assert message.endswith("a source may set input, orientation, id_column, label_column, sep, decimal, method, "
                            "n_clusters")


def test_every_known_key_is_accepted_and_returned_as_given():
    declaration = {"input": "a.csv", "orientation": "samples_in_rows", "id_column": "id", "label_column": "y",
                   "sep": ";", "decimal": "comma", "method": "ndfs", "n_clusters": 4}
    assert check_declarations({"expr": declaration}) == {"expr": declaration}
    assert check_declarations(None) == {}
    assert check_declarations({}) == {}


@pytest.mark.parametrize("name", ["../x", "a/b", ".hidden", ""])
def test_a_name_that_is_not_a_plain_folder_name_is_refused(name):
    with pytest.raises(SourceError) as caught:
        check_declarations({name: {"input": "data/01_raw/expr.csv"}})
    assert str(caught.value).startswith(f"sources: data_source {name!r} is not allowed: use letters, digits")


def test_two_names_that_differ_only_by_case_are_refused():
    with pytest.raises(SourceError) as caught:
        check_declarations({"Expr": {"input": "a.csv"}, "expr": {"input": "b.csv"}})
    assert str(caught.value).startswith("sources: 'Expr' and 'expr' name one data source: data/<layer>/expr/ on a "
                                        "disk that ignores case")


@pytest.mark.parametrize("declaration", [{"method": "ls"}, {"input": None}, {"input": ""}])
def test_a_declaration_without_input_is_refused(declaration):
    with pytest.raises(SourceError) as caught:
        check_declarations({"expr": declaration})
    assert str(caught.value) == ("sources.expr.input is missing: give the table's file, e.g. "
                                 "input: data/01_raw/expr.tsv")


@pytest.mark.parametrize("sources, message", [
    (["expr"], "sources must be a mapping of names to declarations, got list"),
    ({"expr": "data/01_raw/expr.csv"}, "sources.expr must be a mapping of keys"),
])
def test_declarations_that_are_not_mappings_are_refused(sources, message):
    with pytest.raises(SourceError, match=message):
        check_declarations(sources)


def test_an_input_file_that_does_not_exist_is_refused_with_its_path(tmp_path):
    with pytest.raises(SourceError) as caught:
        expand("expr", {"expr": {"input": "data/01_raw/missing.csv"}}, tmp_path)
    assert str(caught.value) == f"sources.expr.input: {tmp_path / 'data/01_raw/missing.csv'} does not exist"


def test_a_folder_as_input_is_refused(table, tmp_path):
    with pytest.raises(SourceError) as caught:
        expand("expr", {"expr": {"input": "data/01_raw"}}, tmp_path)
    assert str(caught.value) == f"sources.expr.input: {tmp_path / 'data/01_raw'} is a folder, not a file"


def test_a_bad_orientation_is_refused_with_a_did_you_mean():
    with pytest.raises(SourceError) as caught:
        check_declarations({"expr": {"input": "a.csv", "orientation": "features_in_row"}})
    assert str(caught.value) == ("sources.expr.orientation = 'features_in_row': expected one of samples_in_rows, "
                                 "features_in_rows (did you mean 'features_in_rows'?)")


def test_a_relative_input_is_resolved_against_the_project_folder_and_the_declaration_becomes_parameters(
        table, tmp_path, monkeypatch):
    monkeypatch.chdir(table.parent)  # not the project folder: the input must not depend on it
    declared = {"expr": {"input": "data/01_raw/expr.csv", "orientation": "features_in_rows", "id_column": None,
                         "method": "ndfs", "n_clusters": 3}}
    assert expand("expr", declared, tmp_path) == {
        "input": str(tmp_path / "data" / "01_raw" / "expr.csv"), "orientation": "features_in_rows",
        "data_source": "expr", "selection": {"method": "ndfs", "n_clusters": 3}}


def test_an_absolute_input_is_kept_and_a_source_without_method_sets_no_selection(table, tmp_path):
    assert expand("expr", {"expr": {"input": str(table)}}, tmp_path / "elsewhere") == {
        "input": str(table), "data_source": "expr"}


def test_a_value_given_on_the_command_line_wins_over_the_declaration(table, tmp_path):
    declared = expand("expr", {"expr": {"input": str(table), "orientation": "features_in_rows", "method": "ndfs",
                                        "n_clusters": 3}}, tmp_path)
    given = {"source": "expr", "orientation": "samples_in_rows", "selection": {"method": "ls", "k": 20}}
    merged = merge(declared, given)
    assert merged == {"input": str(table), "orientation": "samples_in_rows", "data_source": "expr",
                      "source": "expr", "selection": {"method": "ls", "n_clusters": 3, "k": 20}}
    assert declared["selection"] == {"method": "ndfs", "n_clusters": 3}  # the declaration itself is untouched


# --- through a Kedro session in a copy of the project ---------------------------------------------------------

GENES = [f"ENSG{j:05d}" for j in range(30)]
SAMPLES = [f"GSM{100 + i}" for i in range(20)]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A copy of the project declaring ``expr``: a 30 genes x 20 samples file, features in rows, method ndfs."""
    root = tmp_path / "project"
    local = copy_project(root)
    values = np.random.default_rng(0).normal(size=(30, 20)).round(4)
    raw = root / "data" / "01_raw" / "expr.csv"
    raw.parent.mkdir(parents=True)
    pd.DataFrame(values, index=pd.Index(GENES, name="gene_id"), columns=SAMPLES).to_csv(raw)
    (local / "parameters_sources.yml").write_text(yaml.safe_dump({"sources": {"expr": {
        "input": "data/01_raw/expr.csv", "orientation": "features_in_rows", "method": "ndfs", "n_clusters": 3}}}))
    monkeypatch.chdir(root)
    bootstrap_project(root)
    handlers = list(logging.getLogger().handlers)  # the session swaps the root's off a terminal: put them back
    yield root
    logging.getLogger().handlers[:] = handlers
    mlflow.set_tracking_uri(None)


def context_of(root: Path, **runtime_params):
    """The context of a session in ``root`` with ``runtime_params``, and the session (close it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = KedroSession.create(project_path=root, runtime_params=runtime_params)
        return session, session.load_context()


def written(root: Path) -> list[str]:
    """Every file under root/data/ but the input."""
    return sorted(str(p.relative_to(root)) for p in (root / "data").rglob("*")
                  if p.is_file() and p.name != "expr.csv")


def test_the_session_runs_the_declared_source_by_name(project, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the declaration's relative input is the project's, wherever the command runs
    session, context = context_of(project, source="expr")
    with session:
        params = context.params
        assert params["input"] == str(project / "data" / "01_raw" / "expr.csv")
        assert params["data_source"] == "expr"
        assert params["orientation"] == "features_in_rows"
        assert params["selection"]["method"] == "ndfs"
        assert params["selection"]["n_clusters"] == 3
        assert params["selection"]["k"] == 50  # conf/base's, beside the declared keys
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw = context.catalog.load("raw_data")
    assert raw.source == str(project / "data" / "01_raw" / "expr.csv")
    assert raw.X.shape == (20, 30)  # the declared orientation: 20 samples of 30 genes
    assert list(raw.feature_names) == GENES
    assert list(raw.sample_ids) == SAMPLES
    assert written(project) == []


def test_the_command_line_wins_over_the_declaration_in_a_session(project):
    session, context = context_of(project, source="expr", selection={"method": "ls"}, orientation="features_in_rows")
    with session:
        assert context.params["selection"]["method"] == "ls"
        assert context.params["selection"]["n_clusters"] == 3
        assert context.params["data_source"] == "expr"


def test_without_a_source_the_declaration_sets_nothing(project):
    session, context = context_of(project)
    with session:
        assert context.params["selection"]["method"] == "iclfs"
        assert context.params.get("input") is None
        assert context.params["sources"]["expr"]["method"] == "ndfs"


@pytest.mark.parametrize("declaration, message", [
    ({"input": "data/01_raw/expr.csv", "orientation": "genes_in_rows"}, "sources.expr.orientation = 'genes_in_rows'"),
    ({"input": "data/01_raw/expr.csv", "methd": "ndfs"}, "unknown key(s) 'methd' (did you mean 'method'?)"),
    ({"input": "data/01_raw/gone.csv"}, "gone.csv does not exist"),
])
def test_a_bad_declaration_in_conf_local_is_refused_before_anything_is_written(project, declaration, message):
    (project / "conf" / "local" / "parameters_sources.yml").write_text(
        yaml.safe_dump({"sources": {"expr": declaration}}))
    with pytest.raises(SourceError) as caught:  # a whole select run, refused before its first node
        run_session(project, pipeline_names=["select"], runtime_params={"source": "expr"})
    assert message in str(caught.value)
    assert written(project) == []
    with pytest.raises(SourceError, match=re.escape(message)):
        session, context = context_of(project, source="expr")
        with session:
            context.params  # noqa: B018  (reading them is what refuses)


def test_an_undeclared_source_is_refused_in_a_session(project):
    with pytest.raises(SourceError, match=r"data source 'exp' is not declared \(did you mean 'expr'\?\): "
                                          r"declared sources: expr\."):
        session, context = context_of(project, source="exp")
        with session:
            context.params  # noqa: B018
    assert written(project) == []


def test_a_bad_declaration_is_refused_even_when_another_run_reads_the_parameters(project):
    (project / "conf" / "local" / "parameters_sources.yml").write_text(
        yaml.safe_dump({"sources": {"expr": {"orientation": "features_in_rows"}}}))
    with pytest.raises(SourceError, match=r"sources\.expr\.input is missing"):
        session, context = context_of(project)
        with session:
            context.params  # noqa: B018


def test_a_source_missing_from_a_conf_archive_is_refused_naming_conf_base(tmp_path):
    # kedro package's conf archive holds no conf/local: pointing the user there would send them nowhere
    with pytest.raises(SourceError) as caught:
        expand("expr", {}, tmp_path, archive=True)
    assert str(caught.value) == (
        "data source 'expr' is not declared: declared sources: none yet. A conf archive holds no conf/local (kedro "
        "package leaves it out): declare it in conf/base/parameters_sources.yml before packaging, or give "
        "--conf-source a conf folder holding base/ and local/ (docs/guides/scheduling.md, 'The packaged job')")
