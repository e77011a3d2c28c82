"""``python -m iclfs`` / the ``iclfs`` entry point of the packaged project."""

from __future__ import annotations

import iclfs._threads  # noqa: F401  (first: the OpenMP thread policy, before torch loads)
import sys
from pathlib import Path

#: The top-level modules of the ``kedro`` extra (pyproject.toml): without one, the command cannot run.
KEDRO_EXTRA = {"kedro", "kedro_datasets", "kedro_viz", "kedro_mlflow", "mlflow", "matplotlib", "jinja2"}
MISSING = ("Error: the iclfs command runs the Kedro project, and {module} is not installed here: install iclfs with "
           "its kedro extra, pip install 'iclfs[kedro]' (from a wheel: pip install 'iclfs-<version>-py3-none-any.whl"
           "[kedro]'). The selector alone (from iclfs import ICLFSSelector) needs no extra.")


def main(*args, **kwargs) -> None:
    package_name = Path(__file__).parent.name
    try:  # the packaged job installed without its extra: one line saying what to install, not a traceback
        from kedro.framework.cli.utils import find_run_command
        from kedro.framework.project import configure_project

        configure_project(package_name)
        run = find_run_command(package_name)
    except ModuleNotFoundError as err:
        if (err.name or "").partition(".")[0] not in KEDRO_EXTRA:
            raise
        print(MISSING.format(module=err.name.partition(".")[0]), file=sys.stderr)
        sys.exit(1)
    interactive = hasattr(sys, "ps1")
    kwargs["standalone_mode"] = not interactive
    given = list(args[0] if args else kwargs.get("args") or sys.argv[1:])
    if given[:1] == ["viz"]:  # iclfs viz: kedro-viz on the project, stopped with its server
        from iclfs.cli import viz

        kwargs.pop("args", None)
        return viz.main(given[1:], prog_name="iclfs viz", **kwargs)
    return run(*args, **kwargs)


if __name__ == "__main__":
    main()
