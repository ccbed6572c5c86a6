"""Issue 15: ember.TensorArray eagerly, inside ember.function and as a while_loop loop variable, compared with
TensorFlow running the same program (``import tensorflow as tf`` vs ``import ember as tf``): values, dtypes,
shapes and the class of an error; gradients through writes, reads and stack."""

import numpy as np
import pytest
import tensorflow

import ember

from tf_differential import same as _same  # noqa: E402


# ---- the methods, eager and staged


def _method_cases():
    def c(fn):  # keeps each case one lambda of tf
        return fn

    return {
        "write_stack": c(lambda tf: tf.TensorArray(tf.float32, size=3).write(0, [1., 2.]).write(2, [3., 4.]).stack()),
        "write_twice": c(lambda tf: tf.TensorArray(tf.float32, size=2).write(0, 1.).write(0, 2.).stack()),
        "write_int_literal": c(lambda tf: tf.TensorArray(tf.float32, size=2).write(0, 1).stack()),
        "write_oob": c(lambda tf: tf.TensorArray(tf.float32, size=2).write(3, 1.).stack()),
        "write_negative": c(lambda tf: tf.TensorArray(tf.float32, size=2).write(-1, 1.).stack()),
        "write_dtype": c(lambda tf: tf.TensorArray(tf.float32, size=2).write(0, tf.constant([1, 2])).stack()),
        "write_shape_mismatch": c(lambda tf: tf.TensorArray(tf.float32, size=2).write(0, [1., 2.])
                                  .write(1, [1., 2., 3.]).stack()),
        "element_shape_mismatch": c(lambda tf: tf.TensorArray(tf.float32, size=2, element_shape=[3])
                                    .write(0, [1., 2.]).stack()),
        "read": c(lambda tf: tf.TensorArray(tf.float32, size=2).unstack([[1., 2.], [3., 4.]]).read(1)),
        "read_unwritten_known_shape": c(lambda tf: tf.TensorArray(tf.float32, size=2, element_shape=[2]).read(1)),
        "read_unwritten_inferred": c(lambda tf: tf.TensorArray(tf.float32, size=2).write(0, [1., 2.]).read(1)),
        "read_oob": c(lambda tf: tf.TensorArray(tf.float32, size=2).unstack([1., 2.]).read(5)),
        "read_negative": c(lambda tf: tf.TensorArray(tf.float32, size=2).unstack([1., 2.]).read(-1)),
        "stack_partial": c(lambda tf: tf.TensorArray(tf.float32, size=3).write(1, [1., 2.]).stack()),
        "stack_empty": c(lambda tf: tf.TensorArray(tf.float32, size=0).stack()),
        "stack_empty_element_shape": c(lambda tf: tf.TensorArray(tf.float32, size=0, element_shape=[3]).stack()),
        "dynamic_size": c(lambda tf: tf.TensorArray(tf.float32, size=0, dynamic_size=True).write(2, 1.).stack()),
        "size": c(lambda tf: tf.TensorArray(tf.int32, size=3).size()),
        "size_after_unstack": c(lambda tf: tf.TensorArray(tf.float32, size=0, dynamic_size=True)
                                .unstack([[1., 2.], [3., 4.], [5., 6.]]).size()),
        "unstack_too_many": c(lambda tf: tf.TensorArray(tf.float32, size=2).unstack([1., 2., 3.]).stack()),
        "gather": c(lambda tf: tf.TensorArray(tf.float32, size=3).unstack([1., 2., 3.]).gather([2, 0])),
        "scatter": c(lambda tf: tf.TensorArray(tf.float32, size=3).scatter([2, 0], [5., 6.]).write(1, 0.).stack()),
        "concat": c(lambda tf: tf.TensorArray(tf.float32, size=2, infer_shape=False).write(0, [1., 2.])
                    .write(1, [3.]).concat()),
        "concat_scalars": c(lambda tf: tf.TensorArray(tf.float32, size=2).write(0, 1.).write(1, 2.).concat()),
        "split": c(lambda tf: tf.TensorArray(tf.float32, size=2, infer_shape=False).split([1., 2., 3.], [2, 1])
                   .read(1)),
        "split_stack": c(lambda tf: tf.TensorArray(tf.float32, size=2).split([1., 2., 3., 4.], [2, 2]).stack()),
        "element_shape_inferred": c(lambda tf: tf.TensorArray(tf.float32, size=2).write(0, [1., 2.]).element_shape),
        "element_shape_unknown": c(lambda tf: tf.TensorArray(tf.float32, size=2).element_shape),
        "identity": c(lambda tf: tf.TensorArray(tf.float32, size=1).write(0, 1.).identity().stack()),
        "close": c(lambda tf: tf.TensorArray(tf.float32, size=2).close()),
        "dtype": c(lambda tf: tf.TensorArray(tf.int32, size=1).dtype.name),
        "dynamic_size_flag": c(lambda tf: tf.TensorArray(tf.int32, size=1).dynamic_size),
        "int64": c(lambda tf: tf.TensorArray(tf.int64, size=2).write(1, tf.constant(7, tf.int64)).stack()),
        "bool": c(lambda tf: tf.TensorArray(tf.bool, size=2).write(1, True).stack()),
    }


