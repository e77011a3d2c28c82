"""The console's log lines: Kedro's rich output on a terminal, plain unwrapped lines anywhere else.

A scheduled job writes its log to a file or a pipe, where rich's panels wrap
every line at 80 columns; there :func:`plain_off_terminal` puts a plain handler
in place of the rich one, each record one line, whole, with its time and
level (inside an Airflow task, whose logger stamps each line with its own
time, the level and logger only). Kedro only builds logging classes of its
own allow-list from ``conf/logging.yml``, so the lifecycle hook makes the
switch.

Quiet by default: ``conf/logging.yml`` sets Kedro's per-dataset lines
(``kedro.io``) to WARNING; ``kedro run --verbose`` shows them.
"""

from __future__ import annotations

import logging
import os
import sys

PLAIN = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
#: Inside an Airflow task, whose logger puts its own time and level before every line the task prints.
IN_AIRFLOW = "%(levelname)s %(name)s: %(message)s"


def in_airflow() -> bool:
    """Whether this process is an Airflow task's (Airflow sets ``AIRFLOW_CTX_DAG_ID`` for the command it runs)."""
    return bool(os.environ.get("AIRFLOW_CTX_DAG_ID"))


def on_terminal(stream=None) -> bool:
    """Whether ``stream`` (standard error by default) is an interactive terminal."""
    stream = sys.stderr if stream is None else stream
    return bool(getattr(stream, "isatty", lambda: False)())


def plain_off_terminal(logger: logging.Logger | None = None) -> bool:
    """Off a terminal, replace ``logger``'s (the root's) rich handlers with one plain handler on standard error.
    Whether anything was replaced."""
    logger = logger or logging.getLogger()
    if on_terminal():
        return False
    rich = [h for h in logger.handlers if type(h).__name__ == "RichHandler"]
    for handler in rich:
        logger.removeHandler(handler)
        plain = logging.StreamHandler(sys.stderr)
        plain.setLevel(handler.level)
        # inside Airflow its own prefix carries the time: one prefix a line, not two
        plain.setFormatter(logging.Formatter(IN_AIRFLOW) if in_airflow() else logging.Formatter(PLAIN,
                                                                                                "%Y-%m-%d %H:%M:%S"))
        logger.addHandler(plain)
    return bool(rich)
