"""The Airflow DAG of a declared data source (``kedro dag SOURCE``, docs/guides/scheduling.md).

One refresh is one Kedro session: one task that runs ``select`` on the
source with the project's own interpreter, in the project's folder. So a
refresh is one MLflow run and one run record, its stability compares it
with the last published list, and Airflow's own environment needs nothing
of the project's. The schedule and retries come from ``conf/<env>/airflow.yml``.
"""

from __future__ import annotations

import re
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path

from kedro.config import MissingConfigException

from ._sources import SourceError

TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "airflow_dag.py.j2"
DEFAULTS = {"schedule": "0 3 * * *", "start_date": [2026, 1, 1], "catchup": False, "max_active_runs": 1,
            "owner": "iclfs", "retries": 1, "retry_delay": 5}


def command(source: str, env: str, python: str) -> str:
    """The refresh's shell command: the packaged project's run command on ``source``."""
    return " ".join(shlex.quote(part) for part in
                    (python, "-m", "iclfs", "--pipelines", "select", "--source", source, "--env", env))


def write_dag(source: str, env: str = "local", target: Path = Path("airflow_dags"), project: Path | None = None,
              python: str | None = None) -> Path:
    """Check that ``source`` is declared and runs, then write ``<target>/iclfs_<source>.py``; its path."""
    import jinja2
    from kedro.framework.project import settings

    project = (project or Path.cwd()).resolve()
    conf = project / settings.CONF_SOURCE
    loader = settings.CONFIG_LOADER_CLASS(str(conf), env=env, runtime_params={"source": source},
                                          **settings.CONFIG_LOADER_ARGS)  # refuses an undeclared source
    loader["parameters"]
    try:
        airflow = dict(loader["airflow"]).get("select") or {}
    except (KeyError, MissingConfigException):
        airflow = {}
    unknown = sorted(set(airflow) - set(DEFAULTS))
    if unknown:
        raise SourceError(f"conf/{env}/airflow.yml select: unknown key(s) {', '.join(unknown)}; known: "
                          f"{', '.join(DEFAULTS)}")
    options = {**DEFAULTS, **airflow}
    function = "iclfs_" + re.sub(r"\W", "_", source)
    text = jinja2.Environment(autoescape=False, keep_trailing_newline=True).from_string(TEMPLATE.read_text()).render(
        source=source, env=env, project=str(project), dag_id=f"iclfs_{source}", function=function,
        command=command(source, env, python or sys.executable), written=datetime.now(timezone.utc).strftime(
            "%Y-%m-%d"), **options)
    target = target if target.is_absolute() else project / target
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"iclfs_{source}.py"
    partial = path.with_suffix(".py.partial")
    partial.write_text(text)
    partial.replace(path)
    return path
