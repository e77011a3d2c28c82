"""The project's pipelines: one per ICLFS stage, chained in ``select`` (also ``__default__``: ``kedro run``, the
packaged job and the Airflow DAG run the same path); the benchmark per dataset."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

from kedro.pipeline import Pipeline

from iclfs.io._tables import TableReadError, find_dataset
from iclfs.pipelines import (
    benchmark,
    benchmark_report,
    data_processing,
    evaluation,
    laplacian,
    ranking,
    report,
    selection,
    training,
    views,
)
from iclfs.project._conf import project_conf

LOGGER = logging.getLogger(__name__)

STAGES = {
    "data_processing": data_processing,
    "views": views,
    "training": training,
    "laplacian": laplacian,
    "ranking": ranking,
    "selection": selection,
    "evaluation": evaluation,
    "report": report,
}
# The production path: no view inspection. The evaluation runs (the report shows accuracy
# against k when the table has labels; without labels it skips the k-means protocol).
SELECT = ("data_processing", "training", "laplacian", "ranking", "selection", "evaluation", "report")


def benchmark_datasets(conf: Path | None = None) -> tuple[str, ...]:
    """``benchmark.datasets`` of the project's conf whose ``.mat`` file exists, in conf order.

    Read as Kedro reads conf (base, then local). A dataset whose file is in
    none of ``benchmark.folders`` is left out and named in a debug log line
    (every kedro command builds the registry); the report lists it as not run.
    """
    from kedro.framework.project import settings

    benchmark = project_conf(conf or Path.cwd() / settings.CONF_SOURCE).get("benchmark", {})
    folders = list(benchmark.get("folders", ()))
    found, missing = [], []
    for name in benchmark.get("datasets", ()):
        try:
            find_dataset(name, folders)
        except TableReadError:
            missing.append(name)
            continue
        found.append(name)
    if missing:  # every kedro command builds the registry: say it quietly; the report lists them as not run
        LOGGER.debug("Benchmark datasets left out, their file is in none of %s: %s", ", ".join(folders),
                     ", ".join(missing))
    return tuple(found)


def register_pipelines() -> dict[str, Pipeline]:
    """Every stage by name, ``select`` (the production path, also ``__default__``) and the benchmark."""
    pipelines = {name: module.create_pipeline() for name, module in STAGES.items()}
    pipelines["select"] = sum((pipelines[name] for name in SELECT), Pipeline([]))
    pipelines["__default__"] = pipelines["select"]
    datasets = benchmark_datasets()
    with warnings.catch_warnings():
        # Kedro warns about dotted names made outside a namespace; the report reads no such name.
        warnings.filterwarnings("ignore", message="One or more dataset names contain '.'")
        pipelines["benchmark_report"] = benchmark_report.create_pipeline()
    # One namespace per dataset (kedro run --pipeline benchmark --namespaces COIL20); then benchmark_report.
    pipelines["benchmark"] = benchmark.create_pipeline(datasets)
    # The baselines alone (no training): kedro run --pipeline benchmark_baselines --namespaces COIL20.
    pipelines["benchmark_baselines"] = benchmark.create_baselines_pipeline(datasets)
    return pipelines
