"""TensorFlow's TensorList ops Gather, Scatter(V2), ScatterIntoExistingList, Concat(V2) and Split on ember's dense
lists (src/ember/ops/tensor_array.cc, Note [Gathering and splitting dense lists]): TensorFlow's graphs holding
them import and run with TensorFlow's results, forward and backward; their gradients against finite
differences, eagerly and inside ember.function; tf.TensorArray's gather/scatter/concat/split built on them,
against TensorFlow. Strings in control flow and in TensorArrays: tests/python/test_control_flow_strings.py."""

import numpy as np
import pytest
import tensorflow as tf

import ember as em
from ember import _C

GATHER = _C.op("TensorListGather")
SCATTER = _C.op("TensorListScatter")
SCATTER_V2 = _C.op("TensorListScatterV2")
SCATTER_INTO = _C.op("TensorListScatterIntoExistingList")
CONCAT = _C.op("TensorListConcat")
CONCAT_V2 = _C.op("TensorListConcatV2")
SPLIT = _C.op("TensorListSplit")


def list_ops(graph_def):
    return {n.op for n in graph_def.node} | {n.op for fn in graph_def.library.function for n in fn.node_def}


def run_tensorflow_function_in_ember(f, *args):
    """f's concrete graph as TensorFlow exports it, imported into ember and run; with what f itself gives and
    the GraphDef."""
    concrete = f.get_concrete_function()
    gd = concrete.graph.as_graph_def()
    graph = em.graph_util.import_graph_def(gd.SerializeToString())
    out = em.NewGraphFunction(graph, [t.name for t in concrete.inputs], [t.name for t in concrete.outputs])(*args)
    want = f(*args)
    got = [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]
    want = [w.numpy() for w in (want if isinstance(want, (list, tuple)) else [want])]
    return got, want, gd


def assert_same(got, want, rtol=1e-6):
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == b.dtype and a.shape == b.shape, (k, a.dtype, a.shape, b.dtype, b.shape)
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-6, err_msg=f"output {k}")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"output {k}")


X = np.arange(12, dtype=np.float32).reshape(4, 3) / 4.0 - 1.0


# ---- TensorFlow's graphs, imported


@tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([None], tf.int32),
                              tf.TensorSpec([None], tf.int64)])
def tensorflow_array_methods(x, idx, lengths):
    n = tf.shape(x)[0]
    src = tf.TensorArray(tf.float32, size=n).unstack(x)
    gathered = src.gather(idx)
    scattered = tf.TensorArray(tf.float32, size=n, element_shape=[3]).scatter(idx, x[:tf.size(idx)] * 2.0)
    joined = src.concat()
    pieces = tf.TensorArray(tf.float32, size=0, dynamic_size=True, infer_shape=False).split(
        tf.reshape(x, [-1]), lengths)
    return gathered, scattered.stack(), joined, pieces.concat(), pieces.read(1), pieces.size()


def test_ember_runs_tensorflows_tensor_array_gather_scatter_concat_split():
    got, want, gd = run_tensorflow_function_in_ember(tensorflow_array_methods, X, np.array([3, 0], np.int32),
                                                     np.array([6, 6], np.int64))
    assert {"TensorListGather", "TensorListScatterIntoExistingList", "TensorListConcatV2",
            "TensorListSplit"} <= list_ops(gd)
    assert_same(got, want)


def test_tensorflows_gradients_through_gather_scatter_concat_split_import():
    """TensorFlow's own gradient graph of these ops (list_grad's rules: Gather's is a Reserve and a
    ScatterIntoExistingList, Concat's a Split, ...) runs in ember with TensorFlow's values."""
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([None], tf.int32)])
    def f(x, idx):
        with tf.GradientTape() as tape:
            tape.watch(x)
            n = tf.shape(x)[0]
            src = tf.TensorArray(tf.float32, size=n).unstack(x * x)
            g = src.gather(idx)
            s = tf.TensorArray(tf.float32, size=n, element_shape=[3]).scatter(idx, tf.sin(x[:tf.size(idx)]))
            c = src.concat()
            p = tf.TensorArray(tf.float32, size=0, dynamic_size=True).split(tf.reshape(x, [-1]), [6, 6])
            y = tf.reduce_sum(g * 3.0) + tf.reduce_sum(s.stack() * x) + tf.reduce_sum(c * c) + \
                tf.reduce_sum(p.stack() ** 3)
        return y, tape.gradient(y, x)

    got, want, gd = run_tensorflow_function_in_ember(f, X, np.array([2, 0], np.int32))
    assert {"TensorListGather", "TensorListScatterIntoExistingList", "TensorListConcatV2",
            "TensorListSplit"} <= list_ops(gd)
    assert_same(got, want, rtol=1e-5)


