"""The replay study: repeated `select` runs in fresh processes, compared bit for bit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.io

from benchmarks import replay


def run_of(losses, scores, selected, seconds=1.0) -> replay.Run:
    return replay.Run(np.array(scores, dtype=np.float64), np.array(losses, dtype=np.float64), 2, tuple(selected),
                      seconds)


def test_runs_are_compared_with_the_first_bit_for_bit():
    first = run_of([3.0, 2.0, 1.0, 0.5], [0.1, 0.2, 0.3], "abcd")
    same = run_of([3.0, 2.0, 1.0, 0.5], [0.1, 0.2, 0.3], "abcd")
    later = run_of([3.0, 2.0, 1.0 + 1e-7, 0.5], [0.1, 0.2, 0.3 + 1e-9], "abce")  # epoch 3 first differs
    scores_only = run_of([3.0, 2.0, 1.0, 0.5], [0.1, 0.2 + 1e-12, 0.3], "abcd")
    table = replay.compare([first, same, later, scores_only])
    assert table["identical"].tolist() == [True, True, False, False]
    assert [None if pd.isna(v) else int(v) for v in table["first_epoch"]] == [None, None, 3, None]
    assert table["jaccard"].tolist() == [1.0, 1.0, pytest.approx(3 / 5), 1.0]


def test_the_report_counts_the_identical_runs_and_lists_the_others():
    runs = [run_of([3.0, 1.0], [0.1], "ab"), run_of([3.0, 1.0], [0.1], "ab"), run_of([3.5, 1.0], [0.2], "ac")]
    text = replay.report_markdown(replay.compare(runs), "tiny", "python -m benchmarks.replay", 12.0,
                                  ["training.epochs=2"])
    assert "**2 of 3 runs trained the member bit for bit like the first.**" in text
    assert "| 3.0 | 2 |" in text and "| 3.5 | 1 |" in text
    assert "| 3 | 1 | 0.33 |" in text  # run 3 differs from epoch 1 on; its list shares 1 of 3 names
    assert "(and `training.epochs=2`)" in text


def test_fewer_than_two_runs_are_refused():
    with pytest.raises(SystemExit):
        replay.parse_arguments(["--runs", "1"])


@pytest.mark.slow
def test_two_runs_in_fresh_processes_train_the_same_member(tmp_path):
    rng = np.random.default_rng(0)
    scipy.io.savemat(tmp_path / "tiny.mat", {"X": rng.normal(size=(24, 60)), "Y": np.repeat([1, 2], 12)[:, None]})
    out = tmp_path / "results" / "replay.md"
    replay.main(["--dataset", "tiny", "--runs", "2", "--data-dirs", str(tmp_path), "--out", str(out),
                 "--set", "training.epochs=2", "selection.k=50"])
    table = pd.read_csv(out.with_suffix(".csv"))
    assert table["identical"].tolist() == [True, True] and table["jaccard"].tolist() == [1.0, 1.0]
    assert "**2 of 2 runs trained the member bit for bit like the first.**" in out.read_text()


def test_the_kernel_probe_compares_two_calls_and_the_page_counts_them():
    import torch

    before = torch.get_num_threads()
    try:
        assert replay.probe_kernel(1) == "same"  # one thread: the calls agree
    finally:
        torch.set_num_threads(before)
    text = replay.kernel_markdown({1: ["same"] * 3, 2: ["same", "rows 162-324, up to 47 ulps",
                                                          "rows 162-324, up to 47 ulps"]}, "cmd", 4.0)
    assert "| 1 | 3 | 0 | - |" in text
    assert "| 2 | 3 | 2 | rows 162-324, up to 47 ulps (2x) |" in text
