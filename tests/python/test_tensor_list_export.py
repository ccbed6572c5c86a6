"""GraphDefs and SavedModels that ember writes from functions using TensorArrays (issue 15): ember's dense lists
are written as TensorFlow's DT_VARIANT TensorLists (Note [Dense lists in TensorFlow's GraphDef] in
src/ember/graph/tensor_list_export.cc), so TensorFlow 2.21 imports and runs them with ember's values, and
ember re-imports its own export."""

import numpy as np
import pytest
import tensorflow as tf

import ember as em
from test_control_flow_graph_def import run_in_ember, run_in_tensorflow


def list_ops(graph_def):
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    return {n.op for n in nodes if n.op.startswith("TensorList")}


def _flat(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def check_both_ways(f, feeds, *args):
    """f's GraphDef run by TensorFlow and re-imported by ember gives f's own results."""
    graph = f.get_concrete_function().graph
    gd = graph.as_graph_def().SerializeToString()
    want = [np.asarray(v) for v in _flat(f(*args))]
    fetches = [t.name for t in graph.outputs]
    for run in (run_in_tensorflow, run_in_ember):
        got = run(gd, feeds, fetches, *args)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6)
    return graph.as_graph_def()


def rows(n, width=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, width)).astype(np.float32)


def loop_written_array():
    @em.function(input_signature=[em.TensorSpec([None, 3], em.float32)])
    def f(x):
        n = em.shape(x)[0]
        ta = em.TensorArray(em.float32, size=n)
        _, ta = em.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, x[i] * 2.0)), [0, ta])
        return ta.stack(), ta.gather(em.range(0, n, 2)), ta.scatter([0], x[:1] + 100.0).concat(), ta.read(n - 1)

    return f


@pytest.mark.parametrize("n", [1, 4, 7])
def test_tensorflow_runs_a_loop_written_array_gathered_scattered_and_concatenated(n):
    gd = check_both_ways(loop_written_array(), ["x:0"], rows(n))
    assert {"TensorListGather", "TensorListScatterIntoExistingList", "TensorListConcatV2",
            "TensorListFromTensor"} <= list_ops(gd)


def test_a_list_passed_between_list_ops_stays_a_variant():
    @em.function(input_signature=[em.TensorSpec([None, 3], em.float32), em.TensorSpec([None], em.int32)])
    def f(x, i):
        ta = em.TensorArray(em.float32, size=em.shape(x)[0]).unstack(x)
        ta = ta.scatter(i, em.gather(x, i) * 3.0).scatter(i[:1], em.gather(x, i[:1]) - 1.0)
        return ta.stack(), ta.gather(i)

    gd = check_both_ways(f, ["x:0", "i:0"], rows(5), np.array([4, 1], np.int32))
    scatters = [n for n in gd.node if n.op == "TensorListScatterIntoExistingList"]
    assert len(scatters) == 2
    by_name = {n.name: n for n in gd.node}
    # The second scatter takes the first one's variant, not a FromTensor of its stacked value.
    firsts = [s for s in scatters if by_name[s.input[0].split(":")[0]].op == "TensorListScatterIntoExistingList"]
    assert len(firsts) == 1
    assert all(n.attr["element_dtype"].type == tf.float32.as_datatype_enum for n in scatters)
    assert all("T" not in n.attr for n in scatters)


@pytest.mark.parametrize("lengths", [[2, 2, 2], [3, 3], [1, 1, 1, 1, 1, 1], [1, 3, 2], [0, 6]])
def test_tensorflow_runs_split_with_run_time_lengths(lengths):
    """Read back (concat, read, size), a split is a ragged array of plain ops (no list ops to write); stacked,
    it is a TensorListSplit, which needs equal lengths."""
    @em.function(input_signature=[em.TensorSpec([None, 3], em.float32), em.TensorSpec([None], em.int64)])
    def read_back(x, lengths):
        ta = em.TensorArray(em.float32, size=0, dynamic_size=True, infer_shape=False).split(x, lengths)
        return ta.concat() * 2.0, ta.read(1), ta.size()

    check_both_ways(read_back, ["x:0", "lengths:0"], rows(6), np.array(lengths, np.int64))
    if len(set(lengths)) > 1:
        return

    @em.function(input_signature=[em.TensorSpec([None, 3], em.float32), em.TensorSpec([None], em.int64)])
    def stacked(x, lengths):
        ta = em.TensorArray(em.float32, size=0, dynamic_size=True, infer_shape=False).split(x, lengths)
        return ta.stack(), ta.gather([1, 0])

    gd = check_both_ways(stacked, ["x:0", "lengths:0"], rows(6), np.array(lengths, np.int64))
    assert {"TensorListSplit", "TensorListGather"} <= list_ops(gd)


def test_tensorflow_runs_map_fn_and_scan():
    @em.function(input_signature=[em.TensorSpec([None, 3], em.float32)])
    def f(x):
        mapped = em.map_fn(lambda r: em.reduce_sum(r * r), x)
        scanned = em.scan(lambda acc, r: acc * 0.5 + r, x)
        return mapped, scanned

    check_both_ways(f, ["x:0"], rows(6))


