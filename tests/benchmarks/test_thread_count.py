"""benchmarks/thread_count.py: a run's list at several thread counts, on a tiny table."""

from __future__ import annotations

import json

import pytest

from benchmarks import thread_count


@pytest.mark.slow  # three ICLFS runs of 2 epochs on a 40 x 60 table: seconds
def test_the_page_compares_each_count_with_the_first_and_every_count_agrees_bit_for_bit(tmp_path):
    page = tmp_path / "thread_count.md"
    assert thread_count.main(["--tables", "synthetic:60x40", "--epochs", "2", "--threads", "1", "1", "2",
                              "--output", str(page)]) == 0
    record = json.loads(page.with_suffix(".json").read_text())
    result = record["results"]["synthetic:60x40"]
    assert (result["n"], result["d"], result["threads"]) == (40, 60, [1, 1, 2])
    same, other = result["against_first"]
    # the same count twice: the same run, bit for bit (what the comparison is measured against)
    assert same["same_list_at_k"] and same["same_ranking"] and same["jaccard_at_k"] == 1.0
    assert same["max_score_difference"] == 0.0 and same["same_lists_of_grid"] == same["grid"] > 0
    # another count: the same run too, since a fast training on CPU does not depend on the thread count
    assert other == same
    text = page.read_text()
    assert record["command"] in text and "| synthetic:60x40 | 40 x 60 | 2 | 1 vs 1 |" in text
    assert "| synthetic:60x40 | 40 x 60 | 2 | 1 vs 2 |" in text


def test_fewer_than_two_counts_are_refused_before_anything_runs(tmp_path, capsys):
    with pytest.raises(SystemExit):
        thread_count.main(["--threads", "2", "--output", str(tmp_path / "page.md")])
    assert "give at least two counts" in capsys.readouterr().err
    assert not (tmp_path / "page.md").exists()
