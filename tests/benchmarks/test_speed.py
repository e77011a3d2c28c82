"""The speed benchmark command: target checks, the default selection's timing, and one tiny real run."""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io

from benchmarks import speed


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch):
    """Tiny tensors on a shared 2-core machine: one torch thread here and in every worker subprocess
    (OMP_NUM_THREADS) avoids OpenMP spin contention, which makes these runs ten times slower."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    # The command's own reference rate: a small product is enough here (the workers measure theirs).
    rate = speed.matmul_gflops
    monkeypatch.setattr(speed, "matmul_gflops", lambda device, size=256, repeats=2: rate(device, size, repeats))
    yield
    torch.set_num_threads(threads)


def _result(seconds: float, gib: float, gflop: float | None = None, kernel: str = "fused",
            rate: float | None = None) -> dict:
    """A worker's row; the fast worker (gflop given) measures the matmul rate around its epochs."""
    return {"source": "x.mat", "d": 5966, "n": 102, "regime": "small", "median_seconds": seconds,
            "peak_rss_bytes": gib * 2**30, "flops_per_epoch": None if gflop is None else gflop * 1e9,
            "estimated_bytes": 2**30, "attention_kernel": kernel, "precision": "fp32",
            "matmul_gflops": rate if rate is not None or gflop is None else 100.0,
            "loss_block_rows": None if gflop is None else 5966}


def _report(date: str = "2026-11-22 09:00 UTC", rate: float = 100.0) -> dict:
    env = {"date": date, "machine": "x86_64", "cpu_threads": 2, "device": "cpu", "torch": "2", "python": "3.11",
           "matmul_gflops": rate, "command": "python -m benchmarks.speed"}
    return {"environment": env, "datasets": [
        {"name": "arcene", "paper": _result(40.0, 4.0), "fast": _result(10.0, 1.6, gflop=750.0)},
        {"name": "Prostate_GE", "paper": _result(15.0, 1.8), "fast": _result(5.0, 1.0, gflop=300.0)},
    ], "sweep_d": [], "sweep_n": []}


def test_targets_are_checked_with_values_and_verdicts():
    report = _report()
    report["datasets"][0]["attention_seconds"] = {"fused": 2.0, "blocked": 2.5}
    text = speed.render(report, notes="Why Prostate_GE misses.")
    assert "| arcene | 102 x 5966 | 2.00 | 2.50 | fused | fused |" in text
    assert "- arcene: speed-up 4.00x (target >= 1.80x): met" in text
    assert "- arcene: share of the matmul rate 75 % (target >= 70 %): met" in text  # 750 GFLOP / 10 s / 100
    assert "- arcene: peak memory fast / paper 0.40 (target <= 0.50): met" in text
    assert "- Prostate_GE: speed-up 3.00x (target >= 5.00x): missed" in text
    assert text.rstrip().endswith("## Analysis\n\nWhy Prostate_GE misses.")


def test_share_is_judged_against_the_rate_the_fast_worker_measured():
    report = _report(rate=100.0)  # the rate at the start of the run
    report["datasets"][0]["fast"]["matmul_gflops"] = 125.0  # arcene's worker measured more, later
    text = speed.render(report)
    assert "- arcene: share of the matmul rate 60 % (target >= 70 %): missed" in text  # 750 GFLOP / 10 s / 125
    assert "| 750 | 75.0 | 125.0 | 60% |" in text
    assert "| 300 | 60.0 | 100.0 | 60% |" in text  # Prostate_GE: its worker's 100 GFLOP/s
    assert "| fused | 5966 | fp32 |" in text  # the InfoNCE block rows the fast worker used


@pytest.mark.parametrize(("device", "memory"), [("cpu", "peak RSS"), ("NVIDIA H200", "max allocated CUDA memory")])
def test_render_names_the_memory_the_device_reports(device, memory):
    """On CUDA the environment's device is the card's name, and memory is the allocator's peak."""
    report = _report()
    report["environment"]["device"] = device
    text = speed.render(report)
    assert f"whole process's {memory} " in text
    assert ("## Targets" in text) is (device == "cpu")  # the targets are CPU targets


@pytest.mark.parametrize(("epochs", "run"), [(1, 1), (2, 3)])
def test_cpu_epochs_are_timed_after_a_warm_up_unless_there_is_one(monkeypatch, epochs, run):
    """On CPU one epoch of the largest sweep takes minutes: a single epoch is timed as it is."""
    calls = []
    step = speed.Trainer.train_epoch
    monkeypatch.setattr(speed.Trainer, "train_epoch", lambda self: calls.append(1) or step(self))
    result = speed.worker("synthetic:30x8", "fast", epochs, "cpu", False)
    assert len(result["epoch_seconds"]) == epochs and len(calls) == run


@pytest.mark.parametrize(("block_rows", "backward_products"), [(16, 4), (5, 5)])
def test_flop_counter_counts_every_product_of_the_blocked_attention(block_rows, backward_products):
    """Forward: q k^T and P v. Backward: dP, dq, and the dk and dv that accumulate
    in place (addmm_), plus the weights' recomputation unless one block kept them."""
    import torch

    from iclfs.method._attention import blocked_attention

    L, e = 16, 8
    q, k, v = (torch.randn(L, e, requires_grad=True) for _ in range(3))
    with speed.flop_counter() as counter:
        blocked_attention(q, k, v, block_rows).sum().backward()
    assert counter.get_total_flops() == (2 + backward_products) * 2 * L * L * e


def test_flop_counter_counts_the_blocked_info_nce_backward():
    import torch

    from iclfs.method._losses import info_nce_with_negative

    d, dz = 12, 4
    za, zp, zn = (torch.randn(d, dz, requires_grad=True) for _ in range(3))
    with speed.flop_counter() as counter:
        info_nce_with_negative(za, zp, zn, 0.5, 5).backward()
    products = 2 * d * d * dz
    # forward logits; backward: the recomputed logits, grad_za, and grad_zp (addmm_)
    assert counter.get_total_flops() == 4 * products


