"""Replay: does ``select``, repeated in fresh processes, train the same member bit for bit?

    python -m benchmarks.replay --dataset lung_small --runs 60 --data-dirs ../shared/validation

Each run is ``kedro run --pipelines select`` in a fresh process, in one
throw-away copy of the project (``conf/`` without ``local/``, and
``pyproject.toml``), on the dataset's ``.mat`` file, with the default
settings and seed, and without carrying (``members.carry=false``), so that
every run trains the same member from the same seed on the same table, each
under its own data source. The report compares every run with the first:
the member's scores and every epoch's loss, bit for bit; for a run that
differs, the first epoch whose loss differs and how far its list at k = 50
moved (Jaccard).

``--set key=value`` adds ``--params`` to every run (the tests train two
epochs). The report goes to ``results/replay.md``, one row per run to
``results/replay.csv``.

    python -m benchmarks.replay --kernel --runs 60

measures why a run can differ, without iclfs: in each fresh process, torch's
``logsumexp`` over a fixed 325 x 325 tensor of logits (lung_small's shape),
called twice, on one thread and on two; where the calls differ, the rows
and the most ulps they differ by (``results/replay_kernel.md``).
``iclfs.method._training.warm_up`` is the answer to it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from iclfs.io._tables import find_dataset
from iclfs.method._stability import jaccard

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
RESULTS = HERE / "results"
K = 50


@dataclass(frozen=True)
class Run:
    """What one run trained and handed on."""

    scores: np.ndarray  # (d,) the member's z-norm scores
    losses: np.ndarray  # (epochs,) every epoch's loss
    threads: int  # torch's threads while training
    selected: tuple[str, ...]  # the list's features at K, best first
    seconds: float  # the whole kedro run, process start to exit


def project_copy(root: Path) -> Path:
    """A copy of the project to run in: ``conf/`` without ``local/``, ``pyproject.toml``, an empty ``src/``."""
    shutil.copytree(PROJECT / "conf", root / "conf", ignore=shutil.ignore_patterns("local"))
    (root / "conf" / "local").mkdir()
    shutil.copy(PROJECT / "pyproject.toml", root / "pyproject.toml")
    (root / "src").mkdir()  # iclfs is imported from the installed package
    return root


def run_once(root: Path, table: Path, index: int, settings: Sequence[str] = ()) -> Run:
    """One ``kedro run --pipelines select`` in a fresh process under the data source ``run_<index>``."""
    source = f"run_{index}"
    params = ",".join([f"input={table}", f"data_source={source}", "members.carry=false", *settings])
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kedro", "run", "--pipelines", "select", "--params", params],
                          cwd=root, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"run {index} failed ({done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    return read_run(root / "data", source, seconds)


def _only(folder: Path, artifact: str) -> Path:
    found = sorted(folder.glob(f"{artifact}/*/{artifact}"))
    if len(found) != 1:
        raise RuntimeError(f"expected one version of {folder / artifact}, found {len(found)}")
    return found[0]


def read_run(data: Path, source: str, seconds: float) -> Run:
    """The member, its losses and its list, as ``select`` wrote them under ``data/*/<source>/iclfs``."""
    output = data / "07_model_output" / source / "iclfs"  # the method's folder (select runs ICLFS here)
    with np.load(_only(output, "member_scores.npz")) as stored:
        scores = stored["z_norm"][0]
    history = pd.read_csv(_only(output, "training_log.csv"))
    listed = pd.read_csv(_only(output, "selections.csv"), dtype={"feature_name": str}, keep_default_na=False)
    at_k = listed[listed["k"] == K].sort_values("rank")["feature_name"]
    return Run(scores, history["loss"].to_numpy(), int(history["threads"].iloc[0]), tuple(at_k), seconds)


def compare(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per run against the first: ``identical`` (scores and losses bit for bit), ``first_epoch``
    whose loss differs (None when none), ``first_loss`` (epoch 1), ``jaccard`` of the lists at K."""
    first = runs[0]
    rows = []
    for i, run in enumerate(runs):
        differ = np.flatnonzero(run.losses[:len(first.losses)] != first.losses[:len(run.losses)])
        same_losses = run.losses.shape == first.losses.shape and not len(differ)
        rows.append({"run": i + 1, "identical": bool(same_losses and np.array_equal(run.scores, first.scores)),
                     "first_epoch": int(differ[0]) + 1 if len(differ) else None,
                     "first_loss": float(run.losses[0]), "jaccard": jaccard(run.selected, first.selected),
                     "threads": run.threads, "seconds": run.seconds})
    return pd.DataFrame(rows)


def report_markdown(table: pd.DataFrame, dataset: str, command: str, seconds: float,
                    settings: Sequence[str] = ()) -> str:
    n, same = len(table), int(table["identical"].sum())
    extra = f" (and {', '.join(f'`{s}`' for s in settings)})" if settings else ""
    lines = ["# Replay: one `select` run, repeated in fresh processes", "",
             f"Generated by `{command}` in {seconds:.0f} s. Do not edit by hand.", "",
             f"Every run is `kedro run --pipelines select` in a fresh process on {dataset}, with the default "
             f"settings{extra} and seed, without carrying (`members.carry=false`), so each trains the same member "
             f"from the same seed on the same table ({int(table['threads'].iloc[0])} torch threads). Each is compared "
             "with the first: the member's scores and every epoch's loss, bit for bit, and the list at k = "
             f"{K} (Jaccard).", "",
             f"**{same} of {n} runs trained the member bit for bit like the first.**", ""]
    losses = table.groupby("first_loss").size().sort_values(ascending=False)
    lines += ["The first epoch's loss, and how many runs had it:", "", "| loss at epoch 1 | runs |", "|---|---|"]
    lines += [f"| {loss!r} | {count} |" for loss, count in losses.items()]
    differing = table[~table["identical"]]
    if len(differing):
        lines += ["", "The runs that differ:", "",
                  "| run | first epoch whose loss differs | Jaccard@50 with the first run's list |", "|---|---|---|"]
        lines += [f"| {r.run} | {'none' if pd.isna(r.first_epoch) else int(r.first_epoch)} | {r.jaccard:.2f} |"
                  for r in differing.itertuples()]
    lines += ["", f"A run took {table['seconds'].median():.1f} s (median, the whole process)."]
    return "\n".join(lines) + "\n"


KERNEL_SHAPE = (325, 16)  # lung_small's features x the embedding's width: logits of 325 x 325


def probe_kernel(threads: int) -> str:
    """In this process: ``logsumexp`` of fixed logits called twice on ``threads`` threads; how the calls differ."""
    import torch  # here, so that the probe's process sets its threads before torch runs anything

    torch.set_num_threads(threads)
    generator = torch.Generator().manual_seed(0)
    za, zp = (torch.nn.functional.normalize(torch.randn(*KERNEL_SHAPE, generator=generator), dim=1)
              for _ in range(2))
    logits = (za @ zp.T).mul_(20.0)  # 1 / temperature, as the InfoNCE loss forms them
    first, second = torch.logsumexp(logits, dim=1), torch.logsumexp(logits, dim=1)
    rows = (first != second).nonzero().flatten()
    if not len(rows):
        return "same"
    ulps = int((first.view(torch.int32) - second.view(torch.int32)).abs().max())
    return f"rows {int(rows.min())}-{int(rows.max())}, up to {ulps} ulps"


def kernel_markdown(outcomes: dict[int, list[str]], command: str, seconds: float) -> str:
    lines = ["# Replay: torch's first call of a kernel, in fresh processes", "",
             f"Generated by `{command}` in {seconds:.0f} s. Do not edit by hand.", "",
             f"Each fresh process calls `torch.logsumexp` twice over the same {KERNEL_SHAPE[0]} x "
             f"{KERNEL_SHAPE[0]} logits (lung_small's shape in the InfoNCE loss) and compares the calls. Without "
             "iclfs's warm-up (`iclfs.method._training.warm_up`), this is what a training's first epoch meets.", "",
             "| torch threads | processes | the two calls differ | how |", "|---|---|---|---|"]
    for threads, seen in outcomes.items():
        differ = [o for o in seen if o != "same"]
        how = "; ".join(f"{o} ({differ.count(o)}x)" for o in dict.fromkeys(differ)) or "-"
        lines.append(f"| {threads} | {len(seen)} | {len(differ)} | {how} |")
    return "\n".join(lines) + "\n"


def run_kernel_probes(runs: int, out: Path, command: str) -> None:
    started = time.time()
    outcomes: dict[int, list[str]] = {}
    for threads in (1, 2):
        for _ in range(runs):
            done = subprocess.run([sys.executable, "-m", "benchmarks.replay", "--probe", str(threads)],
                                  cwd=PROJECT, capture_output=True, text=True, check=True)
            outcomes.setdefault(threads, []).append(done.stdout.strip().splitlines()[-1])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(kernel_markdown(outcomes, command, time.time() - started))
    print(f"{out}: " + ", ".join(f"{t} thread(s) {sum(o != 'same' for o in s)} of {len(s)} differ"
                                 for t, s in outcomes.items()))


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="lung_small")
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--data-dirs", nargs="+", default=["../shared/validation"])
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="more --params for every run")
    parser.add_argument("--out", default=None, help="results/replay.md, or results/replay_kernel.md with --kernel")
    parser.add_argument("--kernel", action="store_true", help="probe torch's first kernel call instead")
    parser.add_argument("--probe", type=int, default=None, help=argparse.SUPPRESS)  # one probe, in this process
    args = parser.parse_args(argv)
    args.out = args.out or str(RESULTS / ("replay_kernel.md" if args.kernel else "replay.md"))
    if args.runs < 2:
        parser.error("--runs: at least 2 runs to compare")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_arguments(argv)
    command = "python -m benchmarks.replay " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.probe is not None:
        print(probe_kernel(args.probe))
        return
    if args.kernel:
        run_kernel_probes(args.runs, Path(args.out), command.strip())
        return
    started = time.time()
    table_path = find_dataset(args.dataset, args.data_dirs).resolve()
    runs = []
    with tempfile.TemporaryDirectory(prefix="iclfs-replay-") as tmp:
        root = project_copy(Path(tmp))
        for i in range(args.runs):
            runs.append(run_once(root, table_path, i + 1, args.set))
            print(f"run {i + 1}: loss at epoch 1 {float(runs[-1].losses[0])!r}", flush=True)
    table = compare(runs)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out.with_suffix(".csv"), index=False)
    out.write_text(report_markdown(table, args.dataset, command.strip(), time.time() - started, args.set))
    print(f"{int(table['identical'].sum())} of {len(table)} runs identical; {out}")


if __name__ == "__main__":
    main()
