"""Turn a ``params:<section>`` dict into a core config object with a clear error."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def config_from_params(cls: type[T], params: dict[str, Any], section: str) -> T:
    """``cls(**params)``, refusing keys ``cls`` does not know, named with their section."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {', '.join(f'{section}.{k}' for k in unknown)}; "
            f"known: {', '.join(sorted(known))}"
        )
    return cls(**params)
