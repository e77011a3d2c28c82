"""The benchmark grid without Kedro: datasets x methods x seeds, one result file per cell.

    python -m iclfs.apps.benchmark run --datasets COIL20 Isolet --seeds 42 43 44
    python -m iclfs.apps.benchmark run --datasets COIL20 --seeds 42 --set consensus.members=1
    python -m iclfs.apps.benchmark run --datasets COIL20 --seeds 42 --baselines-only
    python -m iclfs.apps.benchmark report
    python -m iclfs.apps.benchmark decide --candidates R=consensus.members=1 L1=consensus.members=3,...

``run`` computes every cell that is not there yet (``--force`` recomputes):
ICLFS with the default settings, or those changed with ``--set`` (Kedro's
``--params`` syntax), and the baselines, each cell written whole or not at
all to ``<cells>/<dataset>/<method slug>/seed_<seed>.csv``
(:mod:`iclfs.evaluation.benchmark`). Cells run one after another, or on Dask
with ``--workers N`` (a ``LocalCluster`` on this machine) or
``--scheduler tcp://host:8786`` (a running cluster). A cell killed half-way
leaves no file, so running the same command again computes exactly the
missing cells. It needs only the numeric stack and the source tree
(``PYTHONPATH=src``), so it also runs on a GPU machine without Kedro
(``--set runtime.device=cuda``).

``report`` gathers the cells of ``--cells`` (the working cells first, the
published ones under them), publishes them under ``docs/reports/benchmark/cells``
and writes ``docs/reports/benchmark.md`` and its figures, as ``kedro run
--pipeline benchmark_report`` does.

``decide`` scores candidate settings by the rule of docs/consensus.md
(:mod:`iclfs.evaluation.rule`) from their cells on the development datasets
(the validation sets unless ``--datasets`` says otherwise) and names the
winner; the first candidate is the reference the others are measured against.
With some of another candidate's cells missing, it names a winner only when
no outcome of those cells could change it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from iclfs.evaluation.benchmark import (
    BASELINE_NAMES,
    baseline_selections,
    cell_key,
    evaluate_cell,
    gather,
    method_name,
)
from iclfs.evaluation.paper import PAPER_DATASETS, VALIDATION_DATASETS
from iclfs.io.tables import read_feature_table
from iclfs.method import chain
from iclfs.method.config import Settings, canonical, parse_overrides
from iclfs.method.consensus import total_epochs, total_seconds
from iclfs.method.laplacian import laplacian_scores

DATASETS = PAPER_DATASETS + VALIDATION_DATASETS
DATA_DIRS = ("../shared/datasets", "../shared/validation")
CELLS = "data/08_reporting/benchmark/cells"
PUBLISHED = "docs/reports/benchmark"
BASELINE_OPTIONS = {"mcfs": {"n_neighbors": 5}, "ndfs": {"n_neighbors": 5, "alpha": 1.0, "beta": 1.0,
                                                          "gamma": 1.0e8, "max_iter": 50}}


def find_dataset(name: str, data_dirs: Sequence[str | Path]) -> Path:
    """``<dir>/<name>.mat`` in the first of ``data_dirs`` that has it."""
    for directory in data_dirs:
        path = Path(directory) / f"{name}.mat"
        if path.is_file():
            return path
    raise FileNotFoundError(f"{name}.mat is in none of {', '.join(map(str, data_dirs))}")


_UMASK = os.umask(0)
os.umask(_UMASK)


def write_cell(cells: Path, key: str, table: pd.DataFrame) -> Path:
    """Write one cell whole or not at all: a temporary file in the same folder, renamed when complete."""
    path = cells / f"{key}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as out:
            table.to_csv(out, index=False)
        os.chmod(temporary, 0o666 & ~_UMASK)  # mkstemp makes it private; a cell is an ordinary file
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


@dataclass(frozen=True)
class Job:
    """One dataset at one seed: its ICLFS cell and/or its baseline cells."""

    dataset: str
    path: str
    seed: int
    overrides: str  # --set, canonical
    iclfs: bool
    baselines: tuple[str, ...]


def run_job(job: Job, cells: str) -> list[str]:
    """Compute and write the cells of ``job`` that are missing. Returns the keys written."""
    settings = Settings().with_overrides(job.overrides).with_overrides(f"seed={job.seed},runtime.progress=false")
    table = read_feature_table(job.path)
    written = []
    if job.iclfs:
        result = chain.run(table, settings)
        prepared, laplacian = result.prepared, result.laplacian_scores
    else:
        prepared = chain.prepare_data(table, settings)
        laplacian = laplacian_scores(prepared.standardized, n_neighbors=settings.laplacian.n_neighbors)
    if prepared.labels is None:
        raise ValueError(f"{job.path}: no labels under key 'Y'; the k-means protocol needs class labels")
    X, codes = prepared.standardized, prepared.labels
    n_runs = settings.evaluation.n_runs
    if job.iclfs:
        method = method_name(settings)
        epochs = total_epochs(result.members)
        cell = evaluate_cell(X, codes, result.selections, dataset=job.dataset, method=method, seed=job.seed,
                             n_runs=n_runs, seconds=total_seconds(result.members),
                             device=result.members[0].results[0].device,
                             schedule=settings.training.schedule, epochs=epochs)
        written.append(str(write_cell(Path(cells), cell_key(job.dataset, method, job.seed), cell)))
    if job.baselines:
        grid = chain.k_values_for(settings.selection, X.shape[1])
        for name, (selections, spent) in baseline_selections(
                X, codes, laplacian, job.baselines, BASELINE_OPTIONS, grid, job.seed).items():
            cell = evaluate_cell(X, codes, selections, dataset=job.dataset, method=name, seed=job.seed,
                                 n_runs=n_runs, seconds=spent)
            written.append(str(write_cell(Path(cells), cell_key(job.dataset, name, job.seed), cell)))
    return written


def plan(datasets: Sequence[str], seeds: Sequence[int], overrides: str, data_dirs: Sequence[str], cells: Path,
         iclfs: bool, baselines: Sequence[str], force: bool) -> list[Job]:
    """The jobs whose cells are missing (all of them with ``force``)."""
    settings = Settings().with_overrides(overrides)
    method = method_name(settings)
    jobs = []
    for dataset in datasets:
        path = str(find_dataset(dataset, data_dirs))
        for seed in seeds:
            todo_iclfs = iclfs and (force or not (cells / f"{cell_key(dataset, method, seed)}.csv").exists())
            todo_baselines = tuple(key for key in baselines if force or not (
                cells / f"{cell_key(dataset, BASELINE_NAMES[key], seed)}.csv").exists())
            if todo_iclfs or todo_baselines:
                jobs.append(Job(dataset, path, int(seed), overrides, todo_iclfs, todo_baselines))
    return jobs


def execute(jobs: Sequence[Job], cells: Path, workers: int | None = None, scheduler: str | None = None) -> None:
    """Run the jobs in turn, or as Dask tasks on a ``LocalCluster`` of ``workers`` or at ``scheduler``."""
    if not workers and not scheduler:
        for job in jobs:
            for path in run_job(job, str(cells)):
                print(f"wrote {path}", flush=True)
        return
    from dask.distributed import Client, LocalCluster, as_completed

    cluster = None if scheduler else LocalCluster(n_workers=workers, threads_per_worker=1, processes=True)
    with Client(scheduler or cluster) as client:
        futures = [client.submit(run_job, job, str(cells), pure=False, retries=1,
                                 key=f"cell-{job.dataset}-{job.seed}-{i}") for i, job in enumerate(jobs)]
        for future in as_completed(futures):
            for path in future.result():
                print(f"wrote {path}", flush=True)
    if cluster is not None:
        cluster.close()


def read_cells(*folders: str | Path) -> dict[str, pd.DataFrame]:
    """Every cell file under the folders, ``{cell key: table}``; an earlier folder's cell wins."""
    found: dict[str, pd.DataFrame] = {}
    for folder in folders:
        folder = Path(folder)
        for path in sorted(folder.glob("*/*/seed_*.csv")):
            found.setdefault(str(path.relative_to(folder).with_suffix("")), pd.read_csv(path, keep_default_na=False,
                                                                                    na_values=[""]))
    return found