def test_ember_runs_tensorflows_raw_scatter_and_concat_v1():
    """TensorListScatter (v1, a list of max(indices) + 1), ScatterV2 (with num_elements) and TensorListConcat
    (v1, whose element_shape is an attribute of unknown rank by default)."""
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([None], tf.int32)])
    def f(x, idx):
        a = tf.raw_ops.TensorListScatter(tensor=x, indices=idx, element_shape=tf.constant([3]))
        b = tf.raw_ops.TensorListScatterV2(tensor=x, indices=idx, element_shape=tf.constant([-1]),
                                           num_elements=tf.constant(6))
        stacked_a = tf.raw_ops.TensorListStack(input_handle=a, element_shape=[3], element_dtype=tf.float32)
        stacked_b = tf.raw_ops.TensorListStack(input_handle=b, element_shape=[3], element_dtype=tf.float32)
        joined, lengths = tf.raw_ops.TensorListConcat(input_handle=b, element_dtype=tf.float32,
                                                      element_shape=[3])
        return stacked_a, stacked_b, joined, lengths, tf.raw_ops.TensorListLength(input_handle=a)

    got, want, gd = run_tensorflow_function_in_ember(f, X, np.array([4, 1, 0, 2], np.int32))
    assert {"TensorListScatter", "TensorListScatterV2", "TensorListConcat"} <= list_ops(gd)
    assert_same(got, want)


@pytest.mark.parametrize("lengths", [[5, 7], [0, 12], [12, 0], [1, 11]])
def test_ember_runs_tensorflows_split_into_pieces_of_different_lengths(lengths):
    """A split whose list is only read back (concat, read, size) never makes a dense list (Note [Splitting
    imported lists into pieces of different lengths] in graph/tensor_list_import.cc)."""
    got, want, _ = run_tensorflow_function_in_ember(tensorflow_array_methods, X, np.array([3, 0], np.int32),
                                                    np.array(lengths, np.int64))
    assert_same(got, want)


def test_ember_differentiates_an_imported_split_of_different_lengths():
    concrete = tensorflow_array_methods.get_concrete_function()
    graph = em.graph_util.import_graph_def(concrete.graph.as_graph_def().SerializeToString())
    run = em.NewGraphFunction(graph, [t.name for t in concrete.inputs], [t.name for t in concrete.outputs])
    idx, lengths = np.array([3, 0], np.int32), np.array([5, 7], np.int64)
    x = em.constant(X)
    with em.GradientTape() as tape:
        tape.watch(x)
        out = run(x, idx, lengths)
        loss = em.reduce_sum(out[3] * out[3]) + em.reduce_sum(em.sin(out[4]))
    xt = tf.constant(X)
    with tf.GradientTape() as tf_tape:
        tf_tape.watch(xt)
        want = tensorflow_array_methods(xt, idx, lengths)
        tf_loss = tf.reduce_sum(want[3] * want[3]) + tf.reduce_sum(tf.sin(want[4]))
    np.testing.assert_allclose(float(loss), float(tf_loss), rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), tf_tape.gradient(tf_loss, xt).numpy(), rtol=1e-6)


def split_loss_and_gradient(reads, concat):
    """A tf.function taking TensorFlow's gradient of a loss through an unequal split: its gradient graph adds
    lists (AddN of the gradient's Split and of Reserves written by SetItem) and concatenates them."""
    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32), tf.TensorSpec([None], tf.int64)])
    def f(x, lengths):
        with tf.GradientTape() as tape:
            tape.watch(x)
            ta = tf.TensorArray(tf.float32, size=3, infer_shape=False).split(x, lengths)
            loss = tf.constant(0.0)
            for k, index in enumerate(reads):
                loss += tf.reduce_sum(tf.sin(ta.read(index)) * (k + 2.0))
            if concat:
                loss += tf.reduce_sum(ta.concat() ** 3)
        return loss, tape.gradient(loss, x)
    return f


