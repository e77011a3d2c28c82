"""Speed benchmark: the ``paper`` and ``fast`` schedules side by side, and the default selection's wall time.

    python -m benchmarks.speed --datasets Prostate_GE COIL20 arcene BASEHOCK --epochs 3

For each dataset it trains both schedules for a few epochs on the same data,
each in its own subprocess (so peak memory is that schedule's alone), and
reports the per-epoch time (median of the measured epochs, after one warm-up
epoch), peak memory (RSS on CPU, max allocated on CUDA), the speed-up, the
FLOPs of one epoch (counted by ``torch.utils.flop_counter``) and the achieved
FLOP/s against this machine's fp32 matmul rate, measured by the ``fast``
worker itself just before and just after its timed epochs (the higher of the
two: on a shared machine that rate drifts). Every epoch is
:meth:`iclfs.method._training.Trainer.train_epoch`, what training runs. A synthetic
sweep over d and over n reports time and memory per ``fast`` epoch, and
``--selection-sizes`` times the whole default selection (training, every
member for a consensus, scoring, the Laplacian score, LGRC) on synthetic
tables of those sizes: what a user waits for; ``--cost-datasets`` times one
100-epoch run against a consensus (``--consensus``) on real datasets, back
to back. The report checks the targets
of :data:`TARGETS` and ends with the hand-written analysis of ``--notes``.

``--methods`` times every other method of :mod:`iclfs.baselines` on the
``--method-sizes`` tables (default 20,000 x 200) at ``--method-k``.

``--contention`` measures each thread policy quiet and beside busy processes
and applies the rule that picks the default (:mod:`benchmarks._contention`):

    python -m benchmarks.speed --contention

``--add`` measures only what its command line names and adds those rows to
the report already at ``--output`` (a row of the same dataset or size is
replaced), so one long measurement need not repeat the others:

    python -m benchmarks.speed --add --selection-sizes 20000x200
"""

from __future__ import annotations

from iclfs import _threads  # first: the OpenMP thread policy, before torch loads
import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from benchmarks import _contention  # noqa: E402
from benchmarks import _policies  # noqa: E402
from iclfs.io._tables import read_feature_table  # noqa: E402
from iclfs.method._config import RuntimeConfig, Settings, TrainingConfig, ViewConfig  # noqa: E402
from iclfs.method._members import total_epochs, total_seconds  # noqa: E402
from iclfs.method._model import FeatureAttention  # noqa: E402
from iclfs.method._preprocessing import FeatureTable, prepare  # noqa: E402
from iclfs.method._runtime import (  # noqa: E402
    attention_kernel_for,
    compute_settings,
    resolve_device,
    resolve_precision,
)
from iclfs.method._training import Trainer  # noqa: E402

DEFAULT_DATASETS = ("Prostate_GE", "COIL20", "arcene", "BASEHOCK")
DATASETS_DIR = "../shared/datasets"
SWEEP_D = (1000, 5000, 10000, 20000, 50000)
SWEEP_N = (100, 500, 1000, 2000)
SELECTION_SIZES = ("2000x200", "20000x200")
# Each section's rows and what names a row: a row measured with --add replaces the one it names.
# A selection row is named by its size and its settings.
ROW_KEYS = {"datasets": ("name",), "sweep_d": ("source",), "sweep_n": ("source",), "cost": ("name",),
            "selection": ("shape", "overrides"), "methods": ("method", "shape", "k")}
METHOD_CLUSTERS = 4  # the number of clusters MCFS and NDFS are told on the random tables
METHOD_TARGET_SECONDS = 600  # every method selects from 20,000 x 200 in under 10 minutes
# the statistics users compare first select from 20,000 x 200 in under a second
FAST_METHOD_TARGETS = {"variance": 1.0, "dispersion": 1.0}


@dataclass(frozen=True)
class Target:
    """What the ``fast`` schedule must reach on one dataset on CPU (issue "Speed and scale");
    a CUDA report measures the same things and judges none of them."""

    speedup: float  # paper s/epoch over fast s/epoch, at least
    matmul_share: float | None = None  # fast FLOP/s over the measured matmul rate, at least
    memory_ratio: float | None = None  # fast peak memory over paper's, at most


TARGETS: dict[str, Target] = {
    "Prostate_GE": Target(speedup=5.0),
    "COIL20": Target(speedup=1.8, matmul_share=0.7),
    "arcene": Target(speedup=1.8, matmul_share=0.7, memory_ratio=0.5),
    "BASEHOCK": Target(speedup=1.8, matmul_share=0.7),
}


def matmul_gflops(device: torch.device, size: int = 2048, repeats: int = 10) -> float:
    """Measured fp32 matrix-multiply throughput (best of ``repeats``)."""
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    best = float("inf")
    for _ in range(repeats + 1):
        _sync(device)
        start = time.perf_counter()
        a @ b
        _sync(device)
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def attention_kernel_seconds(d: int, n: int, device: torch.device, repeats: int = 3) -> dict[str, float]:
    """Forward + backward seconds (best of ``repeats``) of one (d, n) attention, per non-reference kernel.

    The core of the attention alone, on random inputs: the evidence for which
    kernel ``attention_kernel: auto`` picks (see ``CHUNKED_ATTENTION_MIN_SAMPLES``).
    """
    generator = torch.Generator(device=device).manual_seed(0)
    q, k, v = (torch.randn(d, n, device=device, generator=generator).requires_grad_() for _ in range(3))
    grad = torch.randn(d, n, device=device, generator=generator)
    seconds = {}
    for kernel in ("fused", "blocked"):
        attention = FeatureAttention(n, kernel).to(device)
        best = float("inf")
        for _ in range(repeats):
            _sync(device)
            start = time.perf_counter()
            attention.attend(q, k, v).backward(grad)
            _sync(device)
            best = min(best, time.perf_counter() - start)
            q.grad = k.grad = v.grad = None
        seconds[kernel] = best
    return seconds


