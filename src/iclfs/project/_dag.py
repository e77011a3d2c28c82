"""The Airflow DAG of a declared data source (``kedro dag SOURCE``, docs/guides/scheduling.md).

One refresh is one Kedro session: one task that runs ``select`` on the
source with the project's own interpreter, in the project's folder. So a
refresh is one MLflow run and one run record, its stability compares it
with the last published list, and Airflow's own environment needs nothing
of the project's. The schedule and retries come from ``conf/<env>/airflow.yml``, and so does the thread
policy the task sets (``thread_policy``: ``ICLFS_THREAD_POLICY`` in the task's environment, where the
process reads it before torch loads, docs/guides/performance.md).
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Mapping
from datetime import date, datetime, timezone
from pathlib import Path

from kedro.config import MissingConfigException

from iclfs import _threads
from iclfs.method._config import closest

from ._resolvers import check_data_source
from ._sources import SourceError

TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "airflow_dag.py.j2"
DEFAULTS = {"schedule": "0 3 * * *", "start_date": [2026, 1, 1], "catchup": False, "max_active_runs": 1,
            "owner": "iclfs", "retries": 1, "retry_delay": 5, "thread_policy": None}


def command(source: str, env: str, python: str) -> str:
    """The refresh's shell command: the packaged project's run command on ``source``."""
    return " ".join(shlex.quote(part) for part in
                    (python, "-m", "iclfs", "--pipelines", "select", "--source", source, "--env", env))


def _options(airflow: object, env: str) -> dict:
    """``airflow.yml``'s ``select`` over the defaults, each value checked and turned into what the DAG holds."""
    where = f"conf/{env}/airflow.yml select"
    if not isinstance(airflow, Mapping):
        raise SourceError(f"{where} must be a mapping of settings (schedule: \"0 3 * * *\", retries: 1, ...), got "
                          f"{type(airflow).__name__} {airflow!r}; known keys: {', '.join(DEFAULTS)}")
    airflow = dict(airflow)
    unknown = sorted(map(str, set(airflow) - set(DEFAULTS)))
    if unknown:
        raise SourceError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(DEFAULTS)}")
    options = {**DEFAULTS, **airflow}

    def refuse(key: str, expected: str) -> SourceError:
        return SourceError(f"{where}: {key} = {options[key]!r} is invalid: expected {expected}")

    schedule = options["schedule"]
    if schedule is not None and not (isinstance(schedule, str) and schedule.strip()):
        raise refuse("schedule", "a cron expression or preset such as \"0 3 * * *\" or \"@daily\", or null "
                                 "(run only when triggered)")
    start = options["start_date"]
    if isinstance(start, str):
        try:
            start = date.fromisoformat(start)
        except ValueError:
            raise refuse("start_date", "a date, 2026-01-01 or [2026, 1, 1]") from None
    if isinstance(start, date):
        start = [start.year, start.month, start.day]
    if not (isinstance(start, list) and len(start) == 3 and all(type(part) is int for part in start)):
        raise refuse("start_date", "a date, 2026-01-01 or [2026, 1, 1]")
    try:
        date(*start)
    except ValueError as err:
        raise refuse("start_date", f"a date that exists ({err})") from None
    if not isinstance(options["catchup"], bool):
        raise refuse("catchup", "true or false")
    for key, least in (("max_active_runs", 1), ("retries", 0), ("retry_delay", 0)):
        value = options[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise refuse(key, f"a whole number >= {least}")
    if not isinstance(options["owner"], str) or not options["owner"].strip():
        raise refuse("owner", "a name")
    policy = options["thread_policy"]
    if policy is not None and policy not in _threads.POLICIES:
        hint = closest(policy, _threads.POLICIES) if isinstance(policy, str) else ""
        raise refuse("thread_policy", f"one of {', '.join(_threads.POLICIES)}{hint}, or null (the policy in "
                                      f"force where the task runs: {_threads.DEFAULT_POLICY!r} unless its "
                                      f"environment sets {_threads.POLICY_VARIABLE})")
    return {**options, "start_date": start}


def task_environment(options: Mapping) -> dict[str, str]:
    """The variables the refresh's task sets over Airflow's own environment: no telemetry prompt, and the
    thread policy ``airflow.yml`` names (``ICLFS_THREAD_POLICY``, read before torch loads), if it names one."""
    environment = {"KEDRO_DISABLE_TELEMETRY": "1"}
    if options["thread_policy"] is not None:
        environment[_threads.POLICY_VARIABLE] = options["thread_policy"]
    return environment


def check_environment(env: str, conf: Path) -> None:
    """Refuse an environment that is not a folder of ``conf``, naming those that are (and a did-you-mean)."""
    found = sorted(p.name for p in conf.iterdir() if p.is_dir() and not p.name.startswith(".")) \
        if conf.is_dir() else []
    if env not in found:
        raise SourceError(f"environment {env!r} is not in {conf}{closest(env, found)}: the environments are "
                          f"{', '.join(found) or 'none'}. Give one of them with --env")


def _shown(value: str) -> str:
    """``value`` as a reader sees it: plain when it is a plain name, else its Python literal (a newline shows)."""
    return value if re.fullmatch(r"[A-Za-z0-9_.-]+", value) else repr(value)


def _docstring(source: str, env: str) -> str:
    """The DAG module's docstring as a Python literal: its text escaped so that no value can end it."""
    text = (f"The scheduled refresh of the iclfs data source {source!r}: one task, one select run, one MLflow run.\n"
            f"\nWritten by `kedro dag {_shown(source)} --env {_shown(env)}` from conf/{_shown(env)} "
            f"({datetime.now(timezone.utc):%Y-%m-%d}); write it again after moving the\n"
            "project. The task runs the project's own interpreter in the project's folder, so this file needs\n"
            "Airflow only, never the project's packages.\n")
    escaped = "".join(
        "\\\\" if char == "\\" else '\\"' if char == '"' else char if char == "\n" or char.isprintable()
        else char.encode("unicode_escape").decode("ascii") for char in text)
    return f'"""{escaped}"""'


def write_dag(source: str, env: str = "local", target: Path = Path("airflow_dags"), project: Path | None = None,
              python: str | None = None) -> Path:
    """Check that ``source`` is declared and runs, then write ``<target>/iclfs_<source>.py``; its path."""
    import jinja2
    from kedro.framework.project import settings

    project = (project or Path.cwd()).resolve()
    conf = project / settings.CONF_SOURCE
    check_environment(env, conf)
    loader = settings.CONFIG_LOADER_CLASS(str(conf), env=env, runtime_params={"source": source},
                                          **settings.CONFIG_LOADER_ARGS)  # refuses an undeclared source
    loader["parameters"]  # refuses a declaration that cannot run (its method, its keys)
    source = check_data_source(source)
    try:
        sections = loader["airflow"]
    except (KeyError, MissingConfigException):
        sections = {}
    if not isinstance(sections, Mapping):
        raise SourceError(f"conf/{env}/airflow.yml must hold a mapping (select: {{schedule: ...}}), got "
                          f"{type(sections).__name__}")
    others = sorted(map(str, set(sections) - {"select"}))
    if others:  # kedro-airflow's `default:` section, say: not read, so refused rather than ignored
        raise SourceError(f"conf/{env}/airflow.yml: section(s) {', '.join(others)} are not read; the DAG's "
                          f"settings are the keys of select: ({', '.join(DEFAULTS)})")
    select = sections.get("select")
    options = _options({} if select is None else select, env)  # `select: []` is refused, not read as no settings
    # Every value from a name, a path, the environment or conf enters the file as a Python literal (repr), or
    # inside the docstring's literal, escaped: none is ever code (a folder may be named '""";import os;"""').
    values = {key: repr(value) for key, value in options.items() if key not in ("start_date", "thread_policy")}
    text = jinja2.Environment(autoescape=False, keep_trailing_newline=True).from_string(TEMPLATE.read_text()).render(
        docstring=_docstring(source, env), project=repr(str(project)), dag_id=repr(f"iclfs_{source}"),
        function="iclfs_" + re.sub(r"[^A-Za-z0-9_]", "_", source),
        command=repr(command(source, env, python or sys.executable)),
        start_date=", ".join(str(int(part)) for part in options["start_date"]), source_literal=repr(source),
        environment=repr(task_environment(options)), **values)
    compile(text, f"iclfs_{source}.py", "exec")  # what is written is Python; a fault here is ours, said at once
    target = target if target.is_absolute() else project / target
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"iclfs_{source}.py"
    partial = path.with_suffix(".py.partial")
    partial.write_text(text)
    partial.replace(path)
    return path
