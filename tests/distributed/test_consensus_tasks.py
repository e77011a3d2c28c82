"""Consensus members as Dask tasks: the members sequential training gives, bit for bit, on CPU."""

from __future__ import annotations

import numpy as np
import pytest

from iclfs.method._config import SCORE_NAMES, Settings
from iclfs.method._members import train_members
from iclfs.method._preprocessing import invert

distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed")

from iclfs._distributed import train_members_here, train_members_on  # noqa: E402  (needs distributed)

# Three members of two epochs on half the samples, one torch thread, on CPU.
SETTINGS = ("training.epochs=2,members.per_run=3,members.epochs=2,members.subsample=0.5,"
            "runtime.device=cpu,runtime.num_threads=1,runtime.progress=false")


@pytest.fixture(scope="module")
def inverted():
    """The inverted map of a 40 samples x 30 features table, standardized."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 30))
    X[:20, :5] += 2.0
    return invert((X - X.mean(axis=0)) / X.std(axis=0))


def _members_in_turn(A, settings):
    return train_members(A, settings.training, settings.views, settings.runtime, settings.members, seed=42)


def _same(on_cluster, in_turn):
    assert [m.plan.index for m in on_cluster] == [0, 1, 2]
    for mine, theirs in zip(on_cluster, in_turn, strict=True):
        assert mine.plan.seed == theirs.plan.seed
        np.testing.assert_array_equal(mine.plan.samples, theirs.plan.samples)
        assert [b.tolist() for b in mine.plan.blocks or ()] == [b.tolist() for b in theirs.plan.blocks or ()]
        assert set(mine.scores) == set(theirs.scores)
        for name in SCORE_NAMES:
            if name in theirs.scores:
                assert np.array_equal(mine.scores[name], theirs.scores[name]), (mine.plan.index, name)
        assert len(mine.results) == len(theirs.results)
        for network, same in zip(mine.results, theirs.results):
            assert len(network.history) == 2
            assert [row["loss"] for row in network.history] == [row["loss"] for row in same.history]


def test_members_as_tasks_on_two_workers_score_like_sequential_training(inverted, dask_cluster):
    settings = Settings().with_overrides(SETTINGS)
    in_turn = _members_in_turn(inverted, settings)
    with distributed.Client(dask_cluster, set_as_default=False) as client:
        on_cluster = train_members_on(client, inverted, settings.training, settings.views, settings.runtime,
                                      settings.members, seed=42)
        # one task per member, on both workers (the three ran; the cluster has two single-thread workers)
        assert len(client.scheduler_info()["workers"]) == 2
    _same(on_cluster, in_turn)
    assert all(m.results[0].threads == 1 for m in on_cluster)


def test_members_with_feature_blocks_as_tasks_score_like_sequential_training(inverted, dask_cluster):
    """A member's networks (one per feature block) train in its task, in turn, as they do on one machine."""
    settings = Settings().with_overrides(SETTINGS + ",members.feature_blocks=2")
    with distributed.Client(dask_cluster, set_as_default=False) as client:
        on_cluster = train_members_on(client, inverted, settings.training, settings.views, settings.runtime,
                                      settings.members, seed=42)
    assert all(len(m.results) == 2 for m in on_cluster)
    _same(on_cluster, _members_in_turn(inverted, settings))


def test_a_node_on_a_worker_sends_its_members_to_the_cluster(inverted, dask_cluster):
    """train_members_here inside a Dask task (as a node under DaskRunner): members as tasks, the same scores."""
    settings = Settings().with_overrides(SETTINGS)
    with distributed.Client(dask_cluster, set_as_default=False) as client:
        with distributed.get_task_stream(client) as stream:
            members = client.submit(train_members_here, inverted, settings.training, settings.views,
                                    settings.runtime, settings.members, 42, pure=False).result()
    ran = [str(task["key"]) for task in stream.data]
    # the node's task, and the three members as tasks of their own
    assert sorted(key.rsplit("-", 1)[0] for key in ran if key.startswith("iclfs-member")) == [
        "iclfs-member-0", "iclfs-member-1", "iclfs-member-2"]
    _same(members, _members_in_turn(inverted, settings))
    # outside any Dask task: the sequential path itself
    here = train_members_here(inverted, settings.training, settings.views, settings.runtime, settings.members, 42)
    _same(here, _members_in_turn(inverted, settings))
