"""The console's log lines: Kedro's rich output on a terminal, plain unwrapped lines anywhere else.

A scheduled job writes its log to a file or a pipe, where rich's panels wrap
every line at 80 columns; there :class:`PlainLogsHook` puts a plain handler
in place of the rich one, each record one line, whole, with its time and
level. (Kedro only builds logging classes of its own allow-list from
``conf/logging.yml``, so the switch is a hook.)
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from kedro.framework.hooks import hook_impl

PLAIN = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


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
        plain.setFormatter(logging.Formatter(PLAIN, "%Y-%m-%d %H:%M:%S"))
        logger.addHandler(plain)
    return bool(rich)


class PlainLogsHook:
    """:func:`plain_off_terminal` as soon as the project's context exists (module docstring)."""

    @hook_impl
    def after_context_created(self, context: Any) -> None:
        plain_off_terminal()
