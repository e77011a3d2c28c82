"""A hostile but fair user's inputs and faults: each ends in a clear message or in the right output.

One table holds every case (``CASES``): the input, how it reaches the project
(the catalog's reader and the first node, the parameters, the data source, a
run), and what must come out (an error naming the problem, a warning naming the
column, or the correct result). The runs that need processes, a disk or a
second run (overlapping runs, a refreshed file, atomic writes, the traceback
a refused run prints) have their own tests below the table.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from kedro.io import DatasetError, Version

from iclfs.io.datasets import CSVDataset, FeatureTableDataset, NumpyDataset
from iclfs.method._config import ParameterError, Settings
from iclfs.method._preprocessing import DataValidationError, FeatureTable
from iclfs.project._tracking import mask_credentials
from iclfs.pipelines.selection.nodes import reduce_data
from iclfs.project._resolvers import DataSourceError, data_source
from tests.pipelines.test_bad_input import first_node
from tests.pipelines.conftest import run_session, versions

RNG = np.random.default_rng(7)
GENES = [f"g{j}" for j in range(12)]
VALUES = RNG.normal(size=(10, 12)).round(4)


def csv_text(sep: str = ",", header: list[str] | None = GENES, index: bool = False, ids: bool = False) -> str:
    frame = pd.DataFrame(VALUES, columns=header if header is not None else None)
    if ids:
        frame.insert(0, "sample", np.arange(101, 111))
    return frame.to_csv(sep=sep, index=index, header=header is not None)


@dataclass
class Case:
    """One hostile input: the file's bytes and name, the reader's options, what must come out."""

    name: str
    content: bytes | str
    options: dict
    error: type[Exception] | None = None
    message: str = ""  # a regex the error, or a logged warning, must contain
    check: Callable[[FeatureTable], None] | None = None  # the correct output, when no error


def names_are(expected: list[str]) -> Callable[[FeatureTable], None]:
    def check(table: FeatureTable) -> None:
        assert list(table.feature_names) == expected

    return check


CASES = [
    # -- the CSV header, parsed once, by pandas, with the user's load_args -------
    Case("bom.csv", "\ufeff" + csv_text(), {}, check=names_are(GENES)),
    Case("bom-with-id.csv", "\ufeff" + csv_text(ids=True), {"id_column": "sample"}, check=names_are(GENES)),
    Case("delimiter-option.csv", csv_text(sep="|"), {"load_args": {"delimiter": "|"}}, check=names_are(GENES)),
    Case("sep-runtime-param.csv", csv_text(sep=";"), {"sep": ";"}, check=names_are(GENES)),
    Case("comment-lines.csv", "# exported by a LIMS\n" + csv_text(), {"load_args": {"comment": "#"}},
         check=names_are(GENES)),
    Case("skiprows.csv", "exported 2026\n\n" + csv_text(), {"load_args": {"skiprows": 2}}, check=names_are(GENES)),
    Case("whitespace-regex.csv", csv_text(sep=" "), {"load_args": {"sep": r"\s+"}}, check=names_are(GENES)),
    Case("semicolons.csv", csv_text(sep=";"), {}, DatasetError,
         r"semicolons.csv: the header 'g0;g1;.*was read as one column: the delimiter looks wrong .*sep=';'"),
    Case("tabs.csv", csv_text(sep="\t"), {}, DatasetError, r"tabs.csv: .*one column.*holds tabs.*\.tsv"),
    Case("tabs.tsv", csv_text(sep="\t"), {}, check=names_are(GENES)),
    Case("sniffed.txt", csv_text(sep=";"), {}, check=names_are(GENES)),
    Case("repeated-names.csv", "a,b,a\n" + "\n".join("1,2,3" for _ in range(10)), {}, DatasetError,
         r"duplicate feature name\(s\): 'a' \(columns 0 and 2\)"),
    # -- common mistakes: warned, naming the column ------------------------------------
    Case("no-header.csv", csv_text(header=None), {}, message=r"every column name is a number .*header: null"),
    Case("index-column.csv", csv_text(index=True), {}, message=r"first column \(no name\) counts 0..9: .*pandas index"),
    Case("undeclared-id.csv", csv_text(ids=True), {}, message=r"column 'sample' holds 10 distinct increasing integers"),
    Case("empty-names.csv", "g0,,g2\n" + "\n".join(f"{i},{i * i},{7 - i}" for i in range(10)), {},
         message=r"1 column\(s\) have an empty name \(positions \[1\]\)"),
    # -- formats and orientation ----------------------------------------------------
    Case("genes-by-samples.tsv", "gene\t" + "\t".join(f"s{i}" for i in range(10)) + "\n" + "\n".join(
        f"{g}\t" + "\t".join(map(str, VALUES[:, j])) for j, g in enumerate(GENES)), {"orientation": "features_in_rows"},
         check=lambda t: (names_are(GENES)(t), np.testing.assert_allclose(np.asarray(t.X), VALUES))),
    Case("unknown.xlsx", b"PK\x03\x04", {}, DatasetError, r"the format \.xlsx is not supported"),
    Case("bad-orientation.csv", csv_text(), {"orientation": "sideways"}, DatasetError,
         "orientation 'sideways' is not one of samples_in_rows, features_in_rows"),
    # -- values --------------------------------------------------------------------------
    Case("nan.csv", csv_text().replace("\n" + str(VALUES[2, 0]), "\nnan", 1), {}, DataValidationError,
         r"1 NaN and 0 infinite value\(s\) .*\(row 2, column 0\)"),
    Case("text-cell.csv", csv_text().replace(str(VALUES[3, 4]), "n/a!", 1), {}, DataValidationError,
         r"column\(s\) are not numeric: 'g4'"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_hostile_input_gets_a_clear_message_or_the_right_output(case, tmp_path, fast_parameters, caplog):
    path = tmp_path / case.name
    path.write_bytes(case.content.encode() if isinstance(case.content, str) else case.content)
    fast_parameters["selection"] = {**fast_parameters["selection"], "k": 2, "k_values": [2]}
    caplog.set_level(logging.WARNING)

    def load_and_prepare():
        table = FeatureTableDataset(filepath=str(path), **case.options).load()
        first_node(table, fast_parameters)
        return table

    if case.error is not None:
        with pytest.raises(case.error, match=case.message):
            load_and_prepare()
        return
    table = load_and_prepare()
    if case.message:
        assert any(re.search(case.message, r.getMessage()) for r in caplog.records), caplog.text
    if case.check:
        case.check(table)


# -- parameters and paths that are checked before anything runs -----------------------------

@pytest.mark.parametrize("name, error", [
    ("../../../tmp/evil", "data_source '../../../tmp/evil' is not allowed"),
    ("..", "data_source '..' is not allowed"),
    ("", "data_source '' is not allowed"),
    (".hidden", "data_source '.hidden' is not allowed"),
    ("goo*", r"data_source 'goo\*' is not allowed"),
    ("a/b", "data_source 'a/b' is not allowed"),
    ("x" * 65, "not allowed"),
])
def test_unsafe_data_sources_are_refused_naming_the_rule(name, error):
    with pytest.raises(DataSourceError, match=error + r".*letters, digits, '-', '_' and '\.'"):
        data_source(name, None, "synthetic")


def test_a_data_source_comes_from_the_input_file_name_when_not_given():
    assert data_source(None, "/data/expr.tsv.gz", "synthetic") == "expr"
    assert data_source("run-2026.11", "/data/expr.tsv", "synthetic") == "run-2026.11"
    assert data_source(None, None, "synthetic") == "synthetic"


def test_a_traversing_data_source_writes_nothing_anywhere(project, tmp_path):
    escape = project.parent / "evil"
    with pytest.raises(Exception, match="data_source '../evil' is not allowed"):
        run_session(project, runtime_params={"data_source": "../evil"})
    assert not escape.exists() and not (project / "data").exists()


@pytest.mark.parametrize("overrides, error, message", [
    ("selection.k=500,selection.k_values=[5,500]", DataValidationError, "40 feature.*selection.k is 500"),
    ("selection.k_values=[100,200],selection.k=100", DataValidationError, "40 feature.*selection.k is 100"),
    ("selection.k=5,selection.k_values=[5],laplacian.n_neighbors=40", ParameterError,
     "n_neighbors = 40 is invalid: expected fewer than the 40 samples"),
])
def test_shape_dependent_parameters_stop_in_the_first_node(tiny_table, overrides, error, message):
    from iclfs import chain

    with pytest.raises(error, match=message):
        chain.prepare_checked(tiny_table, Settings().with_overrides(overrides))


def test_a_k_grid_wider_than_d_is_trimmed_with_a_warning(tiny_table, caplog):
    from iclfs import chain

    settings = Settings().with_overrides("selection.k=5,selection.k_values=[5,10,500]")
    chain.prepare_checked(tiny_table, settings)
    assert chain.k_values_for(settings.selection, 40) == [5, 10] and "k = 500 of selection.k_values" in caplog.text


# -- credentials ---------------------------------------------------------------------------

def test_credentials_never_reach_a_message():
    assert mask_credentials("https://alice:s3cret@mlflow.example.org:5000/x") == "https://***@mlflow.example.org:5000/x"
    assert mask_credentials("http://127.0.0.1:5000") == "http://127.0.0.1:5000"


def test_a_server_with_credentials_in_its_uri_is_judged_on_its_host():
    import http.server
    import threading

    from iclfs.project._tracking import TrackingUnavailableError, check_tracking_store

    class Refusing(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802  (http.server's name)
            self.send_error(401)  # any answer means the server is there; credentials are MLflow's business

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Refusing)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        check_tracking_store(f"http://alice:s3cret@127.0.0.1:{port}")  # the host answers: reachable
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(TrackingUnavailableError) as refused:
        check_tracking_store(f"http://alice:s3cret@127.0.0.1:{port}", timeout=2)  # nothing listens any more
    assert "s3cret" not in str(refused.value) and f"http://***@127.0.0.1:{port}" in str(refused.value)


# -- a file refreshed while the run trains ------------------------------------------------------

def test_a_refreshed_input_is_refused_rather_than_mixed(tiny_table, fast_parameters):
    """reduce_data reads the input again: another column order under the same names must not pass."""
    *_, ground_truth = first_node(tiny_table, fast_parameters)
    listing = pd.DataFrame({"rank": [1, 2], "feature_name": tiny_table.feature_names[:2], "feature_index": [0, 1],
                            "score": [1.0, 0.5], "laplacian_score": [0.1, 0.2]})
    same = reduce_data(tiny_table, listing, ground_truth)
    np.testing.assert_array_equal(same.to_numpy(), np.asarray(tiny_table.X)[:, :2])
    order = list(range(40))[::-1]
    refreshed = FeatureTable(X=np.asarray(tiny_table.X)[:, order], y=tiny_table.y,
                             feature_names=[tiny_table.feature_names[j] for j in order], source=tiny_table.source)
    with pytest.raises(DataValidationError, match="the input changed while this run was training"):
        reduce_data(refreshed, listing, ground_truth)


# -- versions: whole or absent, and a bad one named ------------------------------------------------

def test_a_save_that_fails_mid_file_leaves_no_version(tmp_path, monkeypatch):
    dataset = CSVDataset(filepath=str(tmp_path / "table.csv"), version=None)
    versioned = CSVDataset(filepath=str(tmp_path / "v.csv"), version=Version(None, "v1"))

    def half_then_full_disk(self, path_or_buf=None, **kwargs):
        path_or_buf.write("a,b\n1,")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", half_then_full_disk)
    for target in (versioned, dataset):
        with pytest.raises(Exception, match="No space left"):
            target.save(pd.DataFrame({"a": [1], "b": [2]}))
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == []  # nothing truncated, nothing staged


def test_a_full_disk_leaves_no_truncated_version(tmp_path):
    """A real small disk: a tmpfs of 64 KiB (root only; skipped where it cannot be mounted)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({mounted.stderr.decode().strip() or 'not root'})")
    try:
        small = NumpyDataset(filepath=str(disk / "a.npy"), version=Version(None, "v1"))
        small.save(np.zeros(100))  # fits
        big = NumpyDataset(filepath=str(disk / "b.npy"), version=Version(None, "v1"))
        with pytest.raises(Exception):
            big.save(np.zeros(100_000))  # 800 kB: the disk fills mid-file
        assert not (disk / "b.npy" / "v1" / "b.npy").exists()
        assert not list((disk / "b.npy").rglob("*.partial*"))
        assert NumpyDataset(filepath=str(disk / "a.npy"), version=Version(None, None)).load().shape == (100,)
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_an_unreadable_version_names_its_folder(tmp_path):
    folder = tmp_path / "e.npz" / "2026-01-01T00.00.00.000Z"
    folder.mkdir(parents=True)
    (folder / "e.npz").write_bytes(b"PK\x03\x04truncated")
    with pytest.raises(DatasetError, match=r"version 2026-01-01T00.00.00.000Z cannot be read .*Delete the folder "
                                          + str(folder)):
        NumpyDataset(filepath=str(tmp_path / "e.npz"), version=Version(None, None)).load()