@pytest.mark.parametrize("name", sorted(_method_cases()))
def test_methods_eager(name):
    _same(_method_cases()[name])


STAGED_DIFFERS = {
    # TensorFlow's staged arrays are TensorLists: an out-of-range write fails when the function runs
    # (InvalidArgumentError) where the eager array raises OutOfRangeError at once; both are errors here.
    "write_oob", "write_negative", "read_oob", "read_negative",
    # Python values outside tensors: TensorFlow's function must return tensors.
    "element_shape_inferred", "element_shape_unknown", "close", "dtype", "dynamic_size_flag",
}


@pytest.mark.parametrize("name", sorted(set(_method_cases()) - STAGED_DIFFERS))
def test_methods_staged(name):
    case = _method_cases()[name]
    _same(lambda tf: tf.function(lambda: case(tf))())


@pytest.mark.parametrize("name", ["write_oob", "read_oob"])
def test_out_of_range_staged_raises(name):
    case = _method_cases()[name]
    for lib in (tensorflow, ember):
        with pytest.raises(lib.errors.OpError if lib is ember else Exception):
            lib.function(lambda: case(lib))()


def test_eager_write_updates_in_place_and_staged_write_is_functional():
    ta = ember.TensorArray(ember.float32, size=2)
    ta.write(0, 5.0)
    assert ta.read(0).numpy() == 5.0  # eagerly, as TensorFlow's eager arrays

    @ember.function
    def f():
        a = ember.TensorArray(ember.float32, size=2)
        b = a.write(0, 1.0)
        a = a.write(0, 2.0)
        return a.stack(), b.stack()

    a, b = f()
    assert a.numpy().tolist() == [2.0, 0.0] and b.numpy().tolist() == [1.0, 0.0]


def test_clear_after_read_eager():
    _same(lambda tf: (lambda a: (a.read(0), a.read(0)))(
        tf.TensorArray(tf.float32, size=1, clear_after_read=True).write(0, 1.)))
    _same(lambda tf: (lambda a: (a.read(0), a.read(0)))(
        tf.TensorArray(tf.float32, size=1, clear_after_read=False).write(0, 1.)))


def test_eager_size_is_required():
    _same(lambda tf: tf.TensorArray(tf.float32))


# ---- as a loop variable, trip count known only when the function runs


def _loop_program(tf, x, element_shape=None, dynamic=False):
    n = tf.shape(x)[0]
    ta = tf.TensorArray(tf.float32, size=0 if dynamic else n, dynamic_size=dynamic, element_shape=element_shape)

    def body(i, acc, ta):
        acc = acc + x[i]
        return i + 1, acc, ta.write(i, acc * 2.0)

    _, acc, ta = tf.while_loop(lambda i, acc, ta: i < n, body, [0, tf.zeros_like(x[0]), ta])
    return ta.stack(), ta.size(), ta.read(0), acc


