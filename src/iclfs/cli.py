"""The project's ``kedro run``: Kedro's own command, whose refusals read as one clear message.

A run refused for its input, its parameters or its environment ends with
the message that names the problem (file, column, shape, value) and a
pointer to the README's troubleshooting table, not a page of traceback. The
traceback goes to ``logs/last_error.log``, and ``kedro run --verbose``
prints it as well. Anything else (a bug) keeps Kedro's full report.
"""

from __future__ import annotations

import copy as copy_module
import contextlib
import errno
import logging
import sys
import traceback
from pathlib import Path

import click
import yaml
from kedro.framework.cli.project import run as kedro_run

from iclfs.baselines import METHODS
from iclfs.io._tables import TableReadError
from iclfs.method._config import ParameterError, split_overrides
from iclfs.method._preprocessing import DataValidationError
from iclfs.method._runtime import ResourceLimitError
from iclfs.project._hooks import OutputNotWritableError
from iclfs.project._logs import plain_off_terminal
from iclfs.project._resolvers import DataSourceError
from iclfs.project._runs import RunRecordError, RunStopped
from iclfs.project._tracking import TrackingUnavailableError

#: Errors that are about what the user gave, not about the code: their message is the whole story.
USER_ERRORS = (DataValidationError, ParameterError, TableReadError, DataSourceError, OutputNotWritableError,
               TrackingUnavailableError, ResourceLimitError, RunRecordError, RunStopped)
ERROR_LOG = Path("logs") / "last_error.log"
POINTER = ("What to do: README.md, 'When something goes wrong'. Full traceback: {log} "
           "(or run again with --verbose).")


def user_problem(error: BaseException) -> str | None:
    """The message of the user-facing error behind ``error`` (following its causes), or None for a bug.

    A dataset that cannot read its file (Kedro's ``DatasetError`` from an
    iclfs dataset) counts too: its message names the file and the problem.
    """
    seen = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, USER_ERRORS):
            return str(current)
        if isinstance(current, OSError) and current.errno == errno.ENOSPC:
            where = f" writing {current.filename}" if current.filename else ""
            return (f"the disk is full{where} ({current.strerror}); nothing of this run was kept. Free some "
                    "space and run again")
        if type(current).__name__ == "DatasetError" and _from_iclfs(current):
            return str(current)
        current = current.__cause__ or current.__context__
    return None


def _from_iclfs(error: BaseException) -> bool:
    frames = traceback.extract_tb(error.__traceback__)
    return any("/iclfs/io/" in frame.filename for frame in frames)


#: The project's own options of ``run``, each a runtime parameter (``--k 100`` is ``--params selection.k=100``).
OWN_OPTIONS = {"source": ("source",), "input": ("input",), "orientation": ("orientation",),
               "method": ("selection", "method"), "k": ("selection", "k")}


def _with_own_options(params: dict | None, own: dict) -> dict:
    """``--params`` with the project's own options in it; an option given both ways must agree."""
    params = {key: dict(value) if isinstance(value, dict) else value for key, value in (params or {}).items()}
    for option, path in OWN_OPTIONS.items():
        value = own.get(option)
        if value is None:
            continue
        target = params
        for part in path[:-1]:
            target = target.setdefault(part, {})
        if path[-1] in target and target[path[-1]] != value:
            raise click.BadParameter(f"--{option} {value!r} and --params {'.'.join(path)}={target[path[-1]]!r} "
                                     "disagree: give it once")
        target[path[-1]] = value
    return params


class EntryError(click.UsageError):
    """An environment or a pipeline that does not exist; the message names the ones that do."""


def environments(conf_source: str | None) -> list[str] | None:
    """The Kedro environments of the conf: its folders (or a conf archive's); None when it cannot be read."""
    import tarfile
    import zipfile

    source = Path(conf_source or "conf")
    try:
        if source.is_dir():
            return sorted(p.name for p in source.iterdir() if p.is_dir() and not p.name.startswith("."))
        if tarfile.is_tarfile(source):
            with tarfile.open(source) as archive:
                parts = [Path(m.name).parts for m in archive.getmembers() if m.isdir() or m.isfile()]
        elif zipfile.is_zipfile(source):
            with zipfile.ZipFile(source) as archive:
                parts = [Path(name).parts for name in archive.namelist()]
        else:
            return None
    except OSError:
        return None
    # an archive holds <conf>/<env>/...: the environments are the second level
    return sorted({p[1] for p in parts if len(p) > 2})


def check_entry(env: str | None, conf_source: str | None, pipelines: list[str]) -> None:
    """Refuse an environment or a pipeline that does not exist, naming those that do, before any session."""
    found = environments(conf_source)
    if env and found is not None and env not in found:
        from iclfs.method._config import closest

        raise EntryError(f"environment {env!r} is not in {conf_source or 'conf'}{closest(env, found)}: the "
                         f"environments are {', '.join(found)}")
    if pipelines:
        from kedro.framework.project import pipelines as registered

        names = sorted(registered)
        unknown = [name for name in pipelines if name not in registered]
        if unknown:
            from iclfs.method._config import closest

            raise EntryError(f"pipeline {unknown[0]!r} does not exist{closest(unknown[0], names)}: the pipelines "
                             f"are {', '.join(names)}")
        empty = [name for name in pipelines if not registered[name].nodes]
        if empty:
            raise EntryError(_why_empty(empty[0], env, conf_source))


