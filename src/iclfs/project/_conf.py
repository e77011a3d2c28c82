"""The project's configuration loader, and the parameters read as Kedro reads them outside a Kedro session.

:class:`ProjectConfigLoader` is Kedro's ``OmegaConfigLoader`` (settings.py's
``CONFIG_LOADER_CLASS``) that also refuses the parameter keys of an earlier
version, naming their new names in one line
(:func:`iclfs.method._config.refuse_old_names`): every entry point (``kedro
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

import yaml
from kedro.config import MissingConfigException, OmegaConfigLoader

from iclfs.method._config import ParameterError, dotted_names, refuse_old_names

from ._resolvers import DEFAULT_METHOD, RUN_METHOD, data_source, method_folder
from ._sources import SourceError, check_declarations, check_other_input, expand, merge

LOGGER = logging.getLogger(__name__)


# settings.py's CONFIG_LOADER_ARGS, kept here so that project_conf reads conf/ as kedro run does without
# importing the settings (which import this module).
CONFIG_LOADER_ARGS = {
    "base_env": "base",
    "default_run_env": "local",
    # conf/local/parameters.yml may set one key of a section (selection.k_values)
    # without repeating the rest of it.
    "merge_strategy": {"parameters": "soft"},
    # ${data_source:...} in catalog.yml: the run's data source, checked to be a safe folder name.
    # ${method_folder:...}: the run's selection.method, the folder its method's artifacts go to.
    "custom_resolvers": {"data_source": data_source, "method_folder": method_folder},
}


class ProjectConfigLoader(OmegaConfigLoader):
    """``OmegaConfigLoader`` whose ``parameters`` carry this version's names, and whose runtime parameter
    ``source`` runs a data source declared in conf (module docstring)."""

    def __init__(self, conf_source: str, env: str | None = None, runtime_params: dict | None = None,
                 **kwargs: Any) -> None:
        given = dict(runtime_params or {})
        if "source" in given and (given["source"] is None or not str(given["source"]).strip()):
            raise SourceError("source is empty (--params source=): give a declared data source's name, e.g. "
                              "--source expr, or leave source out to run --input")
        if given.get("source") is not None:
            # the declarations as conf holds them (without this run's parameters), checked before anything runs
            reader = OmegaConfigLoader(conf_source, env=env, **kwargs)
            try:
                sources = _read(reader, "parameters").get("sources")
            except MissingConfigException:
                sources = None
            project = Path(conf_source).resolve().parent if Path(str(conf_source)).is_dir() else Path.cwd()
            declared = expand(given["source"], sources, project, archive=not Path(str(conf_source)).is_dir())
            check_other_input(str(given["source"]), declared, given, project)
            given = merge(declared, given)
        super().__init__(conf_source, env=env, runtime_params=given, **kwargs)
        self.config_patterns.setdefault("airflow", ["airflow*", "airflow/**"])

    def __getitem__(self, key: str) -> dict[str, Any]:
        if key == "catalog":
            # the catalog's ${method_folder:} names this run's method, from the parameters as the run reads them
            # (conf/local and a declared source included, not only --params)
            token = RUN_METHOD.set(self._method())
            try:
                return _read(super(), key, self)
            finally:
                RUN_METHOD.reset(token)
        config = _read(super(), key, self)
        if key != "parameters":
            return config
        check_declarations(config.get("sources"))
        refuse_old_names(dotted_names(config))  # a key of an earlier version: refused, naming its new name
        return config

    def _method(self) -> str:
        """The run's ``selection.method`` (``iclfs`` where the parameters name none)."""
        try:
            parameters = self["parameters"]
        except MissingConfigException:
            return DEFAULT_METHOD
        selection = parameters.get("selection") if isinstance(parameters, dict) else None
        method = selection.get("method") if isinstance(selection, dict) else None
        return DEFAULT_METHOD if method in (None, "") else str(method)


class ConfError(ParameterError):
    """A conf file Kedro cannot read or merge: the message names the file and the fix, in one line."""


def _read(loader: Any, key: str, conf: OmegaConfigLoader | None = None) -> Any:
    """``loader[key]``, where a file YAML cannot read, or one whose section's type differs from base's, is a
    :class:`ConfError` naming the file, not a page of traceback."""
    conf = conf if conf is not None else loader
    try:
        return loader.__getitem__(key)
    except yaml.YAMLError as err:
        raise ConfError(_yaml_problem(conf, key, err)) from err
    except TypeError as err:
        if "Cannot merge" not in str(err):
            raise
        raise ConfError(_merge_problem(conf, key)) from err


def _files(conf: OmegaConfigLoader, key: str) -> list[Path]:
    """The files of ``key`` (parameters*, ...) in the base and the run's environment, base first."""
    root = Path(str(conf.conf_source))
    found: list[Path] = []
    for env in dict.fromkeys([conf.base_env, conf.env or conf.default_run_env]):
        for pattern in conf.config_patterns.get(key, [key + "*"]):
            found += sorted(path for path in (root / str(env)).glob(pattern)
                            if path.is_file() and path.suffix in (".yml", ".yaml", ".json") and path not in found)
    return found


def _shown(path: Path, conf: OmegaConfigLoader) -> str:
    root = Path(str(conf.conf_source))
    return f"{root.name}/{path.relative_to(root)}" if path.is_relative_to(root) else str(path)


def _yaml_problem(conf: OmegaConfigLoader, key: str, err: yaml.YAMLError) -> str:
    for path in _files(conf, key):
        try:
            yaml.safe_load(path.read_text())
        except yaml.YAMLError as found:
            err = found
            where = _shown(path, conf)
            break
    else:
        where = f"a {key} file of {conf.conf_source}"
    mark = getattr(err, "problem_mark", None)
    line = f" line {mark.line + 1}" if mark is not None else ""
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    tag = "tag:yaml.org,2002:"
    if "constructor for the tag" in str(problem):
        shown = str(problem).split("'")[1].replace(tag, "!!") if "'" in str(problem) else "the tag"
        return (f"{where}{line}: the YAML tag {shown} is not read: conf holds plain values (mappings, lists, "
                "strings, numbers). Remove the tag")
    return f"{where}{line}: not valid YAML ({problem}). Fix the file, or check it with python -m yaml"


def _merge_problem(conf: OmegaConfigLoader, key: str) -> str:
    kinds: dict[str, tuple[str, str]] = {}
    for path in _files(conf, key):
        try:
            tree = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError:
            continue
        if not isinstance(tree, dict):
            return f"{_shown(path, conf)} must hold a mapping of sections, got {type(tree).__name__}"
        for name, value in tree.items():
            kind = "mapping" if isinstance(value, dict) else "list" if isinstance(value, list) else ""
            if kind and name in kinds and kinds[name][1] != kind:
                return (f"{_shown(path, conf)}: {name} is a {kind}, where {kinds[name][0]} holds a "
                        f"{kinds[name][1]}: give {name}: as a {kinds[name][1]}" +
                        (" of names to declarations (docs/guides/scheduling.md)" if name == "sources" else ""))
            if kind:
                kinds.setdefault(name, (_shown(path, conf), kind))
    return f"the {key} files of {conf.conf_source} hold one section as both a mapping and a list: give it one type"


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