@pytest.mark.parametrize("variant", ["unknown_element_shape", "known_element_shape", "dynamic_size"])
@pytest.mark.parametrize("staged", [False, True])
def test_loop_variable(staged, variant):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)

    def case(tf):
        kwargs = {"element_shape": [3]} if variant == "known_element_shape" else {}
        fn = (lambda v: _loop_program(tf, v, dynamic=variant == "dynamic_size", **kwargs))
        if staged:
            fn = tf.function(fn, input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        return [fn(tf.constant(x)), fn(tf.constant(x[:2]))]

    _same(case)


@pytest.mark.parametrize("staged", [False, True])
def test_loop_reads_an_unstacked_array_and_writes_another(staged):
    def case(tf):
        def f(x):
            inputs = tf.TensorArray(tf.float32, size=tf.shape(x)[0]).unstack(x)
            out = tf.TensorArray(tf.float32, size=0, dynamic_size=True)

            def body(i, out):
                return i + 1, out.write(i, tf.reduce_sum(inputs.read(i)))

            _, out = tf.while_loop(lambda i, out: i < inputs.size(), body, (0, out))
            return out.stack()

        g = tf.function(f, input_signature=[tf.TensorSpec([None, None], tf.float32)]) if staged else f
        return [g(tf.ones([3, 2])), g(tf.ones([5, 4]))]

    _same(case)


def test_loop_with_unknown_batch_dimension():
    """The element shape [None, 3] enters the loop unknown: the buffer starts with 1 there and the first
    write broadcasts it."""
    def case(tf):
        @tf.function(input_signature=[tf.TensorSpec([None, None, 3], tf.float32)])
        def f(x):
            n = tf.shape(x)[0]
            ta = tf.TensorArray(tf.float32, size=n)
            _, ta = tf.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, tf.tanh(x[i]))), (0, ta))
            return ta.stack()
        return f(tf.reshape(tf.range(24, dtype=tf.float32) / 24.0, [4, 2, 3]))

    _same(case)


def test_nested_loops_with_arrays():
    def case(tf):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.int32)])
        def f(sizes):
            outer = tf.TensorArray(tf.int32, size=tf.shape(sizes)[0])

            def body(i, outer):
                inner = tf.TensorArray(tf.int32, size=3)
                _, inner = tf.while_loop(lambda j, a: j < 3, lambda j, a: (j + 1, a.write(j, sizes[i] * j)),
                                         (0, inner))
                return i + 1, outer.write(i, inner.stack())

            _, outer = tf.while_loop(lambda i, a: i < tf.shape(sizes)[0], body, (0, outer))
            return outer.stack()
        return f(tf.constant([1, 2, 5]))

    _same(case)


def test_loop_body_returning_something_else_is_a_type_error():
    @ember.function
    def f():
        ta = ember.TensorArray(ember.float32, size=2)
        return ember.while_loop(lambda i, ta: i < 2, lambda i, ta: (i + 1, ember.constant(1.0)), (0, ta))

    with pytest.raises(TypeError, match="TensorArray"):
        f()


def test_staged_loop_is_one_while_op_with_inplace_writes():
    @ember.function(input_signature=[ember.TensorSpec([None, 3], ember.float32)])
    def f(x):
        n = ember.shape(x)[0]
        ta = ember.TensorArray(ember.float32, size=n)
        _, ta = ember.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, x[i])), (0, ta))
        return ta.stack()

    gf = f.get_concrete_function()._gf
    types = [gf.node(i)["type"] for i in range(gf.num_nodes)]
    assert types.count("StatelessWhile") == 1, types


# ---- gradients


def _grad_case(tf, staged):
    def f(x, w):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            ta = tf.TensorArray(tf.float32, size=3)
            h = x
            for i in range(3):
                h = tf.tanh(h * w)
                ta = ta.write(i, h)
            y = tf.reduce_sum(ta.stack() * tf.constant([1., 2., 3.])[:, None]) + tf.reduce_sum(ta.read(1))
        return tape.gradient(y, [x, w])

    g = tf.function(f) if staged else f
    return g(tf.constant([0.5, -0.3]), tf.constant(0.7))


