"""The InfoNCE block A/B command: both settings timed in one process, on a tiny map."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io

from iclfs.benchmarks import loss_blocks


def test_alternate_times_both_blocks_in_turn(tmp_path):
    rng = np.random.default_rng(0)
    # 900 features: 2 MiB holds 582 rows of the 900 x 900 logits, 256 MiB all of them
    scipy.io.savemat(tmp_path / "tiny.mat", {"X": rng.normal(size=(8, 900)), "Y": np.arange(8) % 2})
    result = loss_blocks.alternate(str(tmp_path / "tiny.mat"), rounds=2, epochs_per_turn=1)
    assert result["blocks"] == {"default": 2 * 2**20 // (4 * 900), "256 MiB": 900}
    assert {name: len(t) for name, t in result["seconds"].items()} == {"default": 2, "256 MiB": 2}
    assert all(t > 0 for times in result["seconds"].values() for t in times)
    row = loss_blocks.render_row("tiny", result)
    assert row.startswith("| tiny | 8 x 900 | 582 | ") and "| 900 | " in row


def test_alternate_refuses_zero_rounds(tmp_path):
    with pytest.raises(ValueError, match="rounds and epochs_per_turn must be >= 1, got 0 and 1"):
        loss_blocks.alternate("synthetic:20x8", rounds=0, epochs_per_turn=1)


def test_command_names_a_missing_dataset(tmp_path, capsys):
    with pytest.raises(SystemExit):
        loss_blocks.main(["--datasets", "absent", "--datasets-dir", str(tmp_path)])
    assert f"dataset 'absent': no file {tmp_path / 'absent.mat'}" in capsys.readouterr().err
