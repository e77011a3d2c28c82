"""The benchmark grid command: one cell file per (dataset, method, seed), computed once, then the report."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pandas as pd
import pytest
import scipy.io
import yaml

from benchmarks import grid as benchmark
from iclfs.baselines import REGISTRY
from iclfs.evaluation._benchmark import RESULT_COLUMNS, cell_key, method_name
from iclfs.io._tables import read_feature_table
from iclfs import chain
from iclfs.method._config import Settings
from iclfs.project._conf import project_conf
from tests.conftest import PROJECT_ROOT

BASELINE_NAMES = {key: entry.name for key, entry in REGISTRY.items()}

# One epoch (a member's too, whatever the default consensus), two k-means runs, one torch thread; the tiny
# table has 60 features, so the default k = 50 fits.
SET = "training.epochs=1,members.epochs=1,evaluation.n_runs=2,runtime.num_threads=1"
FEW_BASELINES = ["--baselines", "ls", "random", "all_features"]


def _tiny(path, seed=0):
    """30 samples x 60 features, 2 classes, 5 informative columns, in scikit-feature's layout (X, Y)."""
    rng = np.random.default_rng(seed)
    y = np.repeat([1, 2], 15)
    X = rng.normal(size=(30, 60))
    X[:, :5] += 3 * (y[:, None] - 1)
    scipy.io.savemat(path, {"X": X, "Y": y[:, None]})


def _conf(root, data):
    """The project's conf with the benchmark's files looked for in ``data`` alone (conf/local)."""
    shutil.copytree(PROJECT_ROOT / "conf", root / "conf", ignore=shutil.ignore_patterns("local"))
    (root / "conf" / "local").mkdir()
    (root / "conf" / "local" / "parameters.yml").write_text(yaml.safe_dump({"benchmark": {"folders": [str(data)]}}))
    return root / "conf"


@pytest.fixture
def data(tmp_path):
    folder = tmp_path / "mats"
    folder.mkdir()
    _tiny(folder / "COIL20.mat")  # a benchmark dataset's name, so the report's headline has its row
    _conf(tmp_path, folder)
    return folder


def _run(data, cells, *extra, seeds=("42",), overrides=SET):
    benchmark.main(["--conf-source", str(data.parent / "conf"), "run", "--datasets", "COIL20", "--seeds", *seeds,
                    "--set", overrides, "--cells", str(cells), *extra])


def _parameters(data, overrides=SET):
    parameters = project_conf(data.parent / "conf")
    return {**parameters, **Settings.from_parameters(parameters).with_overrides(overrides).to_parameters()}


