"""``kedro run --runner iclfs.runner.DaskRunner``: the project's nodes as tasks on a dask.distributed cluster.

One line in ``conf/local/dask.yml`` moves a run from this machine to a cluster::

    dask:
      scheduler: tcp://scheduler-host:8786   # null: a LocalCluster on this machine

or, for one run, ``--runner-params scheduler=tcp://scheduler-host:8786``.
With no address the runner starts a ``LocalCluster`` of
``dask.n_workers`` worker processes (null: the CPUs this process may use,
:func:`iclfs.method._runtime.available_cpus`) of ``dask.threads_per_worker``
threads each, and closes it when the run ends.

How a run is executed
---------------------
Every node is submitted with ``client.submit``; a node's task waits on the
tasks of the nodes it depends on (their futures are its arguments), so the
scheduler runs independent nodes (one namespace per benchmark dataset, the
baselines beside the training) at the same time. The run's catalog is
shipped to the workers once (``client.scatter``) and every worker loads a
node's inputs and saves its outputs through it: data moves between nodes
only through the catalog's files, never in memory between workers. Those
files must therefore be where every worker sees them (a shared filesystem,
or object storage in the catalog), and ``iclfs`` must be installed on every
worker.

Datasets that cannot live on a worker
-------------------------------------
Two kinds of dataset exist only in the driver (the ``kedro run`` process):

* **in memory** (``MemoryDataset`` and other ephemeral datasets): a worker's
  copy of the catalog would hold the data where no other process can read it.
  A pipeline in which a node reads a ``MemoryDataset`` that another node
  writes is refused before anything runs, with those datasets named: give
  them a catalog entry. Parameters (``params:*``, ``parameters``) and other
  in-memory *inputs* of the pipeline are fine: they travel with the catalog.
* **tracking** (``kedro_mlflow`` datasets a user declares in the catalog:
  metrics, artifacts, models): they log to the MLflow run that kedro-mlflow
  opened in the driver (tests/distributed/test_tracking_datasets.py). Saved on a
  worker, where no run is active, MLflow would open a stray run of its own.

The choice made here: **every node runs on a worker, and the outputs that
belong to the driver travel back to it.** The worker saves a node's persisted
outputs itself and returns the others (metric histories, in-memory outputs
no node reads: small by nature) as the task's result; the driver saves them
through its own catalog, in the process and thread where kedro-mlflow's run
is active, with the dataset hooks around each save. So MLflow is only ever
written from the driver, and no stray run can appear; yet the training node,
which also writes a metric history, trains on a worker. (The simpler rule of
running such nodes whole on the driver would keep every ``train_members`` on
this machine.) Only a node that *reads* a tracking dataset, or a generator
node (outputs in chunks), runs whole in the driver, with every hook, as
``SequentialRunner`` runs it.

Hooks
-----
Pipeline hooks (``before_pipeline_run`` ...) run in the driver as usual.
Node and dataset hooks do **not** run on the workers: a worker has no hook
manager (the project's hooks would need the session, and MLflow's active
run, which exist only in the driver). In the driver:

* ``before_node_run`` is called for each node sent to a worker, when it is
  sent, with its *parameter* inputs only (``params:*``, ``parameters``, held
  by the driver): kedro-mlflow logs the parameters of the run's method (its
  companion, :class:`iclfs.project._tracking.TrackingHook`, shows it no
  other), as with ``SequentialRunner``. A hook that returns replacement inputs for such a
  node is refused (they could not reach the worker).
* ``before_dataset_saved`` / ``after_dataset_saved`` are called for the
  outputs the driver saves itself (the tracking and in-memory ones).
* ``after_node_run``, ``on_node_error``, the load hooks, and the save hooks
  of the files a worker writes are not called for nodes run on workers. In
  this project :class:`iclfs.project._tracking.TrackingHook` logs the
  artifacts that workers wrote from their files when the pipeline ends.

Nodes that run whole in the driver get every hook.

A node that fails stops the run: its error is raised in the driver, with
the worker's traceback, the tasks not started are cancelled, and Kedro's
hint to resume (``--from-nodes``) is logged. A worker that dies is replaced
by Dask and its task run again elsewhere (``distributed.scheduler.allowed-failures``);
a node saved half-way by a dying worker refuses to save again over the
version it left (the run's versions are never overwritten): run again.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kedro.io import CachedDataset
from kedro.runner import AbstractRunner, Task

from iclfs.io._kedro import ephemeral, null_hook_manager, wrapped

if TYPE_CHECKING:
    from kedro.io import CatalogProtocol
    from kedro.pipeline import Pipeline
    from kedro.pipeline.node import Node
    from pluggy import PluginManager

#: Dataset classes from these packages write to the driver's MLflow run: saved in the driver only.
TRACKING_MODULES = ("kedro_mlflow.",)
#: The keys of ``dask`` in ``conf/<env>/dask.yml``, and their values when the file has none.
DEFAULTS = {"scheduler": None, "n_workers": None, "threads_per_worker": 1}


def driver_environment() -> dict[str, str | None]:
    """This process's values (None: unset) of the variables a Dask nanny sets in it before it starts a worker.

    A LocalCluster's nanny lives in the process that starts the cluster and writes its
    ``distributed.nanny.pre-spawn-environ`` (``OMP_NUM_THREADS=1``, ``MKL_NUM_THREADS=1``,
    ``OPENBLAS_NUM_THREADS=1``, ``MALLOC_TRIM_THRESHOLD_``) into that process's own ``os.environ``, so that the
    worker it spawns inherits them, and never takes them back. Left there, a user's next run from the same
    Python process (a notebook, a second ``KedroSession``) would start its processes on one thread, and read
    ``OMP_NUM_THREADS=1`` as a count the user chose (:mod:`iclfs._threads`).
    """
    import dask

    names = dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {}
    return {name: os.environ.get(name) for name in names}


def restore_environment(saved: dict[str, str | None]) -> None:
    """Put back the values :func:`driver_environment` read: set them again, or unset those that were unset."""
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


class InMemoryIntermediateError(ValueError):
    """Raised before a run when nodes would hand data to each other through ``MemoryDataset``s."""


# --- configuration ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DaskSettings:
    """Where a run's tasks go: the scheduler at ``scheduler``, else a LocalCluster of this size."""

    scheduler: str | None = None
    n_workers: int | None = None
    threads_per_worker: int = 1

    @classmethod
    def from_dict(cls, values: dict[str, Any], source: str = "dask") -> DaskSettings:
        unknown = sorted(set(values) - set(DEFAULTS))
        if unknown:
            raise ValueError(f"{source}: unknown key(s) {unknown}; known: {sorted(DEFAULTS)}")
        merged = {**DEFAULTS, **values}
        scheduler = merged["scheduler"]
        if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
            raise ValueError(f"{source}: scheduler must be an address such as tcp://host:8786, or null; "
                             f"got {scheduler!r}")
        for key, allow_none in (("n_workers", True), ("threads_per_worker", False)):
            value = merged[key]
            if value is None and allow_none:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{source}: {key} must be a positive integer{' or null' if allow_none else ''}; "
                                 f"got {value!r}")
        return cls(scheduler.strip() if scheduler else None, merged["n_workers"], merged["threads_per_worker"])


