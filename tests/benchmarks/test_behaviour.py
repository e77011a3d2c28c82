"""benchmarks/behaviour.py: the record a refactor is held to, made and checked on a tiny table."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.io

from benchmarks import behaviour


def test_differences_name_every_path_that_differs():
    expected = {"a": {"lists": {"50": [1, 2]}, "scores": "x"}, "gone": 1, "runs": [{"k": 5}, {"k": 6}]}
    actual = {"a": {"lists": {"50": [2, 1]}, "scores": "x"}, "new": 1, "runs": [{"k": 5}, {"k": 7}]}
    assert sorted(behaviour.differences(expected, actual)) == ["/a/lists/50: differs", "/gone: missing",
                                                               "/new: not in the record", "/runs[1]/k: differs"]
    assert behaviour.differences(expected, json.loads(json.dumps(expected))) == []


@pytest.mark.slow  # five ICLFS runs and NDFS on a 30 x 60 table: seconds
def test_a_record_checks_identical_and_a_changed_list_is_named(tmp_path, capsys):
    rng = np.random.default_rng(0)
    y = np.repeat([1, 2, 3], 10)
    X = rng.normal(size=(30, 60)) + np.eye(3)[y - 1] @ rng.normal(scale=3.0, size=(3, 60))
    scipy.io.savemat(tmp_path / "tiny.mat", {"X": X, "Y": y.reshape(-1, 1)})
    out = tmp_path / "behaviour.json"
    options = ["--datasets", "tiny", "--data-dirs", str(tmp_path)]

    assert behaviour.main(["record", *options, "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert set(record["tiny"]) == {"one_run", "two_members", "carried", "ndfs"}
    assert len(record["tiny"]["carried"]) == behaviour.REFRESHES
    assert len(record["tiny"]["two_members"]["members"]) == 2

    assert behaviour.main(["check", *options, "--record", str(out)]) == 0  # the same code: every entry equal
    assert "identical to" in capsys.readouterr().out

    record["tiny"]["one_run"]["lists"]["50"] = record["tiny"]["one_run"]["lists"]["50"][::-1]
    out.write_text(json.dumps(record))
    assert behaviour.main(["check", *options, "--record", str(out)]) == 1
    assert "/tiny/one_run/lists/50: differs" in capsys.readouterr().out