# -- two runs on one data source, overlapping ----------------------------------------------------------

def _write_csv(path: Path, seed: int, names: list[str]) -> None:
    values = np.random.default_rng(seed).normal(size=(30, len(names)))
    pd.DataFrame(values, columns=names).to_csv(path, index=False)


@pytest.mark.slow
def test_two_overlapping_runs_on_one_data_source_keep_their_own_results(project):
    """Run A (long) and run B (short, other names) at once on the same data_source: each keeps its own list."""
    a_names, b_names = [f"a{j}" for j in range(24)], [f"b{j}" for j in range(24)]
    _write_csv(project / "a.csv", 1, a_names)
    _write_csv(project / "b.csv", 2, b_names)
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1"}

    (project / "conf/local/catalog.yml").unlink()  # the fixture's synthetic input would hide --params input

    def start(name: str, epochs: int) -> subprocess.Popen:
        params = f"input={project / name},data_source=shared,training.epochs={epochs}"
        log = (project / f"{name}.log").open("w")  # a file, not a pipe: a full pipe would block the run
        return subprocess.Popen([sys.executable, "-m", "kedro", "run", "--pipelines", "select", "--params", params],
                                cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT)

    def log(name: str) -> str:
        return (project / f"{name}.log").read_text()

    def tail(name: str) -> str:
        return log(name)[-2000:]

    run_a = start("a.csv", 400)
    deadline = time.time() + 300
    while "Running node: train_members" not in log("a.csv"):
        assert time.time() < deadline and run_a.poll() is None, tail("a.csv")
        time.sleep(0.05)
    # A is held still while it trains (after its first artifacts, before it writes the member history) until
    # B has run from start to end: the overlap is certain, however fast or slow the machine. Held anywhere
    # else, A could be inside a write to the shared MLflow store, and B would wait on that lock for nothing.
    os.kill(run_a.pid, signal.SIGSTOP)
    try:
        since = log("a.csv").split("Running node: train_members")[-1]
        assert "Completed" not in since and "Running node" not in since, "A was not held while training"
        run_b = start("b.csv", 1)
        assert run_b.wait(timeout=300) == 0, tail("b.csv")
        assert run_a.poll() is None, "run A finished before run B: the runs did not overlap"
    finally:
        os.kill(run_a.pid, signal.SIGCONT)
    assert run_a.wait(timeout=600) == 0, tail("a.csv")

    lists = project / "data/07_model_output/shared/iclfs/feature_list.csv"
    reduced = project / "data/07_model_output/shared/iclfs/reduced_data.parquet"
    assert len(versions(project, "07_model_output/shared/iclfs/feature_list.csv")) == 2
    for version in versions(project, "07_model_output/shared/iclfs/feature_list.csv"):
        names = pd.read_csv(lists / version / "feature_list.csv")["feature_name"].tolist()
        prefix = names[0][0]
        assert all(n.startswith(prefix) for n in names)  # one run's names only
        table = pd.read_parquet(reduced / version / "reduced_data.parquet")
        source = pd.read_csv(project / f"{prefix}.csv")
        pd.testing.assert_frame_equal(table, source[names])  # that run's values under that run's names


