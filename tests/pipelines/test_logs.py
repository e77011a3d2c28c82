"""The console's log lines (issue 61 item 9): quiet by default, every line on request, one prefix inside Airflow."""

from __future__ import annotations

import io
import logging

import yaml

from iclfs.project import _logs
from tests.conftest import PROJECT_ROOT


def level_of(conf: dict, name: str) -> int:
    """The effective level conf/logging.yml gives the logger ``name`` (its own, else its nearest parent's)."""
    loggers = conf.get("loggers") or {}
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        entry = loggers.get(".".join(parts[:end]))
        if entry and "level" in entry:
            return logging.getLevelName(entry["level"])
    return logging.getLevelName((conf.get("root") or {}).get("level", "WARNING"))


def test_kedros_per_dataset_lines_are_quiet_and_the_nodes_and_the_projects_are_not():
    conf = yaml.safe_load((PROJECT_ROOT / "conf" / "logging.yml").read_text())
    assert level_of(conf, "kedro.io.data_catalog") == logging.WARNING  # "Loading data from ...", "Saving data to ..."
    assert level_of(conf, "kedro.pipeline.node") == logging.INFO  # "Running node: ..."
    assert level_of(conf, "kedro.runner.sequential_runner") == logging.INFO  # "Completed 3 out of 25 tasks"
    assert level_of(conf, "iclfs.project._runs") == logging.INFO
    assert level_of(conf, "iclfs.summary") == logging.INFO


class RichHandler(logging.StreamHandler):
    """Stands in for Kedro's (only its class name is read): plain_off_terminal replaces it."""


def plain_line(monkeypatch, airflow: bool) -> str:
    if airflow:
        monkeypatch.setenv("AIRFLOW_CTX_DAG_ID", "iclfs_t")
    else:
        monkeypatch.delenv("AIRFLOW_CTX_DAG_ID", raising=False)
    stderr = io.StringIO()  # not a terminal
    monkeypatch.setattr(_logs.sys, "stderr", stderr)
    logger = logging.Logger("test")
    logger.addHandler(RichHandler())
    assert _logs.plain_off_terminal(logger)
    record = logging.LogRecord("iclfs.project._runs", logging.WARNING, __file__, 1, "the run was stopped", None, None)
    logger.handle(record)
    return stderr.getvalue()


def test_inside_airflow_a_line_has_one_prefix(monkeypatch):
    assert plain_line(monkeypatch, airflow=True) == "WARNING iclfs.project._runs: the run was stopped\n"


def test_off_a_terminal_elsewhere_a_line_carries_its_time_and_level(monkeypatch):
    line = plain_line(monkeypatch, airflow=False)
    assert line.endswith(" WARNING iclfs.project._runs: the run was stopped\n") and line[:4].isdigit()