@pytest.mark.parametrize("reads,concat", [([0, 2], True), ([1], True), ([], True), ([2, 0, 2], False),
                                          ([1], False)])
@pytest.mark.parametrize("lengths", [[1, 2, 3], [0, 4, 2], [3, 3, 0], [2, 2, 2]])
def test_ember_runs_tensorflows_own_gradient_graph_of_an_unequal_split(reads, concat, lengths):
    """TensorFlow's gradient graph of a split imports as one family of ragged arrays and lists of holes (Note
    [Splitting imported lists into pieces of different lengths]): no dense list is made."""
    f = split_loss_and_gradient(reads, concat)
    x = np.arange(12, dtype=np.float32).reshape(6, 2) / 5.0 - 1.0
    got, want, gd = run_tensorflow_function_in_ember(f, x, np.array(lengths, np.int64))
    assert {"TensorListSplit", "TensorListConcatV2"} <= list_ops(gd)
    if reads:
        assert {"TensorListReserve", "TensorListSetItem"} <= list_ops(gd)
    assert_same(got, want, rtol=1e-5)
    graph = em.graph_util.import_graph_def(gd.SerializeToString())
    made = {n.type for n in graph.get_operations()}
    assert not made & {"TensorListSplit", "TensorListSetItem", "TensorListConcatV2", "TensorListGetItem"}, made


def test_ember_runs_a_saved_model_of_tensorflows_gradient_of_an_unequal_split(tmp_path):
    f = split_loss_and_gradient([0, 2], True)
    module = tf.Module()
    module.f = f
    tf.saved_model.save(module, str(tmp_path))
    loaded = em.saved_model.load(str(tmp_path))
    x = np.arange(12, dtype=np.float32).reshape(6, 2) / 5.0 - 1.0
    lengths = np.array([1, 4, 1], np.int64)
    got = [np.asarray(t) for t in loaded.f(x, lengths)]
    want = [t.numpy() for t in f(x, lengths)]
    assert_same(got, want, rtol=1e-5)


def test_a_split_list_passed_on_stays_dense_and_needs_equal_lengths():
    """A split list that reaches anything but reads and TensorFlow's gradient ops (here a While) stays a dense
    list, and a split of it into different lengths is Unimplemented, naming the lengths."""
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.int64)])
    def f(x, lengths):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, infer_shape=False).split(x, lengths)
        _, ta = tf.while_loop(lambda i, t: i < 1, lambda i, t: (i + 1, t), [0, ta])
        return ta.read(1)

    x = np.arange(6, dtype=np.float32)
    got, want, _ = run_tensorflow_function_in_ember(f, x, np.array([3, 3], np.int64))
    assert_same(got, want)
    with pytest.raises(em.errors.UnimplementedError, match=r"TensorListSplit.*: ember.s lists are dense.*\[2,4\] differ"):
        run_tensorflow_function_in_ember(f, x, np.array([2, 4], np.int64))


@tf.function(input_signature=[tf.TensorSpec([], tf.int32), tf.TensorSpec([4], tf.float32)])
def pushing_loop(n, row):
    pushed = tf.raw_ops.EmptyTensorList(element_shape=tf.constant([4]), max_num_elements=-1,
                                        element_dtype=tf.float32)
    written = tf.TensorArray(tf.float32, size=0, dynamic_size=True)

    def body(i, pushed, written):
        value = row * tf.cast(i, tf.float32)
        return i + 1, tf.raw_ops.TensorListPushBack(input_handle=pushed, tensor=value), written.write(i, -value)

    _, pushed, written = tf.while_loop(lambda i, *_: i < n, body, [0, pushed, written])
    return tf.raw_ops.TensorListStack(input_handle=pushed, element_dtype=tf.float32, element_shape=[4]), \
        written.stack()