def read_dask_conf(conf_source: str | Path | None = None, env: str | None = None) -> dict[str, Any]:
    """The ``dask`` section of the project's ``dask.yml`` files: base, then ``env`` (``local`` by default).

    Read with Kedro's ``OmegaConfigLoader`` and the project's loader settings
    (:data:`iclfs.settings.CONFIG_LOADER_ARGS`) from ``conf_source``, by
    default ``conf/`` under the working directory (where ``kedro run`` runs).
    ``env`` defaults to ``$KEDRO_ENV``, then the loader's ``local``; an env
    without a folder is skipped. No conf folder, or no ``dask.yml``: ``{}``.
    """
    import warnings

    from kedro.config import MissingConfigException, OmegaConfigLoader

    from iclfs.settings import CONFIG_LOADER_ARGS

    conf = Path(conf_source) if conf_source is not None else Path.cwd() / "conf"
    if not conf.is_dir():
        return {}
    base = CONFIG_LOADER_ARGS.get("base_env", "base")
    env = env or os.environ.get("KEDRO_ENV") or CONFIG_LOADER_ARGS.get("default_run_env", "local")
    if not (conf / env).is_dir():  # no conf/local (a fresh clone): base alone, as Kedro cannot read a missing env
        env = base
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # soft merge: conf/local/dask.yml may set the scheduler alone and keep base's other keys
        options = {**CONFIG_LOADER_ARGS,
                   "merge_strategy": {**CONFIG_LOADER_ARGS.get("merge_strategy", {}), "dask": "soft"}}
        loader = OmegaConfigLoader(str(conf), env=env, config_patterns={"dask": ["dask*", "dask*/**", "**/dask*"]},
                                   **options)
        try:
            found = loader["dask"]
        except MissingConfigException:
            return {}
    section = found.get("dask") or {}
    if not isinstance(section, dict):
        raise ValueError(f"{conf}: dask.yml must hold a mapping under 'dask'; got {section!r}")
    return dict(section)