@pytest.mark.parametrize("staged", [False, True])
def test_gradient_through_write_read_stack(staged):
    _same(lambda tf: _grad_case(tf, staged))


@pytest.mark.parametrize("staged", [False, True])
def test_gradient_through_unstack_gather_scatter_concat(staged):
    def case(tf):
        def f(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                ta = tf.TensorArray(tf.float32, size=3).unstack(x * x)
                g = ta.gather([2, 0])
                other = tf.TensorArray(tf.float32, size=3).scatter([1, 2], x[:2] * 3.0)
                y = tf.reduce_sum(g * 2.0) + tf.reduce_sum(other.stack()) + tf.reduce_sum(ta.concat() * 0.5)
            return tape.gradient(y, x)

        g = tf.function(f) if staged else f
        return g(tf.constant([[1., 2.], [3., 4.], [5., 6.]]))

    _same(case)


def test_gradient_through_dense_writes_matches_finite_differences():
    """The dense path (a tensor index) eagerly: InplaceUpdate's and GatherV2's gradient rules."""
    x = ember.constant([0.3, -0.2, 0.9], dtype=ember.float64)

    def loss(x):
        ta = ember.TensorArray(ember.float64, size=3)
        for k in range(3):
            ta = ta.write(ember.constant(k), ember.sin(x * (k + 1.0)))
        return ember.reduce_sum(ta.stack() ** 2) + ember.reduce_sum(ta.read(ember.constant(2)))

    with ember.GradientTape() as tape:
        tape.watch(x)
        y = loss(x)
    grad = tape.gradient(y, x).numpy()
    eps = 1e-6
    numeric = [(loss(x + e).numpy() - loss(x - e).numpy()) / (2 * eps)
               for e in (ember.constant(v, dtype=ember.float64) for v in np.eye(3) * eps)]
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


def test_gradient_through_staged_loop_variable():
    def case(tf):
        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
        def f(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                n = tf.shape(x)[0]
                ta = tf.TensorArray(tf.float32, size=n)
                _, ta = tf.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, tf.sin(x[i]))),
                                      (0, ta))
                y = tf.reduce_sum(ta.stack() ** 2)
            return tape.gradient(y, x)
        return f(tf.constant([[1., 2.], [3., 4.], [0.5, 0.1]]))

    _same(case)


def test_eager_read_clears_for_stack_and_gather_does_not():
    _same(lambda tf: (lambda a: (a.read(0), a.stack()))(
        tf.TensorArray(tf.float32, size=2).write(0, [1., 2.]).write(1, [3., 4.])))
    _same(lambda tf: (lambda a: (a.gather([1, 0]), a.read(0), a.read(1)))(
        tf.TensorArray(tf.float32, size=2).write(0, [1., 2.]).write(1, [3., 4.])))


# ---- writes in place inside loops (Note [Loop variables handed to the body] in control_flow.cc): the body
# may write over the carried buffer only when nothing else reads it


def test_loop_reading_the_array_after_writing_it_sees_the_old_values():
    def case(tf):
        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
        def f(x):
            n = tf.shape(x)[0]
            ta = tf.TensorArray(tf.float32, size=n, element_shape=[2])

            def body(i, ta, s):
                new = ta.write(i, x[i])
                return i + 1, new, s + tf.reduce_sum(ta.stack()) + tf.reduce_sum(new.read(i))

            _, ta, s = tf.while_loop(lambda i, ta, s: i < n, body, (0, ta, 0.0))
            return ta.stack(), s
        return f(tf.constant([[1., 2.], [3., 4.], [5., 6.]]))

    _same(case)


def test_one_array_in_two_loop_variables_is_written_in_one_only():
    def case(tf):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def f(x):
            n = tf.shape(x)[0]
            ta = tf.TensorArray(tf.float32, size=n).unstack(x)
            _, a, b = tf.while_loop(lambda i, a, b: i < n, lambda i, a, b: (i + 1, a.write(i, a.read(i) * 10.0), b),
                                    (0, ta, ta))
            return a.stack(), b.stack(), ta.stack()
        return f(tf.constant([1., 2., 3.]))

    _same(case)


