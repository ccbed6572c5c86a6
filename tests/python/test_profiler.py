"""ember.profiler: per-node events of graph function calls, Chrome-trace JSON, the slowest-ops table,
TensorFlow's profiler.experimental API and the seeds' run-with-metadata."""
import glob
import json
import os
import threading

import numpy as np
import pytest

import ember as tf
from ember import errors

THIS_FILE = os.path.basename(__file__)


def _mlp():
    @tf.function
    def mlp(x, w):
        h = tf.tanh(tf.matmul(x, w))
        return tf.reduce_sum(tf.square(h))

    x = tf.constant(np.random.default_rng(0).standard_normal((128, 128)).astype(np.float32))
    w = tf.constant(np.random.default_rng(1).standard_normal((128, 128)).astype(np.float32) * 0.1)
    mlp(x, w)  # trace outside the profile
    return mlp, x, w


def _executed_ops(concrete):
    # Constants (values, and shape operands such as a reduction's axes) are evaluated when the plan is built.
    return [op for op in concrete.graph.get_operations() if op.type not in ("Placeholder", "Const")]


@pytest.fixture
def unoptimized():
    """Functions traced meanwhile run their graph as traced (no fusion), so every traced node is an event."""
    saved = tf.config.optimizer.get_experimental_options()
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    yield
    tf.config.optimizer.set_experimental_options(saved)


def _nodes_per_call(f, *args):
    """The number of node events one call of ``f`` records (the executed graph may be optimized)."""
    with tf.profiler.profile() as prof:
        f(*args)
    assert prof.events
    return len(prof.events)


def test_every_node_of_a_call_is_an_event_with_its_source_line(unoptimized):
    mlp, x, w = _mlp()
    with tf.profiler.profile() as prof:
        mlp(x, w)
    ops = _executed_ops(mlp.get_concrete_function(x, w))
    node_events = [e for e in prof.events if e["kind"] == "node"]
    assert sorted(e["name"] for e in node_events) == sorted(op.name for op in ops)
    for e in node_events:
        assert e["duration_ns"] >= 0
        assert e["end_ns"] >= e["start_ns"] >= prof.start_ns
        assert e["location"].startswith(THIS_FILE + ":"), e
    matmul = next(e for e in node_events if e["op"] == "MatMul")
    assert matmul["bytes"] == 128 * 128 * 4
    assert next(e for e in node_events if e["op"] == "Sum")["bytes"] == 4


def test_chrome_trace_is_valid_json(unoptimized):
    mlp, x, w = _mlp()
    with tf.profiler.profile() as prof:
        mlp(x, w)
        mlp(x, w)
    trace = json.loads(prof.chrome_trace())
    assert trace["displayTimeUnit"] == "ns"
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    names = {op.name for op in _executed_ops(mlp.get_concrete_function(x, w))}
    assert {e["args"]["node"] for e in complete} == names
    assert len(complete) == 2 * len(names)
    for e in complete:
        assert e["dur"] >= 0 and e["ts"] >= 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert e["args"]["location"].startswith(THIS_FILE + ":")
        assert e["name"] == e["args"]["op"]
    meta = {e["name"] for e in trace["traceEvents"] if e["ph"] == "M"}
    assert {"process_name", "thread_name"} <= meta


def test_table_lists_the_slowest_op_first():
    @tf.function
    def f(a, b):
        return tf.matmul(a, b) + 1.0  # 33 MFLOP of matmul dwarf 16k additions

    a, b = tf.ones([16, 1024]), tf.ones([1024, 1024])
    for _ in range(3):
        f(a, b)  # trace, then warm the allocator and the thread pool
    with tf.profiler.profile() as prof:
        for _ in range(5):
            f(a, b)
    by_op = prof.by_op()
    assert by_op[0]["name"] == "MatMul", prof.table()
    assert by_op[0]["count"] == 5
    assert [r["total_ns"] for r in by_op] == sorted((r["total_ns"] for r in by_op), reverse=True)
    table = prof.table(top=5)
    lines = table.splitlines()
    first_row = lines[lines.index("Op types, slowest first:") + 2]
    assert first_row.split()[0] == "MatMul", table
    assert THIS_FILE in table
    assert str(prof) == prof.table()


