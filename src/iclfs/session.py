"""The project's Kedro session: a benchmark run skips datasets whose file is absent.

``kedro run --pipeline benchmark`` runs one namespace per dataset. When some
of the files are missing, the run goes on with the others and names the
missing ones (file and path); the report lists them as not run. Asking for a
missing one by name (``--namespaces nci9``) is an error that says where the
file was looked for. Without this, the first missing file would stop the
whole run when its node came to load it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from kedro.framework.context import KedroContext
from kedro.framework.project import pipelines
from kedro.framework.session import KedroSession
from kedro.pipeline import Pipeline

LOGGER = logging.getLogger(__name__)
RAW = "raw_data"


class BenchmarkDataMissingError(FileNotFoundError):
    """Raised when a benchmark dataset asked for by name, or every one of them, has no file."""


def _root_namespace(namespace: str | None) -> str | None:
    return namespace.split(".")[0] if namespace else None


class IclfsSession(KedroSession):
    """``KedroSession`` that leaves out benchmark namespaces whose raw file does not exist."""

    _run_context: KedroContext | None = None

    def load_context(self) -> KedroContext:
        # The context built to look for the raw files is the run's context:
        # building a second one would read the configuration and fire the
        # after_context_created hooks twice.
        if self._run_context is not None:
            return self._run_context
        return super().load_context()

    def run(self, pipeline_name: str | None = None, pipeline_names: list[str] | None = None,
            namespaces: Iterable[str] | None = None, node_names: Iterable[str] | None = None,
            **kwargs: Any) -> dict[str, Any]:
        names = pipeline_names or [pipeline_name or "__default__"]
        selected = sum((pipelines[name] for name in names if name in pipelines), Pipeline([]))
        raw_inputs = {name.rsplit(".", 1)[0]: name for name in selected.inputs()
                      if name.endswith(f".{RAW}") and "." in name}
        try:
            if raw_inputs:
                self._run_context = self.load_context()
                missing = self._missing_sources(self._run_context.catalog, raw_inputs, namespaces)
                if missing:
                    node_names = self._without(selected, missing, node_names)
            return super().run(pipeline_name=pipeline_name, pipeline_names=pipeline_names, namespaces=namespaces,
                               node_names=node_names, **kwargs)
        finally:
            self._run_context = None

    @staticmethod
    def _missing_sources(catalog: Any, raw_inputs: dict[str, str],
                         namespaces: Iterable[str] | None) -> dict[str, str]:
        """``{namespace: file}`` for the namespaces of this run whose raw file is absent."""
        requested = [ns for ns in raw_inputs if not namespaces or ns in set(namespaces)]
        missing = {}
        for ns in requested:
            dataset = catalog.get(raw_inputs[ns])
            if not dataset.exists():
                missing[ns] = str(dataset._describe().get("filepath", raw_inputs[ns]))
        listed = "\n  ".join(f"{ns}: {path} not found" for ns, path in missing.items())
        if namespaces and missing:
            raise BenchmarkDataMissingError(
                f"the data of the requested namespace(s) is missing:\n  {listed}\n"
                "Put the files there or set datasets_dir in conf/base/globals.yml."
            )
        if missing and len(missing) == len(requested):
            raise BenchmarkDataMissingError(
                f"none of the benchmark files was found:\n  {listed}\n"
                "Set datasets_dir in conf/base/globals.yml to the folder that holds them."
            )
        if missing:
            LOGGER.warning("Skipping %d benchmark dataset(s) whose file is absent (the report lists them as "
                           "not run):\n  %s", len(missing), listed)
        return missing

    @staticmethod
    def _without(selected: Pipeline, missing: dict[str, str], node_names: Iterable[str] | None) -> list[str]:
        """The node names of this run, minus the nodes of the missing namespaces."""
        wanted = set(node_names) if node_names else None
        return [node.name for node in selected.nodes
                if _root_namespace(node.namespace) not in missing and (wanted is None or node.name in wanted)]
