"""Build a config dataclass from a user's dict, naming any key it does not know.

Kedro parameters (``params:training``) and the selector's ``training_options``
both arrive as plain dicts; a misspelt key must stop the run with its full
name rather than be passed on as an opaque ``TypeError``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def config_from_dict(cls: type[T], options: dict[str, Any] | None, name: str,
                     fixed: dict[str, Any] | None = None, fixed_by: str = "the caller") -> T:
    """``cls(**options, **fixed)``, refusing keys ``cls`` does not know and keys ``fixed`` owns.

    Parameters
    ----------
    cls : dataclass type
        The config to build (``TrainingConfig``, ``ViewConfig``).
    options : dict or None
        The user's keys; None means none.
    name : str
        Where the dict came from (``"training"``, ``"training_options"``), used in errors.
    fixed : dict, optional
        Keys set by the caller that the user may not set through ``options``.
    fixed_by : str
        Who sets ``fixed``, named in the error for a key given twice.
    """
    options = {} if options is None else options
    fixed = {} if fixed is None else fixed
    if not isinstance(options, dict):
        raise TypeError(f"{name} must be a dict or None, got {type(options).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(
            f"unknown key(s) {', '.join(f'{name}.{key}' for key in unknown)}; "
            f"known keys of {name}: {', '.join(sorted(known - set(fixed)))}"
        )
    duplicated = sorted(set(options) & set(fixed))
    if duplicated:
        raise ValueError(f"{name} must not set {', '.join(duplicated)}: use {fixed_by}")
    return cls(**options, **fixed)
