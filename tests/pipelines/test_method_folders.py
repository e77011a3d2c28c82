"""Each method's versions under a folder that names it (issue 61): ``data/<layer>/<source>/<method>/<file>/``.

Two methods on one data source write apart and each finds its own list; the
run records, the latest switch and the member history stay the data
source's; a store an earlier version wrote without method folders is still
read for the hold and never moved.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path, PurePosixPath

import pandas as pd
import pytest

from kedro.io.core import Version

from iclfs.io.datasets import CSVDataset, MemberHistoryView, PreviousVersionDataset
from tests.conftest import PROJECT_ROOT
from tests.pipelines.test_trust import GENES, kedro, project_at, table

SOURCE = "t"
#: What a method makes, in its folder: its models, lists, tables and report.
METHOD_LAYERS = ("06_models", "07_model_output", "08_reporting")


def versions(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) if folder.is_dir() else []


def records(project: Path) -> list[dict]:
    """The data source's run records, oldest first."""
    folder = project / "data/08_reporting" / SOURCE / "run_record.json"
    return [json.loads((folder / v / "run_record.json").read_text()) for v in versions(folder)]


def select(project: Path, method: str, *params: str):
    outcome = kedro(project, f"input={project / 'expr.csv'}", f"data_source={SOURCE}", f"selection.method={method}",
                    *params)
    assert outcome.code == 0, outcome.output[-4000:]
    return outcome


@pytest.fixture
def project(tmp_path):
    root = project_at(tmp_path)
    table(root / "expr.csv", GENES)
    return root


# -- the catalog names the run's method -------------------------------------------------------------------------------


def catalog_of(conf: Path, runtime_params: dict | None = None) -> dict:
    from iclfs.project._conf import CONFIG_LOADER_ARGS, ProjectConfigLoader

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ProjectConfigLoader(str(conf), **CONFIG_LOADER_ARGS, runtime_params=runtime_params)["catalog"]


def test_the_catalog_puts_a_methods_artifacts_in_its_folder_and_the_sources_stores_beside_them(tmp_path):
    project = project_at(tmp_path, {"selection": {"method": "variance"}})  # conf/local, not --params
    catalog = catalog_of(project / "conf", {"data_source": "expr"})
    assert catalog["feature_list"]["filepath"] == "data/07_model_output/expr/variance/feature_list.csv"
    assert catalog["run_report"]["filepath"] == "data/08_reporting/expr/variance/run_report.html"
    assert catalog["model_state"]["filepath"] == "data/06_models/expr/variance/model_state.pt"
    # the table, the run records and the member history (a folder per method inside) are the data source's
    assert catalog["standardized_data"]["filepath"] == "data/03_primary/expr/standardized_data.npy"
    assert catalog["run_record"]["filepath"] == "data/08_reporting/expr/run_record.json"
    assert catalog["member_history"]["filepath"] == "data/07_model_output/expr/member_history.npz"
    assert catalog["previous_lists"]["old_layout"] == {"filepath": "data/07_model_output/expr/feature_list.csv"}
    # --params over conf/local, as the run reads its parameters
    catalog = catalog_of(project / "conf", {"data_source": "expr", "selection": {"method": "ndfs"}})
    assert catalog["previous_selections"]["filepath"] == "data/07_model_output/expr/ndfs/selections.csv"


def test_a_method_that_is_no_folder_name_is_refused_naming_the_methods(tmp_path):
    from iclfs.project._resolvers import DataSourceError

    project = project_at(tmp_path)
    with pytest.raises(Exception) as raised:
        catalog_of(project / "conf", {"selection": {"method": "../elsewhere"}})
    cause = raised.value
    while cause is not None and not isinstance(cause, DataSourceError):
        cause = cause.__cause__ or cause.__context__
    assert cause is not None and str(cause).startswith("selection.method '../elsewhere' is not allowed as a folder "
                                                       "name: a method is one of iclfs, ls")


# -- the previous versions of a method, in its folder and in the old layout ------------------------------------------


def write_list(folder: Path, version: str, names: list[str]) -> None:
    (folder / version).mkdir(parents=True)
    pd.DataFrame({"rank": range(1, len(names) + 1), "feature_name": names}).to_csv(
        folder / version / folder.name, index=False)