# --- what runs where ------------------------------------------------------------------------------------------


def _dataset(catalog: CatalogProtocol, name: str) -> Any:
    return catalog.get(name, fallback_to_runtime_pattern=True)


def in_memory(dataset: Any) -> bool:
    """Whether a dataset keeps its data in the process that saved it (a ``MemoryDataset`` and its kin).

    A ``CachedDataset`` is judged by the dataset it wraps: it saves through it.
    """
    if isinstance(dataset, CachedDataset):
        return in_memory(wrapped(dataset))
    return dataset is None or ephemeral(dataset)


def tracking(dataset: Any) -> bool:
    """Whether a dataset writes to the driver's MLflow run (kedro-mlflow's datasets)."""
    return type(dataset).__module__.startswith(TRACKING_MODULES)


def in_memory_intermediates(pipeline: Pipeline, catalog: CatalogProtocol) -> list[str]:
    """Datasets one node of ``pipeline`` writes and another reads that live only in memory, sorted."""
    written = set(chain.from_iterable(node.outputs for node in pipeline.nodes))
    read = set(chain.from_iterable(node.inputs for node in pipeline.nodes))
    return sorted(name for name in written & read if in_memory(_dataset(catalog, name)))


def refuse_in_memory_intermediates(pipeline: Pipeline, catalog: CatalogProtocol) -> None:
    names = in_memory_intermediates(pipeline, catalog)
    if names:
        readers = {name: sorted(node.name for node in pipeline.nodes if name in node.inputs) for name in names}
        listed = "\n  ".join(f"{name} (read by {', '.join(readers[name])})" for name in names)
        raise InMemoryIntermediateError(
            f"DaskRunner runs nodes in other processes, possibly on other machines, and passes data between them "
            f"only through the catalog; these datasets would be held in memory (MemoryDataset) by the worker "
            f"that writes them, where the nodes that read them cannot see them:\n  {listed}\n"
            "Give each one a catalog entry that saves to a file (e.g. a pickle.PickleDataset), or run this "
            "pipeline with SequentialRunner. Nothing was run."
        )


def driver_outputs(node: Node, catalog: CatalogProtocol) -> frozenset[str]:
    """The outputs of ``node`` the driver saves: tracking datasets and in-memory ones."""
    return frozenset(name for name in node.outputs
                     if tracking(ds := _dataset(catalog, name)) or in_memory(ds))


def runs_on_driver(node: Node, catalog: CatalogProtocol) -> bool:
    """A node that reads a tracking dataset (it loads from the driver's MLflow run) or yields its outputs."""
    return inspect.isgeneratorfunction(node.func) or any(tracking(_dataset(catalog, name)) for name in node.inputs)


def _parameter_inputs(node: Node) -> list[str]:
    return [name for name in node.inputs if name.startswith("params:") or name == "parameters"]


# --- on a worker --------------------------------------------------------------------------------------------


def run_node_on_worker(node: Node, catalog: CatalogProtocol, keep: frozenset[str], is_async: bool,
                       *upstream: Any) -> dict[str, Any]:
    """Run ``node`` with the catalog's datasets: load its inputs, save the outputs not in ``keep``.

    ``upstream`` are the results of the tasks this one waited for (unused).
    Persisted inputs are released first, so a worker that read a dataset
    before reads it again from its file (the catalog copy on a worker lives
    as long as the run). Returns the outputs in ``keep``, for the driver to save.
    """
    for name in node.inputs:
        if not in_memory(catalog.get(name)):
            catalog.release(name)
    if is_async and len(node.inputs) > 1:
        with ThreadPoolExecutor() as pool:
            inputs = dict(zip(node.inputs, pool.map(catalog.load, node.inputs), strict=True))
    else:
        inputs = {name: catalog.load(name) for name in node.inputs}
    outputs = node.run(inputs)
    saved = {name: data for name, data in outputs.items() if name not in keep}
    if is_async and len(saved) > 1:
        with ThreadPoolExecutor() as pool:
            list(pool.map(lambda item: catalog.save(*item), saved.items()))
    else:
        for name, data in saved.items():
            catalog.save(name, data)
    for name in node.confirms:
        catalog.confirm(name)
    return {name: data for name, data in outputs.items() if name in keep}


