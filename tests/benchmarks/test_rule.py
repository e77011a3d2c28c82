"""The rule that picks the default among candidates: each point, the totals, the tie-break, the bounds
on a candidate whose cells are missing; and `compare`, which shows candidates side by side without the rule."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from benchmarks.grid import read_cells, write_cell
from benchmarks.rule import (
    POINTS,
    IncompleteError,
    Rule,
    _jaccard_bounds,
    compare_text,
    decide,
    decide_text,
    main,
    markdown,
    points,
)
from iclfs.evaluation._benchmark import cell_key, gather
from tests.evaluation.cells import cell

ONE = "ICLFS [fast]"
WIDE, NARROW = "ICLFS [fast, 3 members of 50 epochs, 0.5 of samples]", "ICLFS [fast, 6 members of 25 epochs, 0.5 of samples]"
CANDIDATES = {"R": ONE, "L1": WIDE, "L2": NARROW}


def _write(folder, cells):
    """Each cell to its file under ``folder``, as `benchmark run` writes it."""
    for table in cells:
        row = table.iloc[0]
        write_cell(folder, cell_key(row["dataset"], row["method"], row["seed"]), table)


def _picks(start):
    return " ".join(map(str, range(start, start + 50)))


def _grid(spec, dataset="a", seeds=(42, 43, 44), baseline=0.50):
    """Cells for ``{method: (accuracies per seed, seconds, selections per seed or None)}`` plus an LS baseline."""
    cells = [cell("LS", s, [baseline], dataset=dataset, ks=(50,)) for s in seeds]
    for method, (accs, seconds, picks) in spec.items():
        cells += [cell(method, s, [a], dataset=dataset, ks=(50,), seconds=seconds,
                       selected=picks[i] if picks else None)
                  for i, (s, a) in enumerate(zip(seeds, accs, strict=True))]
    return cells


def test_each_point_is_scored_against_the_reference_and_the_best_baseline():
    results = gather({str(i): c for i, c in enumerate(_grid({
        ONE: ((0.60, 0.70, 0.80), 100.0, [_picks(0), _picks(100), _picks(200)]),  # mean 70, std 8.16, J 0
        WIDE: ((0.70, 0.72, 0.74), 150.0, None),      # mean 72 >= 70; std 1.63 <= 4.08; J 1; cost 1.5x
        NARROW: ((0.40, 0.45, 0.47), 151.0, None),    # mean 44 < LS 50; cost just over 1.5x
    }))})
    table = points(results, CANDIDATES, "R", ["a"], [42, 43, 44]).set_index("candidate")
    assert table.loc["R", list(POINTS)].tolist() == [1, 0, 0, 1, 1]
    assert table.loc["L1", list(POINTS)].tolist() == [1, 1, 1, 1, 1]
    assert table.loc["L2", list(POINTS)].tolist() == [0, 1, 1, 0, 0]
    assert table.loc["L1", "total"] == 5 and table.loc["L2", "total"] == 2
    assert table.loc["R", "jaccard"] == 0.0 and table.loc["L1", "jaccard"] == 1.0
    assert table.loc["R", "mean"] == pytest.approx(70.0)
    assert table.loc["R", "best_baseline"] == "LS 50.00"


def test_the_most_points_over_the_datasets_win():
    one = ((0.69, 0.70, 0.71), 10.0, None)  # std 0.82: a candidate without spread earns that point
    cells = _grid({ONE: one, WIDE: ((0.6, 0.6, 0.6), 10.0, None), NARROW: ((0.5, 0.5, 0.5), 10.0, None)}, "a")
    cells += _grid({ONE: one, WIDE: ((0.8, 0.8, 0.8), 10.0, None), NARROW: ((0.9, 0.9, 0.9), 100.0, None)}, "b")
    table = points(gather({str(i): c for i, c in enumerate(cells)}), CANDIDATES, "R", ["a", "b"], [42, 43, 44])
    winner, totals = decide(table)
    # a: R 1+0+1+1+1, L1 0+1+1+1+1, L2 0+1+1+1+1 (50 is the baseline's 50); b: R 4, L1 5, L2 1+1+1+1+0 (cost)
    assert totals["candidate"].tolist() == ["L1", "R", "L2"]  # R and L2 tie at 8 and 70.00: R is listed first
    assert totals["points"].tolist() == [9, 8, 8]
    assert winner == "L1"


def _complete(table):
    """A points table of candidates with every cell: nothing open, the mean known exactly."""
    return table.assign(total_max=table["total"], mean_min=table["mean"], mean_max=table["mean"])


def test_a_tie_in_points_goes_to_the_higher_mean_accuracy():
    table = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "candidate": ["R", "L1", "R", "L1"],
                          "mean": [60.0, 70.0, 60.0, 52.0], "total": [3, 3, 2, 2]})
    winner, totals = decide(_complete(table))
    assert winner == "L1" and totals["mean_accuracy"].tolist() == [61.0, 60.0]
    winner, _ = decide(_complete(table.assign(mean=60.0)))  # a tie in both: the candidate listed first
    assert winner == "R"


def test_the_reference_and_the_baselines_need_every_seed():
    cells = _grid({ONE: ((0.7, 0.7, 0.7), 10.0, None), WIDE: ((0.8, 0.8, 0.8), 10.0, None)})
    without_reference = [c for c in cells if not (c["method"].iloc[0] == ONE and c["seed"].iloc[0] == 44)]
    missing = r"a: 'ICLFS \[fast\]' \(R\) has cells at seeds \[42, 43\], the rule needs \[42, 43, 44\]"
    with pytest.raises(IncompleteError, match=missing):
        points(gather({str(i): c for i, c in enumerate(without_reference)}), {"R": ONE, "L1": WIDE}, "R", ["a"],
               [42, 43, 44])
    without_baseline = [c for c in cells if not (c["method"].iloc[0] == "LS" and c["seed"].iloc[0] == 43)]
    with pytest.raises(IncompleteError, match="the baselines have no cells at every seed"):
        points(gather({str(i): c for i, c in enumerate(without_baseline)}), {"R": ONE}, "R", ["a"], [42, 43, 44])
    with pytest.raises(ValueError, match="reference 'X'"):
        points(gather({"0": cells[0]}), {"R": ONE}, "X", ["a"], [42])


def test_a_candidate_with_seeds_missing_gets_the_points_its_cells_settle():
    # R: 50, 51, 52 (std 0.82), J 0, 100 s; LS 60. L1 has 2 of 3 seeds: 57.37 and 51.66, 5.71 apart, so
    # its std over three is at least 5.71 / 2 * sqrt(2 / 3) = 2.33 > 0.41; the two share 10 of 90 (J 1/9),
    # so three share at most (2/9 + 1) / 3 = 0.41 < 0.6; their 3000 s already make 1000 s a seed > 150.
    cells = _grid({ONE: ((0.50, 0.51, 0.52), 100.0, [_picks(0), _picks(100), _picks(200)])}, baseline=0.60)
    cells += [cell(WIDE, seed, [acc], dataset="a", ks=(50,), seconds=1500.0, selected=_picks(start))
              for seed, acc, start in ((42, 0.5737, 0), (43, 0.5166, 40))]
    table = points(gather({str(i): c for i, c in enumerate(cells)}), {"R": ONE, "L1": WIDE}, "R", ["a"],
                   [42, 43, 44]).set_index("candidate")
    l1 = table.loc["L1"]
    assert [None if pd.isna(l1[p]) else int(l1[p]) for p in POINTS] == [None, 0, 0, None, 0]
    assert (l1["total"], l1["total_max"], l1["seeds"]) == (0, 2, 2)
    assert (l1["mean_min"], l1["mean_max"]) == pytest.approx(((57.37 + 51.66) / 3, (57.37 + 51.66 + 100) / 3))
    assert l1["jaccard"] == pytest.approx(1 / 9)
    # the same two seeds at 100 s each, and far above R: accuracy and baseline are earned whatever seed 44 gives
    high = [c.assign(accuracy_mean=0.99, seconds=100.0) if c["method"].iloc[0] == WIDE else c for c in cells]
    l1 = points(gather({str(i): c for i, c in enumerate(high)}), {"R": ONE, "L1": WIDE}, "R", ["a"],
                [42, 43, 44]).set_index("candidate").loc["L1"]
    assert [None if pd.isna(l1[p]) else int(l1[p]) for p in POINTS] == [1, None, 0, 1, None]


def test_the_jaccard_bounds_are_hand_computed_and_hold_for_any_missing_selection():
    assert _jaccard_bounds(0.12, 2, 3) == pytest.approx((0.04, (2 * 0.12 + 1) / 3))
    # 3 of 4 known at a mean of 0.5: D = 1.5, a fourth shares at most 3 - 1.5 / 2 = 2.25 with them
    assert _jaccard_bounds(0.5, 3, 4) == pytest.approx((1.5 / 6, 3.75 / 6))
    assert _jaccard_bounds(None, 1, 3) == (0.0, 1.0) and _jaccard_bounds(None, 0, 3) == (0.0, 1.0)
    assert _jaccard_bounds(None, 2, 3) == (0.0, 1.0)  # cells without their selections
    assert _jaccard_bounds(None, 0, 1) == (None, None)  # one seed has no pair
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(2, 6))
        m = int(rng.integers(0, n))
        sets = [set(rng.choice(12, size=int(rng.integers(1, 8)), replace=False).tolist()) for _ in range(n)]

        def mean_jaccard(group):
            return np.mean([len(a & b) / len(a | b) for a, b in itertools.combinations(group, 2)])

        known = mean_jaccard(sets[:m]) if m > 1 else None
        low, high = _jaccard_bounds(known, m, n)
        assert low - 1e-12 <= mean_jaccard(sets) <= high + 1e-12


def test_a_winner_is_named_only_when_no_missing_cell_can_change_it():
    def table(rows):
        return pd.DataFrame([dict(zip(("dataset", "candidate", "mean", "total", "total_max", "mean_min", "mean_max"),
                                      row)) for row in rows])

    settled = table([("a", "R", 60.0, 3, 3, 60.0, 60.0), ("a", "B", 55.0, 1, 2, 40.0, 70.0)])
    assert decide(settled)[0] == "R"
    open_ = table([("a", "R", 60.0, 3, 3, 60.0, 60.0), ("a", "B", 55.0, 1, 4, 40.0, 70.0)])
    assert decide(open_)[0] is None
    # B can at most tie R's points, and then needs a higher mean accuracy than R's
    tie = table([("a", "R", 60.0, 3, 3, 60.0, 60.0), ("a", "B", 55.0, 1, 3, 40.0, 59.0)])
    assert decide(tie)[0] == "R"
    assert decide(tie.assign(mean_max=[60.0, 61.0]))[0] is None
    winner, totals = decide(tie)
    assert totals[["candidate", "points", "points_max"]].values.tolist() == [["R", 3, 3], ["B", 1, 3]]


def test_markdown_marks_the_points_the_missing_cells_decide():
    cells = _grid({ONE: ((0.50, 0.51, 0.52), 100.0, None)}, baseline=0.60)
    cells += [cell(WIDE, 42, [0.30], dataset="a", ks=(50,), seconds=1000.0)]
    candidates = {"R": ONE, "L1": WIDE}
    table = points(gather({str(i): c for i, c in enumerate(cells)}), candidates, "R", ["a"], [42, 43, 44])
    winner, totals = decide(table)
    text = markdown(table, totals, winner, candidates)
    # one seed at 30 %: a mean of 10-76.67 over three, std unknown, 1000 s over three is at least 333 s > 150
    assert "| a | L1 | 30.00 ± – (1 of 3 seeds) | – | 1000 | LS 60.00 | ? | ? | ? | ? | 0 | 0–4 |" in text
    assert "| L1 | 0–4 | 30.00 over the seeds run; 10.00–76.67 over all |" in text
    assert winner is None and "No winner yet" in text
    # a second seed 20 points away, sharing nothing: L1 can earn at most accuracy and baseline (2, R's
    # total), and even three seeds would average at most (30 + 10 + 100) / 3 = 46.67 < R's 51
    cells += [cell(WIDE, 43, [0.10], dataset="a", ks=(50,), seconds=1000.0, selected=_picks(100))]
    table = points(gather({str(i): c for i, c in enumerate(cells)}), candidates, "R", ["a"], [42, 43, 44])
    winner, totals = decide(table)
    assert winner == "R"
    assert markdown(table, totals, winner, candidates).endswith(
        "Winner by the rule: **R** (ICLFS [fast]), whatever the missing cells give.\n")


def test_the_thresholds_are_the_rules():
    assert Rule() == Rule(spread_ratio=0.5, jaccard=0.6, cost_ratio=1.5, k=50)


def test_decide_reads_cells_and_names_candidates_by_their_settings(tmp_path, capsys):
    cells = _grid({ONE: ((0.7, 0.7, 0.7), 10.0, None), WIDE: ((0.8, 0.8, 0.8), 10.0, None)})
    _write(tmp_path, cells)
    text = decide_text(["R=members.per_run=1",
                        "L1=members.per_run=3,members.epochs=50,members.subsample=0.5"], ["a"], [42, 43, 44], read_cells(tmp_path))
    assert "| L1 | ICLFS [fast, 3 members of 50 epochs, 0.5 of samples] |" in text
    assert "Winner by the rule: **L1**" in text
    with pytest.raises(ValueError, match="not NAME="):
        decide_text(["members.per_run"], ["a"], [42], {})
    with pytest.raises(ValueError, match="given twice"):
        decide_text(["R=members.per_run=1", "R=members.per_run=2"], ["a"], [42], {})


def test_markdown_lists_every_point():
    cells = _grid({ONE: ((0.7, 0.7, 0.7), 10.0, None)})
    table = points(gather({str(i): c for i, c in enumerate(cells)}), {"R": ONE}, "R", ["a"], [42, 43, 44])
    winner, totals = decide(table)
    text = markdown(table, totals, winner, {"R": ONE})
    assert "| a | R | 70.00 ± 0.00 | 1.00 | 10 | LS 50.00 | 1 | 1 | 1 | 1 | 1 | 5 |" in text


def test_decide_writes_a_page_that_names_its_command(tmp_path, capsys):
    _write(tmp_path / "cells", _grid({ONE: ((0.7, 0.7, 0.7), 10.0, None)}))
    argv = ["decide", "--cells", str(tmp_path / "cells"), "--datasets", "a", "--candidates", "R=members.per_run=1",
            "--out", str(tmp_path / "points.md")]
    main(argv)
    page = (tmp_path / "points.md").read_text()
    assert page.startswith("# The rule's points\n\nGenerated by `python -m benchmarks.rule decide --cells ")
    assert page.endswith(capsys.readouterr().out)
    with pytest.raises(SystemExit):
        main(["decide", "--cells", str(tmp_path / "cells"), "--datasets", "b", "--candidates", "R=members.per_run=1"])
    assert "b: 'ICLFS [fast]' (R) has cells at seeds []" in capsys.readouterr().err


def test_compare_shows_each_candidate_over_the_seeds_it_has_without_points(tmp_path, capsys):
    cells = _grid({ONE: ((0.7, 0.6, 0.8), 10.0, [_picks(0), _picks(0), _picks(25)])})
    cells += _grid({WIDE: ((0.9,), 2.5, None)}, seeds=(42,))[1:]  # WIDE at one seed; the LS cell is already there
    _write(tmp_path / "cells", cells)
    argv = ["compare", "--cells", str(tmp_path / "cells"), "--datasets", "a", "b", "--candidates",
            "R=members.per_run=1", "L1=members.per_run=3,members.epochs=50,members.subsample=0.5",
            "--out", str(tmp_path / "side.md")]
    main(argv)
    text = capsys.readouterr().out
    # R: mean 70 ± std 8.16 over three seeds; Jaccard of {0..49} twice and {25..74} once: (1 + 1/3 + 1/3) / 3
    assert "| a | R | 70.00 ± 8.16 (3) | 0.56 | 10 | 1.00 | LS 50.00 ± 0.00 (3) |" in text
    assert "| a | L1 | 90.00 (1) | – | 2 | 0.25 | LS 50.00 ± 0.00 (3) |" in text
    assert "| b |" not in text and "points" not in text and "Winner" not in text
    page = (tmp_path / "side.md").read_text()
    assert page.startswith("# Candidates side by side\n\nGenerated by `python -m benchmarks.rule compare ")
    assert page.endswith(text)
    assert compare_text(["R=members.per_run=1"], ["a"], [43], read_cells(tmp_path / "cells")).count("| a |") == 1
    with pytest.raises(SystemExit):
        main(["compare", "--cells", str(tmp_path / "cells"), "--candidates", "one-run"])
    assert "not NAME=" in capsys.readouterr().err
