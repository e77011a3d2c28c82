"""The benchmark grid without a Kedro session: datasets x methods x seeds, one result file per cell.

    python -m benchmarks.grid run --datasets COIL20 Isolet --seeds 42 43 44
    python -m benchmarks.grid run --datasets COIL20 --seeds 42 --set members.per_run=6
    python -m benchmarks.grid run --datasets COIL20 --seeds 42 --baselines-only
    python -m benchmarks.grid report

It reads ``conf/`` as ``kedro run --pipeline benchmark`` does: the datasets,
the folders their ``.mat`` files are in, the baselines and their options, the
seeds, and ICLFS's settings (``--conf-source``, ``--env``). ``run`` computes
every cell that is not there yet (``--force`` recomputes): ICLFS with those
settings, or those changed with ``--set`` (Kedro's ``--params`` syntax), and
the baselines, each cell written whole or not at all to
``<cells>/<dataset>/<method slug>/seed_<seed>.csv``
(:mod:`iclfs.evaluation._benchmark`). Cells run one after another, or on Dask
with ``--workers N`` (a ``LocalCluster`` on this machine) or ``--scheduler
tcp://host:8786`` (a running cluster). A cell killed half-way leaves no file,
so running the same command again computes exactly the missing cells.

``report`` gathers the working cells over the published ones, publishes them
under ``benchmarks/results/cells`` and writes ``benchmarks/results/benchmark.md``
and its figures: the published record of the project's numbers.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from iclfs import baselines
from iclfs.evaluation._benchmark import baseline_selections, cell_key, evaluate_cell, gather, method_name
from iclfs.io._tables import TableReadError, find_dataset, read_feature_table
from iclfs import chain
from iclfs.method._config import ParameterError, Settings, canonical, parse_overrides
from iclfs.method._members import total_epochs, total_seconds

CELLS = "data/08_reporting/benchmark/cells"
RESULTS = Path(__file__).resolve().parent / "results"

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
    parameters: dict  # conf's parameters with --set applied
    iclfs: bool
    baselines: tuple[str, ...]


def settings_of(parameters: Mapping, seed: int) -> Settings:
    return Settings.from_parameters(parameters).with_overrides(f"seed={seed},runtime.progress=false")


def run_job(job: Job, cells: str) -> list[str]:
    """Compute and write the cells of ``job`` that are missing. Returns the paths written."""
    settings = settings_of(job.parameters, job.seed)
    table = read_feature_table(job.path)
    written = []
    if job.iclfs:
        result = chain.run(table, settings)
    # variance and dispersion select from the table as measured; every cell is scored on the standardized one
    prepared = chain.prepare_checked(table, settings, keep_measured=True)[0] if job.baselines else result.prepared
    if prepared.labels is None:
        raise ValueError(f"{job.path}: no labels under key 'Y'; the k-means protocol needs class labels")
    X, codes = prepared.standardized, prepared.labels
    n_runs = settings.evaluation.n_runs
    if job.iclfs:
        method = method_name(settings)
        cell = evaluate_cell(X, codes, result.selections, dataset=job.dataset, method=method, seed=job.seed,
                             n_runs=n_runs, seconds=total_seconds(result.trained.trainings),
                             device=result.trained.trainings[0].results[0].device,
                             schedule=settings.training.schedule, epochs=total_epochs(result.trained.trainings))
        written.append(str(write_cell(Path(cells), cell_key(job.dataset, method, job.seed), cell)))
    if job.baselines:
        grid = chain.k_values_for(settings.selection, X.shape[1])
        for name, (selections, spent) in baseline_selections(
                X, codes, job.baselines, job.parameters.get("baselines", {}), grid, job.seed,
                settings.runtime, measured=prepared.measured).items():
            cell = evaluate_cell(X, codes, selections, dataset=job.dataset, method=name, seed=job.seed,
                                 n_runs=n_runs, seconds=spent)
            written.append(str(write_cell(Path(cells), cell_key(job.dataset, name, job.seed), cell)))
    return written


def plan(parameters: dict, datasets: Sequence[str], seeds: Sequence[int], cells: Path, iclfs: bool,
         baseline_keys: Sequence[str], force: bool) -> list[Job]:
    """The jobs whose cells are missing (all of them with ``force``)."""
    method = method_name(Settings.from_parameters(parameters))
    folders = parameters.get("benchmark", {}).get("folders", [])
    jobs = []
    for dataset in datasets:
        path = str(find_dataset(dataset, folders))
        for seed in seeds:
            todo_iclfs = iclfs and (force or not (cells / f"{cell_key(dataset, method, seed)}.csv").exists())
            todo_baselines = tuple(key for key in baseline_keys if force or not (
                cells / f"{cell_key(dataset, baselines.REGISTRY[key].name, seed)}.csv").exists())
            if todo_iclfs or todo_baselines:
                jobs.append(Job(dataset, path, int(seed), parameters, todo_iclfs, todo_baselines))
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
            found.setdefault(str(path.relative_to(folder).with_suffix("")),
                             pd.read_csv(path, keep_default_na=False, na_values=[""]))
    return found


def publish(cells: dict[str, pd.DataFrame], results: Path, parameters: dict, command: str) -> Path:
    """Write the cells under ``results/cells``, the report ``results/benchmark.md`` and its figures."""
    import matplotlib.pyplot as plt  # only the report draws: a GPU box running cells needs no matplotlib

    from iclfs.evaluation._report import build_report, figure, spec_for

    for key, table in cells.items():
        write_cell(results / "cells", key, table)
    gathered = gather(cells)
    benchmark = parameters.get("benchmark", {})
    spec = spec_for(Settings.from_parameters(parameters), parameters["benchmark_report"]["seeds"],
                    benchmark.get("datasets", ()))
    missing = {}
    for dataset in spec.datasets:
        try:
            find_dataset(dataset, benchmark.get("folders", []))
        except TableReadError as err:
            missing[dataset] = str(err)
    report = results / "benchmark.md"
    report.write_text(build_report(gathered, spec, command, missing, figures="figures", cells="cells/"))
    (results / "figures").mkdir(parents=True, exist_ok=True)
    for dataset in sorted(set(gathered["dataset"])):
        fig = figure(gathered, dataset, spec)
        fig.savefig(results / "figures" / f"{dataset}.png", dpi=90)
        plt.close(fig)
    return report


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m benchmarks.grid", description=__doc__.split("\n\n")[0])
    parser.add_argument("--conf-source", default="conf", help="the project's conf folder (default: conf)")
    parser.add_argument("--env", default="local", help="the conf environment over base (default: local)")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="compute the missing cells")
    run.add_argument("--datasets", nargs="+", help="default: benchmark.datasets")
    run.add_argument("--seeds", type=int, nargs="+", help="default: benchmark_report.seeds")
    run.add_argument("--set", dest="overrides", default="", help="section.key=value,... (as kedro run --params)")
    run.add_argument("--baselines", nargs="*", help="default: benchmark.baselines")
    run.add_argument("--baselines-only", action="store_true", help="no ICLFS cell")
    run.add_argument("--no-baselines", action="store_true")
    run.add_argument("--force", action="store_true", help="recompute cells that exist")
    run.add_argument("--workers", type=int, help="run the cells on a Dask LocalCluster of this many workers")
    run.add_argument("--scheduler", help="run the cells on the Dask scheduler at this address")
    run.add_argument("--cells", default=CELLS)
    report = commands.add_parser("report", help="gather the cells, publish them and write the report")
    report.add_argument("--cells", nargs="+", default=[CELLS, str(RESULTS / "cells")])
    report.add_argument("--results", default=str(RESULTS))
    args = parser.parse_args(argv)

    from iclfs.project._conf import project_conf  # Kedro's loader; the cells themselves need no Kedro

    parameters = project_conf(args.conf_source, args.env)
    if "benchmark" not in parameters:
        parser.error(f"{args.conf_source}: no benchmark section in the parameters; run from the project folder "
                     "or give --conf-source")
    if args.command == "report":
        path = publish(read_cells(*args.cells), Path(args.results), parameters,
                       "python -m benchmarks.grid " + " ".join(argv))
        print(f"wrote {path}")
        return
    try:
        overrides = canonical(parse_overrides(args.overrides))
        changed = Settings.from_parameters(parameters).with_overrides(overrides)
        chain.check_runtime(changed)  # a bad --set stops here, before any work
        parameters = {**parameters, **changed.to_parameters()}
        keys = [] if args.no_baselines else (parameters["benchmark"]["baselines"] if args.baselines is None
                                              else args.baselines)
        for key in keys:
            baselines.options_of(key, parameters.get("baselines", {}).get(key))
        jobs = plan(parameters, args.datasets or parameters["benchmark"]["datasets"],
                    args.seeds or parameters["benchmark_report"]["seeds"], Path(args.cells),
                    iclfs=not args.baselines_only, baseline_keys=keys, force=args.force)
    except (ValueError, ParameterError) as err:
        parser.error(str(err))
    print(f"{len(jobs)} job(s) to run: {', '.join(f'{j.dataset}@{j.seed}' for j in jobs) or 'none'}", flush=True)
    execute(jobs, Path(args.cells), args.workers, args.scheduler)


if __name__ == "__main__":
    main()