def _why_empty(name: str, env: str | None, conf_source: str | None) -> str:
    """Why the pipeline ``name`` has no nodes, and the fix (the benchmark's: none of its files is there)."""
    if name != "benchmark":
        return f"pipeline {name!r} has no nodes: there is nothing to run"
    from iclfs.project._conf import project_conf

    benchmark = project_conf(conf_source or "conf", env or "local").get("benchmark", {})
    folders = ", ".join(map(str, benchmark.get("folders", ()))) or "none"
    return (f"pipeline 'benchmark' has no datasets: none of benchmark.datasets has its <name>.mat file in "
            f"benchmark.folders ({folders}). Put the scikit-feature .mat files there, or set benchmark.folders "
            "(conf/local/parameters.yml)")


def _run(verbose: bool, source: str | None = None, input: str | None = None,  # noqa: A002  (the option's name)
         orientation: str | None = None, method: str | None = None, k: int | None = None, **kwargs):
    plain_off_terminal()  # a scheduler's log: one plain line per record, from the first
    if verbose:
        verbose_logs()
    try:
        kwargs["params"] = _with_own_options(kwargs.get("params"), {
            "source": source, "input": input, "orientation": orientation, "method": method, "k": k})
        check_entry(kwargs.get("env"), kwargs.get("conf_source"),
                    [*(kwargs.get("pipelines") or ()), *([kwargs["pipeline"]] if kwargs.get("pipeline") else [])])
        return kedro_run.callback(**kwargs)
    except Exception as err:  # noqa: BLE001  (sorted below: user errors get one message, bugs re-raise)
        problem = user_problem(err)
        if problem is None or verbose:
            raise
        ERROR_LOG.parent.mkdir(parents=True, exist_ok=True)
        ERROR_LOG.write_text("".join(traceback.format_exception(err)))
        click.secho(f"Error: {problem}", err=True, fg="red")
        click.echo(POINTER.format(log=ERROR_LOG), err=True)
        sys.exit(1)


#: The loggers whose every line ``--verbose`` shows: Kedro's (each dataset loaded and saved), the project's.
VERBOSE_LOGGERS = ("kedro", "kedro_mlflow", "iclfs")