def write_record(folder: Path, version: str, method: str) -> None:
    (folder / version).mkdir(parents=True)
    (folder / version / folder.name).write_text(json.dumps({"run": version, "method": method}))


def test_previous_versions_are_read_from_the_methods_folder_and_the_old_layout_by_their_records(tmp_path):
    source = tmp_path / "07_model_output" / "expr"
    record_folder = tmp_path / "08_reporting" / "expr" / "run_record.json"
    old, new = source / "feature_list.csv", source / "iclfs" / "feature_list.csv"
    write_list(old, "2026-01-01", ["a", "b"])         # an ICLFS run before method folders
    write_list(old, "2026-01-02", ["c", "d"])         # a variance run then, in the same folder
    write_list(old, "2026-01-03", ["dead"])           # a killed run's: no record
    write_list(new, "2026-01-04", ["e", "f"])         # an ICLFS run after the upgrade
    for version, method in (("2026-01-01", "iclfs"), ("2026-01-02", "variance"), ("2026-01-04", "iclfs")):
        write_record(record_folder, version, method)
    before = {p: p.read_bytes() for p in old.rglob("*") if p.is_file()}

    def previous(save: str, count: int = 9) -> pd.DataFrame:
        return PreviousVersionDataset(filepath=str(new), old_layout={"filepath": str(old)},
                                      records={"filepath": str(record_folder)}, count=count,
                                      version=Version(None, save)).load()

    first_after = previous("2026-01-04")  # the first run after the upgrade: the old layout's lists, by method
    assert first_after.groupby("version")["method"].first().to_dict() == {"2026-01-01": "iclfs",
                                                                          "2026-01-02": "variance"}
    assert first_after.loc[first_after["version"] == "2026-01-01", "feature_name"].tolist() == ["a", "b"]
    later = previous("2026-01-05", count=1)  # the method's own folder, newer, is its previous list now
    assert later.loc[later["method"] == "iclfs", "feature_name"].tolist() == ["e", "f"]
    assert later.loc[later["method"] == "variance", "feature_name"].tolist() == ["c", "d"]
    assert {p: p.read_bytes() for p in old.rglob("*") if p.is_file()} == before  # read, never moved or written
    with pytest.raises(Exception, match="old_layout .* must name the same file"):
        PreviousVersionDataset(filepath=str(new), old_layout={"filepath": str(source / "selections.csv")})


