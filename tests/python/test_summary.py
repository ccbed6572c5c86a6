"""tf.summary (issue 18, part 2): event files read back with the real ``tensorboard`` package's readers and
compared with what TensorFlow 2.21 writes for the same summaries; writer and record condition resolved when a
traced function is called (seed 000), with trace counters showing there is no retrace."""

import glob
import os
import re
import socket

import numpy as np
import pytest
import tensorflow as real_tf
from tensorboard.backend.event_processing import event_accumulator, event_file_loader
from tensorboard.util import tensor_util

import ember as tf


@pytest.fixture(autouse=True)
def _no_default_writer():
    # set_as_default leaves a writer for the thread; each test starts and ends without one.
    tf.summary._state.writer = None
    tf.summary._state.step = None
    tf.summary._state.conditions = []
    tf.summary._push_context()
    yield
    tf.summary._state.writer = None
    tf.summary._state.step = None
    tf.summary._state.conditions = []
    tf.summary._push_context()


def _events(logdir):
    """Every event of the one event file in ``logdir``, read by tensorboard's loader."""
    files = sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")))
    assert len(files) == 1, files
    return list(event_file_loader.EventFileLoader(files[0]).Load())


def _values(logdir):
    """(step, tag, plugin, content, array) of each summary value, in order."""
    out = []
    for e in _events(logdir):
        for v in e.summary.value:
            out.append((e.step, v.tag, v.metadata.plugin_data.plugin_name, v.metadata.plugin_data.content,
                        v.metadata.summary_description, tensor_util.make_ndarray(v.tensor)))
    return out


def _write_all(lib, logdir):
    """The same summaries through TensorFlow or ember."""
    rng = np.random.RandomState(0)
    writer = lib.summary.create_file_writer(str(logdir))
    with writer.as_default():
        lib.summary.scalar("loss", 0.25, step=1)
        lib.summary.scalar("int_scalar", lib.constant(3), step=2, description="an int")
        with lib.name_scope("train"):
            lib.summary.scalar("acc", np.float64(0.5), step=3)
        lib.summary.histogram("h", [1.0, 2.0, 2.0, 5.0], step=4, buckets=3)
        lib.summary.histogram("h_default", rng.randn(1000).astype(np.float32), step=5)
        lib.summary.histogram("h_int", lib.constant([1, 1, 7, 3, 3, 3]), step=6, buckets=4)
        lib.summary.histogram("h_single", [2.5, 2.5], step=7, buckets=5)
        lib.summary.histogram("h_empty", np.zeros([0], np.float32), step=8, buckets=4)
        lib.summary.histogram("h_zero_buckets", [1.0, 2.0], step=9, buckets=0)
        lib.summary.histogram("h_f64", rng.randn(7, 3), step=10, buckets=1)
        lib.summary.histogram("h_nan", [0.0, 1.0, float("nan")], step=10, buckets=2)
        lib.summary.histogram("h_inf", [0.0, float("inf"), 1.0], step=10, buckets=2)
        lib.summary.histogram("h_minf", [-float("inf"), 0.0, 1.0], step=10, buckets=2)
        lib.summary.image("img_u8", rng.randint(0, 256, [2, 3, 5, 3]).astype(np.uint8), step=11)
        lib.summary.image("img_f", rng.uniform(-0.2, 1.2, [4, 2, 3, 1]).astype(np.float32), step=12,
                          max_outputs=2)
        lib.summary.image("img_rgba", rng.uniform(0, 1, [1, 4, 4, 4]).astype(np.float32), step=13)
        lib.summary.text("t", "hello", step=14)
        lib.summary.text("t_list", [["a", "b"], ["c", "dé"]], step=15)
        clips = np.clip(rng.randn(2, 50, 2).astype(np.float32), -1.2, 1.2)
        lib.summary.audio("a", clips, 16000, step=16)
        lib.summary.audio("a_one", clips, 8000, step=17, max_outputs=1)
        lib.summary.write("raw", lib.constant([1, 2], lib.int32), step=18)
        lib.summary.experimental.set_step(19)
        lib.summary.scalar("default_step", 1.5)
        lib.summary.experimental.set_step(None)
    writer.close()


def _decode_png(data):
    return real_tf.io.decode_png(data).numpy()