def verbose_logs() -> None:
    """Every INFO line of :data:`VERBOSE_LOGGERS` and their children, where the conf's quiet default (logging.yml)
    sets some of them to WARNING; the run summary's own logger keeps its handler."""
    manager = logging.Logger.manager
    for name, logger in list(manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and name.split(".")[0] in VERBOSE_LOGGERS \
                and logger.level > logging.INFO:
            logger.setLevel(logging.INFO)
    for name in VERBOSE_LOGGERS:
        if logging.getLogger(name).getEffectiveLevel() > logging.INFO:
            logging.getLogger(name).setLevel(logging.INFO)


def _readable_params(option: click.Parameter) -> click.Parameter:
    """Kedro's ``--params`` read by one parser, :func:`iclfs.method._config.split_overrides` then OmegaConf's
    dotlist (as Kedro reads each item): a list is kept whole (``selection.k_values=[50,100]``, where Kedro splits
    at every comma), and values YAML cannot read are refused in one line naming the item."""

    def split(ctx: click.Context, param: click.Parameter, value: object) -> object:
        if value is None or isinstance(value, dict):
            return value if value is not None else {}
        from omegaconf import OmegaConf

        items = [item.strip() for item in split_overrides(str(value)) if item.strip()]
        for item in items:
            if "=" not in item:
                ctx.fail(f"Invalid format of `{param.name}` option: Item `{item}` must contain a key and a value "
                         "separated by `=`.")
            if not item.partition("=")[0].strip():
                ctx.fail(f"Invalid format of `{param.name}` option: Parameter key cannot be an empty string.")
        items = [f"{key.strip()}={val}" for key, _, val in (item.partition("=") for item in items)]
        return OmegaConf.to_container(OmegaConf.from_dotlist(items))

    def callback(ctx: click.Context, param: click.Parameter, value: object) -> object:
        try:
            return split(ctx, param, value)
        except yaml.YAMLError as err:
            problem = str(err).splitlines()[0]
            raise click.BadParameter(
                f"{value!r} holds a value YAML cannot read ({problem}). Quote values that start with *, &, !, | "
                "or >: --params \"data_source='*'\"", ctx=ctx, param=param) from None

    copy = copy_module.copy(option)
    copy.callback = callback
    return copy


HELP = """Run a pipeline of iclfs: by default `select`, the production refresh (every stage, validation to report).

\b
A data source declared in conf (parameters_sources.yml) runs by name:
  iclfs --source expr
A file runs once, without a declaration:
  iclfs --input data/01_raw/expr.tsv --orientation features_in_rows
Every setting is a --params key (docs/guides/configuration.md); --method and --k are
selection.method and selection.k. The list is then in data/latest/<source>/<method>/.
"""

#: ``kedro run`` in this project, and ``python -m iclfs`` / the packaged ``iclfs`` command.
run = click.Command(
    name="run",
    params=[
        click.Option(["--source"], help="A data source declared in conf (parameters_sources.yml), by name."),
        click.Option(["--input"], help="A table's file, run once without a declaration (.csv, .tsv, .parquet, "
                                       ".h5ad, .mat; compressed too)."),
        click.Option(["--orientation"], type=click.Choice(["samples_in_rows", "features_in_rows"]),
                     help="features_in_rows for a genes x samples file (default: samples_in_rows)."),
        click.Option(["--method"], help=f"The method: {', '.join(METHODS)} (selection.method; default iclfs)."),
        click.Option(["--k"], type=click.IntRange(min=1), help="The number of features on the list (selection.k)."),
        *(_readable_params(p) if p.name == "params" else p for p in kedro_run.params),
        click.Option(["--verbose"], is_flag=True, help="Show every log line (Kedro's per-dataset lines too), and on "
                                                       "a refused run the full traceback."),
    ],
    callback=_run,
    help=HELP,
)


@click.command(name="dag")
@click.argument("source")
@click.option("--env", "-e", default="local", help="The Kedro environment the refresh runs in (default: local).")
@click.option("--target-dir", default="airflow_dags", type=click.Path(file_okay=False),
              help="Where the DAG file is written (default: airflow_dags/).")
def dag(source: str, env: str, target_dir: str) -> None:
    """Write the Airflow DAG that refreshes the declared data source SOURCE on conf's schedule (airflow.yml).

    One task a refresh: it runs `select` on SOURCE with this project's interpreter, in this folder.
    Copy the file to Airflow's dags folder (Airflow 3).
    """
    from iclfs.project._dag import write_dag

    plain_off_terminal()
    try:
        path = write_dag(source, env=env, target=Path(target_dir), project=Path.cwd())
    except Exception as err:  # noqa: BLE001  (user errors get one message, bugs re-raise)
        problem = user_problem(err)
        if problem is None:
            raise
        click.secho(f"Error: {problem}", err=True, fg="red")
        sys.exit(1)
    click.echo(f"wrote {path}: the DAG {path.stem!r} refreshes {source!r} ({_schedule_of(path)})")


def _schedule_of(path: Path) -> str:
    """The schedule the written DAG holds, and the thread policy its task sets if it sets one, as the user
    reads them."""
    import ast

    from iclfs._threads import POLICY_VARIABLE

    shown, policy = "schedule unknown", None
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.keyword) and node.arg == "schedule" and isinstance(node.value, ast.Constant):
            schedule = node.value.value
            shown = "no schedule: it runs when triggered" if schedule is None else f'schedule "{schedule}"'
        if isinstance(node, ast.keyword) and node.arg == "env" and isinstance(node.value, ast.Dict):
            policy = ast.literal_eval(node.value).get(POLICY_VARIABLE)
    return shown if policy is None else f"{shown}; thread policy {policy}"


class _Stopped(Exception):  # noqa: N818  (a signal, not an error)
    """SIGTERM or SIGINT reached ``iclfs viz``."""


@click.command(name="viz", context_settings={"ignore_unknown_options": True})
@click.option("--host", default="127.0.0.1", help="The address kedro-viz serves on (default: 127.0.0.1).")
@click.option("--port", default=4141, type=click.IntRange(1, 65535), help="Its port (default: 4141).")
@click.option("--browser/--no-browser", default=True, help="Open a browser on it (default: yes).")
@click.argument("options", nargs=-1, type=click.UNPROCESSED)
def viz(host: str, port: int, browser: bool, options: tuple[str, ...]) -> None:
    """Show the project's pipelines in kedro-viz (kedro viz run, in this folder); OPTIONS go to kedro viz run,
    e.g. --pipeline select.

    Ctrl-C or SIGTERM stops the server too: kedro-viz serves from a process of its own, which outlives a plain
    `kedro viz run` stopped by a signal; here it runs in a process group that is stopped as a whole.
    """
    import os
    import signal
    import subprocess

    command = [sys.executable, "-m", "kedro", "viz", "run", "--host", host, "--port", str(port),
               *([] if browser else ["--no-browser"]), *options]
    # a session of its own: a terminal's Ctrl-C reaches this process only, which then stops the whole group
    process = subprocess.Popen(command, start_new_session=True)

    def stop(signum: int, frame: object) -> None:
        raise _Stopped(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        code = process.wait()
    except _Stopped:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        click.echo("kedro-viz stopped", err=True)
        code = 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    sys.exit(code)


@click.group(name="iclfs")
def cli() -> None:
    """Commands of the iclfs project."""


cli.add_command(run)
cli.add_command(dag)
