"""benchmarks/agreement.py: the study end to end on a tiny labelled table, its page against a direct computation."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import scipy.io

from benchmarks import agreement as study
from benchmarks import refresh
from iclfs.chain import k_values_for
from iclfs.evaluation._protocol import best_k, evaluate_selections
from iclfs.io._tables import read_feature_table
from iclfs.method._config import SelectionConfig
from iclfs.method._preprocessing import prepare
from iclfs.method._stability import jaccard
from tests.benchmarks.test_refresh import store, tiny  # noqa: F401  (the refresh study's tiny store)


def test_the_grid_is_the_products():
    for d in (60, 120, 325, 7129):
        assert study.k_grid(d) == k_values_for(SelectionConfig(), d)
    assert study.counts_up_to(16) == [1, 4, 16] and study.counts_up_to(2) == [1, 2]


def fake_refresh_study(root, dataset, n, d, refreshes):
    """The refresh study's cells and stored runs for ``dataset``: known accuracies, agreement and scores."""
    rng = np.random.default_rng(5)
    for deployment in study.DEPLOYMENTS:
        for method, accuracy in ((study.ONE_RUN, 0.5), (study.TODAY, 0.55)):
            folder = root / "cells" / dataset / method
            folder.mkdir(parents=True, exist_ok=True)
            pd.DataFrame({"refresh": range(1, refreshes + 1), "accuracy": accuracy + 0.01 * np.arange(refreshes),
                          "jaccard_deployments": 0.3, "jaccard_previous": 0.9}).to_csv(
                folder / f"seed_{deployment}.csv", index=False)
        runs = {f"scores_{r}": rng.normal(size=d) for r in range(refreshes)}
        runs.update({f"seconds_{r}": np.array(2.0) for r in range(refreshes)})
        (root / "store" / dataset).mkdir(parents=True, exist_ok=True)
        np.savez(root / "store" / dataset / f"members_seed_{deployment}.npz", **runs)