def test_summaries_match_tensorflow(tmp_path):
    _write_all(real_tf, tmp_path / "tf")
    _write_all(tf, tmp_path / "ember")
    expected, got = _values(tmp_path / "tf"), _values(tmp_path / "ember")
    assert [v[:5] for v in got] == [v[:5] for v in expected]
    for (step, tag, plugin, _, _, want), (_, _, _, _, _, have) in zip(expected, got):
        assert have.dtype == want.dtype and have.shape == want.shape, tag
        if plugin == "images":  # PNG bytes may differ (zlib settings); the dimensions and pixels may not
            assert list(have[:2]) == list(want[:2]), tag
            for a, b in zip(have[2:], want[2:]):
                np.testing.assert_array_equal(_decode_png(a), _decode_png(b), err_msg=tag)
        elif plugin == "histograms":
            np.testing.assert_allclose(have, want, rtol=1e-12, atol=0, equal_nan=True, err_msg=tag)
            np.testing.assert_array_equal(have[:, 2], want[:, 2], err_msg=tag)
        else:
            np.testing.assert_array_equal(have, want, err_msg=tag)


def test_event_file_name_and_version_event(tmp_path):
    tf.summary.create_file_writer(str(tmp_path / "a")).close()
    tf.summary.create_file_writer(str(tmp_path / "b"), filename_suffix=".mine").close()
    name_a = os.path.basename(glob.glob(str(tmp_path / "a" / "*"))[0])
    pattern = r"events\.out\.tfevents\.\d{10}\.%s\.%d\.\d+" % (re.escape(socket.gethostname()), os.getpid())
    assert re.fullmatch(pattern + r"\.v2", name_a), name_a
    name_b = os.path.basename(glob.glob(str(tmp_path / "b" / "*"))[0])
    assert re.fullmatch(pattern + r"\.mine", name_b), name_b
    first = _events(tmp_path / "a")[0]
    assert first.file_version == "brain.Event:2" and first.step == 0 and first.wall_time > 0