def flop_counter():
    """``FlopCounterMode`` that also counts what torch's table leaves out: the CPU
    flash-attention kernels (it has their CUDA siblings only) and the in-place
    ``addmm_`` with which the blocked attention and InfoNCE backward passes
    accumulate their gradients (12 products of 94 GFLOP each in a BASEHOCK epoch)."""
    from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

    aten = torch.ops.aten

    def forward(query_shape, key_shape, value_shape, *args, **kwargs) -> int:
        return sdpa_flop_count(query_shape, key_shape, value_shape)

    def backward(grad_out_shape, query_shape, key_shape, value_shape, *args, **kwargs) -> int:
        return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)

    def addmm_in_place(self_shape, mat1_shape, mat2_shape, *args, **kwargs) -> int:
        return 2 * mat1_shape[0] * mat1_shape[1] * mat2_shape[1]

    return FlopCounterMode(display=False, custom_mapping={
        aten._scaled_dot_product_flash_attention_for_cpu: forward,
        aten._scaled_dot_product_flash_attention_for_cpu_backward: backward,
        aten.addmm_: addmm_in_place,
    })


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_rss_bytes() -> int:
    """This process's peak resident memory since it started its program.

    ``VmHWM`` of ``/proc/self/status`` where there is one: ``ru_maxrss``
    survives ``exec`` on Linux, so a worker started by a parent that already
    held 1 GiB would report at least 1 GiB, whatever it used itself.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _synthetic_table(shape: str) -> FeatureTable:
    """A random ``DxN`` table (d features, n samples) with no structure: timing only."""
    d, n = (int(v) for v in shape.split("x"))
    return FeatureTable(X=np.random.default_rng(0).normal(size=(n, d)).astype(np.float32), source=f"synthetic {shape}")


def worker(source: str, schedule: str, epochs: int, device_name: str, count_flops: bool,
           precision: str = "auto") -> dict:
    """Train ``epochs`` epochs and measure them, after one warm-up epoch.

    The warm-up is skipped when ``epochs == 1`` on CPU, where one epoch of the
    largest sweep takes minutes and has no start-up cost worth excluding; on
    CUDA the first epoch pays for cuBLAS handles and kernel selection, often
    more than a whole epoch, so it is always run and never timed.

    Each epoch is :meth:`iclfs.method._training.Trainer.train_epoch`, with training's precision and thread count.
    """
    A = _contention.inverted_map(source)
    d, n = A.shape
    rss_before = peak_rss_bytes()
    runtime = RuntimeConfig(device=device_name, precision=precision, progress=False, check_memory=False)
    trainer = Trainer(A, TrainingConfig(schedule=schedule), ViewConfig(), runtime, seed=0)
    device = trainer.device

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    flops = None
    matmul_rates = []
    with compute_settings(device, trainer.precision, runtime.num_threads) as threads:
        if count_flops:
            matmul_rates.append(matmul_gflops(device))
        warm_up = epochs > 1 or device.type == "cuda"
        for i in range(epochs + warm_up):
            seconds = trainer.train_epoch()["seconds"]
            if not warm_up or i > 0:
                times.append(seconds)
        if count_flops:
            matmul_rates.append(matmul_gflops(device))
            with flop_counter() as counter:
                trainer.train_epoch()
            flops = counter.get_total_flops()
    result = {
        "source": source,
        "d": d,
        "n": n,
        "regime": trainer.regime.name,
        "schedule": schedule,
        "device": str(device),
        "precision": trainer.precision,
        "threads": threads,
        "epoch_seconds": times,
        "median_seconds": statistics.median(times),
        "peak_rss_bytes": peak_rss_bytes(),
        "rss_before_training_bytes": rss_before,
        "flops_per_epoch": flops,
        # The higher of the rates around the timed epochs, so drift never flatters the share.
        "matmul_gflops": max(matmul_rates) if matmul_rates else None,
        "estimated_bytes": trainer.plan.memory.total_bytes,
        "attention_kernel": trainer.attention_kernel,  # the one that ran
        "loss_block_rows": trainer.loss_block_rows,
    }
    if device.type == "cuda":
        result["peak_cuda_bytes"] = torch.cuda.max_memory_allocated(device)
    return result


def _thread_ticks() -> dict[str, int]:
    """CPU time (1/100 s) of each of this process's threads, from /proc/self/task: unlike wall time, what a
    thread computed does not grow when other processes share the CPUs."""
    ticks = {}
    for tid in Path("/proc/self/task").iterdir():
        try:
            fields = (tid / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks[tid.name] = int(fields[11]) + int(fields[12])
    return ticks


def _cpu_seconds(function, repeats: int = 3) -> float:
    """The least process CPU time of ``repeats`` calls, after one untimed call."""
    function()
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        function()
        best = min(best, time.process_time() - started)
    return best


def profile_epoch(source: str) -> dict:
    """Where one ``fast`` epoch's time goes on CPU, in CPU time (a shared machine inflates wall time, not the
    CPU time a thread computes): on one thread, the epoch's FLOP rate against a 2048^3 ``torch.mm`` and
    against the attention kernel alone at this (d, n); on two threads (passive wait, so an idle thread uses
    no CPU), each thread's share; and torch.profiler's operators of one epoch, by their share of its time."""
    threads = torch.get_num_threads()
    try:
        return _profile_epoch(source)
    finally:
        torch.set_num_threads(threads)


def _profile_epoch(source: str) -> dict:
    from torch.profiler import ProfilerActivity, profile

    A = _contention.inverted_map(source)
    d, n = A.shape
    torch.set_num_threads(1)
    trainer = Trainer(A, TrainingConfig(), ViewConfig(), RuntimeConfig(device="cpu", progress=False,
                                                                       check_memory=False), seed=0)
    trainer.train_epoch()
    with flop_counter() as counter:
        trainer.train_epoch()
    flops = counter.get_total_flops()
    epoch = _cpu_seconds(trainer.train_epoch)
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    matmul = 2 * 2048**3 / _cpu_seconds(lambda: a @ b, 5) / 1e9
    q, k, v = (torch.randn(1, 1, d, n, requires_grad=True) for _ in range(3))
    grad = torch.randn(1, 1, d, n)
    with flop_counter() as counter:
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    forward_flops = counter.get_total_flops()
    forward = _cpu_seconds(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v))
    both = _cpu_seconds(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v).backward(grad))
    with flop_counter() as counter:
        torch.nn.functional.scaled_dot_product_attention(q, k, v).backward(grad)
    backward_flops = counter.get_total_flops() - forward_flops
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        trainer.train_epoch()
    events = profiler.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    operators = sorted(((e.key, e.self_cpu_time_total / total, e.count) for e in events), key=lambda r: -r[1])[:12]
    torch.set_num_threads(2)
    trainer.train_epoch()
    before, cpu = _thread_ticks(), time.process_time()
    trainer.train_epoch()
    after, cpu = _thread_ticks(), time.process_time() - cpu
    work = sorted((after[t] - before.get(t, 0) for t in after if after[t] > before.get(t, 0)), reverse=True)
    return {"source": source, "d": d, "n": n, "gflop_per_epoch": flops / 1e9, "epoch_cpu_seconds": epoch,
            "epoch_gflops_per_cpu_second": flops / epoch / 1e9, "matmul_gflops_per_cpu_second": matmul,
            "share_of_matmul": flops / epoch / 1e9 / matmul,
            "attention_forward_share": forward_flops / forward / 1e9 / matmul,
            "attention_backward_share": backward_flops / (both - forward) / 1e9 / matmul,
            "attention_cpu_seconds_per_epoch": 6 * both,  # six forward passes a fast epoch, each back-propagated
            "two_threads_epoch_cpu_seconds": cpu, "two_threads_ticks": work,
            "operators": operators, "load_average": os.getloadavg()}


def selection_worker(source: str, device_name: str, overrides: str = "") -> dict:
    """Wall time of a whole selection (:func:`iclfs.chain.run`) on a ``DxN`` random table or a file.

    The default settings, or those changed by ``overrides`` (``members.per_run=1``: one run).
    """
    from iclfs import chain  # here: it imports every other method, which the contention cells never need

    settings = Settings().with_overrides(f"runtime.device={device_name},runtime.progress=false")
    settings = settings.with_overrides(overrides)
    table = _synthetic_table(source) if "x" in source and not Path(source).suffix else read_feature_table(source)
    started = time.perf_counter()
    result = chain.run(table, settings)
    seconds = time.perf_counter() - started
    d, n = result.prepared.standardized.shape[1], result.prepared.standardized.shape[0]
    trainings = result.trained.trainings
    return {"shape": source, "source": source, "overrides": overrides, "d": d, "n": n, "seconds": seconds,
            "training_seconds": total_seconds(trainings), "members": len(trainings),
            "epochs": total_epochs(trainings), "device": trainings[0].results[0].device,
            "threads": trainings[0].results[0].threads, "peak_rss_bytes": peak_rss_bytes()}


def method_worker(key: str, shape: str, k_values: str, device_name: str) -> dict:
    """Wall time of one method of :mod:`iclfs.baselines` selecting at ``k_values`` (comma-separated) from a
    random ``DxN`` table, as ``select`` runs it (standardized data, or the table as read for variance and
    dispersion; the default options, one thread per core)."""
    from iclfs import baselines

    entry = baselines.REGISTRY[key]
    table = _synthetic_table(shape)
    if entry.nonnegative:  # dispersion: expression-like values, |normal|
        table = FeatureTable(X=np.abs(table.X), source=table.source)
    prepared = prepare(table, keep_measured=entry.reads_measured)
    X = prepared.standardized
    ks = [int(k) for k in k_values.split(",")]
    started = time.perf_counter()
    baselines.run(key, X, ks, n_clusters=METHOD_CLUSTERS if entry.needs_clusters else None, seed=42,
                  runtime=RuntimeConfig(device=device_name, progress=False), measured=prepared.measured)
    seconds = time.perf_counter() - started
    return {"method": key, "name": entry.name, "shape": shape, "k": k_values, "d": X.shape[1], "n": X.shape[0],
            "seconds": seconds, "peak_rss_bytes": peak_rss_bytes(), "threads": torch.get_num_threads(),
            "device": str(resolve_device(device_name))}


def run_method_worker(key: str, shape: str, k_values: str, device: str) -> dict:
    """Run :func:`method_worker` in a fresh interpreter."""
    return _subprocess(["--method-worker", key, shape, k_values, device],
                       {"method": key, "shape": shape, "k": k_values})


def run_worker(source: str, schedule: str, epochs: int, device: str, count_flops: bool,
               precision: str = "auto") -> dict:
    """Run :func:`worker` in a fresh interpreter, so its peak memory is its own."""
    return _subprocess(["--worker", source, schedule, str(epochs), device, "1" if count_flops else "0", precision],
                       {"source": source, "schedule": schedule})


def run_selection_worker(source: str, device: str, overrides: str = "") -> dict:
    """Run :func:`selection_worker` in a fresh interpreter."""
    return _subprocess(["--selection-worker", source, device, overrides], {"shape": source, "source": source,
                                                                            "overrides": overrides})


def _subprocess(arguments: list[str], identity: dict) -> dict:
    done = subprocess.run([sys.executable, "-m", "benchmarks.speed", *arguments], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1])
    if done.returncode != 0:
        return {**identity, "error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _seconds(value: float) -> str:
    """Two decimals from a second up; three significant digits below (GPU epochs take milliseconds)."""
    return f"{value:.2f}" if value >= 1 else f"{value:.3g}"


def _gib(value: float | None) -> str:
    return "—" if value is None else f"{value / 2**30:.2f}"


def _memory(result: dict) -> float:
    return result.get("peak_cuda_bytes", result["peak_rss_bytes"])


def target_checks(name: str, target: Target, paper: dict, fast: dict, matmul_gflops: float) -> list[str]:
    """One Markdown bullet per measured quantity of ``target``: value, bound, met or missed."""
    def line(what: str, value: float, bound: float, at_least: bool, fmt: str) -> str:
        met = value >= bound if at_least else value <= bound
        return (f"- {name}: {what} {fmt.format(value)} (target {'>=' if at_least else '<='} {fmt.format(bound)}): "
                f"{'met' if met else 'missed'}")

    lines = [line("speed-up", paper["median_seconds"] / fast["median_seconds"], target.speedup, True, "{:.2f}x")]
    if target.matmul_share is not None and fast["flops_per_epoch"]:
        share = fast["flops_per_epoch"] / fast["median_seconds"] / 1e9 / matmul_gflops
        lines.append(line("share of the matmul rate", 100 * share, 100 * target.matmul_share, True, "{:.0f} %"))
    if target.memory_ratio is not None:
        lines.append(line("peak memory fast / paper", _memory(fast) / _memory(paper), target.memory_ratio, False,
                          "{:.2f}"))
    return lines


def render(report: dict, notes: str = "") -> str:
    """The Markdown report; ``notes`` (hand-written analysis) goes at the end."""
    env = report["environment"]
    lines = [
        "# Training speed: `paper` vs `fast` schedule",
        "",
        f"Measured {env['date']} on {env['machine']} ({env['cpu_threads']} torch threads), device `{env['device']}`,",
        f"torch {env['torch']}, Python {env['python']}. Measured fp32 matmul rate: "
        f"**{env['matmul_gflops']:.1f} GFLOP/s** at the "
        "start; each row's share is against the rate its `fast` worker measured around its own epochs.",
        "",
        "Command:",
        "",
        "```bash",
        env["command"],
        "```",
        "",
    ]
    for added in env.get("added", []):
        lines += [f"Rows added {added['date']} (matmul rate {added['matmul_gflops']:.1f} GFLOP/s), replacing any "
                  "of the same dataset, or of the same size and settings:", "", "```bash", added["command"], "```", ""]
    lines += [
        "Per-epoch time is the median of the measured epochs after one warm-up epoch; peak memory is the",
        f"whole process's {'peak RSS' if env['device'] == 'cpu' else 'max allocated CUDA memory'} "
        "(each schedule runs in its own process);",
        "FLOPs are those of one epoch (forward and backward, counted by `torch.utils.flop_counter`).",
        "",
        "| dataset | n x d | regime | paper s/epoch | fast s/epoch | speed-up | paper peak GiB | fast peak GiB "
        "| memory ratio | fast GFLOP/epoch | fast GFLOP/s | matmul GFLOP/s | % of matmul rate | fast attention kernel "
        "| fast InfoNCE block rows | fast precision | estimated GiB (paper / fast) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    checks: list[str] = []
    for row in report["datasets"]:
        paper, fast = row["paper"], row["fast"]
        if "error" in paper or "error" in fast:
            lines.append(f"| {row['name']} | failed: {paper.get('error') or fast.get('error')} |")
            continue
        rate = fast["flops_per_epoch"] / fast["median_seconds"] / 1e9 if fast["flops_per_epoch"] else None
        reference = fast["matmul_gflops"]
        lines.append(
            f"| {row['name']} | {fast['n']} x {fast['d']} | {fast['regime']} | {_seconds(paper['median_seconds'])} | "
            f"{_seconds(fast['median_seconds'])} | {paper['median_seconds'] / fast['median_seconds']:.2f}x | "
            f"{_gib(_memory(paper))} | {_gib(_memory(fast))} | {_memory(fast) / _memory(paper):.2f} | "
            f"{fast['flops_per_epoch'] / 1e9:.0f} | {rate:.1f} | {reference:.1f} | {100 * rate / reference:.0f}% | "
            f"{fast.get('attention_kernel', '—')} | {fast.get('loss_block_rows') or '—'} | "
            f"{fast['precision']} | "
            f"{_gib(paper['estimated_bytes'])} / {_gib(fast['estimated_bytes'])} |"
        )
        if row["name"] in TARGETS and env["device"] == "cpu":
            checks += target_checks(row["name"], TARGETS[row["name"]], paper, fast, reference)
    if checks:
        lines += ["", "## Targets", "", *checks]
    timed = [row for row in report["datasets"] if row.get("attention_seconds")]
    if timed:
        lines += ["", "## Attention kernels", "",
                  "Forward + backward of the attention core alone at each dataset's (d, n), best of 3; "
                  "`picked` is the kernel `fast` uses here (iclfs.method._runtime.attention_kernel_for).", "",
                  "| dataset | n x d | fused s | blocked s | faster | picked |", "|---|---|---|---|---|---|"]
        for row in timed:
            t, fast = row["attention_seconds"], row["fast"]
            auto = attention_kernel_for("fast", fast["n"], "cpu" if env["device"] == "cpu" else "cuda")
            lines.append(f"| {row['name']} | {fast['n']} x {fast['d']} | {_seconds(t['fused'])} | "
                         f"{_seconds(t['blocked'])} | "
                         f"{min(t, key=t.get)} | {auto} |")
    for title, key in (("d (n = 200)", "sweep_d"), ("n (d = 2000)", "sweep_n")):
        if not report.get(key):
            continue
        lines += ["", f"## Scale sweep over {title}, `fast` schedule", "",
                  "| n x d | regime | s/epoch | peak GiB | estimated GiB | d x d fp32 would be GiB |",
                  "|---|---|---|---|---|---|"]
        for r in report[key]:
            if "error" in r:
                lines.append(f"| {r['source']} | failed: {r['error']} | | | | |")
                continue
            lines.append(f"| {r['n']} x {r['d']} | {r['regime']} | {_seconds(r['median_seconds'])} | "
                         f"{_gib(_memory(r))} | {_gib(r['estimated_bytes'])} | {_gib(4 * r['d'] ** 2)} |")
    if report.get("selection"):
        lines += ["", "## The default selection, end to end", "",
                  "`iclfs.chain.run` on a random table of d features x n samples, with the default settings "
                  "or those shown: training (every network of every member), scoring, the Laplacian score and "
                  "LGRC, in a fresh process.", "",
                  "| d x n | settings | members | epochs in all | wall s | training s | peak GiB | device | threads |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in report["selection"]:
            settings = f"`{r['overrides']}`" if r.get("overrides") else "defaults"
            if "error" in r:
                lines.append(f"| {r['shape']} | {settings} | failed: {r['error']} | | | | | | |")
                continue
            lines.append(f"| {r['d']} x {r['n']} | {settings} | {r['members']} | {r['epochs']} | "
                         f"{r['seconds']:.0f} | {r['training_seconds']:.0f} | {_gib(r['peak_rss_bytes'])} | "
                         f"{r['device']} | {r['threads']} |")
    if report.get("cost"):
        lines += ["", "## A consensus against one run", "",
                  "On each dataset, back to back in fresh processes: one 100-epoch `fast` run "
                  "(`members.per_run=1`) and a consensus, each the whole selection "
                  "(`iclfs.chain.run`: training, scoring, the Laplacian score, LGRC at every k).", "",
                  "| dataset | n x d | consensus | one run s | consensus s | consensus / one run | "
                  "epochs (one run / consensus) |",
                  "|---|---|---|---|---|---|---|"]
        for pair in report["cost"]:
            one, other = pair["one_run"], pair["consensus"]
            settings = f"`{pair.get('consensus_settings', '')}`"
            if "error" in one or "error" in other:
                lines.append(f"| {pair['name']} | failed: {one.get('error') or other.get('error')} | {settings} "
                             "| | | | |")
                continue
            lines.append(f"| {pair['name']} | {one['n']} x {one['d']} | {settings} | {one['seconds']:.0f} | "
                         f"{other['seconds']:.0f} | {other['seconds'] / one['seconds']:.2f} | "
                         f"{one['epochs']} / {other['epochs']} |")
    if report.get("methods"):
        lines += ["", "## Every method on a wide table", "",
                  "Each method of `iclfs.baselines` selecting from a random table of d features x n samples "
                  f"(standardized; MCFS and NDFS told {METHOD_CLUSTERS} clusters), as `select` runs it with "
                  "`selection.method`: the default options, in a fresh process. *k* is the selection timed: one k, "
                  "or the whole grid (CAE and LS-CAE train one model per k). "
                  f"The target: under {METHOD_TARGET_SECONDS // 60} minutes; variance and dispersion (which read the "
                  "table before standardization, |normal| values for dispersion): under a second.", "",
                  "| method | d x n | k | wall s | peak GiB | device | threads | target met |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in report["methods"]:
            if "error" in r:
                lines.append(f"| {r['method']} | {r['shape']} | {r['k']} | failed: {r['error']} | | | | |")
                continue
            target = FAST_METHOD_TARGETS.get(r["method"], METHOD_TARGET_SECONDS)
            met = f"{'yes' if r['seconds'] < target else 'no'} (< {target:g} s)"
            wall = f"{r['seconds']:.3f}" if r["seconds"] < 10 else f"{r['seconds']:.0f}"
            lines.append(f"| {r['name']} | {r['d']} x {r['n']} | {r['k']} | {wall} | "
                         f"{_gib(r['peak_rss_bytes'])} | {r['device']} | {r['threads']} | {met} |")
    if report.get("contention"):
        lines += _contention.render(report["contention"])
    if report.get("contention_round2"):
        lines += _contention.render(report["contention_round2"], ROUND2_TITLE)
    if report.get("contention_round3"):
        lines += _contention.render(report["contention_round3"], ROUND3_TITLE)
    if report.get("contention_round4"):  # its loaded ratios are round three's
        lines += _contention.render_quiet_round(report["contention_round4"], report["contention_round3"],
                                                ROUND4_TITLE)
    for key in _contention.LOAD_ROUNDS:
        if report.get(key):  # its quiet test is round four's, spin's loaded cells round three's
            lines += _contention.render_load_round(report[key], report["contention_round4"],
                                                   report["contention_round3"], key)
    if report.get("gpu_row"):
        lines += render_gpu_row(report["gpu_row"])
    if notes.strip():
        lines += ["", "## Analysis", "", notes.strip()]
    return "\n".join(lines) + "\n"


ROUND2_TITLE = "### Second round, on 2 pinned cores of a quiet machine"
ROUND3_TITLE = "### Third round: the product's adaptive against spin, every cell repeated"
ROUND4_TITLE = "### Fourth round: the quiet test in 40 processes a cell"


def render_gpu_row(row: dict) -> list[str]:
    """The Markdown lines of one GPU's row (:mod:`benchmarks.gpu_row`'s JSON)."""
    matmul = row["matmul"]
    rates = f"fp32 {matmul['fp32_gflops'] / 1000:.1f} TFLOP/s" + (
        f", TF32 {matmul['tf32_gflops'] / 1000:.1f} TFLOP/s" if matmul.get("tf32_gflops") else "")
    lines = ["", f"## One GPU: {row['device']}", "",
             f"Measured {row['date']} with torch {row['torch']} (CUDA {row['cuda']}), Python {row['python']}, in one "
             "process:", "", "```bash", row["command"], "```", "", *([row["note"], ""] if row.get("note") else []),
             f"The matmul rate, a {matmul['size']} x {matmul['size']} `torch.mm` (best of 10): {rates}. The `fast` "
             "epoch is the median of the timed epochs after a warm-up, in the schedule's precision on this device; "
             "its rate is its counted FLOPs over its time. The whole default fit is `iclfs.chain.run` with the "
             "default settings on the table in memory (training, the Laplacian score, the ranking, LGRC at every "
             "k, the choice of k), after CUDA had started.", "",
             "| table | n x d | whole default fit s | of it training s | members x epochs | k | fast epoch s | "
             "precision | epoch GFLOP/s | of the fp32 matmul rate | of the TF32 rate |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in row["rows"]:
        epoch, fit = r["epoch"], r.get("fit")
        tf32 = epoch.get("share_of_tf32_matmul")
        lines.append(
            f"| {r['table']} | {epoch['n']} x {epoch['d']} | " +
            (f"{fit['seconds']:.2f} | {fit['training_seconds']:.2f} | {fit['members']} x "
             f"{fit['epochs'] // max(fit['members'], 1)} | {fit['k']} | " if fit else "— | — | — | — | ") +
            f"{_seconds(epoch['median_seconds'])} | {epoch['precision']} | {epoch['gflops']:.0f} | "
            f"{epoch['share_of_fp32_matmul']:.0%} | {'—' if tf32 is None else f'{tf32:.0%}'} |")
    return lines


#: What a JSON folded in with --fold-round2 / --fold-gpu-row must hold: the report's key for it, its keys.
FOLDED = {"fold_round2": ("contention_round2", ("rows", "cores", "environment", "policies", "tables", "loads")),
          "fold_round3": ("contention_round3", ("rows", "cores", "environment", "policies", "tables", "loads",
                                                "repeats")),
          "fold_round4": ("contention_round4", ("rows", "cores", "environment", "policies", "tables", "loads",
                                                "repeats", "epochs")),
          "fold_round5": ("contention_round5", ("rows", "cores", "environment", "policies", "tables", "loads",
                                                "repeats", "epochs")),
          "fold_round6": ("contention_round6", ("rows", "cores", "environment", "policies", "tables", "loads",
                                                "repeats", "epochs")),
          "fold_gpu_row": ("gpu_row", ("device", "matmul", "rows", "command"))}
#: The contention rounds --apply-verdict can apply, newest first: the newest folded in decides.
ROUNDS = {"fold_round6": "round six", "fold_round5": "round five", "fold_round4": "round four",
          "fold_round3": "round three", "fold_round2": "round two"}


def read_folded(args) -> dict:
    """The JSONs of ``--fold-round2`` and ``--fold-gpu-row``, by their key in the report; a SystemExit naming
    the file and what it lacks, before anything is written."""
    folded = {}
    for option, (key, needed) in FOLDED.items():
        path = getattr(args, option)
        if not path:
            continue
        try:
            measured = json.loads(Path(path).read_text())
        except (OSError, ValueError) as err:
            raise SystemExit(f"--{option.replace('_', '-')} {path}: not a readable JSON ({err})") from None
        lacking = [name for name in needed if name not in measured]
        if lacking:
            raise SystemExit(f"--{option.replace('_', '-')} {path}: lacks {', '.join(lacking)}")
        folded[key] = measured
    return folded


def _row_name(row: dict, keys: tuple[str, ...]) -> tuple:
    return tuple(row.get(key, "") for key in keys)


def add_rows(report: dict, added: dict) -> dict:
    """``report`` with the rows of ``added`` (a report of the same shape): a row of the same key is replaced.

    ``added``'s environment is recorded under ``environment["added"]``; the
    rest of ``report``, and its rows that ``added`` does not name, stay as they are.
    """
    merged = {**report, "environment": {**report["environment"]}}
    for section, keys in ROW_KEYS.items():
        new = added.get(section) or []
        named = {_row_name(row, keys) for row in new}
        merged[section] = [row for row in report.get(section, []) if _row_name(row, keys) not in named] + new
    env = added["environment"]
    merged["environment"]["added"] = [*report["environment"].get("added", []),
                                      {k: env[k] for k in ("date", "command", "matmul_gflops")}]
    return merged


def parse_arguments(argv: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The command line, with each list that is not given filled: its default, or nothing with ``--add``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="*", default=None, help=f"default: {' '.join(DEFAULT_DATASETS)}")
    parser.add_argument("--datasets-dir", default=None,
                        help="folder of the <name>.mat tables (default: ../shared/datasets; with --contention, "
                             "each table's own folder: " + ", ".join(_contention.TABLES.values()) + ")")
    parser.add_argument("--epochs", type=int, default=3, help="measured epochs per schedule (after 1 warm-up)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", default="auto", help="runtime.precision of both schedules (auto: each "
                        "schedule's default; fp32 on CPU, tf32 for fast on CUDA)")
    parser.add_argument("--sweep-d", type=int, nargs="*", default=None, help=f"default: {' '.join(map(str, SWEEP_D))}")
    parser.add_argument("--sweep-n", type=int, nargs="*", default=None, help=f"default: {' '.join(map(str, SWEEP_N))}")
    parser.add_argument("--sweep-epochs", type=int, default=1)
    parser.add_argument("--selection-sizes", nargs="*", default=None,
                        help="DxN tables the whole default selection is timed on "
                             f"(default: {' '.join(SELECTION_SIZES)})")
    parser.add_argument("--selection-settings", default="",
                        help="settings the --selection-sizes rows are timed with (section.key=value,...; "
                             "default: the defaults)")
    parser.add_argument("--cost-datasets", nargs="*", default=[],
                        help="datasets (in --datasets-dir) on which one 100-epoch run and the consensus are timed "
                             "back to back, each in its own process")
    parser.add_argument("--consensus", default="members.per_run=6",
                        help="the consensus --cost-datasets times (section.key=value,...)")
    parser.add_argument("--methods", nargs="*", default=[],
                        help="methods of iclfs.baselines timed on each --method-sizes table")
    parser.add_argument("--method-sizes", nargs="*", default=["20000x200"], help="DxN tables the methods are timed on")
    parser.add_argument("--method-k", nargs="*", default=["50"],
                        help="the selections timed: one k each, or a comma-separated grid (50,100,150,200,250,300)")
    parser.add_argument("--output", default="benchmarks/results/performance.md")
    parser.add_argument("--notes", default="docs/guides/performance.md",
                        help="hand-written analysis appended to the report, if the file exists")
    parser.add_argument("--add", action="store_true",
                        help="measure only what this command names and add the rows to the report at --output")
    contention = parser.add_argument_group("--contention: epochs on a shared CPU under each thread policy")
    contention.add_argument("--contention", action="store_true",
                            help="measure only this, and put its section in the report at --output")
    contention.add_argument("--tables", nargs="*", default=list(_contention.TABLES),
                            help="names of " + ", ".join(_contention.TABLES) + ", or paths")
    contention.add_argument("--policies", nargs="*", default=list(_contention.MEASURED),
                            choices=list(_policies.CANDIDATES),
                            help="the study's candidates (benchmarks/_policies.py) to measure")
    contention.add_argument("--loads", type=int, nargs="*", default=list(_contention.LOADS[1:]),
                            help="busy processes beside each cell (quiet is always measured)")
    contention.add_argument("--contention-epochs", type=int, default=5, help="timed epochs a cell, after a warm-up")
    contention.add_argument("--minutes", type=float, default=14.0,
                            help="start no cell that may end past this; --resume measures the rest")
    contention.add_argument("--cell-seconds", type=float, default=60.0,
                            help="a cell stops timing after this long, once it has 2 epochs")
    contention.add_argument("--estimate-epochs", type=int, default=20,
                            help="epochs of the quiet training whose first estimate is checked; 0: none")
    contention.add_argument("--raw", "--json", dest="raw", default="benchmarks/results/contention.json",
                            help="every cell's numbers, saved as each is measured")
    contention.add_argument("--csv", default=None, help="the cells as a table (default: --raw's path, .csv)")
    contention.add_argument("--resume", action="store_true", help="keep the cells --raw holds; measure the rest")
    contention.add_argument("--repeats", type=int, nargs="+", default=None, metavar=("QUIET", "LOADED"),
                            help="measure each quiet cell QUIET times and each loaded cell LOADED times (default: "
                                 "QUIET), in fresh processes taken in turn; a cell's epoch is the median of its "
                                 "repeats' (default: once)")
    folding = parser.add_argument_group("measured on another machine: folded into the report at --output")
    folding.add_argument("--fold-round2", default=None,
                         help="the second contention round's JSON (--contention --json's, from 2 pinned cores)")
    folding.add_argument("--fold-round3", default=None,
                         help="the third contention round's JSON (--contention --repeats --json's)")
    folding.add_argument("--fold-round4", default=None,
                         help="the fourth contention round's JSON (quiet cells, --repeats 40 1 --loads 0), judged "
                              "with the third round's loaded cells, which the report must hold")
    folding.add_argument("--fold-round5", default=None,
                         help="the fifth contention round's JSON (--repeats 5 3, the thread count following the "
                              "load), judged with the fourth round's quiet test and the third's spin, which the "
                              "report must hold")
    folding.add_argument("--fold-round6", default=None,
                         help="the sixth contention round's JSON (--repeats 5 3, a training that times its thread "
                              "count), judged as the fifth against the quiet epoch its policies share")
    folding.add_argument("--fold-gpu-row", default=None, help="benchmarks.gpu_row's JSON")
    folding.add_argument("--apply-verdict", action="store_true",
                         help="with --fold-round6, --fold-round5, ... or --fold-round2: the newest round's "
                              "winner becomes "
                              "iclfs._threads.DEFAULT_POLICY (its line in src/iclfs/_threads.py); no verdict, no "
                              "change")
    args = parser.parse_args(argv)
    for name, default in (("datasets", DEFAULT_DATASETS), ("sweep_d", SWEEP_D), ("sweep_n", SWEEP_N),
                          ("selection_sizes", SELECTION_SIZES)):
        if getattr(args, name) is None:
            setattr(args, name, [] if args.add else list(default))
    report = Path(args.output).with_suffix(".json")
    if args.add and not report.is_file():
        parser.error(f"--add adds rows to {report}, which does not exist; run without --add first")
    return parser, args


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        source, schedule, epochs, device, count, precision = argv[1:7]
        print(json.dumps(worker(source, schedule, int(epochs), device, count == "1", precision)))
        return
    if argv and argv[0] == "--profile-epoch":  # where a fast epoch's time goes, in CPU time (profile_epoch)
        print(json.dumps(profile_epoch(argv[1]), indent=1))
        return
    if argv and argv[0] in ("--contention-cell", "--contention-estimate"):
        measure = _contention.cell if argv[0] == "--contention-cell" else _contention.estimate
        print(json.dumps(measure(argv[1], int(argv[2]), *map(float, argv[3:4]))))
        return
    if argv and argv[0] == "--contention-within":  # exit 0: within 5 % quiet; 1: over it; 2: not yet known
        within = _contention.within_quiet(json.loads(Path(argv[1]).read_text()), argv[2])
        print(f"{argv[2]}'s quiet epoch within 5 % of spin's on every table: "
              f"{'not yet known' if within is None else 'yes' if within else 'no'}")
        sys.exit(0 if within else 1 if within is False else 2)
    if argv and argv[0] == "--method-worker":
        print(json.dumps(method_worker(*argv[1:5])))
        return
    if argv and argv[0] == "--selection-worker":
        print(json.dumps(selection_worker(argv[1], argv[2], argv[3] if len(argv) > 3 else "")))
        return
    parser, args = parse_arguments(argv)
    notes = Path(args.notes).read_text() if args.notes and Path(args.notes).is_file() else ""
    output = Path(args.output)
    if any(getattr(args, option) for option in FOLDED):
        report_path = output.with_suffix(".json")
        if not report_path.is_file():
            parser.error(f"--fold-round2 to --fold-round6 and --fold-gpu-row add to {report_path}, "
                         "which does not exist")
        report = json.loads(report_path.read_text()) | read_folded(args)
        if report.get("contention_round4") and not report.get("contention_round3"):
            parser.error(f"--fold-round4 is judged with round three's loaded cells, which {report_path} lacks: "
                         "fold round three first (--fold-round3)")
        for option, (later, _) in FOLDED.items():
            if later in _contention.LOAD_ROUNDS and report.get(later) and not report.get("contention_round4"):
                parser.error(f"--{option.replace('_', '-')} is judged with round four's quiet test, which "
                             f"{report_path} lacks: fold round four first (--fold-round4)")
        if args.apply_verdict:
            # the newest round folded in decides
            newest = next((option for option in ROUNDS if getattr(args, option)), None)
            key, name = (FOLDED[newest][0], ROUNDS[newest]) if newest else (None, None)
            if key is None:
                parser.error("--apply-verdict applies a round's verdict: give one of "
                             + ", ".join("--" + option.replace("_", "-") for option in ROUNDS))
            verdict = (_contention.load_round_verdict(report[key], report["contention_round4"],
                                                      report["contention_round3"],
                                                      share_quiet=_contention.LOAD_ROUNDS[key].share_quiet)
                       if key in _contention.LOAD_ROUNDS else
                       _contention.quiet_round_verdict(report[key], report["contention_round3"])
                       if key == "contention_round4" else _contention.section_verdict(report[key]))
            if verdict["winner"] is None:
                print(f"{name} has no verdict (still needed: {verdict['missing'] or 'none: no policy qualifies'}); "
                      f"DEFAULT_POLICY stays {_threads.DEFAULT_POLICY!r}")
            else:
                changed = _contention.apply_verdict(verdict["winner"])
                print(f"{name}'s winner: {verdict['winner']!r}: DEFAULT_POLICY "
                      f"{'set to it in src/iclfs/_threads.py' if changed else 'was it already'}")
        report_path.write_text(json.dumps(report, indent=2))
        output.write_text(render(report, notes))
        print(f"wrote {output} and {report_path}")
        return
    if args.contention:
        args.epochs = args.contention_epochs
        report_path = output.with_suffix(".json")
        # no speed report there (or the JSON beside --output is the cells' own, --json): the section alone
        if not report_path.is_file() or report_path.resolve() == Path(args.raw).resolve():
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text("\n".join(["# Threads on a shared machine", "",
                                          *_contention.render(_contention.run(args))[3:]]) + "\n")
            print(f"wrote {output}, the contention section alone (no speed report at {report_path} to add it to)")
            return
        report = json.loads(output.with_suffix(".json").read_text())
        report["contention"] = _contention.run(args)
        output.with_suffix(".json").write_text(json.dumps(report, indent=2))
        output.write_text(render(report, notes))
        print(f"wrote {output} and {output.with_suffix('.json')}")
        return
    try:
        device = resolve_device(args.device)
        for schedule in ("paper", "fast"):
            resolve_precision(RuntimeConfig(device=args.device, precision=args.precision).precision, schedule, device)
    except ValueError as err:
        parser.error(str(err))
    report = {
        "environment": {
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
            "cpu_threads": torch.get_num_threads(),
            "device": str(device) if device.type == "cpu" else torch.cuda.get_device_name(device),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "matmul_gflops": matmul_gflops(device),
            "command": "python -m benchmarks.speed " + " ".join(argv),
        },
        "datasets": [],
    }
    for name in args.datasets:
        path = str(Path(args.datasets_dir or DATASETS_DIR) / f"{name}.mat")
        row = {"name": name}
        for schedule in ("paper", "fast"):
            row[schedule] = run_worker(path, schedule, args.epochs, args.device, schedule == "fast", args.precision)
            print(json.dumps(row[schedule]), flush=True)
        if "error" not in row["fast"]:
            row["attention_seconds"] = attention_kernel_seconds(row["fast"]["d"], row["fast"]["n"], device)
        report["datasets"].append(row)
    for key, values, shape in (("sweep_d", args.sweep_d, lambda v: f"{v}x200"),
                               ("sweep_n", args.sweep_n, lambda v: f"2000x{v}")):
        report[key] = []
        for value in values:
            result = run_worker(f"synthetic:{shape(value)}", "fast", args.sweep_epochs, args.device, False,
                                args.precision)
            print(json.dumps(result), flush=True)
            report[key].append(result)
    report["cost"] = []
    for name in args.cost_datasets:
        path = str(Path(args.datasets_dir or DATASETS_DIR) / f"{name}.mat")
        pair = {"name": name}
        pair["consensus_settings"] = args.consensus
        for key, overrides in (("one_run", "members.per_run=1"), ("consensus", args.consensus)):
            pair[key] = run_selection_worker(path, args.device, overrides)
            print(json.dumps(pair[key]), flush=True)
        report["cost"].append(pair)
    report["selection"] = []
    for shape in args.selection_sizes:
        result = run_selection_worker(shape, args.device, args.selection_settings)
        print(json.dumps(result), flush=True)
        report["selection"].append(result)
    report["methods"] = []
    for key in args.methods:
        for shape in args.method_sizes:
            for ks in args.method_k:
                result = run_method_worker(key, shape, ks, args.device)
                print(json.dumps(result), flush=True)
                report["methods"].append(result)
    if args.add:
        report = add_rows(json.loads(output.with_suffix(".json").read_text()), report)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.with_suffix(".json").write_text(json.dumps(report, indent=2))
    output.write_text(render(report, notes))
    print(f"wrote {output} and {output.with_suffix('.json')}")


if __name__ == "__main__":
    main()
