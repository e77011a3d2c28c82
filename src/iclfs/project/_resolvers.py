"""Configuration resolvers: the data source a run's artifacts are stored under."""

from __future__ import annotations

import re
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
