"""The project's parameters read as Kedro reads them, for code that runs outside a Kedro session.

The pipeline registry and the benchmark's command line read ``conf/`` through
this one function, so the command line runs on the same datasets, folders,
seeds and options as ``kedro run --pipeline benchmark``.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from kedro.config import MissingConfigException, OmegaConfigLoader


def project_conf(conf_source: str | Path = "conf", env: str = "local") -> dict[str, Any]:
    """The ``parameters`` of ``conf_source``: ``base``, then ``env`` over it, as ``kedro run`` merges them.

    Globals are resolved (``${globals:datasets_dir}``). Empty where the folder or the files are missing.
    """
    from iclfs.settings import CONFIG_LOADER_ARGS

    if not Path(conf_source).is_dir():
        return {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = OmegaConfigLoader(str(conf_source), **{**CONFIG_LOADER_ARGS, "default_run_env": env})
        try:
            return dict(loader["parameters"])
        except MissingConfigException:
            return {}