@pytest.mark.slow
def test_command_measures_both_schedules_a_sweep_and_the_selection_on_a_tiny_file(tmp_path):
    rng = np.random.default_rng(0)
    scipy.io.savemat(tmp_path / "tiny.mat", {"X": rng.normal(size=(12, 30)), "Y": np.arange(12)[:, None] % 2})
    output = tmp_path / "performance.md"
    speed.main(["--datasets", "tiny", "--datasets-dir", str(tmp_path), "--epochs", "1", "--sweep-d", "40",
                "--sweep-n", "--selection-sizes", "60x12", "--output", str(output),
                "--notes", str(tmp_path / "absent.md")])

    report = json.loads(output.with_suffix(".json").read_text())
    row = report["datasets"][0]
    assert row["paper"]["attention_kernel"] == "literal" and row["fast"]["attention_kernel"] == "fused"
    assert row["fast"]["flops_per_epoch"] > 0 and row["paper"]["median_seconds"] > 0
    assert [(r["d"], r["n"]) for r in report["sweep_d"]] == [(40, 200)] and report["sweep_n"] == []
    text = output.read_text()
    assert "| tiny | 12 x 30 | small |" in text and "## Scale sweep over d" in text and "## Analysis" not in text
    assert set(row["attention_seconds"]) == {"fused", "blocked"}
    assert "| tiny | 12 x 30 | " in text.split("## Attention kernels")[1]
    assert row["fast"]["precision"] == row["paper"]["precision"] == "fp32" and row["fast"]["threads"] >= 1
    # the fast worker measures its own matmul reference around its epochs; paper's needs none
    assert row["fast"]["matmul_gflops"] > 0 and row["paper"]["matmul_gflops"] is None
    assert f"| {row['fast']['matmul_gflops']:.1f} | " in text
    # the InfoNCE block the fast worker used: the CPU default, which holds all 30 rows of this tiny map
    assert row["fast"]["loss_block_rows"] == 30 and row["paper"]["loss_block_rows"] is None
    assert "| fused | 30 | fp32 |" in text
    # the default selection, end to end, in its own process
    [selection] = report["selection"]
    assert "error" not in selection, selection
    assert (selection["shape"], selection["d"], selection["n"], selection["device"]) == ("60x12", 60, 12, "cpu")
    assert selection["members"] >= 1 and selection["epochs"] >= selection["members"]
    section = text.split("## The default selection, end to end")[1]
    assert f"| 60 x 12 | defaults | {selection['members']} | {selection['epochs']} | " in section


def test_the_selection_worker_times_the_default_chain_on_a_tiny_shape():
    result = speed.selection_worker("60x12", "cpu")
    assert (result["shape"], result["d"], result["n"], result["device"]) == ("60x12", 60, 12, "cpu")
    defaults = speed.Settings().members
    assert result["members"] == defaults.per_run
    expected_epochs = speed.Settings().training.epochs if defaults.per_run == 1 else defaults.per_run * \
        defaults.epochs
    assert result["epochs"] == expected_epochs
    assert result["seconds"] >= result["training_seconds"] > 0
    assert result["threads"] >= 1 and result["peak_rss_bytes"] > 0
    json.dumps(result)  # what the subprocess prints


def test_the_selection_section_shows_each_size_and_its_failures():
    failed = {"shape": "not-a-shape", "error": ["ValueError: invalid literal for int() with base 10: 'not-a-shape'"]}
    report = _report()
    report["selection"] = [failed, {"shape": "60x12", "d": 60, "n": 12, "seconds": 3.4, "training_seconds": 2.6,
                                    "members": 8, "epochs": 160, "device": "cpu", "threads": 2,
                                    "peak_rss_bytes": 2**30}]
    text = speed.render(report)
    section = text.split("## The default selection, end to end")[1]
    assert "| not-a-shape | defaults | failed: " in section
    assert "| 60 x 12 | defaults | 8 | 160 | 3 | 3 | 1.00 | cpu | 2 |" in section
    assert "## The default selection" not in speed.render(_report())  # no selection measured, no section


@pytest.mark.parametrize("method, target", [("ndfs", 600), ("lscae", 600), ("variance", 1), ("dispersion", 1)])
def test_the_method_worker_times_a_selection_and_the_section_judges_its_target(method, target):
    result = speed.method_worker(method, "60x12", "5,10", "cpu")
    assert (result["method"], result["d"], result["n"], result["k"]) == (method, 60, 12, "5,10")
    assert result["seconds"] > 0 and result["peak_rss_bytes"] > 0
    json.dumps(result)
    report = _report()
    report["methods"] = [result, {**result, "method": "cae", "name": "CAE", "seconds": 700.0},
                         {"method": "mcfs", "shape": "60x12", "k": "5", "error": ["MemoryError"]}]
    section = speed.render(report).split("## Every method on a wide table")[1]
    assert f"| {result['name']} | 60 x 12 | 5,10 |" in section and section.count(f"| yes (< {target} s) |") == 1
    assert "| CAE | 60 x 12 | 5,10 | 700 |" in section and section.count("| no (< 600 s) |") == 1
    assert "| mcfs | 60x12 | 5 | failed: " in section


def test_command_refuses_a_cpu_precision_before_measuring(tmp_path, capsys):
    with pytest.raises(SystemExit):
        speed.main(["--datasets", "--device", "cpu", "--precision", "bf16", "--sweep-d", "--sweep-n",
                    "--selection-sizes", "--output", str(tmp_path / "p.md")])
    assert "precision 'bf16' needs a CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "p.md").exists()


def test_output_defaults_to_the_reports_folder():
    _, args = speed.parse_arguments([])
    assert args.output == "benchmarks/results/performance.md" and not args.add
    assert args.selection_sizes == list(speed.SELECTION_SIZES) and args.datasets == list(speed.DEFAULT_DATASETS)
    assert args.sweep_d == list(speed.SWEEP_D) and args.sweep_n == list(speed.SWEEP_N)


def test_add_measures_only_what_it_names_and_needs_a_report(tmp_path, capsys):
    output = tmp_path / "performance.md"
    with pytest.raises(SystemExit):
        speed.parse_arguments(["--add", "--selection-sizes", "60x12", "--output", str(output)])
    assert f"--add adds rows to {tmp_path / 'performance.json'}, which does not exist" in capsys.readouterr().err
    output.with_suffix(".json").write_text("{}")
    _, args = speed.parse_arguments(["--add", "--selection-sizes", "60x12", "--output", str(output)])
    assert (args.datasets, args.sweep_d, args.sweep_n, args.selection_sizes) == ([], [], [], ["60x12"])


@pytest.mark.slow
def test_added_rows_replace_their_namesakes_and_keep_the_rest(tmp_path):
    output = tmp_path / "performance.md"
    speed.main(["--datasets", "--sweep-d", "--sweep-n", "--selection-sizes", "60x12", "70x12",
                "--output", str(output), "--notes", str(tmp_path / "absent.md")])
    first = json.loads(output.with_suffix(".json").read_text())
    speed.main(["--add", "--selection-sizes", "70x12", "--output", str(output),
                "--notes", str(tmp_path / "absent.md")])
    report = json.loads(output.with_suffix(".json").read_text())
    assert [r["shape"] for r in report["selection"]] == ["60x12", "70x12"]
    assert report["selection"][0] == first["selection"][0] and report["selection"][1] != first["selection"][1]
    assert report["sweep_d"] == first["sweep_d"] and report["environment"]["command"] == first["environment"]["command"]
    [added] = report["environment"]["added"]
    assert added["command"].endswith("--add --selection-sizes 70x12 --output " + str(output) +
                                     " --notes " + str(tmp_path / "absent.md"))
    text = output.read_text()
    assert f"Rows added {added['date']}" in text and added["command"] in text
    assert "| 70 x 12 | defaults | " in text.split("## The default selection, end to end")[1]
    # the same size with other settings is a row of its own
    blocks = "members.feature_blocks=2,training.epochs=3"
    speed.main(["--add", "--selection-sizes", "70x12", "--selection-settings", blocks, "--output", str(output),
                "--notes", str(tmp_path / "absent.md")])
    report = json.loads(output.with_suffix(".json").read_text())
    assert [(r["shape"], r["overrides"]) for r in report["selection"]] == [("60x12", ""), ("70x12", ""),
                                                                          ("70x12", blocks)]
    assert report["selection"][2]["epochs"] == 2 * 3  # two networks, three epochs each
    assert f"| 70 x 12 | `{blocks}` | 1 | 6 | " in output.read_text()