def publish(cells: dict[str, pd.DataFrame], published: Path, command: str, data_dirs: Sequence[str]) -> Path:
    """Write the cells under ``published/cells``, the report ``published.md`` and its figures."""
    import matplotlib.pyplot as plt  # only the report draws: a GPU box running cells needs no matplotlib

    from iclfs.evaluation.report import build_report, figure, spec_for

    for key, table in cells.items():
        write_cell(published / "cells", key, table)
    results = gather(cells)
    spec = spec_for(Settings(), (42, 43, 44), DATASETS)
    missing = {}
    for dataset in spec.datasets:
        try:
            find_dataset(dataset, data_dirs)
        except FileNotFoundError as err:
            missing[dataset] = str(err)
    report = published.parent / f"{published.name}.md"
    report.write_text(build_report(results, spec, command, missing, figures=f"{published.name}/figures"))
    figures = published / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    for dataset in sorted(set(results["dataset"])):
        fig = figure(results, dataset, spec)
        fig.savefig(figures / f"{dataset}.png", dpi=90)
        plt.close(fig)
    return report


def named_methods(candidates: Sequence[str]) -> dict[str, str]:
    """``{NAME: benchmark method name}`` from ``NAME=section.key=value,...`` texts, in their order."""
    named: dict[str, str] = {}
    for text in candidates:
        name, sep, overrides = text.partition("=")
        if not sep or not name:
            raise ValueError(f"candidate {text!r} is not NAME=section.key=value,...")
        if name in named:
            raise ValueError(f"candidate name {name!r} is given twice")
        named[name] = method_name(Settings().with_overrides(overrides))
    return named