def _row_writing_loop(tf, row_shape):
    """The LSTM-style use: a staged loop over a time dimension known only when it runs, writing one row per
    step into a TensorArray; returns (the stacked rows, the last row)."""
    @tf.function(input_signature=[tf.TensorSpec([None] + row_shape, tf.float32)])
    def f(x):
        n = tf.shape(x)[0]
        ta = tf.TensorArray(tf.float32, size=n, element_shape=row_shape)

        def body(i, h, ta):
            h = tf.tanh(h * 0.5 + x[i])
            return i + 1, h, ta.write(i, h)

        _, h, ta = tf.while_loop(lambda i, h, ta: i < n, body, (0, tf.zeros(row_shape), ta))
        return ta.stack(), h
    return f


def test_long_loop_of_row_writes():
    """100 steps of row writes (values only; the copies are counted below)."""
    x = np.random.default_rng(0).standard_normal((100, 4, 8)).astype(np.float32)

    def case(tf):
        return [t.numpy() for t in _row_writing_loop(tf, [4, 8])(tf.constant(x))]

    # Rounding both to 5 decimals can split a pair 1 ulp apart: compare with a tolerance.
    for ours, theirs in zip(case(ember), case(tensorflow)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def _dynamic_writes(tf, n, stride=1, with_reads=True):
    """A staged loop writing a dynamic_size array (size 0 at first) at i * stride, reading it back in the loop
    (the last row written, the size) and after it (stack, size, gather, concat)."""
    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
    def f(n):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, element_shape=[2])

        def body(i, ta, acc):
            ta = ta.write(i * stride, tf.stack([tf.cast(i, tf.float32), tf.cast(ta.size(), tf.float32)]))
            if with_reads:
                acc = acc + ta.read(i * stride)
            return i + 1, ta, acc

        _, ta, acc = tf.while_loop(lambda i, ta, acc: i < n, body, (0, ta, tf.zeros([2])))
        out = [ta.stack(), ta.size(), acc]
        if with_reads:
            out += [ta.gather([0, ta.size() - 1]), ta.concat()]
        return out
    return [t.numpy() for t in f(tf.constant(n))]


@pytest.mark.parametrize("n,stride", [(0, 1), (1, 1), (5, 1), (37, 1), (9, 3)])
def test_dynamic_size_writes_in_a_loop(n, stride):
    """Values as TensorFlow's, holes (stride 3) read as zeros, the size is the last index written + 1."""
    if n == 0:
        # Nothing written: both stack an empty [0, 2] array; TensorFlow's gather of index -1 fails there.
        ours = _dynamic_writes(ember, n, stride, with_reads=False)
        theirs = _dynamic_writes(tensorflow, n, stride, with_reads=False)
    else:
        ours, theirs = _dynamic_writes(ember, n, stride), _dynamic_writes(tensorflow, n, stride)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


def test_dynamic_size_writes_double_the_buffer():
    """20,000 writes to a dynamic_size array in a staged loop: the buffer doubles when a write goes past it
    (O(1) amortized writes; growing it by one row per write copied it every time, quadratic in the writes),
    so the loop ends with spare rows and the array still reads as its 20,000 elements."""
    n = 20000

    @ember.function(input_signature=[ember.TensorSpec([], ember.int32)])
    def f(n):
        ta = ember.TensorArray(ember.float32, size=0, dynamic_size=True)
        _, ta = ember.while_loop(lambda i, ta: i < n,
                                 lambda i, ta: (i + 1, ta.write(i, ember.cast(i, ember.float32) * 0.5)), (0, ta))
        return ta.stack(), ta.size(), ember.shape(ta._buffer)[0]

    stacked, size, capacity = f(ember.constant(n))
    np.testing.assert_array_equal(stacked.numpy(), np.arange(n, dtype=np.float32) * 0.5)
    assert int(size) == n
    assert int(capacity) == 32768, int(capacity)


