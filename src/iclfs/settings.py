"""Kedro project settings."""

from kedro.config import OmegaConfigLoader

from iclfs.pipelines.hooks import (
    MlflowArtifactHook,
    MlflowPreflightHook,
    OutputPreflightHook,
    ParameterCheckHook,
    RunSummaryHook,
)
from iclfs.pipelines.resolvers import data_source
from iclfs.pipelines.runs import RunRecordHook

HOOKS = (MlflowPreflightHook(), ParameterCheckHook(), OutputPreflightHook(), RunRecordHook(), MlflowArtifactHook(),
         RunSummaryHook())

CONFIG_LOADER_CLASS = OmegaConfigLoader
CONFIG_LOADER_ARGS = {
    "base_env": "base",
    "default_run_env": "local",
    # conf/local/parameters.yml may set one key of a section (selection.k_values)
    # without repeating the rest of it.
    "merge_strategy": {"parameters": "soft"},
    # ${data_source:...} in catalog.yml: the run's data source, checked to be a safe folder name.
    "custom_resolvers": {"data_source": data_source},
}