@pytest.mark.slow
def test_a_worker_reports_its_own_peak_memory_not_its_parents(tmp_path):
    """ru_maxrss carries the parent's peak across fork + exec; the worker must not."""
    ballast = bytearray(600 * 2**20)  # the parent holds 600 MiB when it starts the worker
    ballast[::4096] = b"x" * len(ballast[::4096])
    result = speed.run_worker("synthetic:40x12", "fast", 1, "cpu", False)
    del ballast
    assert "error" not in result, result
    assert result["rss_before_training_bytes"] < 500 * 2**20
    assert result["rss_before_training_bytes"] <= result["peak_rss_bytes"]


def test_the_cost_section_compares_a_consensus_with_one_run_on_a_file(tmp_path):
    import scipy.io

    X = np.random.default_rng(0).normal(size=(12, 60))
    scipy.io.savemat(tmp_path / "toy.mat", {"X": X, "Y": np.arange(12) % 2})
    one = speed.selection_worker(str(tmp_path / "toy.mat"), "cpu",
                                 "members.per_run=1,training.epochs=2,selection.k=5,selection.k_values=[5]")
    settings = "members.per_run=8,members.epochs=1"
    other = speed.selection_worker(str(tmp_path / "toy.mat"), "cpu", f"{settings},selection.k=5,selection.k_values=[5]")
    assert (one["d"], one["n"], one["members"], one["epochs"]) == (60, 12, 1, 2)
    assert (other["members"], other["epochs"]) == (8, 8)
    report = {**_report(), "cost": [
        {"name": "toy", "consensus_settings": settings, "one_run": one, "consensus": other},
        {"name": "bad", "consensus_settings": settings, "one_run": {"error": ["boom"]}, "consensus": other}]}
    section = speed.render(report).split("## A consensus against one run")[1]
    ratio = other["seconds"] / one["seconds"]
    assert (f"| toy | 12 x 60 | `{settings}` | {one['seconds']:.0f} | {other['seconds']:.0f} | {ratio:.2f} | "
            "2 / 8 |") in section
    assert f"| bad | failed: ['boom'] | `{settings}` |" in section


# --- --contention: epochs on a shared CPU under each thread policy ------------------------------------------


def _cell(table: str, policy: str, load: int, seconds: float, threads: int = 2) -> dict:
    return {"table": table, "policy": policy, "load": load, "median_seconds": seconds, "threads": threads,
            "epoch_seconds": [seconds] * 5, "d": 325, "n": 73, "load_average": 0.1}


def _contention_rows(quiet: dict[str, float], loaded: dict[str, list[float]], tables=("a", "b")) -> list[dict]:
    """Each policy quiet (seconds) and at N = 1, 2, 4 (seconds each), the same on every table."""
    rows = []
    for table in tables:
        for policy, seconds in quiet.items():
            rows.append(_cell(table, policy, 0, seconds))
            rows += [_cell(table, policy, n, s) for n, s in zip((1, 2, 4), loaded[policy], strict=True)]
    return rows


def test_the_rule_takes_the_lowest_worst_ratio_within_five_percent_of_todays_quiet_epoch():
    from benchmarks import _contention

    # bounds on 2 cores: quiet x 1.5, x 2, x 3
    rows = _contention_rows({"spin": 1.00, "passive": 1.20, "short-spin": 1.04, "free-cpus": 1.00},
                            {"spin": [3.0, 4.0, 6.0], "passive": [1.8, 2.4, 3.6], "short-spin": [1.56, 2.6, 3.12],
                             "free-cpus": [1.5, 2.0, 3.0]})
    verdict = _contention.decide(rows, cores=2)
    assert verdict["ratios"]["spin"][("a", 1)] == pytest.approx(2.0)
    assert verdict["worst"] == pytest.approx({"spin": 2.0, "passive": 1.0, "short-spin": 1.25, "free-cpus": 1.0})
    assert verdict["eligible"] == ["spin", "short-spin", "free-cpus"]  # passive: 20 % slower quiet
    assert verdict["winner"] == "short-spin"  # free-cpus is better but its thread count follows the load
    assert verdict["winner_any"] == "free-cpus"


def test_a_policy_not_measured_in_full_that_could_still_win_leaves_no_verdict_naming_its_cells():
    """Round two's reading of a partial set: the missing cell could lower nothing, but it may be the only one
    that is high, so the rule waits for it (a failed cell counts as missing)."""
    from benchmarks import _contention

    rows = _contention_rows({"spin": 1.0, "passive": 1.0}, {"spin": [3.0, 4.0, 6.0], "passive": [1.5, 2.0, 3.0]})
    rows = [r for r in rows if not (r["policy"] == "passive" and r["table"] == "b" and r["load"] == 4)]
    for more in ([], [{"table": "b", "policy": "passive", "load": 4, "error": ["boom"]}]):
        verdict = _contention.decide(rows + more, cores=2, tables=["a", "b"], loads=[0, 1, 2, 4])
        assert verdict["winner"] is None and verdict["missing"] == {"passive": [("b", 4)]}
        assert verdict["complete"] == ["spin"] and verdict["eligible"] == ["spin", "passive"]


def test_round_two_reads_a_partial_set_out_complete_and_beaten():
    """The steps of round two: every quiet cell; adaptive's loaded cells; spin's on one table only. spin's
    measured cells already exceed adaptive's worst, passive's quiet is over 5 %: adaptive wins without them."""
    from benchmarks import _contention

    quiet = {"spin": 1.0, "passive": 1.3, "adaptive": 1.02}
    rows = [_cell(t, p, 0, q) for t in ("a", "b", "c") for p, q in quiet.items()]
    rows += [_cell(t, "adaptive", n, 1.02 * (1 + n / 2) * 1.1) for t in ("a", "b", "c") for n in (1, 2, 4)]
    rows += [_cell("a", "spin", n, 1.0 * (1 + n / 2) * r) for n, r in ((1, 7.0), (2, 2.6), (4, 4.1))]
    plan = {"tables": ["a", "b", "c"], "loads": [0, 1, 2, 4], "order": ["spin", "passive", "adaptive"]}
    verdict = _contention.decide(rows, cores=2, **plan)
    assert verdict["out"] == ["passive"] and verdict["eligible"] == ["spin", "adaptive"]
    assert verdict["complete"] == ["adaptive"] and verdict["winner"] == "adaptive"
    assert verdict["beaten"] == ["spin"] and verdict["worst"]["spin"] == pytest.approx(7.0)
    assert verdict["worst"]["adaptive"] == pytest.approx(1.1)
    # spin's measured cells all below adaptive's worst: they could still beat it, so no verdict yet
    low = [r | {"median_seconds": 1.0 * (1 + r["load"] / 2)} if r["policy"] == "spin" and r["load"] else r
           for r in rows]
    verdict = _contention.decide(low, cores=2, **plan)
    assert verdict["winner"] is None and verdict["beaten"] == []
    assert verdict["missing"] == {"spin": [(t, n) for t in ("b", "c") for n in (1, 2, 4)]}
    # over 5 % on one table is out, its other quiet cells missing or not; a quiet cell missing for a policy
    # within 5 % elsewhere leaves it undecided, and the verdict waits for it
    partial = [r for r in rows if (r["policy"], r["load"]) != ("passive", 0) or r["table"] == "a"]
    partial = [r for r in partial if (r["policy"], r["table"], r["load"]) != ("adaptive", "c", 0)]
    verdict = _contention.decide(partial, cores=2, **plan)
    assert verdict["out"] == ["passive"] and verdict["eligible"] == ["spin"] and verdict["winner"] is None
    assert ("c", 0) in verdict["missing"]["adaptive"]
    section = {"rows": rows, "cores": 2, "tables": plan["tables"], "loads": plan["loads"],
               "policies": plan["order"], "epochs": 5,
               "environment": {"date": "d", "load_before": 0.0, "commands": ["python -m benchmarks.speed"]}}
    text = "\n".join(_contention.render(section, "### Second round"))
    assert "| `spin` | +0.0% | +0.0% | +0.0% | ≥ 7.00 (in part) | yes | no |" in text
    assert "| `passive` | +30.0% | +30.0% | +30.0% | — | no | no |" in text
    assert "**Winner: `adaptive`** (worst ratio 1.10)." in text
    assert "`spin` loses without its other loaded cells: its measured worst ratio, 7.00, already exceeds" in text


