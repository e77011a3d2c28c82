"""Kedro project settings."""

import iclfs._threads  # noqa: F401  (first: the OpenMP thread policy, before any node loads torch)
from iclfs.project._conf import CONFIG_LOADER_ARGS, ProjectConfigLoader
from iclfs.project._hooks import LifecycleHook
from iclfs.project._tracking import TrackingHook

# The run's lifecycle is one hook whose steps run in written order (project/_hooks.py); tracking is its companion.
HOOKS = (LifecycleHook(), TrackingHook())
# kedro-mlflow's hook (its entry point) opens the MLflow run; TrackingHook is its companion (project/_tracking.py).

CONFIG_LOADER_CLASS = ProjectConfigLoader
__all__ = ["CONFIG_LOADER_ARGS", "CONFIG_LOADER_CLASS", "HOOKS"]
