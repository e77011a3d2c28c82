"""``python -m iclfs`` / the ``iclfs`` entry point of the packaged project."""

from __future__ import annotations

import iclfs._threads  # noqa: F401  (first: the OpenMP thread policy, before torch loads)
import sys
from pathlib import Path

from kedro.framework.cli.utils import find_run_command
from kedro.framework.project import configure_project


def main(*args, **kwargs) -> None:
    package_name = Path(__file__).parent.name
    configure_project(package_name)
    interactive = hasattr(sys, "ps1")
    kwargs["standalone_mode"] = not interactive
    run = find_run_command(package_name)
    return run(*args, **kwargs)


if __name__ == "__main__":
    main()