def test_an_imported_loop_writing_a_list_per_iteration_copies_linearly():
    """PushBack and SetItem onto a loop variable write into its buffer, grown geometrically (Note [Lists
    growing in place] in ops/tensor_array.cc): the bytes copied over n iterations are O(n rows), where copying
    the list at each write would be n^2 / 2 rows (16 MB at 2,000 iterations of 16-byte rows)."""
    concrete = pushing_loop.get_concrete_function()
    gd = concrete.graph.as_graph_def()
    assert {"TensorListPushBack", "TensorListSetItem"} <= list_ops(gd)
    graph = em.graph_util.import_graph_def(gd.SerializeToString())
    run = em.NewGraphFunction(graph, [t.name for t in concrete.inputs], [t.name for t in concrete.outputs])
    row = np.arange(4, dtype=np.float32)
    copied = {}
    for n in (1000, 2000):
        before = _C.tensor_list_bytes_copied()
        got = run(np.int32(n), row)
        copied[n] = _C.tensor_list_bytes_copied() - before
        assert_same([np.asarray(t) for t in got], [t.numpy() for t in pushing_loop(n, row)])
    row_bytes = 16
    assert copied[2000] <= 2 * 2 * 2000 * row_bytes, copied  # two lists, each copying at most 2n rows
    assert copied[2000] <= 2.2 * copied[1000], copied


# ---- the ops themselves: values, errors, gradients against finite differences


