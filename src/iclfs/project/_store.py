"""The MLflow store: which one (:func:`tracking_config`), checked before a run writes anything (one message naming
the URI, never its password, where it came from and the fix), and a SQLite store opened by one process at a time
(MLflow makes a new store's tables on first use: of two runs started together on a fresh project, one would fail).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kedro.config import MissingConfigException

from iclfs.io._lock import LockTimeoutError, held
from iclfs.method._config import ParameterError

#: A server's answer time and MLflow's retries where the user set none: seconds to fail, not 7 x 120 s.
MLFLOW_TIMEOUTS = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "10", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1"}
CONNECT_TIMEOUT = 5.0
#: How long a run waits for another process that opens a fresh SQLite store (making its tables takes a second).
FIRST_USE_TIMEOUT = 120.0
DEFAULT_URI, IN_CONF = "sqlite:///mlflow.db", "server.mlflow_tracking_uri in mlflow.yml"  # the store, and its origin
#: The project's mlflow.yml keys before kedro-mlflow, and where each lives now.
FORMER_KEYS = {"tracking_uri": "server.mlflow_tracking_uri", "experiment": "tracking.experiment.name",
               "enabled": "tracking.disable_tracking.pipelines (the pipelines not to track, e.g. [select])"}


class TrackingUnavailableError(ConnectionError):
    """The MLflow tracking store cannot take this run; the message names the URI and the fix."""


class TrackingFailedError(TrackingUnavailableError):
    """The run ran, and the MLflow store failed while it was tracked; the message says what was kept."""


def from_store(error: BaseException) -> bool:
    """Whether ``error`` came from MLflow's client or its store (and not from the run's own work)."""
    return type(error).__module__.split(".")[0] in ("mlflow", "sqlalchemy", "sqlite3", "requests", "urllib3")


def mask_credentials(uri: str) -> str:
    """``uri`` with any ``user:password@`` replaced by ``***@``, fit to print or log."""
    parts = urllib.parse.urlsplit(uri)
    if "@" not in parts.netloc:
        return uri
    return urllib.parse.urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def refuse(uri: str, problem: str, origin: str = IN_CONF) -> TrackingUnavailableError:
    """The one-line refusal of a run whose store at ``uri`` (set by ``origin``) has ``problem``."""
    return TrackingUnavailableError(
        f"the MLflow tracking store {mask_credentials(uri)} ({origin}) {problem}. Nothing was run. Fix it, or "
        "track in a local file: server: {mlflow_tracking_uri: sqlite:///mlflow.db} in conf/local/mlflow.yml "
        "(docs/guides/tracking.md).")


def check_tracking_store(uri: str, timeout: float = CONNECT_TIMEOUT, origin: str = IN_CONF) -> None:
    """Raise :class:`TrackingUnavailableError` when the store at ``uri`` cannot take a run; nothing is written.
    A server must answer ``/health`` within ``timeout`` s; a SQLite file must be one, and writable (or creatable);
    a folder store is refused, as MLflow 3 refuses it; other schemes are left to MLflow."""
    scheme = urllib.parse.urlsplit(uri).scheme
    if scheme in ("http", "https"):
        _check_server(uri, timeout, origin)
    elif scheme == "sqlite":
        _check_sqlite(uri, origin)
    elif scheme in ("", "file"):
        raise refuse(uri, "is a folder store, which MLflow 3 no longer opens", origin)


def _check_server(uri: str, timeout: float, origin: str) -> None:
    for key, value in MLFLOW_TIMEOUTS.items():
        os.environ.setdefault(key, value)
    parts = urllib.parse.urlsplit(uri)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            pass
    except OSError as err:
        raise refuse(uri, f"does not answer ({err.strerror or err})", origin) from None
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path.rstrip("/"), "", ""))
    try:
        urllib.request.urlopen(f"{base}/health", timeout=timeout).close()  # noqa: S310  (the user's own server)
    except urllib.error.HTTPError as err:
        if err.code in (401, 403):
            return  # it answered: its authentication is MLflow's to negotiate with the credentials given
        raise refuse(uri, f"answers {err.code} {err.reason} at /health: it is not an MLflow server, or not at "
                          "this address (check the host, port and path)", origin) from None
    except (OSError, TimeoutError) as err:
        raise refuse(uri, f"accepts connections but does not answer within {timeout:g} s "
                          f"({getattr(err, 'reason', err)})", origin) from None


def sqlite_path(uri: str) -> Path | None:
    """The file of a ``sqlite`` store; None for another scheme or an in-memory store."""
    if urllib.parse.urlsplit(uri).scheme != "sqlite":
        return None
    raw = uri[len("sqlite:///"):] if uri.startswith("sqlite:///") else uri[len("sqlite://"):]
    return None if raw in ("", ":memory:") else Path(raw)


def _check_sqlite(uri: str, origin: str) -> None:
    path = sqlite_path(uri)
    if path is None:
        return
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise refuse(uri, f"is a folder ({path}), not a SQLite file", origin)
    if not path.exists():
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise refuse(uri, f"cannot be created: the folder {folder} is not writable or does not exist", origin)
        return
    with open(path, "rb") as handle:
        header = handle.read(16)
    if header and header != b"SQLite format 3\x00":
        raise refuse(uri, f"is not a SQLite database ({path} is damaged or another kind of file)", origin)
    if not os.access(path, os.W_OK) or not os.access(folder, os.W_OK):
        raise refuse(uri, f"is read-only ({path} or its folder cannot be written)", origin)
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=CONNECT_TIMEOUT)) as db:
            db.execute("PRAGMA quick_check").fetchone()
    except sqlite3.DatabaseError as err:
        raise refuse(uri, f"cannot be read as a database ({err})", origin) from None


def make_experiment(uri: str, experiment: dict) -> str | None:
    """Make a missing experiment before kedro-mlflow does: of two first runs on a fresh server, the loser carries on
    (kedro-mlflow would fail it). One with ``create_experiment_kwargs`` is left to kedro-mlflow to make. The
    experiment's id, where it exists now and is not deleted (kedro-mlflow restores a deleted one)."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment["name"])
    if found is None and not any((experiment.get("create_experiment_kwargs") or {}).values()):
        with contextlib.suppress(mlflow.exceptions.MlflowException):
            client.create_experiment(experiment["name"])
        found = client.get_experiment_by_name(experiment["name"])
    return found.experiment_id if found is not None and found.lifecycle_stage == "active" else None