def test_gradient_through_dynamic_size_writes():
    def case(tf):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def f(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
                n = tf.shape(x)[0]
                _, ta = tf.while_loop(lambda i, ta: i < n,
                                      lambda i, ta: (i + 1, ta.write(i, tf.sin(x[i]) * x[i])), (0, ta))
                y = tf.reduce_sum(ta.stack() * tf.range(1.0, tf.cast(n, tf.float32) + 1.0))
            return tape.gradient(y, x)
        return f(tf.constant([0.5, -1.0, 2.0, 0.25, 3.0])).numpy()

    np.testing.assert_allclose(case(ember), case(tensorflow), rtol=1e-6, atol=1e-6)


# ---- split by lengths known only at run time (Note [Splitting into pieces of different lengths])


def _run_time_split_case(tf, lengths, then):
    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32), tf.TensorSpec([None], tf.int64)])
    def f(x, lengths):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, infer_shape=False).split(x, lengths)
        return then(tf, ta)

    return f(tf.reshape(tf.range(12, dtype=tf.float32), [6, 2]), tf.constant(lengths, tf.int64))


_AFTER_SPLIT = {
    "concat": lambda tf, ta: ta.concat() * 2.0,
    "read": lambda tf, ta: (ta.read(0), ta.read(1), ta.read(ta.size() - 1)),
    "size": lambda tf, ta: ta.size(),
    "stack": lambda tf, ta: ta.stack(),
    "gather": lambda tf, ta: ta.gather([1, 0]),
    "read_in_loop": lambda tf, ta: tf.while_loop(
        lambda i, acc: i < ta.size(), lambda i, acc: (i + 1, acc + tf.reduce_sum(ta.read(i)) * tf.cast(i, tf.float32)),
        (0, 0.0))[1],
}


@pytest.mark.parametrize("lengths", [[1, 3, 2], [2, 2, 2], [0, 6], [6]])
@pytest.mark.parametrize("then", sorted(_AFTER_SPLIT))
def test_split_by_run_time_lengths_against_tensorflow(lengths, then):
    """Pieces of different lengths read back as TensorFlow's; stack and gather of them raise as TensorFlow's
    (InvalidArgumentError), of equal ones they work."""
    _same(lambda tf: _run_time_split_case(tf, lengths, _AFTER_SPLIT[then]))


@pytest.mark.parametrize("lengths", [[1, 3, 2], [0, 4, 2]])
def test_gradient_through_a_split_by_run_time_lengths(lengths):
    def case(tf):
        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32), tf.TensorSpec([None], tf.int64)])
        def f(x, lengths):
            with tf.GradientTape() as tape:
                tape.watch(x)
                ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, infer_shape=False).split(x * x, lengths)
                y = tf.reduce_sum(tf.sin(ta.concat())) + tf.reduce_sum(ta.read(2) * 3.0)
            return y, tape.gradient(y, x)

        return f(tf.reshape(tf.range(12, dtype=tf.float32), [6, 2]) / 7.0, tf.constant(lengths, tf.int64))

    _same(case)


def test_a_ragged_array_is_a_loop_variable():
    def case(tf):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.int32)])
        def f(x, lengths):
            ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, infer_shape=False).split(x, lengths)

            def body(i, ta, acc):
                return i + 1, ta, acc + tf.reduce_sum(ta.read(i))

            _, ta, acc = tf.while_loop(lambda i, ta, acc: i < ta.size(), body, (0, ta, 0.0))
            return ta.concat(), acc

        return f(tf.range(7, dtype=tf.float32), tf.constant([4, 1, 2]))

    _same(case)
    ta = ember.TensorArray(ember.float32, size=0, dynamic_size=True, infer_shape=False)

    @ember.function(input_signature=[ember.TensorSpec([None], ember.float32), ember.TensorSpec([None], ember.int32)])
    def written_in_the_body(x, lengths):
        split = ta.split(x, lengths)
        return ember.while_loop(lambda i, t: i < 1, lambda i, t: (i + 1, t.write(0, x[:1])), (0, split))[1].stack()

    with pytest.raises(ValueError, match="enters the loop ragged .* but the body returns it dense"):
        written_in_the_body(ember.range(3, dtype=ember.float32), ember.constant([1, 2]))


