"""A/B benchmark: ``fast`` epochs with two InfoNCE block sizes, alternated in one process.

    python -m iclfs.benchmarks.loss_blocks --datasets arcene Prostate_GE BASEHOCK --rounds 2

For each dataset it builds one network and trains it with ``fast`` steps,
switching every ``--epochs-per-turn`` epochs between the device's default
block (``training.loss_chunk_size: null``, about 2 MiB of logits on CPU) and
the 256 MiB blocks that are the CUDA default (and were the CPU default before
2026-11-23), after one untimed warm-up epoch. Alternating in one process
makes both settings share the machine's drift, which on a shared CPU is
larger than the difference measured; the speed benchmark
(:mod:`iclfs.benchmarks.speed`) runs each schedule in its own process
instead, so it cannot compare two settings this closely. It prints one
Markdown row per dataset: the median epoch of each setting and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from iclfs.core.attention import auto_chunk_size
from iclfs.core.losses import DEFAULT_LOSS_BLOCK_BYTES
from iclfs.core.training import TrainingConfig, compute_settings, resolve_device

from .speed import _inverted_map, epoch_runner


def alternate(source: str, rounds: int = 2, epochs_per_turn: int = 2, device_name: str = "cpu",
              seed: int = 0) -> dict:
    """Time ``fast`` epochs on ``source`` under the default block and the 256 MiB block, alternated.

    Returns the block sizes (rows), each setting's epoch times in seconds and their medians.
    """
    if rounds < 1 or epochs_per_turn < 1:
        raise ValueError(f"rounds and epochs_per_turn must be >= 1, got {rounds} and {epochs_per_turn}")
    device = resolve_device(device_name)
    A = torch.as_tensor(_inverted_map(source), device=device)
    d, n = A.shape
    config = TrainingConfig(device=device_name, progress=False)
    _, _, run_epoch = epoch_runner(A, config, seed)
    blocks = {"default": config.loss_chunk_size_for(d, device),
              "256 MiB": auto_chunk_size(d, DEFAULT_LOSS_BLOCK_BYTES)}
    times: dict[str, list[float]] = {name: [] for name in blocks}

    def epoch(chunk: int) -> float:
        start = time.perf_counter()
        run_epoch(chunk)
        return time.perf_counter() - start

    with compute_settings(device, config.precision_for(device), config.num_threads) as threads:
        epoch(blocks["default"])  # warm-up: allocator and thread pool
        for _ in range(rounds):
            for name, chunk in blocks.items():
                times[name] += [epoch(chunk) for _ in range(epochs_per_turn)]
    return {"source": source, "d": d, "n": n, "device": str(device), "threads": threads,
            "blocks": blocks, "seconds": times,
            "median_seconds": {name: statistics.median(values) for name, values in times.items()}}


def render_row(name: str, result: dict) -> str:
    median, blocks = result["median_seconds"], result["blocks"]
    return (f"| {name} | {result['n']} x {result['d']} | {blocks['default']} | {median['default']:.2f} | "
            f"{blocks['256 MiB']} | {median['256 MiB']:.2f} | {median['default'] / median['256 MiB']:.2f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["arcene", "Prostate_GE", "BASEHOCK"])
    parser.add_argument("--datasets-dir", default="../shared/datasets")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--epochs-per-turn", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    print("| dataset | n x d | default block rows | default s/epoch | 256 MiB block rows | 256 MiB s/epoch "
          "| default / 256 MiB |")
    print("|---|---|---|---|---|---|---|")
    for name in args.datasets:
        path = Path(args.datasets_dir) / f"{name}.mat"
        if not path.is_file():
            parser.error(f"dataset {name!r}: no file {path}")
        result = alternate(str(path), args.rounds, args.epochs_per_turn, args.device)
        print(render_row(name, result), flush=True)


if __name__ == "__main__":
    main()