def decide_text(candidates: Sequence[str], datasets: Sequence[str], seeds: Sequence[int],
                cells: dict[str, pd.DataFrame]) -> str:
    """The rule's points, totals and winner for ``NAME=SETTINGS`` candidates, as Markdown."""
    from iclfs.evaluation.rule import decide, markdown, points

    named = named_methods(candidates)
    table = points(gather(cells), named, next(iter(named)), datasets, seeds)
    winner, totals = decide(table)
    return markdown(table, totals, winner, named)


def compare_text(candidates: Sequence[str], datasets: Sequence[str], seeds: Sequence[int],
                 cells: dict[str, pd.DataFrame]) -> str:
    """``NAME=SETTINGS`` candidates side by side, measured and not judged, as Markdown."""
    from iclfs.evaluation.report import comparison

    return "\n".join(comparison(gather(cells), named_methods(candidates), datasets, seeds)) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m iclfs.apps.benchmark", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="compute the missing cells")
    run.add_argument("--datasets", nargs="+", default=list(DATASETS))
    run.add_argument("--seeds", type=int, nargs="+", default=[42, 43, 44])
    run.add_argument("--set", dest="overrides", default="", help="section.key=value,... (as kedro run --params)")
    run.add_argument("--baselines", nargs="*", default=list(BASELINE_NAMES), choices=list(BASELINE_NAMES))
    run.add_argument("--baselines-only", action="store_true", help="no ICLFS cell")
    run.add_argument("--no-baselines", action="store_true")
    run.add_argument("--force", action="store_true", help="recompute cells that exist")
    run.add_argument("--workers", type=int, help="run the cells on a Dask LocalCluster of this many workers")
    run.add_argument("--scheduler", help="run the cells on the Dask scheduler at this address")
    run.add_argument("--data-dirs", nargs="+", default=list(DATA_DIRS))
    run.add_argument("--cells", default=CELLS)
    report = commands.add_parser("report", help="gather the cells and write the report")
    report.add_argument("--cells", nargs="+", default=[CELLS, f"{PUBLISHED}/cells"])
    report.add_argument("--published", default=PUBLISHED)
    report.add_argument("--data-dirs", nargs="+", default=list(DATA_DIRS))
    for command, summary, first, datasets in (
            ("decide", "score candidates by the rule of docs/consensus.md", "the first is the reference (one run)",
             VALIDATION_DATASETS),
            ("compare", "show candidates side by side, without points or a winner",
             "time is shown as a ratio to the first's", DATASETS)):
        candidates = commands.add_parser(command, help=summary)
        candidates.add_argument("--candidates", nargs="+", required=True, metavar="NAME=SETTINGS",
                                help=f"NAME=section.key=value,...; {first}")
        candidates.add_argument("--datasets", nargs="+", default=list(datasets))
        candidates.add_argument("--seeds", type=int, nargs="+", default=[42, 43, 44])
        candidates.add_argument("--cells", nargs="+", default=[CELLS, f"{PUBLISHED}/cells"])
        candidates.add_argument("--out", help="also write the Markdown to this file")
    args = parser.parse_args(argv)

    if args.command in ("decide", "compare"):
        make, title, how = {
            "decide": (decide_text, "The rule's points",
                       "by the rule of docs/consensus.md (fixed before the candidates ran)"),
            "compare": (compare_text, "Candidates side by side",
                        "(each over the seeds it has cells at; measured, not judged by a rule)"),
        }[args.command]
        try:
            text = make(args.candidates, args.datasets, args.seeds, read_cells(*args.cells))
        except ValueError as err:
            parser.error(str(err))
        print(text, end="")
        if args.out:
            command = "python -m iclfs.apps.benchmark " + " ".join(argv)
            Path(args.out).write_text(f"# {title}\n\nGenerated by `{command}` from the benchmark's cells "
                                      f"{how}. Do not edit by hand.\n\n" + text)
        return
    if args.command == "report":
        path = publish(read_cells(*args.cells), Path(args.published), "python -m iclfs.apps.benchmark report",
                       args.data_dirs)
        print(f"wrote {path}")
        return
    try:
        overrides = canonical(parse_overrides(args.overrides))
        chain.check_runtime(Settings().with_overrides(overrides))  # a bad --set stops here, before any work
        jobs = plan(args.datasets, args.seeds, overrides, args.data_dirs, Path(args.cells),
                    iclfs=not args.baselines_only, baselines=[] if args.no_baselines else args.baselines,
                    force=args.force)
    except (ValueError, FileNotFoundError) as err:
        parser.error(str(err))
    print(f"{len(jobs)} job(s) to run: {', '.join(f'{j.dataset}@{j.seed}' for j in jobs) or 'none'}", flush=True)
    execute(jobs, Path(args.cells), args.workers, args.scheduler)


if __name__ == "__main__":
    main()