# -- runs --------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_methods_on_one_source_write_under_their_own_folders_and_each_finds_its_own_list(project, monkeypatch):
    data = project / "data"
    select(project, "iclfs")
    members = [(m.version, m.index, m.seed) for m in MemberHistoryView(
        filepath=str(data / "07_model_output" / SOURCE / "member_history.npz"), data_source=SOURCE
    ).load().of("iclfs").members]
    select(project, "variance")
    first, second = records(project)
    assert (first["method"], second["method"]) == ("iclfs", "variance")
    for record in (first, second):
        method, version = record["method"], record["run"]
        for layer in METHOD_LAYERS:  # every one of the method's files is in its folder
            for name in ("feature_list.csv", "selections.csv", "run_report.html", "training_log.csv"):
                assert not (data / layer / SOURCE / name).exists()  # nothing in the folder methods share
        assert versions(data / "07_model_output" / SOURCE / method / "feature_list.csv") == [version]
        assert versions(data / "08_reporting" / SOURCE / method / "run_report.html") == [version]
        # (c) the run record names the method, and every version it wrote is where its method's catalog reads
        # it: a method's artifact in the method's folder, the table's in the source's
        catalog = catalog_of(project / "conf", {"data_source": SOURCE, "selection": {"method": method}})
        assert {"feature_list", "selections", "run_report", "feature_ranking"} <= set(record["wrote"])
        for name, entry in record["wrote"].items():
            filepath = PurePosixPath(catalog[name]["filepath"])
            layer = filepath.parts[1]
            assert filepath.parent == (PurePosixPath("data", layer, SOURCE, method) if layer in METHOD_LAYERS
                                       else PurePosixPath("data", layer, SOURCE)), name
            assert (project / filepath / entry["version"] / filepath.name).is_file(), name
        # (c) the latest switch publishes the method's own files: the same file, hard-linked
        latest = data / "latest" / SOURCE / method / "feature_list.csv"
        stored = data / "07_model_output" / SOURCE / method / "feature_list.csv" / version / "feature_list.csv"
        assert latest.read_bytes() == stored.read_bytes() and latest.stat().st_ino == stored.stat().st_ino
    # what changed in the table is compared across methods: variance's run with ICLFS's, the run before it
    changes = json.loads((data / "08_reporting" / SOURCE / "variance" / "table_changes.json" / second["run"]
                          / "table_changes.json").read_text())
    assert changes["previous_version"] == first["run"]
    # the other method's run kept ICLFS's member history, in the data source's folder per method
    history = MemberHistoryView(filepath=str(data / "07_model_output" / SOURCE / "member_history.npz"),
                                data_source=SOURCE).load()
    assert members and [(m.version, m.index, m.seed) for m in history.of("iclfs").members] == members

    # the notebook opens the catalog of the method it shows: the newest run's without METHOD, else METHOD's
    import matplotlib

    from tests.pipelines.test_notebook import NOTEBOOK, execute_notebook

    matplotlib.use("Agg")
    monkeypatch.chdir(project)
    shown = execute_notebook(NOTEBOOK, {"DATA_SOURCE": SOURCE})
    assert shown["shown_method"] == "variance" and shown["log"]["method"].iloc[0] != "ICLFS"
    latest_variance = data / "latest" / SOURCE / "variance" / "feature_list.csv"
    assert shown["listing"]["feature_name"].tolist() == pd.read_csv(
        latest_variance, dtype={"feature_name": str})["feature_name"].tolist()
    shown = execute_notebook(NOTEBOOK, {"DATA_SOURCE": SOURCE, "METHOD": "iclfs"})
    assert shown["version"] == first["run"] and shown["method"] == "ICLFS"
    assert f"/iclfs/run_report.html/{first['run']}/" in str(shown["report_path"])

    (data / "latest" / SOURCE / "variance").unlink()  # as if variance had been stopped before its switch
    shutil.rmtree(data / "latest" / SOURCE / ".variance")

    select(project, "iclfs")  # ICLFS again: it publishes variance's run first, from variance's folder
    published = data / "latest" / SOURCE / "variance" / "feature_list.csv"
    stored = data / "07_model_output" / SOURCE / "variance" / "feature_list.csv" / second["run"] / "feature_list.csv"
    assert published.stat().st_ino == stored.stat().st_ino
    # and its previous list is its own, not variance's newer one
    third = records(project)[-1]
    stability = json.loads((data / "08_reporting" / SOURCE / "iclfs" / "selection_stability.json" / third["run"]
                            / "selection_stability.json").read_text())
    assert stability["previous_version"] == first["run"]
    assert versions(data / "07_model_output" / SOURCE / "iclfs" / "feature_list.csv") == [first["run"], third["run"]]
    assert versions(data / "07_model_output" / SOURCE / "variance" / "feature_list.csv") == [second["run"]]


@pytest.mark.slow
def test_a_run_removes_what_a_killed_run_of_another_method_left_in_its_folder_and_nothing_else(project):
    select(project, "iclfs")
    data = project / "data"
    dead, unknown = "2026-01-01T00.00.00.000Z", "2026-01-02T00.00.00.000Z"
    variance = data / "07_model_output" / SOURCE / "variance"
    for version in (dead, unknown):
        write_list(variance / "feature_list.csv", version, ["g0"])
        write_list(variance / "selections.csv", version, ["g0"])
    leases = data / "08_reporting" / SOURCE / "run_record.json" / ".running"
    (leases / dead).write_text("999999 gone\n")  # a killed variance run's lease, held by no one
    select(project, "iclfs")  # a run of another method: the source's leases are its to clear
    assert versions(variance / "feature_list.csv") == versions(variance / "selections.csv") == [unknown]
    assert not (leases / dead).exists()