def test_event_accumulator_reads_scalar_curves(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        for step in range(5):
            tf.summary.scalar("loss", 1.0 / (step + 1), step=step)
    acc = event_accumulator.EventAccumulator(str(tmp_path), size_guidance={event_accumulator.TENSORS: 0})
    acc.Reload()
    events = acc.Tensors("loss")
    assert [e.step for e in events] == list(range(5))
    np.testing.assert_allclose([tensor_util.make_ndarray(e.tensor_proto) for e in events],
                               [1.0 / (s + 1) for s in range(5)], rtol=1e-6)


def test_no_writer_is_a_noop_and_no_step_raises_tensorflows_error(tmp_path):
    assert not bool(tf.summary.scalar("x", 1.0))  # no default writer: nothing, even without a step
    assert not bool(real_tf.summary.scalar("x", 1.0))
    writer = tf.summary.create_file_writer(str(tmp_path))
    tf_writer = real_tf.summary.create_file_writer(str(tmp_path / "tf"))
    with tf_writer.as_default(), pytest.raises(ValueError) as tf_error:
        real_tf.summary.scalar("x", 1.0)
    with writer.as_default(), pytest.raises(ValueError) as error:
        tf.summary.scalar("x", 1.0)
    assert str(error.value) == str(tf_error.value)
    with writer.as_default(), tf.summary.record_if(False):
        assert not bool(tf.summary.scalar("x", 1.0))  # not recording: no step needed
    writer.close()
    assert [v[1] for v in _values(tmp_path)] == []


def test_function_writes_to_the_writer_and_condition_of_each_call(tmp_path):
    traces = []

    @tf.function
    def step_fn(x, step):
        traces.append(1)
        return tf.summary.scalar("x", x * 2.0, step=step)

    first = tf.summary.create_file_writer(str(tmp_path / "first"))
    second = tf.summary.create_file_writer(str(tmp_path / "second"))
    s = lambda i: tf.constant(i, tf.int64)  # noqa: E731
    with first.as_default(), tf.summary.record_if(True):
        assert bool(step_fn(tf.constant(1.0), s(1)))
    with first.as_default(), tf.summary.record_if(False):
        assert not bool(step_fn(tf.constant(2.0), s(2)))
    with first.as_default():
        assert bool(step_fn(tf.constant(3.0), s(3)))
    with second.as_default():
        assert bool(step_fn(tf.constant(4.0), s(4)))
    with first.as_default(), tf.summary.record_if(tf.constant(False)):
        assert not bool(step_fn(tf.constant(5.0), s(5)))
    assert not bool(step_fn(tf.constant(6.0), s(6)))  # no default writer: a no-op
    with tf.summary.create_noop_writer().as_default():
        assert not bool(step_fn(tf.constant(7.0), s(7)))
    assert len(traces) == 1
    first.close()
    second.close()
    assert [(v[0], float(v[5])) for v in _values(tmp_path / "first")] == [(1, 2.0), (3, 6.0)]
    assert [(v[0], float(v[5])) for v in _values(tmp_path / "second")] == [(4, 8.0)]


def test_function_traced_under_record_if_false_writes_when_called_under_true(tmp_path):
    traces = []

    @tf.function
    def fn():
        traces.append(1)
        tf.summary.scalar("y", 1.0, step=7)
        tf.summary.histogram("hist", tf.constant([1.0, 2.0, 3.0]), step=7, buckets=2)

    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(), tf.summary.record_if(False):
        fn()
    with writer.as_default(), tf.summary.record_if(True):
        fn()
    assert len(traces) == 1
    writer.close()
    assert [(v[0], v[1], v[2]) for v in _values(tmp_path)] == [(7, "y", "scalars"), (7, "hist", "histograms")]


def test_step_of_the_call_from_set_step_and_step_variables(tmp_path):
    traces = []

    @tf.function
    def fn(x):
        traces.append(1)
        tf.summary.scalar("v", x)

    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        tf.summary.experimental.set_step(10)
        fn(tf.constant(1.0))
        tf.summary.experimental.set_step(11)
        fn(tf.constant(2.0))
        step = tf.Variable(20, dtype=tf.int64)
        tf.summary.experimental.set_step(step)
        fn(tf.constant(3.0))
        step.assign_add(5)
        fn(tf.constant(4.0))
        tf.summary.experimental.set_step(None)
        with pytest.raises(tf.errors.InvalidArgumentError, match="No step set"):
            fn(tf.constant(5.0))
    with writer.as_default(step=30):
        fn(tf.constant(6.0))
    assert tf.summary.experimental.get_step() is None
    assert len(traces) == 1
    writer.close()
    assert [(v[0], float(v[5])) for v in _values(tmp_path)] == [(10, 1.0), (11, 2.0), (20, 3.0), (25, 4.0),
                                                                 (30, 6.0)]


def test_callable_conditions(tmp_path):
    calls = []

    def every_other():
        calls.append(1)
        return len(calls) % 2 == 1

    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=0), tf.summary.record_if(every_other):
        for i in range(4):
            tf.summary.scalar("eager", float(i))  # called each time, as TensorFlow's eager summaries
    counter = tf.Variable(0)

    @tf.function
    def fn():
        counter.assign_add(1)
        tf.summary.scalar("staged", tf.cast(counter, tf.float32), step=1)

    # A callable that builds a condition from a variable: traced into the graph, decided at each call.
    with writer.as_default(), tf.summary.record_if(lambda: tf.equal(counter % 2, 0)):
        for _ in range(4):
            fn()
    writer.close()
    got = [(v[1], float(v[5])) for v in _values(tmp_path)]
    assert got == [("eager", 0.0), ("eager", 2.0), ("staged", 2.0), ("staged", 4.0)]


def test_should_record_summaries():
    assert not bool(tf.summary.should_record_summaries())
    writer = tf.summary.create_noop_writer()
    with writer.as_default():
        assert not bool(tf.summary.should_record_summaries())


def test_should_record_summaries_with_a_writer(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        assert bool(tf.summary.should_record_summaries())
        with tf.summary.record_if(False):
            assert not bool(tf.summary.should_record_summaries())
        with tf.summary.record_if(lambda: False):
            assert not bool(tf.summary.should_record_summaries())
    writer.close()


def test_set_as_default_and_flush(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path), max_queue=100, flush_millis=10**9)
    writer.set_as_default(step=3)
    tf.summary.scalar("a", 1.0)
    assert [v[1] for v in _values(tmp_path)] == []  # queued
    tf.summary.flush()
    assert [(v[0], v[1]) for v in _values(tmp_path)] == [(3, "a")]

    @tf.function
    def fn():
        tf.summary.scalar("b", 2.0)
        tf.summary.flush()

    fn()
    assert [(v[0], v[1]) for v in _values(tmp_path)] == [(3, "a"), (3, "b")]
    writer.close()


def test_max_queue_flushes_when_exceeded(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path), max_queue=2, flush_millis=10**9)
    writer.set_as_default(step=0)
    tf.summary.scalar("a", 1.0)
    tf.summary.scalar("b", 1.0)
    assert _values(tmp_path) == []
    tf.summary.scalar("c", 1.0)  # three waiting: more than max_queue
    assert [v[1] for v in _values(tmp_path)] == ["a", "b", "c"]
    writer.close()