# -- a refused run reads as one message ------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("params, message", [
    ("training.epochs=-1", "parameter training.epochs = -1 is invalid"),
    ("data_source=../x", "data_source '../x' is not allowed"),
])
def test_a_refused_run_prints_its_message_and_a_pointer_not_a_traceback(project, params, message):
    done = subprocess.run([sys.executable, "-m", "kedro", "run", "--params", params], cwd=project,
                          env={**os.environ, "KEDRO_DISABLE_TELEMETRY": "1"}, capture_output=True, text=True)
    output = done.stdout + done.stderr
    assert done.returncode == 1
    assert message in output and "When something goes wrong" in output
    assert "Traceback" not in output and len(output.splitlines()) < 40, output
    assert message in (project / "logs/last_error.log").read_text()
    verbose = subprocess.run([sys.executable, "-m", "kedro", "run", "--verbose", "--params", params], cwd=project,
                             env={**os.environ, "KEDRO_DISABLE_TELEMETRY": "1"}, capture_output=True, text=True)
    assert "Traceback" in verbose.stdout + verbose.stderr


def test_the_training_history_records_the_thread_count_results_depend_on(tiny_table, fast_parameters):
    """CPU results are bit-identical at the same seed and thread count; the count is part of the record."""
    from iclfs.pipelines.training.nodes import start_without_history, train_members
    from iclfs.method._preprocessing import invert, prepare

    prepared = prepare(tiny_table)
    A = invert(prepared.standardized)
    for threads in (1, 2):
        fast_parameters["runtime"] = {**fast_parameters["runtime"], "num_threads": threads}
        _, history, *_ = train_members(A, prepared.feature_names, {"k_values": [5, 10]},
                                       *(fast_parameters[s] for s in ("training", "views", "runtime", "members",
                                                                      "ranking")),
                                       start_without_history(fast_parameters["seed"]),
                                       *(fast_parameters[s] for s in ("selection", "baselines")), A[:0])
        assert set(history["threads"]) == {threads}

