"""The benchmark: the ICLFS chain and the baselines, one Kedro namespace per dataset."""

from .pipeline import BENCHMARK_DATASETS, create_baselines_pipeline, create_pipeline

__all__ = ["BENCHMARK_DATASETS", "create_baselines_pipeline", "create_pipeline"]
