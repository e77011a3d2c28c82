"""A run's members as separate Dask tasks (docs/guides/scaling.md).

:func:`iclfs.method._members.train_members` trains a run's members one
after another. :func:`train_members_on` sends each member to a Dask cluster
as a task of its own and returns the same members: every member's plan (its
seed and its samples) is drawn in the caller by
:func:`~iclfs.method._members.plan_members` exactly as the sequential path
draws it, and a member's training depends on nothing but that plan, the
data and the settings. On CPU, at the same ``runtime.num_threads`` (Dask's
workers start with one BLAS/OpenMP thread; set ``num_threads: 1`` to match
them), the scores are bit-identical to the sequential ones.

:func:`train_members_here` picks the path: inside a task of a Dask cluster
with more than one worker thread (a node run by :class:`iclfs.runner.DaskRunner`),
the members go to the cluster through the worker's client (the calling task
leaves its thread slot while it waits, so members can run on it); anywhere
else, and for a single member, in turn in this process.

Each worker runs torch's threads under the project's thread policy
(:mod:`iclfs._threads`): a LocalCluster's workers inherit it from the
process that starts them; :func:`thread_policies` asks every worker what it
runs under, and a worker that started torch's threads without it (one started
by hand, without the policy's variables in its environment) is named in a
warning with what to set.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import numpy as np

from iclfs.method._config import MembersConfig, RuntimeConfig, TrainingConfig, ViewConfig
from iclfs.method._members import MemberTraining, member_settings, plan_members, train_member, train_members

LOGGER = logging.getLogger(__name__)


def _worker_thread_policy() -> dict:
    """On a worker: the policy its process applied (:data:`iclfs._threads.APPLIED`), its torch threads, and
    whether the wait settings reached torch's OpenMP runtime (set before torch loaded, or one thread)."""
    import torch

    from iclfs import _threads

    applied = _threads.APPLIED
    threads = torch.get_num_threads()
    late = applied.torch_loaded and any(var != "OMP_NUM_THREADS" for var in applied.set)
    return {"policy": applied.policy, "set": applied.set, "kept": applied.kept, "threads": threads,
            "in_force": threads == 1 or not late}


def thread_policies(client: Any) -> dict[str, dict]:
    """Each worker's thread policy (:func:`_worker_thread_policy`) by address; a warning names the workers
    whose torch threads started without it."""
    policies = client.run(_worker_thread_policy)
    missing = sorted(address for address, policy in policies.items() if not policy["in_force"])
    if missing:
        first = policies[missing[0]]
        wanted = " ".join(f"{var}={value}" for var, value in first["set"].items())
        LOGGER.warning("Dask worker(s) %s started torch's %d threads without the thread policy %r, so they spin "
                       "while they wait and slow each other down on a shared machine; start them with %s in "
                       "their environment (docs/guides/performance.md)", ", ".join(missing), first["threads"],
                       first["policy"], wanted)
    return policies


def train_members_on(client: Any, A: np.ndarray, training: TrainingConfig, views: ViewConfig,
                     runtime: RuntimeConfig, members: MembersConfig, seed: int) -> list[MemberTraining]:
    """Train every member as its own task on ``client``'s cluster; the members in member order.

    Parameters
    ----------
    client : dask.distributed.Client
    A : array of shape (d, n)
        The inverted map; sent to the cluster once and shared by the member tasks.
    training, views, runtime, members, seed
        As :func:`iclfs.method._members.train_members`. No progress bar is
        drawn on the workers (``runtime.progress`` is ignored there).

    Returns
    -------
    list of MemberTraining
        In member order, each with its trained network (on CPU), its scores
        and its wall time on its worker.
    """
    member_training, epochs = member_settings(A.shape[1], training, members)
    plans = plan_members(A.shape[1], members, seed, A.shape[0])
    quiet = runtime.replace(progress=False)
    thread_policies(client)
    token = uuid.uuid4().hex[:12]
    shared = client.scatter(np.ascontiguousarray(A), hash=False)
    futures = [client.submit(train_member, shared, plan, member_training, epochs, views, quiet, None,
                             key=f"iclfs-member-{plan.index}-{token}", pure=False)
               for plan in plans]
    try:
        return client.gather(futures)
    finally:
        for future in futures:
            future.cancel()


def _cluster_threads(client: Any) -> int:
    info = client.scheduler_info()
    return sum(int(worker.get("nthreads", 1)) for worker in info.get("workers", {}).values())


def _in_dask_task() -> bool:
    try:
        from distributed import get_worker
    except ImportError:  # dask.distributed is an optional extra
        return False
    try:
        get_worker()
    except ValueError:  # not in a Dask task
        return False
    return True


def train_members_here(A: np.ndarray, training: TrainingConfig, views: ViewConfig, runtime: RuntimeConfig,
                       members: MembersConfig, seed: int) -> list[MemberTraining]:
    """:func:`train_members_on` the cluster this task runs on, when there is room; else ``train_members``.

    The cluster is used inside a Dask task, for two members or more, when the
    cluster has more than one worker thread. The members are the same
    either way (module docstring).
    """
    if members.per_run > 1 and _in_dask_task():
        from distributed import get_client, worker_client

        if _cluster_threads(get_client()) > 1:
            with worker_client() as client:  # secedes: this task's thread slot is free while the members run
                return train_members_on(client, A, training, views, runtime, members, seed)
    return train_members(A, training, views, runtime, members, seed)
