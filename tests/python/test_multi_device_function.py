"""Multi-device functions (docs/devices.md): an ember.function whose nodes sit on several logical CPUs is
placed and cut into one partition per device with _Send/_Recv pairs between them; the partitions run at
once. Results must equal the single-device run; overlap is proven with the profiler's timestamps."""

import json

import numpy as np
import pytest

import ember as tf
from ember import errors

FULL = "/job:localhost/replica:0/task:0/device:CPU:"


def _configure(n):
    tf.config._reset_context()
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * n)


@pytest.fixture(params=[2, 4])
def cpus(request):
    _configure(request.param)
    yield request.param
    tf.config.set_soft_device_placement(True)
    tf.config._reset_context()


@pytest.fixture
def two_cpus():
    _configure(2)
    yield 2
    tf.config.set_soft_device_placement(True)
    tf.config._reset_context()


def _towers(x, w, n, placed):
    """n independent matmul towers, one per device when `placed`, summed on CPU:0."""
    outs = []
    for d in range(n):
        if placed:
            with tf.device(f"/cpu:{d}"):
                outs.append(tf.reduce_sum(tf.tanh(tf.matmul(x, w) + float(d)), axis=1))
        else:
            outs.append(tf.reduce_sum(tf.tanh(tf.matmul(x, w) + float(d)), axis=1))
    return tf.add_n(outs)


def _partitions(fn, *args):
    return fn.get_concrete_function(*args).graph.partitions_as_text()


def test_forward_equals_single_device(cpus):
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((8, 16)).astype(np.float32))
    w = tf.constant(rng.standard_normal((16, 4)).astype(np.float32))
    multi = tf.function(lambda x, w: _towers(x, w, cpus, True))
    single = tf.function(lambda x, w: _towers(x, w, cpus, False))
    np.testing.assert_allclose(multi(x, w).numpy(), single(x, w).numpy(), rtol=1e-6)
    texts = _partitions(multi, x, w)
    assert len(texts) == cpus
    assert "_Send(" in texts[1] and "_Recv(" in texts[0]
    assert f"@{FULL}1" in texts[1]


def test_result_device_follows_the_producer(two_cpus):
    @tf.function
    def f(x):
        with tf.device("/cpu:1"):
            y = x * 2.0
        return y + 1.0, y

    a, b = f(tf.constant(1.0))
    assert float(a) == 3.0 and float(b) == 2.0
    assert b.device == FULL + "1"


def test_gradients_equal_single_device(cpus):
    rng = np.random.default_rng(1)
    x = tf.constant(rng.standard_normal((4, 8)).astype(np.float32))
    w = tf.Variable(rng.standard_normal((8, 3)).astype(np.float32))

    def loss(placed):
        return tf.reduce_sum(_towers(x, w, cpus, placed) ** 2)

    @tf.function
    def grad(placed):
        with tf.GradientTape() as tape:
            value = loss(placed)
        return value, tape.gradient(value, w)

    v1, g1 = grad(True)
    v0, g0 = grad(False)
    np.testing.assert_allclose(v1.numpy(), v0.numpy(), rtol=1e-5)
    np.testing.assert_allclose(g1.numpy(), g0.numpy(), rtol=1e-5)

    # The same through a tape outside the function (the function's forward/backward pair). The forward
    # keeps the nodes' devices: its towers run on their devices.
    multi = tf.function(lambda: loss(True))
    with tf.profiler.profile() as prof:
        with tf.GradientTape() as tape:
            value = multi()
    np.testing.assert_allclose(value.numpy(), v0.numpy(), rtol=1e-5)
    np.testing.assert_allclose(tape.gradient(value, w).numpy(), g0.numpy(), rtol=1e-5)
    assert {e["device"] for e in prof.events if e["op"] == "MatMul"} == set(range(cpus))


def test_variables_on_different_devices(cpus):
    vs = []
    for d in range(cpus):
        with tf.device(f"/cpu:{d}"):
            vs.append(tf.Variable(float(d + 1)))
    assert [v.device for v in vs] == [FULL + str(d) for d in range(cpus)]

    @tf.function
    def step(x):
        for v in vs:
            v.assign_add(x * v)  # reads and writes run on the variable's device
        return tf.add_n([v.read_value() for v in vs])

    expected = [float(d + 1) for d in range(cpus)]
    for _ in range(3):
        got = step(tf.constant(0.5))
        expected = [e * 1.5 for e in expected]
        np.testing.assert_allclose(got.numpy(), sum(expected), rtol=1e-6)
    assert [float(v.numpy()) for v in vs] == pytest.approx(expected)
    texts = _partitions(step, tf.constant(0.5))
    assert len(texts) == cpus
    for d, text in enumerate(texts):
        if d:
            assert "AssignAddVariableOp" in text, text


def test_control_flow_inside_a_partition(two_cpus):
    @tf.function
    def f(x, n):
        with tf.device("/cpu:1"):
            i = tf.constant(0)
            y = x
            while i < n:  # AutoGraph: a While on CPU:1
                y = y * 2.0 + 1.0
                i += 1
            z = tf.cond(tf.reduce_sum(y) > 100.0, lambda: y - 100.0, lambda: y)
        return z + x

    @tf.function
    def g(x, n):
        i = tf.constant(0)
        y = x
        while i < n:
            y = y * 2.0 + 1.0
            i += 1
        z = tf.cond(tf.reduce_sum(y) > 100.0, lambda: y - 100.0, lambda: y)
        return z + x

    x = tf.constant([1.0, 2.0, 3.0])
    for n in [0, 3, 7]:
        np.testing.assert_allclose(f(x, tf.constant(n)).numpy(), g(x, tf.constant(n)).numpy())
    texts = _partitions(f, x, tf.constant(3))
    assert len(texts) == 2
    assert "While" in texts[1] and "While" not in texts[0]


