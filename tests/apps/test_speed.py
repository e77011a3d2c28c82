"""The speed benchmark command: target checks, carried-over rows, and one tiny real run."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.io

from iclfs.apps import speed


def _result(seconds: float, gib: float, gflop: float | None = None, kernel: str = "fused") -> dict:
    return {"source": "x.mat", "d": 5966, "n": 102, "regime": "small", "median_seconds": seconds,
            "peak_rss_bytes": gib * 2**30, "flops_per_epoch": None if gflop is None else gflop * 1e9,
            "estimated_bytes": 2**30, "attention_kernel": kernel}


def _report(date: str = "2026-11-22 09:00 UTC", rate: float = 100.0) -> dict:
    env = {"date": date, "machine": "x86_64", "cpu_threads": 2, "device": "cpu", "torch": "2", "python": "3.11",
           "matmul_gflops": rate, "command": "python -m iclfs.apps.speed"}
    return {"environment": env, "datasets": [
        {"name": "arcene", "paper": _result(40.0, 4.0), "fast": _result(10.0, 1.6, gflop=750.0)},
        {"name": "Prostate_GE", "paper": _result(15.0, 1.8), "fast": _result(5.0, 1.0, gflop=300.0)},
    ], "sweep_d": [], "sweep_n": []}


def test_targets_are_checked_with_values_and_verdicts():
    report = _report()
    report["datasets"][0]["attention_seconds"] = {"fused": 2.0, "chunked": 2.5}
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
    assert "| 300 | 60.0 | 100.0 | 60% |" in text  # Prostate_GE: no worker rate, the run's


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
    generate = speed.generate_views
    monkeypatch.setattr(speed, "generate_views", lambda *a, **k: calls.append(1) or generate(*a, **k))
    result = speed.worker("synthetic:30x8", "fast", epochs, "cpu", False)
    assert len(result["epoch_seconds"]) == epochs and len(calls) == run


@pytest.mark.parametrize(("chunk_size", "backward_products"), [(16, 4), (5, 5)])
def test_flop_counter_counts_every_product_of_the_blocked_attention(chunk_size, backward_products):
    """Forward: q k^T and P v. Backward: dP, dq, and the dk and dv that accumulate
    in place (addmm_), plus the weights' recomputation unless one block kept them."""
    import torch

    from iclfs.method.attention import blocked_attention

    L, e = 16, 8
    q, k, v = (torch.randn(L, e, requires_grad=True) for _ in range(3))
    with speed.flop_counter() as counter:
        blocked_attention(q, k, v, chunk_size).sum().backward()
    assert counter.get_total_flops() == (2 + backward_products) * 2 * L * L * e


def test_flop_counter_counts_the_chunked_info_nce_backward():
    import torch

    from iclfs.method.losses import info_nce_with_negative

    d, dz = 12, 4
    za, zp, zn = (torch.randn(d, dz, requires_grad=True) for _ in range(3))
    with speed.flop_counter() as counter:
        info_nce_with_negative(za, zp, zn, 0.5, 5).backward()
    products = 2 * d * d * dz
    # forward logits; backward: the recomputed logits, grad_za, and grad_zp (addmm_)
    assert counter.get_total_flops() == 4 * products


def test_keep_carries_rows_with_their_own_date_and_matmul_rate():
    previous = _report(date="2026-11-01 10:00 UTC", rate=200.0)
    previous["sweep_d"] = [{"source": "synthetic:1000x200", "d": 1000, "n": 200, "regime": "small",
                            "median_seconds": 0.4, "peak_rss_bytes": 2**29, "estimated_bytes": 2**29}]
    now = _report()
    now["datasets"] = [{"name": "Prostate_GE", "paper": _result(15.0, 1.8), "fast": _result(2.5, 1.0, gflop=300.0)},
                       {"name": "COIL20", "paper": _result(8.0, 1.2), "fast": _result(4.0, 1.3, gflop=600.0)}]
    speed.keep_results(now, previous)

    assert [row["name"] for row in now["datasets"]] == ["arcene", "Prostate_GE", "COIL20"]
    text = speed.render(now)
    assert "| arcene (measured 2026-11-01 10:00 UTC) |" in text and "| Prostate_GE | " in text
    # arcene's share is against its own run's 200 GFLOP/s, not today's 100
    assert "- arcene: share of the matmul rate 38 % (target >= 70 %): missed" in text
    assert "- Prostate_GE: speed-up 6.00x (target >= 5.00x): met" in text
    assert "## Scale sweep over d (n = 200), `fast` schedule (measured 2026-11-01 10:00 UTC, 2 threads)" in text


