"""Kedro project settings."""

from kedro.config import OmegaConfigLoader

from iclfs.hooks import MlflowArtifactHook, MlflowPreflightHook, OutputPreflightHook

HOOKS = (MlflowPreflightHook(), OutputPreflightHook(), MlflowArtifactHook())

CONFIG_LOADER_CLASS = OmegaConfigLoader
CONFIG_LOADER_ARGS = {
    "base_env": "base",
    "default_run_env": "local",
    # conf/local/parameters.yml may set one key of a section (lgrc.k_values)
    # without repeating the rest of it.
    "merge_strategy": {"parameters": "soft"},
}

from iclfs.session import IclfsSession  # noqa: E402

# Lets a benchmark run go on when some datasets' files are absent (src/iclfs/session.py).
SESSION_CLASS = IclfsSession