def test_the_contention_section_shows_each_cell_its_ratio_and_the_rules_winner():
    from benchmarks import _contention

    rows = _contention_rows({"spin": 1.0, "passive": 1.02}, {"spin": [3.0, 4.0, 6.0], "passive": [1.53, 2.04, 3.06]},
                            tables=("lung_small",))
    rows[1]["epoch_seconds"] = [3.0, 3.0]  # a cell stopped at its time limit
    section = {"rows": rows, "cores": 2, "tables": ["lung_small"], "policies": ["spin", "passive"],
               "loads": [0, 1, 2, 4], "epochs": 5, "cell_limit": 60.0,
               "environment": {"date": "2026-11-28 02:00 UTC", "load_before": 0.05,
                               "commands": ["python -m benchmarks.speed --contention"]},
               "estimates": {"lung_small": {"epochs": 20, "first_estimate": 11.0, "real_seconds": 10.0,
                                            "error": 0.1}}}
    text = "\n".join(_contention.render(section))
    assert "| lung_small | 73 x 325 | `spin` | 2/2/2/2 | 1 | 3 (2.00) [2 epochs] | 4 (2.00) | 6 (2.00) | 2.00 |" in text
    assert "| lung_small | 73 x 325 | `passive` | 2/2/2/2 | 1.02 | 1.53 (1.00) | 2.04 (1.00) | 3.06 (1.00) | 1.00 |" \
        in text
    assert "| `passive` | +2.0% | 1.00 | yes | no |" in text
    assert "**Winner: `passive`** (worst ratio 1.00)." in text
    assert "| lung_small | 20 | 11.0 | 10.0 | +10.0% | yes |" in text
    assert "- `spin`: libgomp's default" in text


@pytest.mark.slow
def test_contention_measures_each_policy_in_a_fresh_process_beside_busy_ones_and_resumes(tmp_path):
    rng = np.random.default_rng(0)
    scipy.io.savemat(tmp_path / "tiny.mat", {"X": rng.normal(size=(12, 30)), "Y": np.arange(12)[:, None] % 2})
    output = tmp_path / "performance.md"
    output.with_suffix(".json").write_text(json.dumps(_report()))
    raw = tmp_path / "contention.json"
    arguments = ["--contention", "--tables", str(tmp_path / "tiny.mat"), "--policies", "passive", "--loads", "1",
                 "--contention-epochs", "2", "--estimate-epochs", "3", "--raw", str(raw), "--output", str(output),
                 "--notes", str(tmp_path / "absent.md")]
    speed.main(arguments)
    section = json.loads(output.with_suffix(".json").read_text())["contention"]
    rows = {(r["policy"], r["load"]): r for r in section["rows"]}
    assert set(rows) == {("passive", 0), ("passive", 1)}
    assert all("error" not in r and len(r["epoch_seconds"]) == 2 for r in rows.values()), rows
    # each cell ran under its own policy, applied before torch loaded, with nothing inherited from here
    # (this test's OMP_NUM_THREADS=1 included)
    assert rows[("passive", 1)]["set"] == {"OMP_WAIT_POLICY": "PASSIVE"}
    [estimate] = section["estimates"].values()
    assert estimate["epochs"] == 3 and estimate["real_seconds"] > 0 and estimate["first_estimate"] > 0
    text = output.read_text()
    assert "## Threads on a shared machine" in text
    assert "# Training speed" in text and "| arcene |" in text  # the rest of the report is kept
    assert raw.with_suffix(".csv").read_text().startswith("table,policy,load,repeat,threads,median_seconds")
    # --resume measures only what is missing (today's policy, quiet) and keeps the rows and estimates there
    speed.main([*arguments[:3], "--policies", "spin", "--loads", "--contention-epochs", "2", "--estimate-epochs",
                "0", "--raw", str(raw), "--output", str(output), "--resume"])
    section = json.loads(output.with_suffix(".json").read_text())["contention"]
    rows = {(r["policy"], r["load"]): r for r in section["rows"]}
    assert set(rows) == {("passive", 0), ("passive", 1), ("spin", 0)} and rows[("spin", 0)]["set"] == {}
    assert section["policies"] == ["passive", "spin"] and section["loads"] == [0, 1]
    assert section["estimates"] and len(section["environment"]["commands"]) == 2


def test_profile_epoch_gives_rates_in_cpu_time_each_threads_share_and_the_operators(tmp_path):
    rng = np.random.default_rng(0)
    scipy.io.savemat(tmp_path / "tiny.mat", {"X": rng.normal(size=(12, 40)), "Y": np.arange(12)[:, None] % 2})
    import torch

    before = torch.get_num_threads()
    result = speed.profile_epoch(str(tmp_path / "tiny.mat"))
    assert torch.get_num_threads() == before  # the two-thread part leaves this process as it was
    assert (result["d"], result["n"]) == (40, 12) and result["gflop_per_epoch"] > 0
    assert result["share_of_matmul"] == pytest.approx(result["epoch_gflops_per_cpu_second"] /
                                                      result["matmul_gflops_per_cpu_second"])
    assert 1 <= len(result["two_threads_ticks"]) <= 2 and result["two_threads_epoch_cpu_seconds"] >= 0
    names = [name for name, share, calls in result["operators"]]
    assert len(names) == 12 and "aten::mm" in names  # the twelve largest, by their share of the epoch
    assert [share for _, share, _ in result["operators"]] == sorted((share for _, share, _ in result["operators"]),
                                                                    reverse=True)
    assert sum(share for _, share, _ in result["operators"]) <= 1.0 + 1e-9


