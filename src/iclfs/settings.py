"""Kedro project settings."""

from iclfs.pipelines._conf import ProjectConfigLoader
from iclfs.pipelines._hooks import OutputPreflightHook, ParameterCheckHook, RunSummaryHook
from iclfs.pipelines._logs import PlainLogsHook
from iclfs.pipelines._resolvers import data_source
from iclfs.pipelines._runs import RunRecordHook
from iclfs.pipelines._tracking import TrackingHook

HOOKS = (PlainLogsHook(), ParameterCheckHook(), OutputPreflightHook(), TrackingHook(), RunRecordHook(),
         RunSummaryHook())
# The project opens its own MLflow run (pipelines/_tracking.py); kedro-mlflow's hooks, if installed, stay off.
DISABLE_HOOKS_FOR_PLUGINS = ("kedro-mlflow", "kedro_mlflow")

CONFIG_LOADER_CLASS = ProjectConfigLoader
CONFIG_LOADER_ARGS = {
    "base_env": "base",
    "default_run_env": "local",
    # conf/local/parameters.yml may set one key of a section (selection.k_values)
    # without repeating the rest of it.
    "merge_strategy": {"parameters": "soft"},
    # ${data_source:...} in catalog.yml: the run's data source, checked to be a safe folder name.
    "custom_resolvers": {"data_source": data_source},
}
