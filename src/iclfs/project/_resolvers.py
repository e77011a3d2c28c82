"""Configuration resolvers: the data source and the method a run's artifacts are stored under."""

from __future__ import annotations

import re
from contextvars import ContextVar
from pathlib import PurePosixPath

# fullmatch, not match with "$": "$" also matches before a final newline, and "nl\n" would pass
NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")
RULE = ("letters, digits, '-', '_' and '.', not starting with '.', 1 to 64 characters "
        "(it names the folder data/<layer>/<data_source>/)")


class DataSourceError(ValueError):
    """``data_source`` would put artifacts outside their folder, or is not a usable folder name."""


def check_data_source(name: object) -> str:
    """``name`` if it is a safe folder name (:data:`RULE`), else :class:`DataSourceError` naming the rule."""
    text = "" if name is None else str(name)
    if not NAME.fullmatch(text) or text in (".", ".."):
        raise DataSourceError(f"data_source {text!r} is not allowed: use {RULE}")
    return text


def data_source(given: object, input_path: object, default: object) -> str:
    """The data source of a run: ``given`` (``--params data_source=...``), else the name of the input
    file without its suffixes (``--params input=path/expr.tsv.gz`` -> ``expr``), else ``default``.

    Registered as the OmegaConf resolver ``data_source`` (settings.py); every choice is checked.
    """
    if given is not None:  # given, even empty: checked
        return check_data_source(given)
    if input_path not in (None, ""):
        name = PurePosixPath(str(input_path)).name
        return check_data_source(name.split(".")[0] if not name.startswith(".") else name)
    return check_data_source(default)


#: The method whose folder a catalog being resolved names (:func:`method_folder`); set by
#: :class:`iclfs.project._conf.ProjectConfigLoader` from the run's merged parameters while it resolves the catalog.
RUN_METHOD: ContextVar[str | None] = ContextVar("iclfs_run_method", default=None)
DEFAULT_METHOD = "iclfs"


def method_folder(given: object = None) -> str:
    """The folder a run's method's artifacts are stored under: ``data/<layer>/<data_source>/<method>/``.

    The run's ``selection.method``: the merged parameters' (conf/base, conf/local, a declared source, then
    ``--params``) while :class:`iclfs.project._conf.ProjectConfigLoader` resolves the catalog, else ``given``
    (``${runtime_params:selection.method, null}`` in catalog.yml, for a plain Kedro loader), else ``iclfs``.
    Registered as the OmegaConf resolver ``method_folder``. The name is checked to be a safe folder name; whether
    it is a method is the run's own check, which names the methods.
    """
    chosen = RUN_METHOD.get()
    if chosen is None:
        chosen = given if given not in (None, "") else DEFAULT_METHOD
    text = str(chosen)
    if not NAME.fullmatch(text) or text in (".", ".."):
        from iclfs.baselines import METHODS  # here, not above: it loads torch, which a bad name never needs

        raise DataSourceError(f"selection.method {text!r} is not allowed as a folder name: a method is one of "
                              f"{', '.join(METHODS)} (docs/guides/methods.md)")
    return text
