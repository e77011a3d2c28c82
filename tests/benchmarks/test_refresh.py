"""The refresh simulation's command on a tiny store: draws, seeds, resuming, lists, cells, study and report."""

from __future__ import annotations

import math
import shutil
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from benchmarks import refresh
from iclfs.evaluation._benchmark import slug
from iclfs.io._synthetic import make_synthetic
from iclfs.method._config import MembersConfig
from iclfs.method._lgrc import ADMIT, HOLD
from iclfs.method._ranking import member_seed
from iclfs.method._scores import feature_order


def tiny(dataset: str, r: int, data_dirs) -> object:
    """60 features x 30 samples, two classes; after DRIFT_AT the informative features move (the drift case)."""
    return make_synthetic(n_samples=30, n_classes=2, n_informative=6, n_redundant=0, n_noise=54,
                          seed=1 if r < refresh.DRIFT_AT else 2)


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A store with 12 trained refreshes per deployment, scored by a stand-in that favours the informative ones."""
    monkeypatch.setattr(refresh, "load_table", tiny)
    calls = []

    def scored(table, samples, seed, threads):
        calls.append((seed, len(samples)))
        noise = np.random.default_rng(seed).normal(scale=0.5, size=table.X.shape[1])
        informative = np.zeros(table.X.shape[1])
        informative[table.informative_features] = 1.0
        return informative + noise, 0.25

    monkeypatch.setattr(refresh, "train_refresh", scored)
    refresh.train(["tiny"], {"tiny": 12}, refresh.DEPLOYMENTS, tmp_path, (), threads=1)
    refresh.calls = calls
    return tmp_path


def test_each_refresh_draws_ninety_percent_with_its_own_seed_and_a_rerun_resumes(store):
    assert refresh.calls == [(member_seed(d, r), 27) for d in refresh.DEPLOYMENTS for r in range(12)]
    refresh.calls.clear()
    refresh.train(["tiny"], {"tiny": 13}, refresh.DEPLOYMENTS, store, (), threads=1)
    assert refresh.calls == [(member_seed(d, 12), 27) for d in refresh.DEPLOYMENTS]  # only what was missing
    a, b = (refresh.refresh_samples(100, 42, r) for r in (0, 1))
    assert len(a) == 90 and not np.array_equal(a, b) and np.array_equal(a, refresh.refresh_samples(100, 42, 0))
    assert not np.array_equal(a, refresh.refresh_samples(100, 43, 0))  # each deployment its own draws


def test_the_cells_record_every_measure_per_method_and_refresh(store):
    cells = refresh.report_cells("tiny", store, ())
    carried = refresh.chosen().name
    unweighted = replace(refresh.chosen(), laplacian_weight=0.0).name
    methods = {key.split("/")[2] for key in cells}
    assert len(methods) == 6 and all(key.startswith("refresh/tiny/") for key in cells)
    table = pd.concat(cells.values())
    assert set(table["method"]) == {refresh.ONE, carried, unweighted, refresh.MEMBERS, "LS", "NDFS"}
    assert len(table) == 6 * 2 * 12
    # the members' mean rank alone: at the first refresh, one run's order itself (before LGRC)
    first = table[(table["refresh"] == 1) & (table["deployment"] == refresh.DEPLOYMENTS[0])]
    members = refresh.read_members(refresh.members_path(store, "tiny", refresh.DEPLOYMENTS[0]))
    alone = first.loc[first["method"] == refresh.MEMBERS, "selected"].iloc[0]
    assert alone == " ".join(map(str, feature_order(members["scores_0"])[:refresh.K]))
    later = table[table["refresh"] > 1]
    for column in ("jaccard_previous", "phi_previous", "jaccard_deployments", "phi_deployments", "accuracy"):
        assert later[column].notna().all(), column
    ones = table[table["method"] == refresh.ONE]
    assert (ones["seconds"] >= 0.25).all() and table.loc[table["method"] == "LS", "seconds"].isna().all()
    # carrying steadies the list: the carried list moves less than one run's from refresh to refresh
    assert (table.loc[table["method"] == carried, "jaccard_previous"].mean()
            > ones["jaccard_previous"].mean())


def test_the_report_states_every_target_with_its_measure(store):
    cells = refresh.report_cells("tiny", store, ())
    results = pd.concat(cells.values())
    results["dataset"] = "lung_small"  # stands in for a reported dataset
    cost = refresh.history_cost(n_features=200, members=4, repeats=1)
    assert set(cost) == {"read", "combine", "store"} and all(v >= 0 for v in cost.values())
    text = refresh.report_markdown(results, cost, {"lung_small": 6.0}, "python -m benchmarks.refresh report", 1.0)
    assert text.count("| yes |") + text.count("| no |") == 5
    assert "| not judged: 1 of 6 datasets simulated |" in text  # the accuracy target needs 5 of the 6
    assert "lung_small 0.00 h" in text and "| lung_small | 12 | LS |" in text


def test_drift_passes_only_when_half_the_new_features_arrive_within_two_half_lives():
    rows = [{"deployment": d, "refresh": r, "informative_at_50": 15 if r >= refresh.DRIFT_AT + 1 + lag else 2}
            for d, lag in ((42, 3), (43, 6)) for r in range(1, 30)]
    table = pd.DataFrame(rows)
    assert refresh.drift_passes(table, half_life=4) == (True, 6)
    assert refresh.drift_passes(table, half_life=2) == (False, 6)
    never = table.assign(informative_at_50=2)
    assert refresh.drift_passes(never, half_life=math.inf) == (False, None)


def test_the_studys_winner_follows_the_rule_fixed_in_advance():
    def row(rule, half_life, cap, drift, points, agreement, hold=1.0, laplacian="run"):
        return {"candidate": f"{rule} {half_life} {cap} {hold} {laplacian}", "rule": rule, "half_life": half_life,
                "max_members": cap, "hold": hold, "laplacian": laplacian, "drift": drift, "points": points,
                "mean_agreement": agreement}

    table = pd.DataFrame([row("mean_rank", 4.0, 16, True, 7, 0.5), row("frequency", 8.0, 64, True, 8, 0.3),
                          row("mean_rank", math.inf, 64, False, 9, 0.9), row("mean_rank", 8.0, 64, True, 8, 0.3)])
    best = refresh.winner(table)  # the drift failure cannot win; a tie on points and agreement goes to mean_rank
    assert best["rule"] == "mean_rank" and best["half_life"] == 8.0
    assert refresh.winner(table.assign(drift=False)) is None
    # the second round: a tie on points and agreement goes to the smaller hold, then to the run's Laplacian
    second = pd.DataFrame([row("mean_rank", math.inf, 64, True, 4, 0.4),
                           row("mean_rank", math.inf, 64, True, 6, 0.4, 3.0, "carried"),
                           row("mean_rank", math.inf, 64, True, 6, 0.4, 2.0, "carried"),
                           row("mean_rank", math.inf, 64, True, 6, 0.4, 2.0, "run")])
    best = refresh.winner(second)
    assert (best["hold"], best["laplacian"]) == (2.0, "run")


def test_the_second_rounds_winner_becomes_the_default_only_with_more_points_and_accuracy():
    def row(hold, laplacian, points, accurate):
        return {"hold": hold, "laplacian": laplacian, "points": points,
                **{f"{d}.accuracy_point": i < accurate for i, d in enumerate(refresh.VALIDATION)}}

    first = row(1.0, "run", 4, 3)
    winner = row(3.0, "carried", 7, 2)
    assert refresh.holds_by_default(pd.DataFrame([first, winner]), pd.Series(winner))
    assert not refresh.holds_by_default(pd.DataFrame([first]), pd.Series(row(3.0, "carried", 4, 3)))  # no more points
    assert not refresh.holds_by_default(pd.DataFrame([first]), pd.Series(row(3.0, "carried", 7, 1)))  # less accurate


def test_the_third_round_ties_go_to_the_larger_admit_and_its_winner_must_agree_more():
    def row(hold, admit, points, agreement, accurate=3):
        return {"candidate": f"{hold} {admit}", "rule": "mean_rank", "half_life": math.inf, "max_members": 64,
                "hold": hold, "laplacian": "carried", "admit": admit, "drift": True, "points": points,
                "mean_agreement": agreement,
                **{f"{d}.accuracy_point": i < accurate for i, d in enumerate(refresh.VALIDATION)}}

    assert {(c.hold, c.admit) for c in refresh.admitting_candidates()} == {
        (h, a) for h in (2.0, 3.0) for a in (2.0, 3.0, math.inf)}
    second = row(3.0, math.inf, 7, 0.37)
    tied = pd.DataFrame([row(3.0, 2.0, 7, 0.42), row(3.0, 3.0, 7, 0.42), second])
    assert refresh.winner(tied)["admit"] == 3.0  # a tie on points and agreement: the larger admit
    best = row(3.0, 2.0, 7, 0.42)
    assert refresh.admits_by_default(pd.DataFrame([best, second]), pd.Series(best))
    assert not refresh.admits_by_default(pd.DataFrame([second]), pd.Series(row(3.0, 2.0, 6, 0.5)))  # fewer points
    assert not refresh.admits_by_default(pd.DataFrame([second]), pd.Series(row(3.0, 2.0, 7, 0.37)))  # no more agreement
    assert not refresh.admits_by_default(pd.DataFrame([second]), pd.Series(row(3.0, 2.0, 7, 0.5, 1)))  # less accurate
    assert not refresh.admits_by_default(pd.DataFrame([second]), pd.Series(second))  # the second round's own


def test_the_fourth_round_ties_go_to_the_smaller_weight_and_its_winner_must_agree_more():
    def row(weight, points, agreement, accurate=3):
        return {"candidate": f"w {weight}", "rule": "mean_rank", "half_life": math.inf, "max_members": 64,
                "hold": 3.0, "laplacian": "carried", "admit": 2.0, "laplacian_weight": weight, "drift": True,
                "points": points, "mean_agreement": agreement,
                **{f"{d}.accuracy_point": i < accurate for i, d in enumerate(refresh.VALIDATION)}}

    defaults = refresh.ROUND_DEFAULTS[4]
    assert [(c.hold, c.admit, c.laplacian, c.laplacian_weight) for c in refresh.weighting_candidates()] == [
        (defaults.hold, defaults.admit, defaults.laplacian, w) for w in (0.0, 0.1, 0.25, 0.5)]
    assert (defaults.hold, defaults.admit, defaults.laplacian) == (3.0, 2.0, "carried")  # the third round's
    third = row(0.0, 7, 0.42)
    tied = pd.DataFrame([row(0.5, 8, 0.45), row(0.25, 8, 0.45), third])
    assert refresh.winner(tied)["laplacian_weight"] == 0.25  # a tie on points and agreement: the smaller weight
    best = row(0.25, 8, 0.45)
    assert refresh.weights_by_default(tied, pd.Series(best))
    assert not refresh.weights_by_default(pd.DataFrame([third]), pd.Series(row(0.25, 6, 0.5)))  # fewer points
    assert not refresh.weights_by_default(pd.DataFrame([third]), pd.Series(row(0.25, 7, 0.42)))  # no more agreement
    assert not refresh.weights_by_default(pd.DataFrame([third]), pd.Series(row(0.25, 8, 0.5, 1)))  # less accurate
    assert not refresh.weights_by_default(pd.DataFrame([third]), pd.Series(third))  # the third round's own


def test_the_study_judges_every_candidate_and_writes_its_table(store, monkeypatch):
    monkeypatch.setattr(refresh, "VALIDATION", ("tiny",))
    monkeypatch.setattr(refresh, "DRIFT", "tiny")  # the tiny tables' informative features move at DRIFT_AT
    candidates = (refresh.Candidate("mean_rank", 4.0, 16), refresh.Candidate("frequency", math.inf, 64),
                  refresh.Candidate("mean_rank", math.inf, 64, 3.0, "carried"))
    monkeypatch.setattr(refresh, "CANDIDATES", candidates)
    table = refresh.study_table(store, ())
    assert list(table["candidate"]) == [c.name for c in candidates]
    assert {"tiny.steadiness", "tiny.agreement", "tiny.accuracy", "tiny.steady_point", "points"} <= set(table.columns)
    for column in ("tiny.steadiness", "tiny.agreement", "tiny.accuracy", "tiny.one_run_accuracy"):
        assert table[column].dtype.kind == "f" and table[column].between(0, 1).all()  # measures, not points
    assert (table["points"] == table[[c for c in table.columns if c.endswith("_point")]].sum(axis=1)).all()
    text = refresh.study_markdown(table, "python -m benchmarks.refresh study")
    for name in table["candidate"]:
        assert f"| {name} | " in text
    marks = [line.split(" | ")[2].split()[-1] for line in text.splitlines() if line.startswith("| carried")]
    assert all(set(mark) <= {"✓", "·"} and len(mark) == 3 for mark in marks)


def test_the_report_command_writes_cells_and_report_and_keep_reuses_the_cells(store, tmp_path, monkeypatch):
    computed = []
    real = refresh.report_cells

    def counted(dataset, *args):
        computed.append(dataset)
        return real(dataset, *args)

    monkeypatch.setattr(refresh, "report_cells", counted)
    monkeypatch.setattr(refresh, "history_cost", lambda: {"read": 0.1, "combine": 0.2, "store": 0.3})
    out, cells = tmp_path / "refresh.md", tmp_path / "cells"
    command = ["report", "--datasets", "tiny", "--store", str(store), "--out", str(out), "--cells", str(cells)]
    refresh.main(command)
    assert computed == ["tiny"] and (cells / "refresh" / "tiny").is_dir() and out.read_text().startswith("#")
    refresh.main([*command, "--keep"])
    assert computed == ["tiny"]  # the stored cells were reused
    # a method whose cells are gone (a new default, say) is computed alone; the others are kept
    carried = cells / "refresh" / "tiny" / slug(refresh.chosen().name)
    kept = sorted(p.name for p in (cells / "refresh" / "tiny").iterdir() if p != carried)
    stamps = {p: p.stat().st_mtime_ns for p in (cells / "refresh" / "tiny").rglob("*.csv") if carried not in p.parents}
    shutil.rmtree(carried)
    refresh.main([*command, "--keep"])
    assert computed == ["tiny", "tiny"] and carried.is_dir()
    assert sorted(p.name for p in (cells / "refresh" / "tiny").iterdir() if p != carried) == kept
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # the other methods' cells untouched


def test_the_reported_carried_consensus_is_exactly_the_products():
    members = MembersConfig()
    assert refresh.chosen() == refresh.Candidate("mean_rank", members.half_life, members.kept, HOLD, "carried", ADMIT,
                                                 members.laplacian_weight, "reciprocal_rank")
    # the report shows the defaults and, while they fuse in the Laplacian rank, the same without it
    assert [c.laplacian_weight for c in refresh.carried_candidates()] == (
        [members.laplacian_weight, 0.0] if members.laplacian_weight > 0 else [0.0])


def test_the_studys_carried_step_is_the_products_rank_for_the_products_candidate():
    """The study's own step (benchmarks/refresh.py) with the product's candidate orders and gates as iclfs does."""
    from iclfs.method._lgrc import held_selections
    from iclfs.method._config import SelectionConfig
    from iclfs.method._ranking import Member, MemberHistory, rank

    rng = np.random.default_rng(0)
    names = [f"g{j}" for j in range(40)]
    study, product, lists = MemberHistory(), MemberHistory(), {}
    for r in range(4):
        scores, laplacian = rng.random(40), rng.random(40)
        member = Member(member_seed(1, r), tuple(names), scores, 0.0, str(r))
        study, order, gate = refresh.carry_candidate(study, member, names, refresh.chosen(), [5, 10], laplacian)
        ranking, product = rank([member], names, laplacian, MembersConfig(), [5, 10], product, fingerprint=str(r))
        np.testing.assert_array_equal(order, ranking.order)
        np.testing.assert_array_equal(gate, ranking.gate)
        chosen = held_selections(order, gate, SelectionConfig(), [5, 10], lists, names)
        lists = {k: [names[j] for j in c] for k, c in chosen.items()}


def test_the_fifth_round_is_judged_on_four_validation_sets_and_ties_go_to_the_rank_mean():
    def row(fusion, weight, points, agreement, accurate=4):
        return {"candidate": f"{fusion} {weight}", "rule": "mean_rank", "half_life": math.inf, "max_members": 64,
                "hold": 3.0, "laplacian": "carried", "admit": 2.0, "laplacian_weight": weight,
                "laplacian_fusion": fusion, "drift": True, "points": points, "mean_agreement": agreement,
                **{f"{d}.accuracy_point": i < accurate for i, d in enumerate(refresh.VALIDATION_FIFTH)}}

    c = refresh.ROUND_DEFAULTS[5]
    assert refresh.FOURTH_ROUNDS_FUSION == ("rank_mean", 0.25)  # the defaults when the rule was fixed
    assert refresh.ROUNDS[5].validation == ("lung_small", "ORL", "madelon", "Isolet")
    assert [(x.hold, x.admit, x.laplacian, x.laplacian_fusion, x.laplacian_weight)
            for x in refresh.fusing_candidates()] == [
        (c.hold, c.admit, c.laplacian, fusion, w)
        for fusion, w in (("rank_mean", 0.0), ("rank_mean", 0.25), ("reciprocal_rank", 0.25),
                          ("reciprocal_rank", 0.5))]
    defaults = row("rank_mean", 0.25, 8, 0.40)
    tied = pd.DataFrame([row("reciprocal_rank", 0.25, 9, 0.45), row("rank_mean", 0.0, 9, 0.45), defaults])
    assert refresh.winner(tied)["laplacian_fusion"] == "rank_mean"  # a tie on points and agreement: the rank mean
    assert refresh.winner(tied)["laplacian_weight"] == 0.0
    reciprocal = pd.Series(row("reciprocal_rank", 0.5, 9, 0.45))
    assert refresh.fuses_by_default(tied, reciprocal)
    assert refresh.fuses_by_default(tied, pd.Series(row("rank_mean", 0.0, 8, 0.41)))  # back to no weight
    assert not refresh.fuses_by_default(tied, pd.Series(row("reciprocal_rank", 0.5, 7, 0.5)))  # fewer points
    assert not refresh.fuses_by_default(tied, pd.Series(row("reciprocal_rank", 0.5, 9, 0.40)))  # no more agreement
    assert not refresh.fuses_by_default(tied, pd.Series(row("reciprocal_rank", 0.5, 9, 0.5, 2)))  # less accurate
    assert not refresh.fuses_by_default(tied, pd.Series(defaults))  # the defaults themselves
    assert refresh.judged_on(reciprocal) == list(refresh.VALIDATION_FIFTH)
    names = {x.name for x in refresh.fusing_candidates()}
    assert len(names) == 4 and sum(name.endswith(", reciprocal rank)") for name in names) == 2


def test_heads_measures_where_the_members_and_the_laplacian_part(store, tmp_path):
    row = refresh.heads("tiny", store, ())
    assert set(row) == {"shared heads", *refresh.HEADS}
    assert 2 * refresh.K - 60 <= row["shared heads"] <= refresh.K  # 60 features: two first 50 share at least 40
    runs = {d: refresh.refresh_runs("tiny", d, store, (), (), baselines=False, members_alone=True)
            for d in refresh.DEPLOYMENTS}
    first, second = (refresh.names_at(runs[d][-1], refresh.MEMBERS) for d in refresh.DEPLOYMENTS)
    assert row["the members' order"] == pytest.approx(refresh.jaccard(first, second))
    assert all(0 <= row[label] <= 1 for label in refresh.HEADS)
    text = refresh.heads_markdown({"tiny": row}, "python -m benchmarks.refresh heads")
    assert "| tiny | " in text and text.count("agreement, ") == len(refresh.HEADS)
