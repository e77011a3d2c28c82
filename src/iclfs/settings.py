"""Kedro project settings."""

from iclfs.project._conf import CONFIG_LOADER_ARGS, ProjectConfigLoader
from iclfs.project._hooks import OutputPreflightHook, ParameterCheckHook, RunSummaryHook
from iclfs.project._logs import PlainLogsHook
from iclfs.project._runs import RunRecordHook
from iclfs.project._tracking import TrackingHook

HOOKS = (PlainLogsHook(), ParameterCheckHook(), OutputPreflightHook(), TrackingHook(), RunRecordHook(),
         RunSummaryHook())
# The project opens its own MLflow run (project/_tracking.py); kedro-mlflow's hooks, if installed, stay off.
DISABLE_HOOKS_FOR_PLUGINS = ("kedro-mlflow", "kedro_mlflow")

CONFIG_LOADER_CLASS = ProjectConfigLoader
__all__ = ["CONFIG_LOADER_ARGS", "CONFIG_LOADER_CLASS", "DISABLE_HOOKS_FOR_PLUGINS", "HOOKS"]