def test_save_writes_the_trace(tmp_path):
    mlp, x, w = _mlp()
    with tf.profiler.profile() as prof:
        mlp(x, w)
    path = prof.save(tmp_path / "sub" / "mlp.trace.json")
    with open(path) as f:
        assert json.load(f)["traceEvents"]


def test_results_are_read_after_the_block():
    with tf.profiler.profile() as prof:
        with pytest.raises(RuntimeError, match="still recording"):
            prof.events


def test_no_events_outside_a_session_and_eager_ops_are_not_recorded():
    mlp, x, w = _mlp()
    mlp(x, w)
    with tf.profiler.profile() as prof:
        tf.square(x)
    assert prof.events == []


def test_nested_sessions_see_their_own_window():
    mlp, x, w = _mlp()
    with tf.profiler.profile() as outer:
        mlp(x, w)
        with tf.profiler.profile() as inner:
            mlp(x, w)
    n = _nodes_per_call(mlp, x, w)
    assert len(inner.events) == n
    assert len(outer.events) == 2 * n


def test_calls_on_other_threads_are_recorded_with_their_thread():
    mlp, x, w = _mlp()
    with tf.profiler.profile() as prof:
        threads = [threading.Thread(target=mlp, args=(x, w)) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    n = _nodes_per_call(mlp, x, w)
    assert len(prof.events) == 3 * n
    assert len({e["thread"] for e in prof.events}) == 3


def test_experimental_start_stop_writes_a_trace_under_the_logdir(tmp_path):
    mlp, x, w = _mlp()
    tf.profiler.experimental.start(str(tmp_path))
    with pytest.raises(errors.AlreadyExistsError):
        tf.profiler.experimental.start(str(tmp_path))
    with tf.profiler.experimental.Trace("train", step_num=1):
        mlp(x, w)
    tf.profiler.experimental.stop()
    with pytest.raises(errors.UnavailableError):
        tf.profiler.experimental.stop()
    files = glob.glob(str(tmp_path / "plugins" / "profile" / "*" / "*.trace.json"))
    assert len(files) == 1
    with open(files[0]) as f:
        trace = json.load(f)
    spans = [e for e in trace["traceEvents"] if e.get("cat") == "user"]
    assert [s["name"] for s in spans] == ["train#step_num=1#"]
    assert spans[0]["args"]["location"].startswith(THIS_FILE + ":")
    nodes = [e for e in trace["traceEvents"] if e.get("cat") == "node"]
    assert nodes
    # The span encloses the nodes run inside it.
    for e in nodes:
        assert spans[0]["ts"] <= e["ts"] and e["ts"] + e["dur"] <= spans[0]["ts"] + spans[0]["dur"] + 1e-3


def test_experimental_profile_context_manager(tmp_path):
    mlp, x, w = _mlp()
    with tf.profiler.experimental.Profile(str(tmp_path)) as p:
        mlp(x, w)
    assert p.metadata.path.endswith(".trace.json")
    assert os.path.exists(p.metadata.path)
    from ember.profiler.experimental import Trace  # the TF import path works

    with Trace("outside a session"):  # records nothing, costs nothing
        pass


def test_the_timeline_shows_the_optimized_graph_that_ran():
    mlp, x, w = _mlp()  # tanh and square fuse into one element-wise kernel
    with tf.profiler.profile() as prof:
        mlp(x, w)
    assert "MatMul" in {e["op"] for e in prof.events}
    for e in prof.events:
        assert e["location"].startswith(THIS_FILE + ":"), e
    assert len(prof.events) <= len(_executed_ops(mlp.get_concrete_function(x, w)))


def test_run_with_metadata(unoptimized):
    mlp, x, w = _mlp()
    concrete = mlp.get_concrete_function(x, w)
    out, metadata = concrete.run_with_metadata(x, w)
    np.testing.assert_allclose(float(out), float(mlp(x, w)), rtol=1e-6)
    assert sorted(e["name"] for e in metadata.events) == sorted(op.name for op in _executed_ops(concrete))
    assert "MatMul" in metadata.table()
    json.loads(metadata.chrome_trace())