def test_gather_scatter_concat_split_values():
    rows = em.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_array_equal(GATHER(rows, [2, 0, 2], [2], em.float32).numpy(), [[5, 6], [1, 2], [5, 6]])
    np.testing.assert_array_equal(SCATTER(rows, [1, 3, 0], [2]).numpy(), [[5, 6], [1, 2], [0, 0], [3, 4]])
    np.testing.assert_array_equal(SCATTER_V2(rows[:1], [1], [-1], 3).numpy(), [[0, 0], [1, 2], [0, 0]])
    np.testing.assert_array_equal(SCATTER_INTO(rows, [[9.0, 8.0]], [1], em.float32).numpy(),
                                  [[1, 2], [9, 8], [5, 6]])
    joined, lengths = CONCAT_V2(rows, -1, em.constant([], em.int64), em.float32)
    np.testing.assert_array_equal(joined.numpy(), [1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(lengths.numpy(), [2, 2, 2])
    assert lengths.dtype == em.int64
    np.testing.assert_array_equal(CONCAT(rows, em.float32, [2])[0].numpy(), [1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(SPLIT(em.constant([1, 2, 3, 4, 5, 6]), [-1], em.constant([3, 3], em.int64)).numpy(),
                                  [[1, 2, 3], [4, 5, 6]])


def test_lists_never_written_read_as_zeros_of_the_element_shape():
    """A reserved list (no element written) gathers and concatenates zeros, as TensorFlow's (leading_dims give
    the lengths of elements whose first dimension is unknown)."""
    empty = _C.op("TensorListReserve")([-1, 2], 3, em.float32)
    np.testing.assert_array_equal(GATHER(empty, [0, 2], [4, 2], em.float32).numpy(), np.zeros([2, 4, 2]))
    joined, lengths = CONCAT_V2(empty, [-1, 2], em.constant([1, 0, 2], em.int64), em.float32)
    np.testing.assert_array_equal(joined.numpy(), np.zeros([3, 2]))
    np.testing.assert_array_equal(lengths.numpy(), [1, 0, 2])
    with pytest.raises(em.errors.InvalidArgumentError, match="TensorListGather: .*never written.*not fully known"):
        GATHER(empty, [0], [-1, 2], em.float32)


@pytest.mark.parametrize("call, error, match", [
    (lambda r: GATHER(r, [3], [2], em.float32), em.errors.InvalidArgumentError,
     "TensorListGather: Trying to access element 3 in a list with 3 elements"),
    (lambda r: GATHER(r, [0], [3], em.float32), em.errors.InvalidArgumentError,
     r"TensorListGather: the element has shape \[2\], incompatible with the list's element shape \[3\]"),
    (lambda r: GATHER(r, [0], [2], em.int32), em.errors.InvalidArgumentError,
     "TensorListGather: element_dtype is int32 but the list holds float32"),
    (lambda r: SCATTER(r, [0, 1], [2]), em.errors.InvalidArgumentError,
     "TensorListScatter: Invalid number of rows in input tensor. Expected: 2 Actual: 3"),
    (lambda r: SCATTER(r, [0, -1, 2], [2]), em.errors.InvalidArgumentError,
     "TensorListScatter: Indices must all be non-negative, got -1"),
    (lambda r: SCATTER_V2(r, [0, 1, 5], [2], 4), em.errors.InvalidArgumentError,
     "TensorListScatterV2: Trying to scatter to index 5 in a list with 4 elements"),
    (lambda r: SCATTER_INTO(r, r[:1], [7], em.float32), em.errors.InvalidArgumentError,
     "TensorListScatterIntoExistingList: Trying to modify element 7 in a list with 3 elements"),
    (lambda r: SCATTER_INTO(r, em.constant([[1.0, 2.0, 3.0]]), [0], em.float32), em.errors.InvalidArgumentError,
     r"TensorListScatterIntoExistingList: the element has shape \[3\] but the list holds elements of shape \[2\]"),
    (lambda r: CONCAT_V2(r[:, 0], -1, em.constant([], em.int64), em.float32), em.errors.InvalidArgumentError,
     "TensorListConcatV2: Concat saw a scalar shape at index 0 but requires at least vectors"),
    (lambda r: SPLIT(em.constant([1.0, 2.0, 3.0]), [-1], em.constant([1, 1], em.int64)),
     em.errors.InvalidArgumentError, "TensorListSplit: Expected sum of lengths to be equal to values.shape"),
    (lambda r: SPLIT(em.constant(1.0), [-1], em.constant([1], em.int64)), em.errors.InvalidArgumentError,
     "TensorListSplit: Tensor must be at least a vector"),
    (lambda r: SPLIT(em.constant([1.0, 2.0, 3.0]), [-1], em.constant([1, 2], em.int64)),
     em.errors.UnimplementedError, r"TensorListSplit: ember's lists are dense.*\[1,2\] differ"),
])
def test_bad_operands_name_the_op(call, error, match):
    rows = em.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    with pytest.raises(error, match=match):
        call(rows)


def finite_difference(f, x, h=1e-6):
    x = np.asarray(x, np.float64)
    grad = np.zeros_like(x)
    for k in range(x.size):
        plus, minus = x.copy(), x.copy()
        plus.flat[k] += h
        minus.flat[k] -= h
        grad.flat[k] = (float(f(em.constant(plus))) - float(f(em.constant(minus)))) / (2 * h)
    return grad


def chain(x):
    """Every new op once, composed, on float64 data: scatter (v1, v2, into a list), gather, split, concat."""
    w = em.constant(np.linspace(-1.0, 1.0, 24).reshape(8, 3))
    a = SCATTER(x, [3, 0, 1, 5], [3])  # [6, 3], rows 2 and 4 zero
    b = SCATTER_INTO(a, x[1:3] * x[1:3], [2, 4], em.float64)
    c = GATHER(b, [5, 4, 3, 2, 1, 0], [3], em.float64)
    d = SCATTER_V2(c, [0, 1, 2, 3, 4, 5], [-1], 8)
    joined, _ = CONCAT_V2(d, [3], em.constant([], em.int64), em.float64)
    e = SPLIT(em.sin(joined), [-1], em.constant([3] * 8, em.int64))
    return em.reduce_sum(e * w)


@pytest.mark.parametrize("traced", [False, True])
def test_gradients_match_finite_differences(traced):
    x = np.linspace(-0.9, 1.3, 12).reshape(4, 3)

    def grad(x):
        with em.GradientTape() as tape:
            tape.watch(x)
            y = chain(x)
        return tape.gradient(y, x)

    got = (em.function(grad) if traced else grad)(em.constant(x)).numpy()
    np.testing.assert_allclose(got, finite_difference(chain, x), rtol=1e-6, atol=1e-8)


def test_second_order_gradients_match_finite_differences():
    x = np.linspace(-0.9, 1.3, 12).reshape(4, 3)

    def first(x):
        with em.GradientTape() as tape:
            tape.watch(x)
            y = chain(x)
        return tape.gradient(y, x)

    def second(x):
        with em.GradientTape() as tape:
            tape.watch(x)
            y = em.reduce_sum(first(x) * em.constant(np.arange(12.0).reshape(4, 3)))
        return tape.gradient(y, x)

    np.testing.assert_allclose(em.function(second)(em.constant(x)).numpy(),
                               finite_difference(lambda v: em.reduce_sum(first(v) * np.arange(12.0).reshape(4, 3)),
                                                 x), rtol=1e-5, atol=1e-6)


# ---- tf.TensorArray's gather/scatter/concat/split with tensor operands, against TensorFlow


def array_program(lib, x, idx, lengths):
    n = lib.shape(x)[0]
    src = lib.TensorArray(lib.float32, size=n).unstack(x)
    acc = lib.TensorArray(lib.float32, size=n, element_shape=[3])

    def body(i, acc):
        return i + 1, acc.scatter(idx, src.gather(idx) * lib.cast(i + 1, lib.float32))

    _, acc = lib.while_loop(lambda i, acc: i < 2, body, [0, acc])
    pieces = lib.TensorArray(lib.float32, size=0, dynamic_size=True).split(lib.reshape(x, [-1]), lengths)
    return acc.stack(), acc.concat(), src.gather(idx), pieces.stack(), pieces.concat()


def gradient_program(lib, x, idx, lengths):
    with lib.GradientTape() as tape:
        tape.watch(x)
        outs = array_program(lib, x * x, idx, lengths)
        y = lib.add_n([lib.reduce_sum(o * lib.cast(k + 1, lib.float32)) for k, o in enumerate(outs)])
    return tape.gradient(y, x)


@pytest.mark.parametrize("program", [array_program, gradient_program])
def test_tensor_array_methods_inside_functions_match_tensorflow(program):
    idx, lengths = np.array([2, 0, 3], np.int32), np.array([4, 4, 4], np.int64)
    sig = lambda lib: [lib.TensorSpec([None, 3], lib.float32), lib.TensorSpec([None], lib.int32),  # noqa: E731
                       lib.TensorSpec([None], lib.int64)]
    ours = em.function(lambda *a: program(em, *a), input_signature=sig(em))
    theirs = tf.function(lambda *a: program(tf, *a), input_signature=sig(tf))
    got, want = ours(X, idx, lengths), theirs(X, idx, lengths)
    got = [np.asarray(g) for g in (got if isinstance(got, (list, tuple)) else [got])]
    want = [w.numpy() for w in (want if isinstance(want, (list, tuple)) else [want])]
    assert_same(got, want, rtol=1e-5)


def test_tensor_array_methods_use_the_list_ops_inside_functions():
    """The dense array (a loop variable, or tensor indices) reads and writes with the TensorList ops."""
    f = em.function(lambda *a: array_program(em, *a), input_signature=[
        em.TensorSpec([None, 3], em.float32), em.TensorSpec([None], em.int32), em.TensorSpec([None], em.int64)])
    concrete = f.get_concrete_function()
    ops = list_ops(concrete.graph.as_graph_def())
    assert {"TensorListGather", "TensorListScatterIntoExistingList", "TensorListConcatV2",
            "TensorListSplit"} <= ops, ops


def test_tensor_array_methods_eagerly_match_tensorflow():
    idx, lengths = np.array([2, 0, 3], np.int32), np.array([4, 4, 4], np.int64)
    got = [np.asarray(o) for o in array_program(em, em.constant(X), em.constant(idx), em.constant(lengths))]
    want = [o.numpy() for o in array_program(tf, tf.constant(X), tf.constant(idx), tf.constant(lengths))]
    assert_same(got, want)
    got = gradient_program(em, em.constant(X), em.constant(idx), em.constant(lengths)).numpy()
    want = gradient_program(tf, tf.constant(X), tf.constant(idx), tf.constant(lengths)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_scatter_into_a_list_still_read_leaves_it_unchanged():
    """ScatterIntoExistingList takes its list's buffer only where the list dies there (Note [Scattering in
    place]): a list read again afterwards keeps its values, eagerly and inside a function."""
    def f(rows):
        written = SCATTER_INTO(rows, em.constant([[9.0, 9.0]]), em.constant([1]), em.float32)
        return rows * 1.0, written

    rows = em.constant([[1.0, 2.0], [3.0, 4.0]])
    for run in (f, em.function(f, input_signature=[em.TensorSpec([None, 2], em.float32)])):
        before, written = run(rows)
        np.testing.assert_array_equal(before.numpy(), [[1, 2], [3, 4]])
        np.testing.assert_array_equal(written.numpy(), [[1, 2], [9, 9]])
    np.testing.assert_array_equal(rows.numpy(), [[1, 2], [3, 4]])
