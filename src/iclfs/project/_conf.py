"""The project's configuration loader, and the parameters read as Kedro reads them outside a Kedro session.

:class:`ProjectConfigLoader` is Kedro's ``OmegaConfigLoader`` (settings.py's
``CONFIG_LOADER_CLASS``) that also moves the parameter keys of an earlier
version to their new names, with one warning each
(:func:`iclfs.method._config.migrate_parameters`): every entry point (``kedro
run``, the packaged job, a DAG's task, kedro-viz) reads parameters through it,
so a node never sees an old key. It also runs a data source declared in conf
(:mod:`iclfs.project._sources`) by name: the runtime parameter ``source``.

The pipeline registry and the benchmark's command line read ``conf/`` through
:func:`project_conf`, so the command line runs on the same datasets, folders,
seeds and options as ``kedro run --pipeline benchmark``.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

from kedro.config import MissingConfigException, OmegaConfigLoader

from iclfs.method._config import migrate_parameters

from ._resolvers import data_source
from ._sources import check_declarations, expand, merge

LOGGER = logging.getLogger(__name__)
_SAID: set[str] = set()


# settings.py's CONFIG_LOADER_ARGS, kept here so that project_conf reads conf/ as kedro run does without
# importing the settings (which import this module).
CONFIG_LOADER_ARGS = {
    "base_env": "base",
    "default_run_env": "local",
    # conf/local/parameters.yml may set one key of a section (selection.k_values)
    # without repeating the rest of it.
    "merge_strategy": {"parameters": "soft"},
    # ${data_source:...} in catalog.yml: the run's data source, checked to be a safe folder name.
    "custom_resolvers": {"data_source": data_source},
}


class ProjectConfigLoader(OmegaConfigLoader):
    """``OmegaConfigLoader`` whose ``parameters`` carry this version's names, and whose runtime parameter
    ``source`` runs a data source declared in conf (module docstring)."""

    def __init__(self, conf_source: str, env: str | None = None, runtime_params: dict | None = None,
                 **kwargs: Any) -> None:
        given = dict(runtime_params or {})
        if given.get("source") not in (None, ""):
            # the declarations as conf holds them (without this run's parameters), checked before anything runs
            reader = OmegaConfigLoader(conf_source, env=env, **kwargs)
            try:
                sources = reader["parameters"].get("sources")
            except MissingConfigException:
                sources = None
            project = Path(conf_source).resolve().parent if Path(str(conf_source)).is_dir() else Path.cwd()
            given = merge(expand(given["source"], sources, project), given)
        super().__init__(conf_source, env=env, runtime_params=given, **kwargs)
        self.config_patterns.setdefault("airflow", ["airflow*", "airflow/**"])

    def __getitem__(self, key: str) -> dict[str, Any]:
        config = super().__getitem__(key)
        if key != "parameters":
            return config
        check_declarations(config.get("sources"))
        migrated, notes = migrate_parameters(config, given=set(_dotted(self.runtime_params or {})))
        for note in notes:
            if note not in _SAID:  # Kedro reads the parameters several times a run: say it once
                _SAID.add(note)
                LOGGER.warning("%s", note)
        return migrated


def _dotted(tree: dict, prefix: str = "") -> list[str]:
    """The dotted names of a nested dict's leaves."""
    names = []
    for key, value in tree.items():
        name = f"{prefix}{key}"
        names += _dotted(value, f"{name}.") if isinstance(value, dict) else [name]
    return names


def project_conf(conf_source: str | Path = "conf", env: str = "local") -> dict[str, Any]:
    """The ``parameters`` of ``conf_source``: ``base``, then ``env`` over it, as ``kedro run`` merges them.

    Globals are resolved (``${globals:datasets_dir}``). Empty where the folder or the files are missing.
    """
    if not Path(conf_source).is_dir():
        return {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = ProjectConfigLoader(str(conf_source), **{**CONFIG_LOADER_ARGS, "default_run_env": env})
        try:
            return dict(loader["parameters"])
        except MissingConfigException:
            return {}