def _finished(result: Any) -> None:
    """The marker a node's downstream tasks wait on: it carries no data to them."""
    return None


# --- the runner -----------------------------------------------------------------------------------------------


class DaskRunner(AbstractRunner):
    """Run a Kedro pipeline's nodes as tasks on a dask.distributed cluster (module docstring).

    Parameters
    ----------
    scheduler : str, optional
        The scheduler's address (``tcp://host:8786``). Default: ``dask.scheduler``
        of the project's ``dask.yml``; none there: a ``LocalCluster`` on this machine.
    n_workers, threads_per_worker : int, optional
        The ``LocalCluster``'s size. Default: ``dask.yml``'s; ``n_workers`` null
        there: :func:`iclfs.method._runtime.available_cpus`.
    is_async : bool
        Load a node's inputs and save its outputs with threads, on the worker.
    conf_source, env : optional
        Where ``dask.yml`` is read (default ``./conf``, env ``$KEDRO_ENV`` or ``local``).

    ``kedro run --runner iclfs.runner.DaskRunner [--runner-params scheduler=tcp://host:8786]``
    creates it with no other arguments.
    """

    def __init__(self, scheduler: str | None = None, n_workers: int | None = None,
                 threads_per_worker: int | None = None, is_async: bool = False,
                 conf_source: str | Path | None = None, env: str | None = None):
        super().__init__(is_async=is_async)
        if importlib.util.find_spec("distributed") is None:
            raise ImportError('DaskRunner needs dask.distributed: pip install "torch==2.13.0" '
                              '"dask[distributed]==2026.8.*" (torch on the same line keeps the CPU wheel)')
        conf = read_dask_conf(conf_source, env)
        given = {key: value for key, value in (("scheduler", scheduler), ("n_workers", n_workers),
                                               ("threads_per_worker", threads_per_worker)) if value is not None}
        self.settings = DaskSettings.from_dict({**conf, **given}, source="dask settings (dask.yml, runner params)")

    @property
    def scheduler(self) -> str | None:
        """The address the runner connects to; None: a LocalCluster it starts itself."""
        return self.settings.scheduler

    def _get_executor(self, max_workers: int) -> None:  # the cluster is the executor
        return None

    def _local_cluster_size(self) -> int:
        from iclfs.method._runtime import available_cpus

        return self.settings.n_workers or available_cpus()

    def _connect(self) -> tuple[Any, Any]:
        """A client of the configured scheduler, or of a LocalCluster started here (then also the cluster)."""
        from dask.distributed import Client, LocalCluster

        if self.settings.scheduler:
            self._logger.info("Connecting to the Dask scheduler at %s", self.settings.scheduler)
            return Client(self.settings.scheduler, set_as_default=False), None
        workers = self._local_cluster_size()
        self._logger.info("Starting a Dask LocalCluster: %d worker process(es) of %d thread(s)", workers,
                          self.settings.threads_per_worker)
        cluster = LocalCluster(n_workers=workers, threads_per_worker=self.settings.threads_per_worker,
                               processes=True, dashboard_address=None)
        return Client(cluster, set_as_default=False), cluster

    def _run(self, pipeline: Pipeline, catalog: CatalogProtocol, hook_manager: PluginManager | None = None,
             run_id: str | None = None) -> None:
        refuse_in_memory_intermediates(pipeline, catalog)  # before any connection: nothing has run
        hook_manager = hook_manager or null_hook_manager()
        on_driver = {node for node in pipeline.nodes if runs_on_driver(node, catalog)}
        keep = {node: driver_outputs(node, catalog) for node in pipeline.nodes}
        driver = driver_environment()
        client, cluster = self._connect()
        restore_environment(driver)  # the workers have started with the nanny's variables
        try:
            self._run_on(client, pipeline, catalog, hook_manager, run_id, on_driver, keep)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
            restore_environment(driver)  # a worker the nanny started again set them once more

    def _run_on(self, client: Any, pipeline: Pipeline, catalog: CatalogProtocol, hook_manager: Any,
                run_id: str | None, on_driver: set[Node], keep: dict[Node, frozenset[str]]) -> None:
        from dask.distributed import as_completed

        nodes = pipeline.nodes  # topologically sorted
        dependencies = pipeline.node_dependencies
        load_counts = Counter(chain.from_iterable(node.inputs for node in nodes))
        token = uuid.uuid4().hex[:12]  # keys of this run only (a session id is a timestamp: not unique enough)
        shipped = client.scatter(catalog, broadcast=False, hash=False)
        markers: dict[Node, Any] = {}  # worker node -> the future its downstream tasks wait on
        running: dict[Any, Node] = {}  # a node's task future -> node
        done: set[Node] = set()
        pending = list(nodes)
        completions = as_completed(loop=client.loop)  # the node tasks, as they finish

        def submit_ready() -> None:
            # A worker node is submitted once every upstream node is submitted (on a worker: its marker,
            # which the task waits for) or done (in the driver). Driver nodes run here once upstream is done.
            progress = True
            while progress:
                progress = False
                for node in list(pending):
                    upstream = dependencies[node]
                    if node in on_driver:
                        if upstream <= done:
                            pending.remove(node)
                            try:
                                self._run_in_driver(node, catalog, hook_manager, run_id)
                            except Exception:
                                self._suggest_resume_scenario(pipeline, done, catalog)
                                raise
                            self._completed(node, done, nodes, catalog, load_counts, pipeline)
                            progress = True
                        continue
                    if all(up in done or up in markers for up in upstream):
                        pending.remove(node)
                        self._announce(node, catalog, hook_manager, run_id)
                        waits = [markers[up] for up in upstream if up in markers and up not in done]
                        future = client.submit(run_node_on_worker, node, shipped, keep[node], self._is_async,
                                               *waits, key=f"{node.name}-{token}", pure=False)
                        markers[node] = client.submit(_finished, future, key=f"{node.name}-done-{token}",
                                                      pure=False)
                        running[future] = node
                        completions.add(future)
                        progress = True

        try:
            submit_ready()
            while running:
                future = next(completions)
                node = running.pop(future)
                try:
                    returned = future.result()
                except Exception:
                    self._suggest_resume_scenario(pipeline, done, catalog)
                    raise
                self._save_in_driver(node, returned, catalog, hook_manager)
                self._completed(node, done, nodes, catalog, load_counts, pipeline)
                submit_ready()
            if pending:  # cannot happen with a valid pipeline (every node's upstream is in it)
                raise RuntimeError(f"DaskRunner could not schedule: {sorted(n.name for n in pending)}")
        except BaseException:
            unfinished = [future for future in running if not future.done()]
            if unfinished:  # their markers and every task waiting on them go with them
                client.cancel(unfinished)
            raise

    def _completed(self, node: Node, done: set[Node], nodes: list[Node], catalog: CatalogProtocol,
                   load_counts: Counter, pipeline: Pipeline) -> None:
        done.add(node)
        self._logger.info("Completed node: %s", node.name)
        self._logger.info("Completed %d out of %d tasks", len(done), len(nodes))
        self._release_datasets(node, catalog, load_counts, pipeline)

    def _run_in_driver(self, node: Node, catalog: CatalogProtocol, hook_manager: Any, run_id: str | None) -> None:
        self._logger.info("Running node %s in the driver (it reads a tracking dataset or yields its outputs)",
                          node.name)
        Task(node=node, catalog=catalog, hook_manager=hook_manager, is_async=self._is_async,
             run_id=run_id).execute()

    def _announce(self, node: Node, catalog: CatalogProtocol, hook_manager: Any, run_id: str | None) -> None:
        """``before_node_run`` in the driver with the node's parameters (kedro-mlflow logs them)."""
        inputs = {name: catalog.load(name) for name in _parameter_inputs(node)}
        responses = hook_manager.hook.before_node_run(node=node, catalog=catalog, inputs=inputs,
                                                      is_async=self._is_async, run_id=run_id)
        if any(responses or ()):
            raise ValueError(f"a before_node_run hook returned replacement inputs for node {node.name}, which "
                             "DaskRunner runs on a worker where they cannot be applied; run with SequentialRunner")

    def _save_in_driver(self, node: Node, outputs: dict[str, Any], catalog: CatalogProtocol,
                        hook_manager: Any) -> None:
        for name, data in outputs.items():
            hook_manager.hook.before_dataset_saved(dataset_name=name, data=data, node=node)
            catalog.save(name, data)
            hook_manager.hook.after_dataset_saved(dataset_name=name, data=data, node=node)
