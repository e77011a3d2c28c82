"""Dask workers run torch's threads under the project's thread policy (iclfs._threads), and a worker that
started without it is named."""

from __future__ import annotations

import logging

import pytest

from iclfs import _distributed, _threads


def test_a_local_clusters_workers_inherit_the_policy_before_torch_loads(dask_cluster):
    distributed = pytest.importorskip("distributed")
    with distributed.Client(dask_cluster, set_as_default=False) as client:
        policies = _distributed.thread_policies(client)
    assert len(policies) == 2
    wait = dict(_threads.POLICIES[_threads.DEFAULT_POLICY].environment)
    for policy in policies.values():
        assert policy["policy"] == _threads.DEFAULT_POLICY and policy["in_force"]
        # set in the process that started the cluster, so already in the worker's environment when it started
        assert {k: policy["kept"].get(k) for k in wait} == wait and not set(policy["set"]) & set(wait)


def test_a_worker_whose_torch_started_without_the_policy_is_named_with_what_to_set(caplog):
    class Client:
        def run(self, function):
            return {"tcp://a:1": {"policy": "passive", "set": {"OMP_WAIT_POLICY": "PASSIVE"}, "kept": {},
                                  "threads": 4, "in_force": False},
                    "tcp://b:2": {"policy": "passive", "set": {}, "kept": {"OMP_WAIT_POLICY": "PASSIVE"},
                                  "threads": 4, "in_force": True}}

    with caplog.at_level(logging.WARNING, logger="iclfs._distributed"):
        _distributed.thread_policies(Client())
    [record] = caplog.records
    assert record.getMessage() == (
        "Dask worker(s) tcp://a:1 started torch's 4 threads without the thread policy 'passive', so they spin "
        "while they wait and slow each other down on a shared machine; start them with OMP_WAIT_POLICY=PASSIVE "
        "in their environment (docs/guides/performance.md)")