def test_loop_writes_copy_the_array_once_per_call_not_per_iteration():
    """A staged loop's writes go into the carried buffer (Note [Loop variables handed to the body] in
    ops/control_flow.cc), also in the plan made for the call's static shapes, where the write's traced
    output spec still has the loop's unknown dim: the first iteration copies the caller's buffer, no later
    one does (a copy per write made a 400-step loop of [32, 128] rows cost 0.6 ms per step)."""
    f = _row_writing_loop(ember, [32, 128])
    x = np.random.default_rng(1).standard_normal((200, 32, 128)).astype(np.float32)
    for _ in range(3):  # the third call runs the plan specialized for [200, 32, 128]
        before = ember._C.tensor_list_bytes_copied()
        got = f(x)[0].numpy()
        copied = ember._C.tensor_list_bytes_copied() - before
        assert copied <= x.nbytes, copied
    h, want = np.zeros((32, 128), np.float32), []
    for t in range(200):
        h = np.tanh(h * np.float32(0.5) + x[t])
        want.append(h)
    np.testing.assert_allclose(got, np.stack(want), rtol=1e-5, atol=1e-6)


def test_a_value_of_unknown_rank_takes_the_known_element_shape():
    """A numpy_function's result (unknown rank) written at a tensor index: the array's element shape
    (here map_fn's fn_output_signature) is checked when the write runs, as TensorFlow's TensorList does."""
    def case(tf, rows=2):
        @tf.function
        def g(x):
            return tf.map_fn(lambda r: tf.numpy_function(lambda a: (a * 2)[:rows].astype(np.float32), [r],
                                                         tf.float32),
                             x, fn_output_signature=tf.TensorSpec([2], tf.float32))
        return g(tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))).numpy()

    np.testing.assert_array_equal(case(ember), case(tensorflow))
    with pytest.raises(ember.errors.InvalidArgumentError):
        case(ember, rows=1)
    with pytest.raises(tensorflow.errors.InvalidArgumentError):
        case(tensorflow, rows=1)

    @ember.function
    def unknown(x):
        return ember.map_fn(lambda r: ember.numpy_function(lambda a: a * 2, [r], ember.float32), x)

    with pytest.raises(ValueError, match="fn_output_signature"):
        unknown(ember.constant(np.ones((3, 2), np.float32)))