def test_control_edges_across_devices(two_cpus):
    with tf.device("/cpu:1"):
        v = tf.Variable(1.0)
    w = tf.Variable(10.0)

    @tf.function
    def f():
        v.assign(5.0)
        w.assign(v.read_value() * 2.0)  # a read on CPU:1 feeding a write on CPU:0
        v.assign(7.0)
        return w.read_value() + v.read_value()

    assert float(f()) == 17.0
    assert float(w.numpy()) == 10.0 and float(v.numpy()) == 7.0


def test_complex_and_string_values_cross_devices(two_cpus):
    # _Send/_Recv hand references over; they were declared for the real dtypes only, so a complex or string
    # value between partitions had no kernel.
    z = tf.complex(tf.constant([1.0, 2.0]), tf.constant([-1.0, 0.5]))
    s = tf.constant(["a", "bc"])

    @tf.function
    def f(z, s):
        with tf.device("/cpu:1"):
            z2 = z * z
            s2 = s + s
        return z2 + z, s2 + s

    out_z, out_s = f(z, s)
    np.testing.assert_allclose(out_z.numpy(), z.numpy() ** 2 + z.numpy(), rtol=1e-6)
    assert out_s.numpy().tolist() == [b"aaa", b"bcbcbc"]
    texts = _partitions(f, z, s)
    assert len(texts) == 2 and "_Send(" in texts[1] and "_Recv(" in texts[0]


def test_hard_placement_error_at_call(two_cpus):
    tf.config.set_soft_device_placement(False)

    @tf.function
    def f(x):
        with tf.device("/cpu:7"):
            return x + 1.0

    with pytest.raises(errors.InvalidArgumentError, match="Could not satisfy device specification "
                       "'/job:localhost/replica:0/task:0/device:CPU:7'"):
        f(tf.constant(1.0))


def test_soft_placement_in_functions(two_cpus):
    @tf.function
    def f(x):
        with tf.device("GPU:0"):
            y = x + 1.0
        with tf.device("/cpu:1"):
            return y * 3.0

    assert float(f(tf.constant(1.0))) == 6.0
    assert len(_partitions(f, tf.constant(1.0))) == 2


def test_node_devices_in_graph_def(two_cpus):
    @tf.function
    def f(x):
        with tf.device("/cpu:1"):
            return tf.sin(x)

    gd = f.get_concrete_function(tf.TensorSpec([2], tf.float32)).graph.as_graph_def()
    devices = {n.op: n.device for n in gd.node}
    assert devices["Sin"] == "/device:CPU:1"
    imported = tf.graph_util.import_graph_def(gd) if hasattr(tf.graph_util, "import_graph_def") else None
    del imported


def test_errors_in_one_partition_do_not_hang(two_cpus):
    @tf.function
    def f(x, i):
        with tf.device("/cpu:1"):
            y = tf.gather(x, i)  # fails for an index out of range
        return y + x[0]

    x = tf.constant([1.0, 2.0])
    assert float(f(x, tf.constant(1))) == 3.0
    with pytest.raises(errors.InvalidArgumentError):
        f(x, tf.constant(5))


def test_partitions_overlap_in_time(two_cpus):
    """Two independent towers on two devices run at the same time: the profiler shows each device as its
    own track, and some node of one device starts before a node of the other ends and vice versa."""
    rng = np.random.default_rng(2)
    x = tf.constant(rng.standard_normal((512, 512)).astype(np.float32))

    @tf.function
    def f(x):
        outs = []
        for d in range(2):
            with tf.device(f"/cpu:{d}"):
                y = x
                for _ in range(8):  # ~20 ms of work per device: longer than a late thread's wake-up
                    y = tf.tanh(tf.matmul(y, x) * 0.01)
                outs.append(tf.reduce_sum(y))
        return outs[0] + outs[1]

    f(x)
    for _ in range(30):  # a loaded machine may serialize a run; overlap in some run proves concurrency
        with tf.profiler.profile() as prof:
            f(x)
        spans = {0: [], 1: []}
        for e in prof.events:
            if e["op"] == "MatMul":
                spans[e["device"]].append((e["start_ns"], e["end_ns"]))
        assert len(spans[0]) == 8 and len(spans[1]) == 8, prof.events[:5]
        # Some MatMul of CPU:0 and some MatMul of CPU:1 were running at the same instant.
        if any(s0 < e1 and s1 < e0 for s0, e0 in spans[0] for s1, e1 in spans[1]):
            break
    else:
        pytest.fail("the two partitions never overlapped in 30 runs")
    trace = json.loads(prof.chrome_trace())
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    assert FULL + "0" in names and FULL + "1" in names


def test_nested_function_with_devices_is_partitioned_with_its_caller(two_cpus):
    @tf.function
    def inner(x):
        with tf.device("/cpu:1"):
            y = tf.exp(x * 0.5)
        return y * 2.0

    @tf.function
    def outer(x):
        return inner(x) + inner(x + 1.0)

    x = tf.constant([0.0, 1.0, 2.0])
    expected = np.exp(x.numpy() * 0.5) * 2.0 + np.exp((x.numpy() + 1.0) * 0.5) * 2.0
    np.testing.assert_allclose(outer(x).numpy(), expected, rtol=1e-6)
    texts = _partitions(outer, x)
    assert len(texts) == 2 and "Exp(" in texts[1] and "Exp(" not in texts[0]
