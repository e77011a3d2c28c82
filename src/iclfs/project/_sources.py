"""Data sources declared in conf: a table, how to read it and the method, run by name (docs/guides/scheduling.md).

A user declares each table once, in ``conf/<env>/parameters_sources.yml``::

    sources:
      expr:
        input: data/01_raw/expr.tsv.gz
        orientation: features_in_rows
        method: iclfs

and every entry point runs it by name: ``kedro run --params source=expr``,
the packaged job ``iclfs --source expr``, and the Airflow DAG ``kedro dag
expr`` writes. A parameters section, not a catalog entry, because a source
carries settings beside the file (its method, its number of clusters), which
is what parameters are, and a run picks one with a single runtime parameter
that a scheduler's command can hold. :class:`~iclfs.project._conf.ProjectConfigLoader`
expands ``source=expr`` into the run's ``input``, reading options,
``data_source`` and ``selection`` parameters; a parameter given on the
command line wins over the declaration.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from iclfs.method._config import ParameterError, closest

from ._resolvers import DataSourceError, check_data_source

#: What a declaration may hold: the keys of a run's input (read by raw_data) and the method's.
READING = ("input", "orientation", "id_column", "label_column", "sep", "decimal")
METHOD = ("method", "n_clusters")
KEYS = READING + METHOD
ORIENTATIONS = ("samples_in_rows", "features_in_rows")


class SourceError(ParameterError):
    """A data source is not declared, or its declaration cannot run; the message names the source and the key."""


def check_declarations(sources: Any) -> dict[str, dict]:
    """Every declaration's name and keys (not its file): the ``sources`` section as a dict of dicts."""
    if sources in (None, {}):
        return {}
    if not isinstance(sources, Mapping):
        raise SourceError(f"sources must be a mapping of names to declarations, got {type(sources).__name__}")
    seen: dict[str, str] = {}
    for name, declaration in sources.items():
        try:
            check_data_source(name)
        except DataSourceError as err:
            raise SourceError(f"sources: {err}") from None
        folded = str(name).casefold()
        if folded in seen:  # two folders a case-blind disk (macOS, Windows) would make one
            raise SourceError(f"sources: {seen[folded]!r} and {name!r} name one data source: data/<layer>/{name}/ "
                              "on a disk that ignores case. Give them names that differ by more than case")
        seen[folded] = str(name)
        if not isinstance(declaration, Mapping):
            raise SourceError(f"sources.{name} must be a mapping of keys ({', '.join(KEYS)}), got {declaration!r}")
        unknown = sorted(set(map(str, declaration)) - set(KEYS))
        if unknown:
            raise SourceError(f"sources.{name}: unknown key(s) " + ", ".join(
                f"{key!r}{closest(key, KEYS)}" for key in unknown) + f"; a source may set {', '.join(KEYS)}")
        if declaration.get("input") in (None, ""):
            raise SourceError(f"sources.{name}.input is missing: give the table's file, e.g. "
                              f"input: data/01_raw/{name}.tsv")
        method = declaration.get("method")
        if method is not None:
            from iclfs.baselines import METHODS  # here: the baselines import torch, which a name check does not need

            if method not in METHODS:  # refused when declared, not on the first scheduled night
                raise SourceError(f"sources.{name}.method = {method!r} is not a method{closest(str(method), METHODS)}"
                                  f": use one of {', '.join(METHODS)}")
        orientation = declaration.get("orientation")
        if orientation is not None and orientation not in ORIENTATIONS:
            raise SourceError(f"sources.{name}.orientation = {orientation!r}: expected one of "
                              f"{', '.join(ORIENTATIONS)}{closest(str(orientation), ORIENTATIONS)}")
    return {str(name): dict(declaration) for name, declaration in sources.items()}


#: Where a user declares a source; a conf archive (``kedro package``'s) holds no conf/local.
DECLARE_IN = "Declare it under sources: in conf/local/parameters_sources.yml (docs/guides/scheduling.md)"
DECLARE_IN_ARCHIVE = ("A conf archive holds no conf/local (kedro package leaves it out): declare it in "
                      "conf/base/parameters_sources.yml before packaging, or give --conf-source a conf folder "
                      "holding base/ and local/ (docs/guides/scheduling.md, 'The packaged job')")


def expand(name: Any, sources: Any, project: Path, archive: bool = False) -> dict[str, Any]:
    """The runtime parameters that running the declared source ``name`` means, checked; nothing is written.

    Raises :class:`SourceError` when ``name`` is not declared (naming the ones that are, and where to declare
    it: conf/local, or conf/base where the conf is an ``archive``), or its file is not there.
    """
    declared = check_declarations(sources)
    name = str(name)
    if name not in declared:
        known = ", ".join(sorted(declared)) or "none yet"
        raise SourceError(f"data source {name!r} is not declared{closest(name, declared)}: declared sources: "
                          f"{known}. {DECLARE_IN_ARCHIVE if archive else DECLARE_IN}")
    declaration = declared[name]
    path = Path(str(declaration["input"]))
    path = path if path.is_absolute() else project / path
    if not path.is_file():
        problem = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise SourceError(f"sources.{name}.input: {path} {problem}")
    params: dict[str, Any] = {key: declaration[key] for key in READING if declaration.get(key) is not None}
    params["input"] = str(path)
    params["data_source"] = name
    selection = {key: declaration[key] for key in METHOD if declaration.get(key) is not None}
    if selection:
        params["selection"] = selection
    return params


def check_other_input(name: str, declared: Mapping[str, Any], given: Mapping[str, Any], project: Path) -> None:
    """Refuse ``--source name --input other`` where the declaration says how to read its own file (its
    orientation, id column, separator...) and the command line does not say how to read the other one: the
    declaration's reading was made for the declared file, and applied to another it misreads it."""
    other = given.get("input")
    if other in (None, "") or not isinstance(other, (str, Path)):
        return
    path = Path(str(other))
    path = path if path.is_absolute() else project / path
    if path.resolve() == Path(str(declared["input"])).resolve():
        return
    kept = [key for key in READING if key != "input" and key in declared and key not in given]
    if kept:
        settings = ", ".join(f"{key}={declared[key]!r}" for key in kept)
        raise SourceError(f"--input {other} replaces the file of the data source {name!r}, but its declaration's "
                          f"{settings} was made for {declared['input']}: give them for the other file too "
                          f"(--params {','.join(f'{key}=...' for key in kept)}), or run the file without --source")


def merge(declared: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` (the command line's) over ``declared``, section by section."""
    out = {key: dict(value) if isinstance(value, Mapping) else value for key, value in declared.items()}
    for key, value in given.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out