def test_tensorflow_runs_a_training_steps_gradient_through_list_ops():
    w0 = rows(3, 3, seed=1)

    @em.function(input_signature=[em.TensorSpec([None, 3], em.float32), em.TensorSpec([3, 3], em.float32)])
    def step(x, w):
        with em.GradientTape() as tape:
            tape.watch(w)
            n = em.shape(x)[0]
            ta = em.TensorArray(em.float32, size=n)

            def body(i, ta):
                return i + 1, ta.write(i, em.tanh(em.linalg.matvec(w, x[i])))

            _, ta = em.while_loop(lambda i, ta: i < n, body, [0, ta])
            picked = ta.gather(em.range(0, n, 2))
            joined = ta.scatter([0], picked[:1] * 2.0).concat()
            loss = em.reduce_sum(picked * picked) + em.reduce_sum(em.sin(joined))
        grad = tape.gradient(loss, w)
        return loss, grad, w - 0.1 * grad

    gd = check_both_ways(step, ["x:0", "w:0"], rows(5), w0)
    assert {"TensorListGather", "TensorListScatterIntoExistingList"} <= list_ops(gd)
    # TensorFlow's own gradient of the same program.
    x = tf.constant(rows(5))
    w = tf.constant(w0)
    with tf.GradientTape() as tape:
        tape.watch(w)
        ys = tf.tanh(tf.linalg.matvec(w[None], x))
        picked = tf.gather(ys, tf.range(0, 5, 2))
        joined = tf.reshape(tf.tensor_scatter_nd_update(ys, [[0]], picked[:1] * 2.0), [-1])
        loss = tf.reduce_sum(picked * picked) + tf.reduce_sum(tf.sin(joined))
    np.testing.assert_allclose(step(rows(5), w0)[1].numpy(), tape.gradient(loss, w).numpy(), rtol=1e-5, atol=1e-6)


class _Stacker(em.Module):
    def __init__(self):
        super().__init__()
        self.scale = em.Variable(np.float32(1.5))

    @em.function(input_signature=[em.TensorSpec([None, 3], em.float32)])
    def __call__(self, x):
        n = em.shape(x)[0]
        ta = em.TensorArray(em.float32, size=n)
        _, ta = em.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, x[i] * self.scale)), [0, ta])
        return ta.gather(em.range(n - 1, -1, -1)) + ta.concat()[:3]


def test_tensorflow_loads_and_runs_a_saved_model_using_a_tensor_array(tmp_path):
    m = _Stacker()
    path = str(tmp_path / "stacker")
    em.saved_model.save(m, path)
    loaded = tf.saved_model.load(path)
    for n in (1, 3, 6):
        np.testing.assert_allclose(loaded(tf.constant(rows(n))).numpy(), m(em.constant(rows(n))).numpy(),
                                   rtol=1e-6)
    np.testing.assert_allclose(em.saved_model.load(path)(em.constant(rows(4))).numpy(),
                               m(em.constant(rows(4))).numpy(), rtol=1e-6)


class _Trainer(em.Module):
    def __init__(self):
        super().__init__()
        self.w = em.Variable(rows(3, 3, seed=1))

    @em.function(input_signature=[em.TensorSpec([None, 3], em.float32)])
    def step(self, x):
        with em.GradientTape() as tape:
            n = em.shape(x)[0]
            ta = em.TensorArray(em.float32, size=n)
            _, ta = em.while_loop(lambda i, ta: i < n,
                                  lambda i, ta: (i + 1, ta.write(i, em.tanh(em.linalg.matvec(self.w, x[i])))), [0, ta])
            loss = em.reduce_sum(ta.gather(em.range(0, n, 2)) ** 2) + em.reduce_sum(ta.concat())
        grad = tape.gradient(loss, self.w)
        self.w.assign_sub(0.1 * grad)
        return loss, grad


def test_tensorflow_runs_a_saved_training_step_with_a_variable_read_in_the_loop(tmp_path):
    """The variable is a trailing DT_RESOURCE loop variable of the gradient's accumulating forward loop."""
    m = _Trainer()
    em.saved_model.save(m, str(tmp_path / "trainer"))
    loaded = tf.saved_model.load(str(tmp_path / "trainer"))
    for n in (4, 1):
        x = rows(n, seed=n)
        want = m.step(em.constant(x))
        got = loaded.step(tf.constant(x))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(loaded.w.numpy(), m.w.numpy(), rtol=1e-5, atol=1e-6)


def test_a_list_split_into_different_lengths_and_read_back_round_trips():
    """ember's raw TensorListSplit read back by ConcatV2/GetItem/Length: written with variants (and a Stack
    named after the split, for fetches), run by TensorFlow, and re-imported by ember, whose import turns the
    reads into plain ops (Note [Splitting imported lists into pieces of different lengths])."""
    split, concat, get_item = (em._C.op(n) for n in ("TensorListSplit", "TensorListConcatV2", "TensorListGetItem"))
    length = em._C.op("TensorListLength")

    @em.function(input_signature=[em.TensorSpec([None, 2], em.float32), em.TensorSpec([None], em.int64)])
    def f(x, lengths):
        pieces = split(x, em.constant([-1, 2]), lengths)
        joined = concat(pieces, em.constant([-1, 2]), em.zeros([0], em.int64), em.float32)
        # (Identity: in a graph, a rewritten Concat is its value, so "name:1" is no output to fetch by name.)
        return (joined[0] * 2.0, em.identity(joined[1]), get_item(pieces, 1, em.constant([-1, 2]), em.float32),
                length(pieces))

    x = rows(6, 2)
    check_both_ways(f, ["x:0", "lengths:0"], x, np.array([3, 3], np.int64))
    graph = f.get_concrete_function().graph
    gd = graph.as_graph_def().SerializeToString()
    fetches = [t.name for t in graph.outputs]
    got = run_in_ember(gd, ["x:0", "lengths:0"], fetches, x, np.array([1, 5], np.int64))
    want = run_in_tensorflow(gd, ["x:0", "lengths:0"], fetches, x, np.array([1, 5], np.int64))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(got[2]), x[1:6])