def test_command_measures_both_schedules_and_a_sweep_on_a_tiny_file(tmp_path):
    rng = np.random.default_rng(0)
    scipy.io.savemat(tmp_path / "tiny.mat", {"X": rng.normal(size=(12, 30)), "Y": np.arange(12)[:, None] % 2})
    output = tmp_path / "performance.md"
    speed.main(["--datasets", "tiny", "--datasets-dir", str(tmp_path), "--epochs", "1", "--sweep-d", "40",
                "--sweep-n", "--output", str(output), "--notes", str(tmp_path / "absent.md")])

    report = json.loads(output.with_suffix(".json").read_text())
    row = report["datasets"][0]
    assert row["paper"]["attention_kernel"] == "reference" and row["fast"]["attention_kernel"] == "fused"
    assert row["fast"]["flops_per_epoch"] > 0 and row["paper"]["median_seconds"] > 0
    assert [(r["d"], r["n"]) for r in report["sweep_d"]] == [(40, 200)] and report["sweep_n"] == []
    text = output.read_text()
    assert "| tiny | 12 x 30 | small |" in text and "## Scale sweep over d" in text and "## Analysis" not in text
    assert set(row["attention_seconds"]) == {"fused", "chunked"}
    assert "| tiny | 12 x 30 | " in text.split("## Attention kernels")[1]
    assert row["fast"]["precision"] == row["paper"]["precision"] == "fp32" and row["fast"]["threads"] >= 1
    # the fast worker measures its own matmul reference around its epochs; paper's needs none
    assert row["fast"]["matmul_gflops"] > 0 and row["paper"]["matmul_gflops"] is None
    assert f"| {row['fast']['matmul_gflops']:.1f} | " in text
    # the InfoNCE block the fast worker used: the CPU default, which holds all 30 rows of this tiny map
    assert row["fast"]["loss_chunk_size"] == 30 and row["paper"]["loss_chunk_size"] is None
    assert "| fused | 30 | fp32 |" in text


def test_command_refuses_a_cpu_precision_before_measuring(tmp_path, capsys):
    with pytest.raises(SystemExit):
        speed.main(["--datasets", "tiny", "--datasets-dir", str(tmp_path), "--device", "cpu",
                    "--precision", "bf16", "--output", str(tmp_path / "p.md")])
    assert "training.precision 'bf16' needs a CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "p.md").exists()


def test_render_rewrites_the_markdown_from_the_json_without_measuring(tmp_path):
    (tmp_path / "report.json").write_text(json.dumps(_report()))
    (tmp_path / "notes.md").write_text("Edited notes.")
    output = tmp_path / "performance.md"
    speed.main(["--render", str(tmp_path / "report.json"), "--notes", str(tmp_path / "notes.md"),
                "--output", str(output)])
    text = output.read_text()
    assert "- Prostate_GE: speed-up 3.00x (target >= 5.00x): missed" in text and text.rstrip().endswith("Edited notes.")


def test_a_worker_reports_its_own_peak_memory_not_its_parents(tmp_path):
    """ru_maxrss carries the parent's peak across fork + exec; the worker must not."""
    ballast = bytearray(600 * 2**20)  # the parent holds 600 MiB when it starts the worker
    ballast[::4096] = b"x" * len(ballast[::4096])
    result = speed.run_worker("synthetic:40x12", "fast", 1, "cpu", False)
    del ballast
    assert "error" not in result, result
    assert result["rss_before_training_bytes"] < 500 * 2**20
    assert result["rss_before_training_bytes"] <= result["peak_rss_bytes"]