def test_as_default_flushes_on_exit(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path), max_queue=100, flush_millis=10**9)
    with writer.as_default(step=1):
        tf.summary.scalar("a", 1.0)
    assert [v[1] for v in _values(tmp_path)] == ["a"]
    writer.close()


def test_closed_writer_raises(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    writer.close()
    with writer.as_default():
        assert not bool(tf.summary.scalar("a", 1.0, step=1))


def test_trace_export_writes_the_function_graph(tmp_path):
    from tensorflow.core.protobuf import config_pb2

    with pytest.raises(ValueError, match="Must enable trace before export through tf.summary.trace_on."):
        tf.summary.trace_export("x", step=0)

    @tf.function
    def fn(x):
        return x * 2.0 + 1.0

    writer = tf.summary.create_file_writer(str(tmp_path))
    tf.summary.trace_on(graph=True)
    fn(tf.constant(1.0))
    with writer.as_default():
        tf.summary.trace_export("my_trace", step=0)
    writer.close()
    (step, tag, plugin, content, _, value), = _values(tmp_path)
    assert (step, tag, plugin, content) == (0, "my_trace", "graph_run_metadata_graph", b"1")
    run_metadata = config_pb2.RunMetadata.FromString(value.item())
    ops = [n.op for n in run_metadata.function_graphs[0].pre_optimization_graph.node]
    assert "Mul" in ops and ("AddV2" in ops or "Add" in ops), ops
    # TensorBoard's graph plugin reads it back as a run-metadata graph.
    with pytest.raises(ValueError, match="Must enable trace"):
        tf.summary.trace_export("again", step=1)  # the export ended the trace


def test_trace_off_discards(tmp_path):
    tf.summary.trace_on(graph=True)
    tf.summary.trace_off()
    with pytest.raises(ValueError, match="Must enable trace"):
        tf.summary.trace_export("x", step=0)


def test_graph_writes_a_graph_event(tmp_path):
    @tf.function
    def fn(x):
        return x + 1.0

    concrete = fn.get_concrete_function(tf.TensorSpec([2]))
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        assert tf.summary.graph(concrete.graph)
    writer.close()
    acc = event_accumulator.EventAccumulator(str(tmp_path))
    acc.Reload()
    assert any(n.op == "AddV2" or n.op == "Add" for n in acc.Graph().node)


def test_bad_arguments():
    with pytest.raises(ValueError, match="Expected scalar shape"):
        writer = tf.summary.create_noop_writer()
        with writer.as_default():
            tf.summary.scalar("x", [1.0, 2.0], step=1)
    with pytest.raises(ValueError):
        tf.summary.image("x", np.zeros([2, 2, 3], np.float32), step=1)
    with pytest.raises(ValueError):
        tf.summary.audio("x", np.zeros([2, 2, 3], np.float32), 100, step=1, encoding="mp3")


def test_image_of_a_bad_shape_inside_a_writer(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(), pytest.raises(tf.errors.InvalidArgumentError, match="c in 1..4"):
        tf.summary.image("x", np.zeros([1, 2, 2, 5], np.uint8), step=1)
    writer.close()


def test_write_raw_pb(tmp_path):
    from tensorflow.core.framework import summary_pb2
    raw = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="raw", simple_value=2.5)]).SerializeToString()
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=4):
        assert tf.summary.experimental.write_raw_pb(raw)
    writer.close()
    event = _events(tmp_path)[1]
    assert event.step == 4 and event.summary.value[0].tag == "raw"


def test_trace_with_profiler_writes_a_profile(tmp_path):
    @tf.function
    def fn(x):
        return tf.matmul(x, x)

    fn(tf.ones([4, 4]))  # traced before: its profile is still recorded, its graph is not
    writer = tf.summary.create_file_writer(str(tmp_path / "logs"))
    tf.summary.trace_on(graph=True, profiler=True, profiler_outdir=str(tmp_path / "profile"))
    fn(tf.ones([4, 4]))
    with writer.as_default():
        tf.summary.trace_export("profiled", step=1)
    writer.close()
    traces = glob.glob(str(tmp_path / "profile" / "plugins" / "profile" / "*" / "*.trace.json"))
    assert len(traces) == 1
    assert [v[1] for v in _values(tmp_path / "logs")] == ["profiled"]