#: What MLflow exports for subprocesses when a session sets its store and experiment: in one process (a notebook,
#: the tests), the next session would read them as the user's.
EXPORTED = ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_ID")
_left: dict[str, tuple[str | None, str | None]] = {}  # {variable: (its value before the session, the value left)}
SESSION_RUNS: set[str] = set()  # the MLflow runs that sessions of this process started


def leave_earlier_session() -> dict[str, str | None]:
    """Start from the process's MLflow state before any session: a run an earlier session left active is ended
    (FAILED if it still shows RUNNING), and the variables it left are put back (one the user set since is kept). A run
    the user started is kept, as kedro-mlflow tracks into it. The variables now, for :func:`note_session`."""
    import mlflow

    while (run := mlflow.active_run()) is not None and run.info.run_id in SESSION_RUNS:
        status = "FAILED"
        with contextlib.suppress(Exception):
            status = mlflow.MlflowClient().get_run(run.info.run_id).info.status.replace("RUNNING", "FAILED")
        leave(run.info.run_id, status)
    for name, (before, left) in _left.items():
        if os.environ.get(name) != left:
            continue  # set since, by the user
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before
    _left.clear()
    return {name: os.environ.get(name) for name in EXPORTED}


def note_session(before: dict[str, str | None]) -> None:
    """Note the variables this session's MLflow set (``before``: as they were), for the next session to put back."""
    _left.update({name: (before[name], os.environ.get(name)) for name in EXPORTED
                  if os.environ.get(name) != before[name]})


def is_active(run_id: str) -> bool:
    import mlflow

    return (active := mlflow.active_run()) is not None and active.info.run_id == run_id


def leave(run_id: str, status: str) -> None:
    """Leave the run (every time it is on mlflow's stack: nested), writing ``status`` where the store takes it."""
    import mlflow

    while is_active(run_id):
        with contextlib.suppress(Exception):  # end_run lets go of the run before it writes its status
            mlflow.end_run(status)


@contextlib.contextmanager
def opened_alone(uri: str, timeout: float = FIRST_USE_TIMEOUT) -> Iterator[None]:
    """Hold the SQLite store at ``uri`` for this process alone: ``.<file>.lock`` beside it (:mod:`iclfs.io._lock`,
    on :mod:`filelock`), so a run that waits past ``timeout`` s names the process that holds it."""
    path = sqlite_path(uri)
    if path is None:
        yield
        return
    with contextlib.ExitStack() as holding:
        try:
            holding.enter_context(held(path.with_name(f".{path.name}.lock"), f"the MLflow tracking store {path}",
                                       timeout))
        except LockTimeoutError as err:
            raise TrackingUnavailableError(
                f"the MLflow tracking store {path} is being opened by another process ({err.holder})"
                f" for more than {timeout:g} s. Nothing was run. Wait for it to finish, or stop it, and run again."
            ) from None
        yield


def tracking_config(loader: Any) -> tuple[dict, str]:
    """``mlflow.yml`` checked against kedro-mlflow's schema, with the store this run tracks to; and where the
    store came from. A former key, an unknown key or a value of the wrong type is one :class:`ParameterError`."""
    try:
        config = dict(loader["mlflow"] or {})
    except MissingConfigException:
        config = {}
    former = sorted(set(config) & set(FORMER_KEYS))
    if former:
        raise ParameterError("mlflow.yml: " + "; ".join(f"{key} is now {FORMER_KEYS[key]}" for key in former)
                             + " (kedro-mlflow's mlflow.yml: docs/guides/tracking.md)")
    from kedro_mlflow.config.kedro_mlflow_config import KedroMlflowConfig
    from pydantic import ValidationError

    try:
        KedroMlflowConfig.model_validate(config)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']} (got {e['input']!r})" for e in err.errors())
        raise ParameterError(f"mlflow.yml: {problems} (kedro-mlflow's mlflow.yml: docs/guides/tracking.md)") from None
    server, tracking = dict(config.get("server") or {}), dict(config.get("tracking") or {})
    origin, uri = IN_CONF, server.get("mlflow_tracking_uri") or DEFAULT_URI
    if os.environ.get("MLFLOW_TRACKING_URI"):  # MLflow's convention: the environment wins
        origin, uri = "MLFLOW_TRACKING_URI in the environment", os.environ["MLFLOW_TRACKING_URI"]
    tracking["experiment"] = {"name": "iclfs", **(tracking.get("experiment") or {})}
    return {**config, "server": {**server, "mlflow_tracking_uri": uri}, "tracking": tracking}, origin