def test_contention_stops_at_its_time_budget_and_resume_measures_the_rest(tmp_path, monkeypatch, capsys):
    from benchmarks import _contention

    measured = []

    def fake(source, policy, load, epochs, limit):
        measured.append((policy, load))
        seconds = 1.0 + load * (0.5 if policy == "passive" else 1.0)
        return {"median_seconds": seconds, "epoch_seconds": [seconds] * epochs, "threads": 2, "d": 4,
                "n": 3, "set": {}, "load_average": 0.0}

    monkeypatch.setattr(_contention, "measure", fake)
    raw = tmp_path / "contention.json"
    common = ["--contention", "--tables", "lung_small", "--policies", "spin", "passive", "--loads", "1",
              "--estimate-epochs", "0", "--raw", str(raw), "--output", str(tmp_path / "performance.md")]
    (tmp_path / "performance.json").write_text(json.dumps(_report()))
    _, args = speed.parse_arguments([*common, "--minutes", "0"])  # the first cell always runs
    section = _contention.run(args)
    assert measured == [("spin", 0)] and len(section["rows"]) == 1
    assert "stopped at the 0-minute budget with 3 cell(s) left: run the same command with --resume" in \
        capsys.readouterr().out
    _, args = speed.parse_arguments([*common, "--resume"])
    section = _contention.run(args)
    assert measured == [("spin", 0), ("passive", 0), ("spin", 1), ("passive", 1)]
    assert len(section["rows"]) == 4 and "rule: winner passive" in capsys.readouterr().out


def test_contention_reads_the_tables_from_datasets_dir_and_writes_where_its_flags_say(tmp_path, monkeypatch, capsys):
    """As on a lent machine: the tables copied into one folder, no speed report there, every output in a folder
    named on the command line."""
    from benchmarks import _contention

    sources = []

    def fake(source, policy, load, epochs, limit):
        sources.append(source)
        return {"median_seconds": 1.0 + load, "epoch_seconds": [1.0 + load] * epochs, "threads": 2, "d": 4, "n": 3,
                "set": {}, "decision": "spin" if policy == "adaptive" else None, "busy": 0.0, "load_average": 0.0}

    monkeypatch.setattr(_contention, "measure", fake)
    tables, out = tmp_path / "tables", tmp_path / "out"
    tables.mkdir()
    (tables / "lung_small.mat").write_bytes(b"")
    speed.main(["--contention", "--tables", "lung_small", "--policies", "spin", "adaptive", "--loads", "1",
                "--estimate-epochs", "0", "--datasets-dir", str(tables), "--json", str(out / "c.json"),
                "--csv", str(out / "c.csv"), "--output", str(out / "contention.md"), "--notes", ""])
    assert set(sources) == {str(tables / "lung_small.mat")}
    assert json.loads((out / "c.json").read_text())["rows"][0]["table"] == "lung_small"
    assert (out / "c.csv").read_text().splitlines()[0].endswith(",decision,busy_cpus")
    text = (out / "contention.md").read_text()
    assert text.startswith("# Threads on a shared machine\n\nMeasured on") and "| `adaptive` |" in text
    assert not (out / "contention.json").exists()  # no speed report was there to add to
    # the cells' JSON beside the section (the same stem): it is not taken for a speed report, on --resume too
    same = ["--contention", "--tables", "lung_small", "--policies", "spin", "--loads", "1", "--estimate-epochs", "0",
            "--datasets-dir", str(tables), "--json", str(out / "s.json"), "--output", str(out / "s.md"), "--notes", ""]
    speed.main(same)
    speed.main([*same, "--policies", "spin", "adaptive", "--resume"])
    assert {(r["policy"], r["load"]) for r in json.loads((out / "s.json").read_text())["rows"]} == {
        ("spin", 0), ("spin", 1), ("adaptive", 0), ("adaptive", 1)}
    assert "| `adaptive` |" in (out / "s.md").read_text()
    with pytest.raises(SystemExit, match=r"no table at .*Prostate_GE\.mat \(--tables names one of"):
        speed.main(["--contention", "--tables", "Prostate_GE", "--datasets-dir", str(tables),
                    "--json", str(out / "d.json"), "--output", str(out / "d.md")])
    assert not (out / "d.json").exists()