def _files(cells):
    return sorted(str(p.relative_to(cells)) for p in cells.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    """One run of every method at seeds 42 and 43, shared by the tests that only read it."""
    root = tmp_path_factory.mktemp("grid")
    (root / "mats").mkdir()
    _tiny(root / "mats" / "COIL20.mat")
    _conf(root, root / "mats")
    _run(root / "mats", root / "cells", seeds=("42", "43"))
    return root


def test_a_run_writes_one_cell_per_method_and_seed(grid):
    iclfs = method_name(Settings().with_overrides(SET))
    expected = sorted(f"{cell_key('COIL20', method, seed)}.csv"
                      for method in (iclfs, *BASELINE_NAMES.values()) for seed in (42, 43))
    assert _files(grid / "cells") == expected  # and no temporary file left behind
    for name in expected:
        table = pd.read_csv(grid / "cells" / name, keep_default_na=False, na_values=[""])
        assert list(table.columns) == RESULT_COLUMNS
        if name.startswith("COIL20/dispersion/"):
            assert table.empty  # the tiny table has negative values: dispersion refuses it, and the cell says so
            continue
        assert len(set(zip(table["dataset"], table["method"], table["seed"], strict=True))) == 1
        assert (table["dataset"] == "COIL20").all() and name.endswith(f"seed_{table['seed'].iloc[0]}.csv")
    cell = pd.read_csv(grid / "cells" / f"{cell_key('COIL20', iclfs, 42)}.csv")
    # k = 50 is the only k of the default grid up to d = 60; one epoch per member, two k-means runs
    members = Settings().with_overrides(SET).members.per_run
    assert list(cell["k"]) == [50] and (cell["n_runs"] == 2).all() and (cell["epochs"] == members).all()
    assert (cell["method"] == iclfs).all() and (cell["device"] == "cpu").all()
    everything = pd.read_csv(grid / "cells" / f"{cell_key('COIL20', 'all features', 43)}.csv")
    assert list(everything["k"]) == [60] and (everything["schedule"] == "none").all()
    random = pd.read_csv(grid / "cells" / f"{cell_key('COIL20', 'random', 42)}.csv", keep_default_na=False,
                         na_values=[""])
    assert (random["n_runs"] == 5 * 2).all()  # five random orders, their runs pooled


def test_the_cells_selected_column_holds_the_selection(grid):
    settings = Settings().with_overrides(SET).with_overrides("seed=42,runtime.progress=false")
    result = chain.run(read_feature_table(grid / "mats" / "COIL20.mat"), settings)
    cell = pd.read_csv(grid / "cells" / f"{cell_key('COIL20', method_name(settings), 42)}.csv")
    selected = [int(j) for j in cell.loc[cell["k"] == 50, "selected"].iloc[0].split()]
    np.testing.assert_array_equal(selected, result.selections[50])  # best first, as the chain hands them on
    # a baseline's cell too: LS is the first k by ascending Laplacian score
    ls = pd.read_csv(grid / "cells" / f"{cell_key('COIL20', 'LS', 42)}.csv")
    chosen = [int(j) for j in ls["selected"].iloc[0].split()]
    np.testing.assert_array_equal(chosen, np.argsort(result.laplacian_scores, kind="stable")[:50])


def test_a_second_identical_run_plans_nothing_and_touches_no_file(grid, capsys):
    cells = grid / "cells"
    before = {name: ((cells / name).stat().st_mtime_ns, (cells / name).read_bytes()) for name in _files(cells)}
    capsys.readouterr()
    _run(grid / "mats", cells, seeds=("42", "43"))
    assert "0 job(s) to run: none" in capsys.readouterr().out
    after = {name: ((cells / name).stat().st_mtime_ns, (cells / name).read_bytes()) for name in _files(cells)}
    assert after == before
    jobs = benchmark.plan(_parameters(grid / "mats"), ["COIL20"], [42, 43], cells, iclfs=True,
                          baseline_keys=list(BASELINE_NAMES), force=False)
    assert jobs == []


def test_force_recomputes_the_cells_with_the_same_result_on_cpu(data, tmp_path, capsys):
    cells = tmp_path / "cells"
    _run(data, cells, *FEW_BASELINES)
    first = benchmark.read_cells(cells)
    old = 1_000_000_000  # 2001: any rewrite moves the mtime
    for path in cells.rglob("*.csv"):
        os.utime(path, ns=(old, old))
    capsys.readouterr()
    _run(data, cells, *FEW_BASELINES, "--force")
    assert "1 job(s) to run: COIL20@42" in capsys.readouterr().out
    files = list(cells.rglob("*.csv"))
    assert len(files) == 4 and all(path.stat().st_mtime_ns > old for path in files)
    # the same seed on the same CPU and thread count: the same selections and scores
    again = benchmark.read_cells(cells)
    same = ["k", "accuracy_mean", "accuracy_std", "nmi_mean", "nmi_std", "n_runs", "epochs", "selected"]
    assert sorted(again) == sorted(first)
    for key, table in first.items():
        pd.testing.assert_frame_equal(again[key][same], table[same])


def test_only_the_missing_cells_are_planned(data, tmp_path):
    cells = tmp_path / "cells"
    settings = Settings().with_overrides(SET)
    iclfs_cell = cells / f"{cell_key('COIL20', method_name(settings), 42)}.csv"
    ls_cell = cells / f"{cell_key('COIL20', 'LS', 43)}.csv"
    for path in (iclfs_cell, ls_cell):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("present\n")
    parameters = _parameters(data)
    jobs = benchmark.plan(parameters, ["COIL20"], [42, 43], cells, iclfs=True, baseline_keys=["ls", "random"],
                          force=False)
    assert [(j.seed, j.iclfs, j.baselines) for j in jobs] == [(42, False, ("ls", "random")), (43, True, ("random",))]
    assert all(j.path == str(data / "COIL20.mat") and j.parameters == parameters for j in jobs)
    # --force plans every cell; --baselines-only and --no-baselines plan one side only
    forced = benchmark.plan(parameters, ["COIL20"], [42], cells, iclfs=True, baseline_keys=["random"], force=True)
    assert [(j.iclfs, j.baselines) for j in forced] == [(True, ("random",))]
    only = benchmark.plan(parameters, ["COIL20"], [43], cells, iclfs=False, baseline_keys=["ls"], force=False)
    assert only == []
    none = benchmark.plan(parameters, ["COIL20"], [42], cells, iclfs=True, baseline_keys=[], force=False)
    assert none == []


def test_baselines_only_trains_nothing(data, tmp_path, monkeypatch):
    monkeypatch.setattr(chain, "train_members", lambda *a, **k: pytest.fail("trained a network"))
    cells = tmp_path / "cells"
    _run(data, cells, "--baselines-only", "--baselines", "ls")
    assert _files(cells) == [f"{cell_key('COIL20', 'LS', 42)}.csv"]


def test_no_baselines_writes_the_iclfs_cell_alone(data, tmp_path):
    cells = tmp_path / "cells"
    _run(data, cells, "--no-baselines")
    assert _files(cells) == [f"{cell_key('COIL20', method_name(Settings().with_overrides(SET)), 42)}.csv"]


def test_a_changed_setting_is_its_own_method_and_leaves_the_others_alone(grid, tmp_path):
    cells = tmp_path / "cells"
    shutil.copytree(grid / "cells", cells)
    before = {name: (cells / name).read_bytes() for name in _files(cells)}
    _run(grid / "mats", cells, "--no-baselines", overrides=SET + ",selection.use_lgrc=false")
    added = sorted(set(_files(cells)) - set(before))
    variant = method_name(Settings().with_overrides(SET + ",selection.use_lgrc=false"))
    assert variant.startswith("ICLFS-WL [fast") and added == [f"{cell_key('COIL20', variant, 42)}.csv"]
    assert all((cells / name).read_bytes() == content for name, content in before.items())


def test_a_bad_setting_stops_before_any_file_is_written(data, tmp_path, capsys):
    cells = tmp_path / "cells"
    with pytest.raises(SystemExit):
        _run(data, cells, overrides="training.epoch=1")
    assert "unknown parameter 'training.epoch'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _run(data, cells, "--baselines", "ls", "relieff")
    assert "unknown baseline 'relieff'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _run(data, cells, overrides="selection.quantile=1.5")
    assert "parameter selection.quantile = 1.5 is invalid" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _run(data, cells, overrides="ranking.score=l1")
    assert "parameter ranking.score = 'l1' is invalid: expected one of z_norm" in capsys.readouterr().err
    assert not cells.exists()


def test_a_precision_the_device_lacks_stops_before_any_cell(data, tmp_path, capsys):
    """Checked against the device before any job starts: no cell, not even the baselines'."""
    cells = tmp_path / "cells"
    with pytest.raises(SystemExit):
        _run(data, cells, overrides=SET + ",runtime.device=cpu,runtime.precision=bf16")
    assert "runtime.precision 'bf16' needs a CUDA device" in capsys.readouterr().err
    assert not cells.exists() or _files(cells) == []


def test_a_missing_dataset_file_is_named_before_any_work(data, tmp_path, capsys):
    cells = tmp_path / "cells"
    with pytest.raises(SystemExit):
        benchmark.main(["--conf-source", str(data.parent / "conf"), "run", "--datasets", "COIL20", "nci9",
                        "--set", SET, "--cells", str(cells)])
    assert f"nci9.mat is in none of {data}" in capsys.readouterr().err
    assert not cells.exists()


def test_write_cell_is_whole_or_absent(tmp_path, monkeypatch):
    table = pd.DataFrame({"k": [5], "selected": ["1 2 3 4 5"]})
    path = benchmark.write_cell(tmp_path, "COIL20/ls/seed_42", table)
    assert path == tmp_path / "COIL20" / "ls" / "seed_42.csv"
    pd.testing.assert_frame_equal(pd.read_csv(path), table)

    def half_then_fail(self, out, **kwargs):
        out.write("k,sel")
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        benchmark.write_cell(tmp_path, "COIL20/ls/seed_43", table)
    # no cell, no temporary file; the earlier cell is intact
    assert sorted(p.name for p in (tmp_path / "COIL20" / "ls").iterdir()) == ["seed_42.csv"]


def test_read_cells_prefers_the_first_folder(tmp_path):
    work, published = tmp_path / "work", tmp_path / "published"
    benchmark.write_cell(work, "COIL20/ls/seed_42", pd.DataFrame({"k": [5], "selected": ["1 2"], "v": [1]}))
    benchmark.write_cell(published, "COIL20/ls/seed_42", pd.DataFrame({"k": [5], "selected": ["1 2"], "v": [2]}))
    benchmark.write_cell(published, "COIL20/ls/seed_43", pd.DataFrame({"k": [5], "selected": [""], "v": [3]}))
    cells = benchmark.read_cells(work, published)
    assert sorted(cells) == ["COIL20/ls/seed_42", "COIL20/ls/seed_43"]
    assert cells["COIL20/ls/seed_42"]["v"].iloc[0] == 1
    assert cells["COIL20/ls/seed_43"]["selected"].isna().all()  # an empty selection reads as missing


def test_report_publishes_the_cells_and_writes_the_report(grid, tmp_path, capsys):
    results = tmp_path / "results"
    benchmark.main(["--conf-source", str(grid / "conf"), "report", "--cells", str(grid / "cells"),
                    "--results", str(results)])
    report = results / "benchmark.md"
    assert f"wrote {report}" in capsys.readouterr().out
    text = report.read_text()
    assert "## The default selection and the best baseline" in text
    assert f"| dataset | {method_name(Settings())} (the default) | best baseline |" in text
    row = next(line for line in text.splitlines() if line.startswith("| COIL20 | "))
    assert "(2)" in row  # the two outer seeds of this run
    assert "## Every method" in text and "## Fidelity to the paper: the baselines" in text
    assert "- **nci9**: nci9.mat is in none of" in text  # a benchmark dataset without a file is named
    assert "- **COIL20**" not in text
    assert _files(results / "cells") == _files(grid / "cells")
    assert (results / "figures" / "COIL20.png").stat().st_size > 0
    assert "![COIL20](figures/COIL20.png)" in text


def test_the_command_reads_the_benchmark_from_conf(grid, tmp_path, capsys):
    """No --datasets or --seeds: conf's benchmark.datasets (those with a file) and benchmark_report.seeds."""
    conf = grid / "conf"
    local = yaml.safe_load((conf / "local" / "parameters.yml").read_text())
    local["benchmark"]["datasets"] = ["COIL20"]
    local["benchmark_report"] = {"seeds": [42]}
    local["baselines"] = {"random": {"rankings": 2}}
    (tmp_path / "conf").mkdir()
    shutil.copytree(conf / "base", tmp_path / "conf" / "base")
    (tmp_path / "conf" / "local").mkdir()
    (tmp_path / "conf" / "local" / "parameters.yml").write_text(yaml.safe_dump(local))
    cells = tmp_path / "cells"
    benchmark.main(["--conf-source", str(tmp_path / "conf"), "run", "--set", SET, "--baselines", "random",
                    "--cells", str(cells)])
    assert "1 job(s) to run: COIL20@42" in capsys.readouterr().out
    random = pd.read_csv(cells / f"{cell_key('COIL20', 'random', 42)}.csv", keep_default_na=False, na_values=[""])
    assert (random["n_runs"] == 2 * 2).all()  # conf's two random orders, two k-means runs each
