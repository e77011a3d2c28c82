"""The benchmarks on a machine with only torch, numpy, scipy, scikit-learn and pandas (a lent GPU machine).

:mod:`iclfs.chain` imports the other methods, one of which imports tqdm for
its progress bar; :mod:`benchmarks.gpu_row` trains ICLFS, not CAE, so it
never calls it. (PyYAML, which reads ``--params`` text, is imported only
where such text is read, ``iclfs.method._config.parse_overrides``: the
method core and the benchmarks import without it.) So where a package is missing,
:func:`stand_in_for_missing` registers an empty module under its name whose
every use fails naming the package: an import succeeds, a call cannot pass
unnoticed. Where the package is installed nothing is replaced.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types

#: module name -> the names the project's imports take from it.
NEEDED_AT_IMPORT = {"tqdm": (), "tqdm.auto": ("tqdm",)}


class _Missing:
    """Stands for a name of a package that is not installed; calling it says so."""

    def __init__(self, package: str, name: str) -> None:
        self.package, self.name = package, name

    def __call__(self, *args, **kwargs):
        raise ModuleNotFoundError(f"{self.package} is not installed here, and {self.package}.{self.name} was "
                                  "called: the device benchmarks must not need it (benchmarks/_device.py)")


def stand_in_for_missing(names=tuple(NEEDED_AT_IMPORT)) -> list[str]:
    """Register a stand-in for each module of ``names`` (of :data:`NEEDED_AT_IMPORT`) whose package cannot be
    imported; the names of those registered."""
    missing = [name for name in names
               if name not in sys.modules and importlib.util.find_spec(name.split(".")[0]) is None]
    for name in missing:
        module = types.ModuleType(name, f"stand-in for the missing {name} (benchmarks/_device.py)")
        # a spec, as an imported module has: torch._dynamo asks importlib.util.find_spec about tqdm and friends
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        for attribute in NEEDED_AT_IMPORT[name]:
            setattr(module, attribute, _Missing(name, attribute))
        sys.modules[name] = module
    if "tqdm.auto" in missing and "tqdm" in missing:
        sys.modules["tqdm"].auto = sys.modules["tqdm.auto"]
    return missing
