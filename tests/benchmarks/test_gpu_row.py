"""The GPU row's script (benchmarks.gpu_row), run on CPU on a tiny table: every number it reports is there and
consistent, and a missing table is named before anything is measured."""

from __future__ import annotations

import json

import pytest

from benchmarks import gpu_row


def test_the_row_times_the_epoch_against_the_matmul_rate_and_the_whole_default_fit(tmp_path):
    out = tmp_path / "row.json"
    report = gpu_row.main(["--device", "cpu", "--tables", "synthetic:120x24", "--epochs", "2", "--matmul-size", "256",
                           "--out", str(out)])
    assert json.loads(out.read_text()) == report
    assert report["device"].startswith("CPU") and report["matmul"]["fp32_gflops"] > 0
    [row] = report["rows"]
    epoch = row["epoch"]
    assert (epoch["d"], epoch["n"]) == (120, 24) and len(epoch["epoch_seconds"]) == 2
    assert epoch["share_of_fp32_matmul"] == pytest.approx(
        epoch["flops_per_epoch"] / epoch["median_seconds"] / 1e9 / report["matmul"]["fp32_gflops"])
    fit = row["fit"]  # the default settings: one member of 100 epochs, k among the default grid
    assert (fit["d"], fit["n"], fit["members"], fit["epochs"]) == (120, 24, 1, 100)
    assert fit["seconds"] >= fit["training_seconds"] > 0


def test_a_missing_table_is_named_before_anything_is_measured(tmp_path):
    with pytest.raises(SystemExit, match=r"no table .*ALLAML\.mat \(--datasets-dir names the folder of ALLAML\.mat\)"):
        gpu_row.main(["--device", "cpu", "--datasets-dir", str(tmp_path), "--out", str(tmp_path / "o.json")])
    assert not (tmp_path / "o.json").exists()
