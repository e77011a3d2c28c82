"""The benchmark: the ICLFS chain and the baselines, one Kedro namespace per dataset."""

from .pipeline import create_baselines_pipeline, create_pipeline

__all__ = ["create_baselines_pipeline", "create_pipeline"]