def test_a_missing_package_the_benchmarks_never_call_is_stood_in_for_and_fails_when_called(monkeypatch):
    import importlib.util

    import tqdm.auto  # noqa: F401  (loaded: the monkeypatch puts the real modules back after the stand-ins)

    from benchmarks import _device

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tqdm" else real(name, *a))
    for name in ("tqdm", "tqdm.auto"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert _device.stand_in_for_missing() == ["tqdm", "tqdm.auto"]
    stand_in = sys.modules["tqdm.auto"]
    assert sys.modules["tqdm"].auto is stand_in and stand_in.__spec__.name == "tqdm.auto"
    with pytest.raises(ModuleNotFoundError, match=r"^tqdm\.auto is not installed here, and tqdm\.auto\.tqdm was called"):
        stand_in.tqdm(range(3))


def test_a_second_round_and_a_gpu_row_measured_elsewhere_are_folded_into_the_report(tmp_path):
    from benchmarks import _contention

    output = tmp_path / "performance.md"
    output.with_suffix(".json").write_text(json.dumps(_report()))
    rows = _contention_rows({"spin": 1.0, "adaptive": 1.01}, {"spin": [3.0, 4.0, 6.0], "adaptive": [1.6, 2.1, 3.1]})
    round2 = tmp_path / "round2.json"
    round2.write_text(json.dumps({"rows": rows, "cores": 2, "tables": ["a", "b"], "policies": ["spin", "adaptive"],
                                  "loads": [0, 1, 2, 4], "epochs": 5,
                                  "environment": {"date": "d", "load_before": 0.1, "cpus": [0, 1], "machine_cpus": 16,
                                                  "commands": ["taskset -c 0,1 python -m benchmarks.speed"]}}))
    row = tmp_path / "gpu_row.json"
    row.write_text(json.dumps({
        "date": "d", "command": "python -m benchmarks.gpu_row --device cuda", "device": "NVIDIA H100 80GB HBM3",
        "torch": "2.13", "cuda": "12.8", "python": "3.12", "matmul": {"fp32_gflops": 50000.0, "tf32_gflops": 400000.0,
                                                                       "size": 8192},
        "rows": [{"table": "ALLAML", "epoch": {"n": 72, "d": 7129, "median_seconds": 0.004, "precision": "tf32",
                                               "gflops": 10000.0, "share_of_fp32_matmul": 0.2,
                                               "share_of_tf32_matmul": 0.025},
                  "fit": {"seconds": 3.5, "training_seconds": 1.25, "members": 1, "epochs": 100, "k": 50}}]}))
    speed.main(["--fold-round2", str(round2), "--fold-gpu-row", str(row), "--output", str(output), "--notes", ""])
    text = output.read_text()
    assert "# Training speed" in text  # the rest of the report is kept
    second = text.split("### Second round, on 2 pinned cores of a quiet machine")[1]
    assert "Measured on 2 cores (CPUs 0, 1 of the machine's 16, busy processes pinned with them)" in second
    assert "**Winner: `adaptive`**" in second
    assert "## One GPU: NVIDIA H100 80GB HBM3" in text
    assert "| ALLAML | 72 x 7129 | 3.50 | 1.25 | 1 x 100 | 50 | 0.004 | tf32 | 10000 | 20% | 2% |" in text
    saved = json.loads(output.with_suffix(".json").read_text())
    assert saved["contention_round2"]["cores"] == 2 and saved["gpu_row"]["device"].startswith("NVIDIA")
    row.write_text(json.dumps({"device": "x"}))
    with pytest.raises(SystemExit, match=r"gpu_row\.json: lacks matmul, rows, command"):
        speed.main(["--fold-gpu-row", str(row), "--output", str(output), "--notes", ""])


def _round_two_section() -> dict:
    """Round two measured in full: adaptive as quick as spin when quiet, within its share beside busy ones."""
    rows = _contention_rows({"spin": 1.0, "passive": 1.3, "adaptive": 1.01},
                            {"spin": [3.0, 4.0, 6.0], "passive": [1.6, 2.1, 3.1], "adaptive": [1.6, 2.1, 3.1]})
    return {"rows": rows, "cores": 2, "tables": ["a", "b"], "policies": ["spin", "passive", "adaptive"],
            "loads": [0, 1, 2, 4], "epochs": 5,
            "environment": {"date": "d", "load_before": 0.1, "commands": ["python -m benchmarks.speed"]}}


def test_the_verdict_sets_the_default_policy_line_and_this_process(tmp_path, monkeypatch):
    from benchmarks import _contention
    from iclfs import _threads

    monkeypatch.setattr(_threads, "DEFAULT_POLICY", _threads.DEFAULT_POLICY)  # restored after the test
    source = tmp_path / "_threads.py"
    source.write_text(_contention.THREADS_SOURCE.read_text())
    other = next(name for name in _threads.POLICIES if name != _threads.DEFAULT_POLICY)
    assert _contention.apply_verdict(other, source) is True
    assert f'DEFAULT_POLICY = "{other}"' in source.read_text() and _threads.DEFAULT_POLICY == other
    assert source.read_text().count("DEFAULT_POLICY = ") == 1
    assert _contention.apply_verdict(other, source) is False  # already so
    written = source.read_text()
    # a candidate that lost its place in the product (or no candidate at all) cannot become the default
    for name in ("brief-spin", "fastest"):
        with pytest.raises(SystemExit, match=rf"^the winner '{name}' is no policy of the product "
                                             r"\(iclfs\._threads\.POLICIES: " + re.escape(", ".join(_threads.POLICIES))
                                             + r"\): "
                                             r"move it from"):
            _contention.apply_verdict(name, source)
    assert source.read_text() == written


@pytest.fixture
def folding(tmp_path, monkeypatch):
    """A speed report to fold a round into, and the winners its verdict applies (apply_verdict stood in for: the
    real one writes src/iclfs/_threads.py)."""
    from benchmarks import _contention

    applied: list[str] = []
    monkeypatch.setattr(_contention, "apply_verdict", lambda winner: applied.append(winner) or True)
    output = tmp_path / "performance.md"
    output.with_suffix(".json").write_text(json.dumps(_report()))
    return applied, output


def test_fold_round2_applies_its_verdict_only_when_it_has_one(tmp_path, folding, capsys):
    applied, output = folding
    round2 = tmp_path / "round2.json"
    section = _round_two_section()
    round2.write_text(json.dumps(section))
    fold = ["--fold-round2", str(round2), "--apply-verdict", "--output", str(output), "--notes", ""]
    speed.main(fold)
    assert applied == ["adaptive"] and "round two's winner: 'adaptive'" in capsys.readouterr().out
    section["rows"] = [r for r in section["rows"] if (r["policy"], r["table"], r["load"]) != ("adaptive", "b", 4)]
    round2.write_text(json.dumps(section))
    speed.main(fold)
    assert applied == ["adaptive"]  # no second call: no verdict
    assert "round two has no verdict (still needed: {'adaptive': [('b', 4)]})" in capsys.readouterr().out


def _repeated(section: dict, factors: dict[str, list[float]]) -> dict:
    """``section`` with each row measured again: repeat k of a policy's cells at factors[policy][k] x the row."""
    rows = [r | {"repeat": k, "median_seconds": r["median_seconds"] * f}
            for r in section["rows"] for k, f in enumerate(factors[r["policy"]])]
    return section | {"rows": rows, "repeats": [len(next(iter(factors.values())))] * 2}


def test_a_cell_measured_several_times_is_read_as_the_median_of_its_repeats():
    """Round three: a noisy repeat (x 1.4 here) moves neither the quiet test nor the ratios."""
    from benchmarks import _contention

    section = _repeated(_round_two_section(), {"spin": [1.0, 1.4, 1.0], "passive": [1.0, 1.0, 1.0],
                                               "adaptive": [1.4, 1.0, 1.0]})
    merged = {_contention._key(r): r for r in _contention.merge_repeats(section["rows"])}
    assert len(merged) == len(_round_two_section()["rows"])
    assert merged[("a", "spin", 0)]["repeat_medians"] == [1.0, 1.4, 1.0]
    assert merged[("a", "spin", 0)]["median_seconds"] == 1.0
    verdict = _contention.section_verdict(section)
    assert verdict == _contention.section_verdict(_round_two_section())
    assert verdict["winner"] == "adaptive"
    # every repeat of one cell failed: the cell keeps the failure, and is missing from the verdict
    failed = [r | {"error": "killed"} if _contention._key(r) == ("b", "adaptive", 4) else r for r in section["rows"]]
    assert "error" in {_contention._key(r): r for r in _contention.merge_repeats(failed)}[("b", "adaptive", 4)]
    assert _contention.decide(_contention.merge_repeats(failed), 2, tables=["a", "b"], loads=[0, 1, 2, 4],
                              order=section["policies"])["winner"] is None


def test_repeats_are_taken_in_turn_and_resume_where_they_stopped(tmp_path, monkeypatch, capsys):
    """--repeats 2 1: every quiet cell twice, every loaded cell once, the second quiet round after the first
    round went through every table, N and policy, the policies in the other order."""
    from benchmarks import _contention

    measured = []

    def fake(source, policy, load, epochs, limit):
        measured.append((Path(source).stem, policy, load))
        return {"median_seconds": 1.0 + load, "epoch_seconds": [1.0 + load] * epochs, "threads": 2, "d": 4, "n": 3,
                "set": {}, "load_average": 0.0, "decision": "spin" if policy == "adaptive" and not load else
                "passive" if policy == "adaptive" else None}

    monkeypatch.setattr(_contention, "measure", fake)
    tables = tmp_path / "tables"
    tables.mkdir()
    for name in ("lung_small", "warpPIE10P"):
        (tables / f"{name}.mat").write_bytes(b"")
    raw = tmp_path / "r3.json"
    common = ["--contention", "--tables", "lung_small", "warpPIE10P", "--policies", "spin", "adaptive", "--loads",
              "1", "--estimate-epochs", "0", "--datasets-dir", str(tables), "--json", str(raw), "--output",
              str(tmp_path / "r3.md"), "--notes", "", "--repeats", "2", "1"]
    speed.main(common)
    first = [(t, p, n) for t in ("lung_small", "warpPIE10P") for n in (0, 1) for p in ("spin", "adaptive")]
    assert measured == first + [(t, p, 0) for t in ("lung_small", "warpPIE10P") for p in ("adaptive", "spin")]
    section = json.loads(raw.read_text())
    assert section["repeats"] == [2, 1] and len(section["rows"]) == 12
    assert sorted({r["repeat"] for r in section["rows"] if r["load"] == 0}) == [0, 1]
    assert (tmp_path / "r3.csv").read_text().splitlines()[0].startswith("table,policy,load,repeat,")
    text = (tmp_path / "r3.md").read_text()
    assert "each quiet cell measured 2 times and each loaded cell 1 times" in text
    assert "| lung_small | 3 x 4 | `adaptive` | 2/2 | 1 spin | 2 (1.33) passive | 1.33 |" in text
    measured.clear()
    speed.main([*common, "--resume"])
    assert measured == []  # every repeat is in the file
    with pytest.raises(SystemExit, match=r"holds cells measured with --repeats 2 1; this command asks for 3 3"):
        speed.main([*common[:-2], "3", "--resume"])


def test_fold_round3_applies_round_threes_verdict(tmp_path, folding, capsys):
    applied, output = folding
    round3 = tmp_path / "round3.json"
    round3.write_text(json.dumps(_repeated(_round_two_section(), {"spin": [1.0, 1.0, 1.0], "passive": [1.0] * 3,
                                                                   "adaptive": [1.0, 1.2, 1.0]})))
    speed.main(["--fold-round3", str(round3), "--apply-verdict", "--output", str(output), "--notes", ""])
    assert applied == ["adaptive"] and "round three's winner: 'adaptive'" in capsys.readouterr().out
    text = output.read_text()
    assert "### Third round: the product's adaptive against spin, every cell repeated" in text
    assert "| a | `adaptive` | 0 | 1.01 1.21 1.01 | +0% | +20% |" in text  # the repeats' spread
    assert json.loads(output.with_suffix(".json").read_text())["contention_round3"]["repeats"] == [3, 3]
    round3.write_text(json.dumps(_round_two_section()))  # no repeats: not a round three
    with pytest.raises(SystemExit, match=r"round3\.json: lacks repeats"):
        speed.main(["--fold-round3", str(round3), "--output", str(output), "--notes", ""])


def _quiet_round(factor: float, repeats: int = 40) -> dict:
    """Round four: quiet cells only, ``repeats`` processes a cell; adaptive's epochs ``factor`` x spin's, spread
    alike, every adaptive process reading the machine as quiet."""
    rows = [{"table": t, "policy": p, "load": 0, "repeat": k, "threads": 2, "d": 4, "n": 3, "load_average": 0.0,
             "median_seconds": base * (1.0 + 0.02 * (k % 5)) * (factor if p == "adaptive" else 1.0),
             "epoch_seconds": [base] * 5, "decision": "spin" if p == "adaptive" else None}
            for k in range(repeats) for t, base in (("a", 1.0), ("b", 2.0)) for p in ("spin", "adaptive")]
    return {"rows": rows, "cores": 2, "tables": ["a", "b"], "policies": ["spin", "adaptive"], "loads": [0],
            "epochs": 5, "repeats": [repeats, 1],
            "environment": {"date": "d", "load_before": 0.1,
                            "commands": ["python -m benchmarks.speed --repeats 40 1"]}}


@pytest.mark.parametrize(("factor", "winner"), [(1.02, "adaptive"), (1.08, "spin")])
def test_fold_round4_judges_its_quiet_cells_with_round_threes_loaded_ratios(tmp_path, folding, capsys, factor,
                                                                            winner):
    """Round three left adaptive out of the quiet test (12 % over spin's epoch there) although its ratios under
    load beat spin's; round four's 40 processes a cell decide the quiet test alone."""
    applied, output = folding
    round3, round4 = tmp_path / "round3.json", tmp_path / "round4.json"
    round3.write_text(json.dumps(_repeated(_round_two_section(), {"spin": [1.0] * 3, "passive": [1.0] * 3,
                                                                   "adaptive": [1.12] * 3})))
    round4.write_text(json.dumps(_quiet_round(factor)))
    common = ["--output", str(output), "--notes", ""]
    with pytest.raises(SystemExit):  # judged with round three's loaded cells: the report must hold them
        speed.main(["--fold-round4", str(round4), *common])
    assert "--fold-round4 is judged with round three's loaded cells" in capsys.readouterr().err
    speed.main(["--fold-round3", str(round3), "--apply-verdict", *common])
    assert applied == ["spin"]  # round three: adaptive out of its quiet test
    speed.main(["--fold-round4", str(round4), "--apply-verdict", *common])
    assert applied == ["spin", winner] and f"round four's winner: '{winner}'" in capsys.readouterr().out
    text = output.read_text()
    assert "### Fourth round: the quiet test in 40 processes a cell" in text
    assert f"| a | `adaptive` | 40 | {1.04 * factor:.3g} | +{factor - 1:.1%} | " in text  # spin's median 1.04
    assert f"| +{factor - 1:.1%} | 0 of 40 | " in text  # the mean against spin's: the same factor
    assert "| 0 of 40 | " + ("yes" if factor < 1.05 else "no") + " |" in text  # no process read the machine busy
    worst3 = _contention_section_worst(json.loads(round3.read_text()))
    assert f"| `adaptive` | {'yes' if factor < 1.05 else 'no'} | {worst3['adaptive']:.2f} |" in text
    assert f"**Winner: `{winner}`** (worst ratio {worst3[winner]:.2f})" in text


def _fold_after_rounds_three_and_four(tmp_path, output, capsys, number: int, section: dict) -> Path:
    """Fold round ``number`` (five or six: judged with round four's quiet test) into ``output``: refused before
    round four is there, then folded with ``--apply-verdict``. Returns round three's JSON (spin's worst)."""
    round3, round4, later = (tmp_path / f"round{k}.json" for k in (3, 4, number))
    round3.write_text(json.dumps(_repeated(_round_two_section(), {"spin": [1.0] * 3, "passive": [1.0] * 3,
                                                                   "adaptive": [1.12] * 3})))
    round4.write_text(json.dumps(_quiet_round(1.02)))
    later.write_text(json.dumps(section))
    common = ["--output", str(output), "--notes", ""]
    speed.main(["--fold-round3", str(round3), *common])
    with pytest.raises(SystemExit):  # judged with round four's quiet test: the report must hold it
        speed.main([f"--fold-round{number}", str(later), *common])
    assert f"--fold-round{number} is judged with round four's quiet test" in capsys.readouterr().err
    speed.main(["--fold-round4", str(round4), *common])
    speed.main([f"--fold-round{number}", str(later), "--apply-verdict", *common])
    return round3


def _load_round(ratio_threads: float, busy_quiet: int = 0) -> dict:
    """Round five: adaptive and adaptive-threads on tables a and b, quiet in 5 processes and beside 1, 2, 4 busy
    ones in 3; adaptive at 1.9x its share under load (spin, round three: 2.0x), adaptive-threads at
    ``ratio_threads``x; ``busy_quiet`` of adaptive-threads' quiet processes a table read the machine as busy."""
    rows = []
    for t, base in (("a", 1.0), ("b", 2.0)):
        for policy, ratio in (("adaptive", 1.9), ("adaptive-threads", ratio_threads)):
            for load in (0, 1, 2, 4):
                for k in range(5 if load == 0 else 3):
                    decision = "passive" if load or (policy == "adaptive-threads" and k < busy_quiet) else "spin"
                    seconds = base if load == 0 else base * (1 + load / 2) * ratio
                    rows.append({"table": t, "policy": policy, "load": load, "repeat": k, "d": 4, "n": 3,
                                 "threads": 2 if load == 0 or policy == "adaptive" else 1, "load_average": 0.0,
                                 "median_seconds": seconds, "epoch_seconds": [seconds] * 5, "decision": decision})
    return {"rows": rows, "cores": 2, "tables": ["a", "b"], "policies": ["adaptive", "adaptive-threads"],
            "loads": [0, 1, 2, 4], "epochs": 5, "repeats": [5, 3],
            "environment": {"date": "d", "load_before": 0.1, "commands": ["python -m benchmarks.speed --repeats 5 3"]}}


@pytest.mark.parametrize(("ratio_threads", "busy_quiet", "winner"), [(1.2, 0, "adaptive-threads"),
                                                                      (2.5, 0, "adaptive"), (1.2, 1, "adaptive")])
def test_fold_round5_lets_the_thread_count_follow_the_load_with_round_fours_quiet_test(
        tmp_path, folding, capsys, ratio_threads, busy_quiet, winner):
    """adaptive-threads takes adaptive's quiet verdict (round four) while it reads a quiet machine as quiet; the
    lower worst ratio under load wins, spin's from round three; one quiet process that read busy leaves it out."""
    applied, output = folding
    round3 = _fold_after_rounds_three_and_four(tmp_path, output, capsys, 5, _load_round(ratio_threads, busy_quiet))
    assert applied == [winner] and f"round five's winner: '{winner}'" in capsys.readouterr().out
    text = output.read_text()
    assert "### Fifth round: the thread count may follow the load" in text
    row = f"| a | 3 x 4 | `adaptive-threads` | 2/1/1/1 | 1 | {1.5 * ratio_threads:.3g} ({ratio_threads:.2f}) | "
    assert row in text
    spin = _contention_section_worst(json.loads(round3.read_text()))["spin"]
    assert f"| `spin` | yes | — | {spin:.2f} (round three) |" in text
    eligible = "no" if busy_quiet else "yes"
    assert f"| `adaptive-threads` | {eligible} | {2 * busy_quiet} of 10 | {ratio_threads:.2f} |" in text  # 2 tables
    assert f"**Winner: `{winner}`**" in text


def _timed_round(quiet_timed: float, loaded_timed: float, busy_quiet: int = 0) -> dict:
    """Round six: adaptive-threads and adaptive-timed on tables a and b, quiet in 5 processes (adaptive-timed's
    ``quiet_timed`` x adaptive-threads') and beside 1, 2, 4 busy ones in 3 (adaptive-threads at 1.6x the share
    of its own quiet epoch, adaptive-timed's epochs ``loaded_timed`` x adaptive-threads'); ``busy_quiet`` of
    adaptive-timed's quiet processes a table read the machine as busy."""
    rows = []
    for t, base in (("a", 1.0), ("b", 2.0)):
        for policy in ("adaptive-threads", "adaptive-timed"):
            timed = policy == "adaptive-timed"
            for load in (0, 1, 2, 4):
                for k in range(5 if load == 0 else 3):
                    decision = "passive" if load or (timed and k < busy_quiet) else "spin"
                    seconds = (base * (quiet_timed if timed else 1.0) if load == 0 else
                               base * (1 + load / 2) * 1.6 * (loaded_timed if timed else 1.0))
                    rows.append({"table": t, "policy": policy, "load": load, "repeat": k, "d": 4, "n": 3,
                                 "threads": 2 if load == 0 or timed else 1, "load_average": 0.0,
                                 "median_seconds": seconds, "epoch_seconds": [seconds] * 5, "decision": decision})
    return {"rows": rows, "cores": 2, "tables": ["a", "b"], "policies": ["adaptive-threads", "adaptive-timed"],
            "loads": [0, 1, 2, 4], "epochs": 5, "repeats": [5, 3],
            "environment": {"date": "d", "load_before": 0.1, "commands": ["python -m benchmarks.speed --repeats 5 3"]}}


@pytest.mark.parametrize(("quiet_timed", "loaded_timed", "busy_quiet", "winner", "worst"),
                         [(1.2, 1.0, 0, "adaptive-threads", 1.6 / 1.1),  # the same under load: a tie
                          (1.0, 0.8, 0, "adaptive-timed", 1.28),  # faster under load
                          (1.2, 1.0, 1, "adaptive-threads", 1.6)])  # a quiet process read busy: each its own, and out
def test_fold_round6_takes_both_policies_ratios_against_the_quiet_epoch_they_share(
        tmp_path, folding, capsys, monkeypatch, quiet_timed, loaded_timed, busy_quiet, winner, worst):
    """The two policies run the same settings on a quiet machine, so a table's quiet epoch is the median of both
    policies' quiet processes: adaptive-timed's quiet processes reading 20 % slower by chance do not lower its
    ratios; equal epochs under load tie, and the tie goes to the policy in force (adaptive-threads, as the round
    was judged)."""
    from iclfs import _threads

    monkeypatch.setattr(_threads, "DEFAULT_POLICY", "adaptive-threads")
    applied, output = folding
    _fold_after_rounds_three_and_four(tmp_path, output, capsys, 6, _timed_round(quiet_timed, loaded_timed, busy_quiet))
    assert applied == [winner] and f"round six's winner: '{winner}'" in capsys.readouterr().out
    text = output.read_text()
    assert "### Sixth round: a training that times its thread count" in text
    assert f"**Winner: `{winner}`** (worst ratio {worst:.2f})" in text
    shared = not busy_quiet
    assert ("The quiet epoch both policies share: a " in text) is shared
    # shared: the median of ten quiet processes, five of each policy (a: 1.0 and 1.2 -> 1.1 when 20 % apart)
    if shared:
        assert f"a {statistics.median([1.0] * 5 + [quiet_timed] * 5):.3g} s" in text


def _contention_section_worst(section: dict) -> dict:
    from benchmarks import _contention

    return _contention.section_verdict(section)["worst"]


@pytest.mark.parametrize(("drop", "code"), [(None, 0), ("spin", 2)])
def test_contention_within_answers_by_its_exit_code(tmp_path, drop, code, capsys):
    section = _round_two_section()
    section["rows"] = [r for r in section["rows"] if not (r["policy"] == drop and r["load"] == 0)]
    raw = tmp_path / "round2.json"
    raw.write_text(json.dumps(section))
    with pytest.raises(SystemExit) as stopped:
        speed.main(["--contention-within", str(raw), "adaptive"])
    assert stopped.value.code == code
    with pytest.raises(SystemExit) as stopped:
        speed.main(["--contention-within", str(raw), "passive"])
    assert stopped.value.code == (1 if drop is None else 2)
