"""Cluster resolvers and collective options (no worker processes): TF_CONFIG read as TensorFlow reads it,
mpirun's environment, the rank order of MultiWorkerMirroredStrategy's group, CommunicationOptions, and the
collective ops in a group of one."""
import json

import numpy as np
import pytest

import ember as tf
import ember.distribute  # noqa: F401
from ember.distribute import cluster_resolver as cr
from ember.distribute.experimental import collective

CONFIG = {"cluster": {"chief": ["localhost:1"], "worker": ["localhost:2", "h:3"]},
          "task": {"type": "worker", "index": 1}}


def test_tf_config_resolver_reads_the_environment_like_tensorflow(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps(CONFIG))
    r = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    spec = r.cluster_spec()
    assert spec.as_dict() == CONFIG["cluster"]
    assert (r.task_type, r.task_id, r.rpc_layer) == ("worker", 1, None)
    assert r.master() == "h:3"
    assert r.master("worker", 0, "grpc") == "grpc://localhost:2"
    assert spec.jobs == ["chief", "worker"]
    assert spec.num_tasks("worker") == 2 and spec.task_indices("worker") == [0, 1]
    assert spec.task_address("worker", 1) == "h:3" and spec.job_tasks("worker") == ["localhost:2", "h:3"]
    # the chief is rank 0 of the collective group, then the workers by index
    assert cr.worker_rank(r) == (2, 3, "h")


def test_tf_config_is_read_on_every_call(monkeypatch):
    r = cr.TFConfigClusterResolver()
    monkeypatch.delenv("TF_CONFIG", raising=False)
    for name in ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert r.cluster_spec().as_dict() == {} and r.task_type is None and r.task_id is None
    assert cr.worker_rank(r) == (0, 1, "127.0.0.1")
    monkeypatch.setenv("TF_CONFIG", json.dumps(CONFIG))
    assert r.task_id == 1


def test_mpirun_environment_without_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "1")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    r = cr.TFConfigClusterResolver()
    assert (r.task_type, r.task_id) == ("worker", 1)
    assert r.cluster_spec().num_tasks("worker") == 4
    assert cr.worker_rank(r)[:2] == (1, 4)


def test_bad_cluster_specs_are_clear_errors(monkeypatch):
    spec = tf.train.ClusterSpec({"worker": ["a:1"]}) if hasattr(tf.train, "ClusterSpec") else cr.ClusterSpec(
        {"worker": ["a:1"]})
    with pytest.raises(ValueError, match="No such job in cluster: 'ps'"):
        spec.task_address("ps", 0)
    with pytest.raises(ValueError, match="No task with index 7 in job 'worker'"):
        spec.task_address("worker", 7)
    with pytest.raises(TypeError, match="must be a dictionary"):
        cr.ClusterSpec(5)
    assert cr.ClusterSpec({"worker": {0: "a:1", 2: "b:2"}}).as_dict() == {"worker": {0: "a:1", 2: "b:2"}}
    monkeypatch.setenv("TF_CONFIG", "{bad")
    with pytest.raises(json.JSONDecodeError):
        cr.TFConfigClusterResolver().cluster_spec()
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "ps", "index": 0}}))
    with pytest.raises(ValueError, match="is not a chief or worker"):
        cr.worker_rank(cr.TFConfigClusterResolver())


def test_simple_cluster_resolver():
    spec = cr.ClusterSpec({"worker": ["a:1", "b:2"]})
    r = tf.distribute.cluster_resolver.SimpleClusterResolver(spec, task_type="worker", task_id=1)
    assert r.cluster_spec() == spec and r.master() == "" and r.master("worker", 1) == "b:2"
    assert cr.worker_rank(r) == (1, 2, "b")


def test_communication_options():
    o = tf.distribute.experimental.CommunicationOptions(timeout_seconds=5)
    assert (o.timeout_seconds, o.bytes_per_pack) == (5, 0)
    assert o.implementation == tf.distribute.experimental.CommunicationImplementation.AUTO
    with pytest.raises(ValueError, match="bytes_per_pack"):
        tf.distribute.experimental.CommunicationOptions(bytes_per_pack=-1)
    assert tf.distribute.experimental.CommunicationOptions(implementation="ring").implementation.value == "RING"
    merged = o.merge(tf.distribute.experimental.CommunicationOptions(bytes_per_pack=64))
    assert (merged.timeout_seconds, merged.bytes_per_pack) == (5, 64)


def test_collectives_in_a_group_of_one_are_identities_eagerly_and_in_functions():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    for fn in (lambda f: f, tf.function):
        np.testing.assert_array_equal(fn(lambda t: collective.all_reduce_v2(t, 1, 1, 1, "Add", "Div"))(x), x)
        np.testing.assert_array_equal(fn(lambda t: collective.all_gather_v2(t, 1, 1, 2))(x), x)
        np.testing.assert_array_equal(fn(lambda t: collective.broadcast_send_v2(t, 1, 1, 3))(x), x)


def test_collective_errors_name_the_op_and_what_was_expected():
    x = tf.constant([1.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="CollectiveReduceV2: merge_op must be"):
        collective.all_reduce_v2(x, 1, 1, 1, merge_op="Sum")
    with pytest.raises(tf.errors.InvalidArgumentError, match="CollectiveReduceV2: final_op must be"):
        collective.all_reduce_v2(x, 1, 1, 1, final_op="Mean")
    with pytest.raises(tf.errors.InvalidArgumentError, match="group_size must be at least 1, got 0"):
        collective.all_reduce_v2(x, 0, 1, 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="CollectiveGatherV2: input must have rank"):
        collective.all_gather_v2(tf.constant(1.0), 1, 1, 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="no sender"):
        collective.broadcast_recv_v2([1], tf.float32, 1, 1, 1)
    if not collective.is_initialized() or collective.group_size() == 1:
        with pytest.raises(tf.errors.FailedPreconditionError, match="group_size is 2 but this process has joined"):
            collective.all_reduce_v2(x, 2, 1, 1)
