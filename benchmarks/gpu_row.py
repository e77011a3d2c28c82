"""One GPU's row of the performance report (issue 59, item 5): the whole default fit of ALLAML and of a
200 x 20,000 table, and the ``fast`` epoch against the GPU's matmul rate.

    PYTHONPATH=src python -m benchmarks.gpu_row --device cuda --datasets-dir <folder of ALLAML.mat> --out gpu_row.json
    python -m benchmarks.gpu_row --device cpu --quick --out /tmp/gpu_row.json   # a smoke test on a tiny table

Framework-free, for a lent machine with only torch, numpy, scipy,
scikit-learn and pandas (benchmarks/_device.py stands in for what the
method imports but never calls there). Everything runs in this one process,
in this order:

1. the matmul rate: a large square ``torch.mm`` (8192 on CUDA, best of 10
   after a warm-up), in fp32 (TF32 off) and with TF32 on, the precision the
   ``fast`` schedule trains in on CUDA (``runtime.precision: auto``); it also
   starts CUDA and cuBLAS, so the fits below do not pay for that;
2. for each table, the ``fast`` epoch as :func:`benchmarks.speed.worker`
   measures it (the median of ``--epochs`` after a warm-up, its FLOPs counted
   by ``torch.utils.flop_counter``), and its FLOP rate as a share of each
   matmul rate;
3. for each table, the whole default fit, :func:`iclfs.chain.run` with the
   default settings on ``--device`` (training, the Laplacian score, the
   ranking, LGRC at every k, the choice of k), timed from the table in
   memory to the lists.

The JSON (``--out``) holds every number, the device's name and the command.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from iclfs import _threads  # first: the OpenMP thread policy, before torch loads

import torch  # noqa: E402

from benchmarks._device import stand_in_for_missing  # noqa: E402

STAND_INS = stand_in_for_missing()  # before the method: tqdm, where missing

from benchmarks import speed  # noqa: E402
from iclfs.io._synthetic import make_synthetic  # noqa: E402
from iclfs.io._tables import read_feature_table  # noqa: E402
from iclfs.method._config import RuntimeConfig, Settings  # noqa: E402
from iclfs.method._members import total_epochs, total_seconds  # noqa: E402
from iclfs.method._preprocessing import FeatureTable  # noqa: E402
from iclfs.method._runtime import resolve_device  # noqa: E402

#: The tables of the row: a gene-expression dataset and the embedded generator at 200 samples x 20,000
#: features (``synthetic:DxN``: :func:`iclfs.io.make_synthetic` with D - 60 noise features).
TABLES = ("ALLAML", "synthetic:20000x200")
QUICK_TABLES = ("synthetic:300x40",)
INFORMATIVE = REDUNDANT = 30  # make_synthetic's defaults


def matmul_rates(device: torch.device, size: int) -> dict[str, float]:
    """GFLOP/s of a ``size``-square ``torch.mm``: fp32, and with TF32 allowed (CUDA only)."""
    rates = {"fp32_gflops": None, "tf32_gflops": None, "size": size}
    if device.type != "cuda":
        rates["fp32_gflops"] = speed.matmul_gflops(device, size)
        return rates
    before = torch.backends.cuda.matmul.allow_tf32
    try:
        for key, tf32 in (("fp32_gflops", False), ("tf32_gflops", True)):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            rates[key] = speed.matmul_gflops(device, size)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    return rates


def table_for(name: str, datasets_dir: Path) -> tuple[FeatureTable, str]:
    """The table ``name`` (a ``<name>.mat`` of ``datasets_dir``, or ``synthetic:DxN``) and the source the
    epoch worker reads (a path, or ``synthetic:DxN``: a random table of the same shape)."""
    if name.startswith("synthetic:"):
        d, n = (int(v) for v in name.split(":")[1].split("x"))
        if d <= INFORMATIVE + REDUNDANT:
            raise SystemExit(f"{name}: the generator needs more than {INFORMATIVE + REDUNDANT} features")
        return make_synthetic(n_samples=n, n_noise=d - INFORMATIVE - REDUNDANT), name
    path = datasets_dir / f"{name}.mat"
    if not path.is_file():
        raise SystemExit(f"no table {path} (--datasets-dir names the folder of {name}.mat)")
    return read_feature_table(str(path)), str(path)


def fit(table: FeatureTable, device: str) -> dict:
    """The whole default fit of ``table`` on ``device``, timed: what ``select`` runs, in memory."""
    from iclfs import chain

    settings = Settings()
    # the defaults, on the device asked, without the progress log; built in Python, not from --params text
    settings = dataclasses.replace(settings, runtime=settings.runtime.replace(device=device, progress=False))
    started = time.perf_counter()
    result = chain.run(table, settings)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    trainings = result.trained.trainings
    n, d = result.prepared.standardized.shape
    return {"seconds": seconds, "training_seconds": total_seconds(trainings), "members": len(trainings),
            "epochs": total_epochs(trainings), "d": d, "n": n, "k": result.choice.k,
            "device": trainings[0].results[0].device if trainings else device}


def epoch(source: str, device: str, epochs: int, rates: dict) -> dict:
    """The ``fast`` epoch (:func:`benchmarks.speed.worker`) and its FLOP rate against ``rates``."""
    measured = speed.worker(source, "fast", epochs, device, True)
    gflops = measured["flops_per_epoch"] / measured["median_seconds"] / 1e9
    return measured | {"gflops": gflops,
                       "share_of_fp32_matmul": gflops / rates["fp32_gflops"],
                       "share_of_tf32_matmul": None if rates["tf32_gflops"] is None else gflops / rates["tf32_gflops"]}


def main(argv: list[str] | None = None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--datasets-dir", default="../shared/datasets", help="the folder of ALLAML.mat")
    parser.add_argument("--tables", nargs="*", default=None,
                        help=f"default: {' '.join(TABLES)} ({' '.join(QUICK_TABLES)} with --quick)")
    parser.add_argument("--epochs", type=int, default=5, help="timed fast epochs a table, after a warm-up")
    parser.add_argument("--matmul-size", type=int, default=None, help="default: 8192 on CUDA, 2048 on CPU")
    parser.add_argument("--quick", action="store_true", help="a smoke test: a tiny table, a small matmul")
    parser.add_argument("--no-fit", action="store_true", help="time the epochs only")
    parser.add_argument("--out", required=True, help="the JSON written")
    args = parser.parse_args(argv)
    try:
        device = resolve_device(args.device)
    except ValueError as err:
        parser.error(str(err))
    names = args.tables if args.tables is not None else QUICK_TABLES if args.quick else TABLES
    tables = {name: table_for(name, Path(args.datasets_dir)) for name in names}  # every table found, first
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    size = args.matmul_size or (512 if args.quick else 8192 if device.type == "cuda" else 2048)
    report = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "command": "python -m benchmarks.gpu_row " + " ".join(argv),
              "device": torch.cuda.get_device_name(device) if device.type == "cuda" else
              f"CPU ({platform.machine()}, {torch.get_num_threads()} threads)",
              "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
              "thread_policy": _threads.APPLIED.policy, "stand_ins": STAND_INS,
              "matmul": matmul_rates(device, size), "rows": []}
    print(json.dumps({"device": report["device"], "matmul": report["matmul"]}), flush=True)
    for name, (table, source) in tables.items():
        row = {"table": name, "epoch": epoch(source, args.device, args.epochs, report["matmul"])}
        print(json.dumps({"table": name, "epoch_seconds": row["epoch"]["median_seconds"],
                          "share_of_fp32_matmul": row["epoch"]["share_of_fp32_matmul"]}), flush=True)
        if not args.no_fit:
            row["fit"] = fit(table, args.device)
            print(json.dumps({"table": name, "fit": row["fit"]}), flush=True)
        report["rows"].append(row)
        out.write_text(json.dumps(report, indent=1))  # after each table: a run cut short keeps what it measured
    out.write_text(json.dumps(report, indent=1))
    print(f"wrote {out}")
    return report


if __name__ == "__main__":
    main()