@pytest.mark.slow  # 2 deployments x 3 refreshes x 4 members at 2 epochs on a 40 x 120 table, one run timed: seconds
def test_the_study_runs_end_to_end_and_its_page_holds_what_the_lines_hold(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    y = np.repeat([1, 2], 20)
    X = rng.normal(size=(40, 120)) + np.eye(2)[y - 1] @ rng.normal(scale=3.0, size=(2, 120))
    scipy.io.savemat(tmp_path / "tiny.mat", {"X": X, "Y": y.reshape(-1, 1)})
    refreshes = 3
    fake_refresh_study(tmp_path, "tiny", 40, 120, refreshes)
    monkeypatch.setattr(study, "REPORTED", ("tiny",))
    monkeypatch.setattr(study, "SHOWN", ())
    monkeypatch.setattr(study, "STEADY_FROM", 2)
    monkeypatch.setattr(study, "CELLS", tmp_path / "cells")
    monkeypatch.setattr(study, "REFRESH_STORE", tmp_path / "store")
    out, page = tmp_path / "agreement.jsonl", tmp_path / "agreement.md"
    study.main(["run", "--device", "cpu", "--datasets", "tiny", "--datasets-dir", str(tmp_path), "--out", str(out),
                "--members", "4", "--refreshes", str(refreshes), "--epochs", "2", "--workers", "1",
                "--threads", "1"])
    lines = [json.loads(text) for text in out.read_text().splitlines()]
    done = [line for line in lines if line["kind"] == "refresh"]
    assert [(line["deployment"], line["refresh"]) for line in done] == [(42, 1), (42, 2), (42, 3), (43, 1), (43, 2),
                                                                        (43, 3)]
    assert "one_run_seconds" in done[0] and all("one_run_seconds" not in line for line in done[1:])

    study.main(["report", "--results", str(out), "--page", str(page), "--datasets-dir", str(tmp_path)])
    text = page.read_text()
    last = {line["deployment"]: line for line in done if line["refresh"] == refreshes}
    table = read_feature_table(tmp_path / "tiny.mat")
    for M, fusion in ((1, 0.5), (4, 0.0), (4, 0.5)):
        cells = {d: study.cell_of(line, M, fusion) for d, line in last.items()}
        # the stable set is the features a share >= pi of the members kept (every member so far) put in their
        # first K: counted here from each member's own first K
        for d, line in last.items():
            firsts = [f for line_ in done if line_["deployment"] == d for f in line_["member_first"][:M]]
            share = np.zeros(120)
            for first in firsts:
                share[first] += 1
            share /= len(firsts)
            for t in study.THRESHOLDS:
                assert sorted(cells[d]["stable"][f"{t:g}"]) == np.flatnonzero(share >= t - 1e-9).tolist()
        # the accuracy: method.md §8 on the refresh's own samples, recomputed by the product's protocol
        for d, cell in cells.items():
            samples = refresh.refresh_samples(40, d, refreshes - 1)
            prepared = prepare(refresh.refresh_table(table, samples))
            selections = {int(k): v for k, v in cell["selections"].items()}
            best = best_k(evaluate_selections(prepared.standardized, prepared.labels, selections, n_runs=20,
                                              seed=42))
            assert cell["accuracy"]["accuracy"] == pytest.approx(best["accuracy_mean"])
        agree = jaccard(cells[42]["list"], cells[43]["list"])
        steady = np.mean([jaccard(study.cell_of(a, M, fusion)["list"], study.cell_of(b, M, fusion)["list"])
                          for d in study.DEPLOYMENTS for a, b in zip(
                              [x for x in done if x["deployment"] == d][:-1],
                              [x for x in done if x["deployment"] == d][1:])])
        accuracy = np.mean([cells[d]["accuracy"]["accuracy"] for d in study.DEPLOYMENTS])
        row = f"| tiny | {M} | {study.fusion_name(fusion)} | {agree:.2f} | {steady:.2f} | {100 * accuracy:.1f} (51.0) |"
        assert row in text
    # today's default from the refresh study at refresh 3: agreement 0.3, steadiness 0.9, accuracy 0.57
    assert "| tiny | today | on (0.5) | 0.30 | 0.90 | 57.0 (51.0) |" in text
    assert "## By the rule" in text and "CPU default (rule 4)" in text

    # a killed run keeps its finished lines: a cut last line is reported, the rest read
    out.write_text(out.read_text() + '{"kind": "refresh", "dat')
    assert study.load([out]).finished("tiny")


def test_the_verdict_follows_the_rule():
    def measured(agreement, accuracy, stable):
        return study.Measured(agreement, 0.9, accuracy, {f"{t:g}": (10, 10, stable) for t in study.THRESHOLDS},
                              2.0, 1.0)

    sets = study.REPORTED
    todays = {d: study.Today(0.3, 0.9, 0.5, 0.5, {}, 1.0) for d in sets}
    good = {(d, M, f): measured(0.7 if M >= 4 else 0.2, 0.6, 0.85) for d in sets for M in (1, 4, 16)
            for f in study.FUSIONS}
    verdict = study.judge(good, todays, set(sets), {4: 1.5, 16: 6.0})
    assert verdict.winner["members"] == 4 and verdict.winner["fusion"] == 0.0 and verdict.winner["threshold"] == 0.9
    assert verdict.beats_today and "so the CPU default is the winner's too" in verdict.cpu
    # one reported set not run: no default changes, and that set fails the list target's count
    verdict = study.judge(good, todays, set(sets[:-1]), {4: 1.5})
    assert verdict.winner is None and not verdict.all_run and verdict.not_run == [sets[-1]]
    assert verdict.could_change  # at its best the set not run would let M = 4 through
    assert any(line.startswith(f"- The sets not run ({sets[-1]}) could still change that")
               for line in study.decision_lines(verdict))
    # lists agreeing 0.45 on the sets that ran: even at agreement 1.0 the set not run leaves the median below 0.6
    low = {key: measured(0.45, 0.6, 0.85) for key in good}
    verdict = study.judge(low, todays, set(sets[:-1]), {})
    assert not verdict.could_change
    (line,) = [line for line in study.decision_lines(verdict) if "cannot change the verdict" in line]
    assert line.endswith("the highest median list agreement any could then reach is 0.45 (M = 4, fusion on (0.5)), "
                         "below T2's 0.6.")
    # lists that agree less than 0.6 on the median set: no winner; the best reached is still given
    poor = {key: measured(0.5, 0.6, 0.85) for key in good}
    verdict = study.judge(poor, todays, set(sets), {})
    assert verdict.winner is None and verdict.best_list["list_median_run"] == 0.5
    assert any("best list agreement reached: median 0.50" in line for line in study.decision_lines(verdict))


@pytest.mark.slow  # two spawned workers, each importing torch: seconds
def test_workers_in_processes_write_what_one_process_writes(tmp_path):
    rng = np.random.default_rng(1)
    y = np.repeat([1, 2], 16)
    X = rng.normal(size=(32, 110)) + np.eye(2)[y - 1] @ rng.normal(scale=3.0, size=(2, 110))
    scipy.io.savemat(tmp_path / "lung_small.mat", {"X": X, "Y": y.reshape(-1, 1)})
    common = ["run", "--device", "cpu", "--datasets", "lung_small", "--datasets-dir", str(tmp_path), "--members", "2",
              "--refreshes", "2", "--epochs", "2", "--threads", "1", "--no-accuracy"]
    for workers in (1, 2):
        study.main([*common, "--workers", str(workers), "--out", str(tmp_path / f"{workers}.jsonl")])
    lists = {}
    for workers in (1, 2):
        lines = [json.loads(t) for t in (tmp_path / f"{workers}.jsonl").read_text().splitlines()]
        assert lines[0]["kind"] == "start" and lines[-1]["kind"] == "end"
        lists[workers] = {(x["deployment"], x["refresh"]): [(c["members"], c["fusion"], c["list"], c["stable"])
                                                            for c in x["candidates"]]
                          for x in lines if x["kind"] == "refresh"}
    assert set(lists[1]) == {(42, 1), (42, 2), (43, 1), (43, 2)}
    assert lists[1] == lists[2]


def test_a_chain_is_taken_whole_from_the_run_where_it_went_furthest(tmp_path):
    def lines(deployment, refreshes, tag):
        return [json.dumps({"kind": "refresh", "dataset": "ORL", "deployment": deployment, "refresh": r,
                            "tag": tag, "candidates": []}) for r in refreshes]

    first = tmp_path / "run1.jsonl"
    second = tmp_path / "run2.jsonl"
    first.write_text("\n".join([json.dumps({"kind": "start", "refreshes": 3, "datasets": ["ORL"]}),
                                *lines(42, [1, 2, 3], "a"), *lines(43, [1], "a")]) + "\n")
    second.write_text("\n".join([json.dumps({"kind": "start", "refreshes": 3, "datasets": ["ORL"]}),
                                 *lines(42, [1], "b"), *lines(43, [1, 2, 3], "b")]) + "\n")
    results = study.load([first, second])
    assert [line["tag"] for line in results.chain("ORL", 42)] == ["a", "a", "a"]  # never run 2's refresh 1
    assert [line["tag"] for line in results.chain("ORL", 43)] == ["b", "b", "b"]
    assert results.chain("ORL", 42)[0]["source"] == "run1.jsonl" and results.finished("ORL")


def fake_fusion_cells(root, sets, weights, refreshes=study.REFRESHES):
    """The refresh study's cells of today's default at each Laplacian weight, one run per refresh and the drift
    case: ``weights`` maps a weight to {set: (accuracy, list agreement, steadiness)} at every refresh."""
    rng = np.random.default_rng(7)
    for dataset in sets:
        for deployment in study.DEPLOYMENTS:
            for method, (accuracy, agreement, steady) in ((study.ONE_RUN, (0.5, 0.1, 0.1)), *(
                    (study.FUSION_CELLS[w], measures[dataset]) for w, measures in weights.items())):
                folder = root / "cells" / dataset / method
                folder.mkdir(parents=True, exist_ok=True)
                pd.DataFrame({"refresh": range(1, refreshes + 1), "accuracy": accuracy,
                              "jaccard_deployments": agreement, "jaccard_previous": steady}).to_csv(
                    folder / f"seed_{deployment}.csv", index=False)
            (root / "store" / dataset).mkdir(parents=True, exist_ok=True)
            np.savez(root / "store" / dataset / f"members_seed_{deployment}.npz",
                     **{f"scores_{r}": rng.normal(size=80) for r in range(refreshes)},
                     **{f"seconds_{r}": np.array(1.0) for r in range(refreshes)})
    # the drift case: every weight holds half the 30 new features from the third refresh after the change on
    for weight in weights:
        folder = root / "cells" / study.DRIFT / study.FUSION_CELLS[weight]
        folder.mkdir(parents=True, exist_ok=True)
        for deployment in study.DEPLOYMENTS:
            pd.DataFrame({"deployment": deployment, "refresh": range(1, 16),
                          "informative_at_50": [0] * 12 + [20] * 3}).to_csv(folder / f"seed_{deployment}.csv",
                                                                             index=False)


def test_the_fusion_rounds_read_every_weight_from_the_refresh_cells_and_follow_their_rule(tmp_path, monkeypatch):
    sets = ("a", "b", "c", "d", "e", "f")
    monkeypatch.setattr(study, "REPORTED", sets)
    monkeypatch.setattr(study, "STEADY_FROM", 2)
    monkeypatch.setattr(study, "CELLS", tmp_path / "cells")
    monkeypatch.setattr(study, "REFRESH_STORE", tmp_path / "store")
    # on: steady, agreeing, below one run's mean (0.5) on 3 sets; off: above it everywhere, less steady on one set;
    # the middle weight: above it on 4 sets, steady everywhere
    on = {d: (0.45 if i < 3 else 0.55, 0.4, 0.95) for i, d in enumerate(sets)}
    off = {d: (0.6, 0.3, 0.85 if d == "c" else 0.92) for d in sets}
    middle = {d: (0.45 if i < 2 else 0.55, 0.35, 0.93) for i, d in enumerate(sets)}
    fake_fusion_cells(tmp_path, sets, {0.5: on, 0.25: middle, 0.0: off})
    page = tmp_path / "fusion.md"
    study.main(["fusion", "--page", str(page)])
    text = page.read_text()
    assert "| a | on (0.5) | 0.40 | 0.95 | 45.0 (50.0) | no |" in text
    assert "| c | on (0.25) | 0.35 | 0.93 | 55.0 (50.0) | yes |" in text
    assert "| c | off | 0.30 | 0.85 | 60.0 (50.0) | yes |" in text
    assert "| on (0.5) | 0.95 | pass (3 refreshes after the change) | pass | 3 of 6 not met | 0.40 |" in text
    assert "| on (0.25) | 0.93 | pass (3 refreshes after the change) | pass | 4 of 6 not met | 0.35 |" in text
    assert "| off | 0.85 | pass (3 refreshes after the change) | fail | 6 of 6 met | 0.30 |" in text
    assert "- The fusion off fails the guards: steadiness below 0.9 on c." in text
    assert "- The winner is the fusion on (0.5): it and the fusion on (0.25) both miss T3, and its lists agree " \
           "more: median 0.40 against 0.35 (step 2). `members.laplacian_weight` stays 0.5." in text

    # the middle weight meets T3, steady everywhere: it wins though its lists agree less (step 1)
    middle = {d: (0.45 if i < 1 else 0.55, 0.35, 0.93) for i, d in enumerate(sets)}
    fake_fusion_cells(tmp_path, sets, {0.25: middle})
    rows = study.fusion_rows()
    assert study.fusion_winner(rows)["weight"] == 0.25
    assert "it meets T3 and the fusion on (0.5) does not (step 1). `members.laplacian_weight` becomes 0.25." in \
        study.render_fusion(rows, "x")
    # steady everywhere, off and the middle weight both meet T3: the lists that agree more win
    fake_fusion_cells(tmp_path, sets, {0.0: {d: (0.6, 0.3, 0.92) for d in sets}})
    assert study.fusion_winner(study.fusion_rows())["weight"] == 0.25
    # on a tie of T3 and agreement, the lower weight wins
    fake_fusion_cells(tmp_path, sets, {0.0: {d: (0.6, 0.35, 0.92) for d in sets}})
    rows = study.fusion_rows()
    assert study.fusion_winner(rows)["weight"] == 0.0
    assert "a tie with the fusion on (0.25) on T3 and on the median list agreement, which goes to the lower " \
           "weight (step 3). `members.laplacian_weight` becomes 0." in study.render_fusion(rows, "x")
    # a set without cells fails the guards of every weight: the weight stays today's
    for method in study.FUSION_CELLS.values():
        for deployment in study.DEPLOYMENTS:
            (tmp_path / "cells" / "f" / method / f"seed_{deployment}.csv").unlink()
    rows = study.fusion_rows()
    assert study.fusion_winner(rows) is None
    assert "- No candidate passes the guards: `members.laplacian_weight` stays 0.5." in \
        study.render_fusion(rows, "x")


def test_the_fusion_rounds_read_the_refresh_studys_own_folders():
    names = {w: refresh.slug(study.fusion_candidate(w).name) for w in study.FUSION_CELLS}
    assert names == study.FUSION_CELLS
    assert {c.laplacian_weight: refresh.slug(c.name) for c in refresh.carried_candidates()} == \
        {w: study.FUSION_CELLS[w] for w in (0.5, 0.0)}
    chosen = refresh.chosen()  # today's, as the refresh report carries it
    assert study.fusion_candidate(chosen.laplacian_weight) == chosen


def test_the_third_round_computes_a_weights_cells_as_the_refresh_report_does(store, tmp_path, monkeypatch):
    monkeypatch.setattr(study, "REPORTED", ("tiny",))
    monkeypatch.setattr(study, "DRIFT", "tiny")  # the tiny store stands in for the drift case too
    cells = tmp_path / "cells"
    written = study.compute_fusion_cells((), cells, store)
    assert len(written) == 2 * len(study.FUSION_CELLS)  # every weight, both deployments, one set
    chosen = refresh.chosen()
    reported = refresh.report_cells("tiny", store, (), methods=[chosen.name])
    for deployment in study.DEPLOYMENTS:
        mine = pd.read_csv(cells / "tiny" / study.FUSION_CELLS[chosen.laplacian_weight] / f"seed_{deployment}.csv")
        theirs = reported[f"refresh/tiny/{refresh.slug(chosen.name)}/seed_{deployment}"]
        timing = ["seconds", "list_seconds"]  # the combining's own time: measured again
        pd.testing.assert_frame_equal(mine.drop(columns=timing), theirs.drop(columns=timing).reset_index(drop=True),
                                      check_dtype=False)
    assert study.compute_fusion_cells((), cells, store) == []  # what is stored is not computed again
    monkeypatch.setitem(study.FUSION_CELLS, 0.25, "some-other-folder")
    (cells / "tiny" / study.FUSION_CELLS[0.5] / "seed_42.csv").unlink()
    with pytest.raises(ValueError, match="the refresh study names it"):
        study.compute_fusion_cells((), cells, store)