def test_tensor_array_arguments_and_results_of_functions():
    """Note [TensorArray arguments of functions]: an array goes into a function as its tensors and comes out
    the same way; arrays of any size share a trace; the caller's array is unchanged by writes inside."""
    traces = []

    def body(ta, x):
        traces.append(1)
        return ta.write(2, x).stack()

    def run(lib):
        f = lib.function(body)
        written = lib.TensorArray(lib.float32, size=3).write(0, [1.0, 2.0]).write(1, [3.0, 4.0])
        longer = lib.TensorArray(lib.float32, size=4, element_shape=[2])
        longer = longer.unstack(lib.reshape(lib.range(8.0), [4, 2]))
        return [f(written, lib.constant([5.0, 6.0])), f(longer, lib.constant([-1.0, -2.0]))], written

    (ours, ours_written), (theirs, _) = run(ember), run(tensorflow)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert len(traces) == 3  # TensorFlow traces once per array object; ember once for both (same spec)
    # TensorFlow's eager array keeps the function's symbolic value after the call (reading it then fails).
    np.testing.assert_array_equal(ours_written.stack().numpy(), [[1.0, 2.0], [3.0, 4.0], [0.0, 0.0]])

    @ember.function
    def grow(ta, n):
        for i in ember.range(n):
            ta = ta.write(ta.size(), ember.cast(i, ember.float32))
        return ta

    grown = grow(ember.TensorArray(ember.float32, size=0, dynamic_size=True), ember.constant(4))
    assert isinstance(grown, ember.TensorArray)
    np.testing.assert_array_equal(grown.stack().numpy(), [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(grown.write(4, 9.0).stack().numpy(), [0.0, 1.0, 2.0, 3.0, 9.0])
    assert int(grown.size()) == 5 and float(grown.read(2)) == 2.0

    # An array with nothing written and no element shape goes in as its size.
    fresh = ember.function(lambda ta: ta.write(1, [7.0]).stack())(ember.TensorArray(ember.float32, size=2))
    np.testing.assert_array_equal(fresh.numpy(), [[0.0], [7.0]])

    spec = ember.TensorArraySpec([2], ember.float32)
    sig = ember.function(lambda ta: ta.stack() * 2.0, input_signature=[spec])
    np.testing.assert_array_equal(sig(ember.TensorArray(ember.float32, size=1).write(0, [1.0, 2.0])).numpy(),
                                  [[2.0, 4.0]])
    with pytest.raises(TypeError):
        sig(ember.TensorArray(ember.int32, size=1).write(0, [1, 2]))
    assert repr(spec) == repr(tensorflow.TensorArraySpec([2], tensorflow.float32))


def test_array_of_the_function_read_inside_a_loop_body_stays_the_functions():
    """Note [Reading an array of an enclosing trace]: a body that reads a list-mode array captured by closure
    packs a copy; the function reads the array after the loop as before (a tensor of the body's graph)."""
    def program(tf, x):
        @tf.function
        def f(x):
            ta = tf.TensorArray(tf.float32, size=3)
            ta = ta.write(0, x).write(1, x * 2.0).write(2, x * 3.0)
            looped = tf.while_loop(lambda i, acc: i < 3, lambda i, acc: (i + 1, acc + ta.read(i)),
                                   (0, tf.zeros_like(x)))[1]
            mapped = tf.map_fn(lambda i: ta.read(i) * 2.0, tf.range(3), fn_output_signature=tf.float32)
            branched = tf.cond(tf.reduce_sum(x) > 0, lambda: ta.stack(), lambda: ta.gather([2, 1, 0]))
            return looped, mapped, branched, ta.stack(), ta.read(1)
        return [v.numpy() for v in f(tf.constant(x))]

    for x in ([1.0, 2.0], [-1.0, -2.0]):
        for a, b in zip(program(ember, x), program(tensorflow, x)):
            np.testing.assert_array_equal(a, b)


def test_tensor_array_arguments_with_pieces_of_different_lengths_or_no_rows_yet():
    """Note [TensorArray arguments of functions]: an array whose elements differ in their first dimension (split
    while tracing, infer_shape=False writes) goes in ragged, as TensorFlow takes it; a never-written array
    with a partly known element shape goes in as its size, so reading it fails inside as outside."""
    def run(lib):
        inner = lib.function(lambda t: (t.size(), t.read(1), t.concat()))

        @lib.function
        def outer(x):
            split = lib.TensorArray(lib.float32, size=3, infer_shape=False).split(x, [1, 2, 3])
            written = lib.TensorArray(lib.float32, size=2, infer_shape=False)
            written = written.write(0, x[:1]).write(1, x[1:3])
            return list(inner(split)) + list(inner(written))

        return outer(lib.range(6.0))

    for a, b in zip(run(ember), run(tensorflow)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    split = ember.TensorArray(ember.float32, size=3, infer_shape=False).split(ember.range(6.0), [1, 2, 3])
    assert repr(split._type_spec) == repr(
        tensorflow.TensorArraySpec(None, tensorflow.float32, False, False))

    unwritten = ember.TensorArray(ember.float32, size=2, element_shape=[None, 2])
    with pytest.raises(ValueError, match="not fully known"):
        ember.function(lambda t: t.stack())(unwritten)  # zeros of shape [2, 1, 2] before
    with pytest.raises(ValueError):
        tensorflow.function(lambda t: t.stack())(tensorflow.TensorArray(tensorflow.float32, size=2,
                                                                        element_shape=[None, 2]))