def to_old_layout(data: Path, method: str) -> dict[Path, bytes]:
    """Put a method's versions where a version before method folders wrote them (as a user's store upgraded
    from it holds them); the files, as they are then."""
    for layer in METHOD_LAYERS:
        folder = data / layer / SOURCE / method
        for artifact in list(folder.iterdir()) if folder.is_dir() else []:
            shutil.move(str(artifact), str(data / layer / SOURCE / artifact.name))
        if folder.is_dir():
            folder.rmdir()
    return {p: p.read_bytes() for layer in METHOD_LAYERS for p in (data / layer / SOURCE).rglob("*")
            if p.is_file() and "member_history.npz" not in p.parts and "run_record.json" not in p.parts}


@pytest.mark.slow
def test_a_store_written_before_method_folders_is_read_for_the_hold_and_left_where_it_is(project):
    select(project, "iclfs")
    data = project / "data"
    (old,) = [r["run"] for r in records(project)]
    kept = to_old_layout(data, "iclfs")
    assert (data / "07_model_output" / SOURCE / "feature_list.csv" / old / "feature_list.csv").is_file()

    # a stage run reads the method's folder: it says where the old versions are and how to go on
    refused = kedro(project, f"input={project / 'expr.csv'}", f"data_source={SOURCE}", pipeline="report")
    assert refused.code != 0
    assert "stored it before each method had a folder" in refused.output
    assert "Run kedro run --pipelines select once" in refused.output

    # as if the old run had been stopped after its record and before its switch: the next run publishes it first,
    # from where it lies
    shutil.rmtree(data / "latest" / SOURCE)
    select(project, "iclfs")  # the first run after the upgrade
    new = records(project)[-1]["run"]
    caught_up = data / "latest" / SOURCE / ".iclfs" / old
    stored = data / "07_model_output" / SOURCE / "feature_list.csv" / old / "feature_list.csv"
    assert (caught_up / "feature_list.csv").stat().st_ino == stored.stat().st_ino
    assert (caught_up / "run_report.html").is_file()
    assert Path(os.readlink(data / "latest" / SOURCE / "iclfs")) == Path(".iclfs") / new  # then this run's
    stability = json.loads((data / "08_reporting" / SOURCE / "iclfs" / "selection_stability.json" / new
                            / "selection_stability.json").read_text())
    assert stability["previous_version"] == old  # the hold's previous list, from the old layout
    previous = PreviousVersionDataset(
        filepath=str(data / "07_model_output" / SOURCE / "iclfs" / "selections.csv"),
        old_layout={"filepath": str(data / "07_model_output" / SOURCE / "selections.csv")},
        records={"filepath": str(data / "08_reporting" / SOURCE / "run_record.json")})
    assert previous.previous_versions() == [old, new]
    held = CSVDataset(filepath=str(data / "07_model_output" / SOURCE / "selections.csv" / old / "selections.csv"))
    before = PreviousVersionDataset(  # what the run after the upgrade read: the old run's selections, whole
        filepath=str(data / "07_model_output" / SOURCE / "iclfs" / "selections.csv"),
        old_layout={"filepath": str(data / "07_model_output" / SOURCE / "selections.csv")},
        records={"filepath": str(data / "08_reporting" / SOURCE / "run_record.json")},
        version=Version(None, new)).load()
    pd.testing.assert_frame_equal(before.drop(columns=["version", "method"]), held.load())
    assert {p: p.read_bytes() for p in kept} == kept  # never moved, never written
    assert (data / "07_model_output" / SOURCE / "iclfs" / "feature_list.csv" / new).is_dir()
    assert not (data / "07_model_output" / SOURCE / "iclfs" / "feature_list.csv" / old).exists()


def test_the_guides_name_the_method_folder_and_say_what_becomes_of_an_old_store():
    guide = (PROJECT_ROOT / "docs/guides/scheduling.md").read_text()
    assert "  the list: <project>/data/07_model_output/expr/iclfs/feature_list.csv/" in guide  # the summary's line
    assert "**A store written before method folders.**" in guide and "nothing moves or deletes them" in guide
    configuration = (PROJECT_ROOT / "docs/guides/configuration.md").read_text()
    assert "`data/<layer>/<data_source>/<method>/<artifact>/<version>/<file>`" in configuration
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert "a method's in\n`<method>/<artifact>/<version>/`" in readme
