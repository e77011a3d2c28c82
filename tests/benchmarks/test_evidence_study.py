"""benchmarks/evidence.py: the study's cells, page and resumption on tiny planted tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import evidence as study
from iclfs.io._synthetic import make_synthetic


def tiny_tables(case, seed):
    shape = {"n_samples": 40, "n_classes": 2, "n_informative": 6, "n_noise": 74}
    if case == "default":
        return [make_synthetic(**shape, n_redundant=20, seed=seed)]
    return [make_synthetic(**shape, n_redundant=0, seed=1000 + seed),
            make_synthetic(**shape, n_redundant=0, seed=2000 + seed)]


@pytest.mark.slow  # 2 x 2 members at 2 epochs on 40 x 100 and 40 x 80 tables: seconds
def test_the_study_counts_false_selections_against_the_bound_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "tables", tiny_tables)
    monkeypatch.setattr(study, "Q", 10)
    paths = {"store": tmp_path / "store", "page": tmp_path / "evidence.md", "table": tmp_path / "evidence.csv"}
    study.run([0], 2, paths["store"], paths["page"], paths["table"], None, members=[1, 2])

    rows = pd.read_csv(paths["table"])
    stable = rows[rows["kind"] == "stable"]
    assert set(zip(stable["case"], stable["members"])) == {("default", 1), ("drift", 1), ("default", 2)}
    pair = stable[(stable["case"] == "default") & (stable["members"] == 2)]
    # the bound is q^2 / ((2 pi - 1) p), p = 100 features
    np.testing.assert_allclose(pair["bound"], [10 * 10 / ((2 * t - 1) * 100) for t in pair["threshold"]])
    assert (stable["false"] <= stable["stable"]).all()
    one = stable[(stable["case"] == "default") & (stable["members"] == 1)]
    assert (one["stable"] == 10).all() and one["bound"].isna().all()  # one member: its own first q, no bound
    lists = rows[rows["kind"] == "list"]
    assert sorted(lists["fusion"].unique()) == [0.0, study.FUSION]
    assert ((lists["list_false"] + lists["list_planted"]) == 10).all()

    page = paths["page"].read_text()
    assert "| default | 2 (2) | 1 | 0.9 |" in page and "Rule 1 (default): no cell with M >= 4" in page

    before = paths["table"].read_text()
    monkeypatch.setattr(study, "train_member", lambda *a, **k: pytest.fail("a stored member was trained again"))
    study.run([0], 2, paths["store"], paths["page"], paths["table"], None, members=[1, 2])
    assert paths["table"].read_text() == before
