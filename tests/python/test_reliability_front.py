"""Regression tests for the Python front end's reliability (issue 12, items 6, 7, 10, 11, 12 and the
traceback frame filter): bad values at the binding raise a clear exception, never a crash, a SystemError
or a bare C++ exception.

Cases that used to crash the interpreter run in a subprocess, so a regression fails the test instead of
killing the test run."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember as tf
from ember import _C, errors

HUGE = 2**70


# Subprocesses import ember exactly as this process did (an editable install's import hook needs site).
PYTHON_FLAGS = ["-S"] if sys.flags.no_site else []


def run_isolated(source):
    """Runs ``source`` in a fresh interpreter; returns (returncode, stderr)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, *PYTHON_FLAGS, "-c", textwrap.dedent(source)], capture_output=True,
                          text=True, timeout=120, env=env)
    return proc.returncode, proc.stderr


# ---- item 6: a symbolic tensor's value, for every dtype ----------------------------------------------

ALL_DTYPES = [tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int8, tf.int16, tf.int32, tf.int64,
              tf.uint8, tf.bool]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_reading_a_symbolic_tensor_raises_tensorflows_class_for_every_dtype(dtype):
    # TensorFlow's classes: a graph tensor has no .numpy (AttributeError), NumPy conversion is
    # NotImplementedError; the raw buffer reads are TypeError. Never a read of memory that is not there.
    code, stderr = run_isolated(f"""
        import ember as tf
        seen = []
        @tf.function
        def f(x):
            for read, cls in ((lambda: x.numpy(), AttributeError), (lambda: x._data_ptr, TypeError),
                              (lambda: x.__array__(), NotImplementedError), (lambda: memoryview(x), TypeError)):
                try:
                    read()
                except cls as e:
                    assert isinstance(e, TypeError), type(e)  # ember's own callers catch TypeError
                    seen.append(str(e))
            seen.append(hasattr(x, "numpy"))
            return x
        f(tf.zeros([2], tf.{dtype.name}))
        assert len(seen) == 5 and seen[4] is False, seen
        assert all("symbolic" in m for m in seen[:4]), seen
    """)
    assert code == 0, stderr


@pytest.mark.parametrize("build", [
    "tf.one_hot([1, 0], 3, on_value=x)",
    "tf.one_hot([1, 0], 3, off_value=x)",
    "tf.pad(tf.ones([2], tf.bfloat16), [[1, 1]], constant_values=x)",
    "tf.range(x)",
    "tf.range(0, x)",
    "tf.linalg.adjoint(tf.ones([2, 2], tf.bfloat16) * x)",
    "tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1], logits=tf.ones([2, 3], tf.bfloat16) * x)",
])
def test_bfloat16_ops_inside_function_take_the_clear_path(build):
    code, stderr = run_isolated(f"""
        import ember as tf
        @tf.function
        def f(x):
            return {build}
        try:
            f(tf.constant(1.0, tf.bfloat16))
        except TypeError as e:
            assert "must be known while ember.function traces" in str(e), e
    """)
    assert code == 0, stderr


def test_one_hot_takes_graph_values_for_depth_and_on_value():
    @tf.function
    def f(x, depth):
        return tf.one_hot([1, 0], depth, on_value=x)

    out = f(tf.constant(2.0, tf.bfloat16), tf.constant(3))
    assert out.dtype == tf.bfloat16
    np.testing.assert_array_equal(out.numpy().astype(np.float32), [[0, 2, 0], [2, 0, 0]])


# ---- item 7: attribute conversion in the raw op caller ------------------------------------------------

def test_symbolic_tensor_for_a_shape_operand_is_read_at_run_time():
    # Reshape's shape is an input, as in TensorFlow: a graph tensor flows into it.
    @tf.function
    def f(x):
        return _C.op("Reshape")(tf.ones([4]), x)

    assert f(tf.constant([2, 2])).shape == (2, 2)
    assert f(tf.constant([4, 1])).shape == (4, 1)


def test_symbolic_tensor_for_a_tensor_attribute_is_a_type_error():
    @tf.function
    def f(x):
        return _C.op("Const")(x)

    with pytest.raises(TypeError, match="Const: attribute 'value' must be a concrete tensor"):
        f(tf.ones([1]))


@pytest.mark.parametrize("dtype", [tf.int8, tf.int16, tf.uint8, tf.int32, tf.int64], ids=lambda d: d.name)
def test_small_int_tensor_for_a_shape_operand_reads_its_own_elements_or_is_refused(dtype):
    # int8/int16/uint8 tensors were read as int32: past the end of the buffer. Now, as in TensorFlow,
    # a shape operand is int32 or int64 and anything else is refused by name.
    if dtype in (tf.int32, tf.int64):
        assert _C.op("Reshape")(tf.ones([6]), tf.constant([2, 3], dtype)).shape == (2, 3)
    else:
        with pytest.raises(errors.InvalidArgumentError, match="Reshape: input 'shape' must have a dtype in"):
            _C.op("Reshape")(tf.ones([6]), tf.constant([2, 3], dtype))


@pytest.mark.parametrize("value", [HUGE, -HUGE, [2, HUGE], (HUGE,), np.array([HUGE], dtype=object)],
                         ids=["int", "negative", "list", "tuple", "object_array"])
def test_out_of_range_int_list_attribute_is_a_value_error(value):
    if isinstance(value, np.ndarray):  # TF: "Cannot convert a NumPy array of dtype object to a Tensor"
        with pytest.raises((ValueError, TypeError)):
            _C.op("Reshape")(tf.ones([4]), value)
        return
    with pytest.raises(ValueError, match="Reshape: 'shape'.*out of range for int64"):
        _C.op("Reshape")(tf.ones([4]), value)


def test_out_of_range_scalar_attributes():
    with pytest.raises(ValueError, match="ExpandDims: 'axis'.*out of range"):
        _C.op("ExpandDims")(tf.ones([2]), HUGE)
    with pytest.raises(TypeError, match="Cast: attribute 'DstT' must be a dtype"):
        _C.op("Cast")(tf.ones([2]), HUGE)
    with pytest.raises(ValueError, match="does not fit in int64"):  # Range's bounds are inputs, as in TF
        _C.op("Range")(0.0, 10**400, 1.0)


# ---- item 10: Python ints beyond int64 (TF: ValueError) -----------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: tf.zeros([HUGE]),
    lambda: tf.zeros(HUGE),
    lambda: tf.ones([2, -HUGE]),
    lambda: tf.fill([HUGE], 1.0),
    lambda: tf.reduce_sum(tf.ones([2]), axis=HUGE),
    lambda: tf.reduce_max(tf.ones([2]), axis=[0, HUGE]),
    lambda: tf.reshape(tf.ones([2]), [HUGE]),
    lambda: tf.transpose(tf.ones([2, 2]), [HUGE, 0]),
    lambda: tf.expand_dims(tf.ones([2]), HUGE),
    lambda: tf.tile(tf.ones([2]), [HUGE]),
    lambda: tf.one_hot([1], HUGE),
    lambda: tf.broadcast_to(tf.ones([2]), [HUGE, 2]),
    lambda: tf.random.uniform([HUGE]),
    lambda: tf.argmax(tf.ones([2]), axis=HUGE),
    lambda: tf.math.cumsum(tf.ones([2]), axis=HUGE),
])
def test_ints_beyond_int64_raise_value_error_not_system_error(call):
    with pytest.raises(ValueError):
        call()


def test_ints_beyond_int64_inside_function():
    @tf.function
    def f(x):
        return tf.reduce_sum(x, axis=HUGE)

    with pytest.raises(ValueError, match="out of range"):
        f(tf.ones([2]))


def test_input_signature_dimension_beyond_int64():
    f = tf.function(lambda x: x, input_signature=[tf.TensorSpec([HUGE])])
    with pytest.raises((ValueError, errors.InvalidArgumentError), match="does not fit in int64"):
        f.get_concrete_function()


def test_error_pending_under_a_status_becomes_its_context():
    # A C++ error raised while a Python error is pending must not become a SystemError.
    with pytest.raises(ValueError):
        tf.zeros([HUGE, -1])


# ---- item 11: tensor seeds, and C++ exceptions at the binding -----------------------------------------

def test_tensor_seed_matches_int_seed():
    tf.random.set_seed(None)
    a = tf.random.uniform([3], seed=tf.constant(7))
    tf.random.set_seed(None)  # set_seed restarts the streams, so the same seed gives the same values
    b = tf.random.uniform([3], seed=7)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("seed", [1.5, HUGE, -HUGE, np.int64(3), np.int32(-3), tf.constant(3, tf.int64),
                                  tf.constant(1.5), True],
                         ids=["float", "huge", "negative_huge", "np_int64", "np_int32", "int64_tensor",
                              "float_tensor", "bool"])
def test_op_seeds_that_tensorflow_accepts(seed):
    for fn in (tf.random.uniform, tf.random.normal, tf.random.truncated_normal):
        assert fn([2], seed=seed).shape == (2,)


def test_huge_op_seed_is_reduced_as_tensorflow_does():
    tf.random.set_seed(None)
    a = tf.random.uniform([3], seed=HUGE)
    tf.random.set_seed(None)
    b = tf.random.uniform([3], seed=HUGE % (2**31 - 1))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("seed", ["x", [1], tf.constant([3, 4]), object()], ids=["str", "list", "vector", "object"])
def test_bad_op_seed_is_a_type_error(seed):
    with pytest.raises(TypeError, match="random.uniform: seed"):
        tf.random.uniform([2], seed=seed)


def test_set_seed_with_a_tensor_matches_an_int():
    tf.random.set_seed(tf.constant(11))
    a = tf.random.uniform([3])
    tf.random.set_seed(11)
    b = tf.random.uniform([3])
    tf.random.set_seed(None)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_set_seed_bad_values():
    with pytest.raises(TypeError, match="set_seed: seed must be an int"):
        tf.random.set_seed("a")
    with pytest.raises(ValueError, match="set_seed: the global seed must fit in int64"):
        tf.random.set_seed(HUGE)
    tf.random.set_seed(None)


def test_symbolic_seeds_inside_function_are_type_errors():
    @tf.function
    def stateful(s):
        return tf.random.uniform([2], seed=s)

    @tf.function
    def global_seed(s):
        tf.random.set_seed(s)
        return tf.random.uniform([2])

    with pytest.raises(TypeError, match="symbolic tensor inside ember.function"):
        stateful(tf.constant(3))
    with pytest.raises(TypeError, match="symbolic tensor inside ember.function"):
        global_seed(tf.constant(3))
    tf.random.set_seed(None)


def test_concrete_and_stateless_tensor_seeds_inside_function():
    @tf.function
    def constant_seed():
        return tf.random.uniform([2], seed=tf.constant(3))

    @tf.function
    def stateless(s):
        return tf.random.stateless_uniform([2], seed=s)

    assert constant_seed().shape == (2,)
    np.testing.assert_array_equal(stateless(tf.constant([1, 2])).numpy(),
                                  tf.random.stateless_uniform([2], seed=[1, 2]).numpy())


def test_no_bare_cpp_exception_escapes_the_bindings():
    calls = [
        lambda: _C.random_get_seed(1.5),
        lambda: _C.random_get_seed(HUGE),
        lambda: _C.random_get_seed("x"),
        lambda: tf.config.optimizer.set_experimental_options({"constant_folding": "yes"}),
        lambda: tf.config.optimizer.set_experimental_options({"constant_folding_max_bytes": HUGE}),
        lambda: tf.config.optimizer.set_experimental_options({1: True}),
        lambda: tf.config.optimizer.set_experimental_options([1]),
        lambda: tf.config.threading.set_intra_op_parallelism_threads(-1),
        lambda: tf.config.threading.set_inter_op_parallelism_threads("4"),
    ]
    for call in calls:
        with pytest.raises((TypeError, ValueError, errors.OpError)) as info:
            call()
        assert "bad_cast" not in str(info.value)


def test_huge_thread_count_is_accepted_without_starting_that_many_threads():
    saved = tf.config.threading.get_intra_op_parallelism_threads()
    tf.config.threading.set_intra_op_parallelism_threads(2**31 - 1)
    try:
        assert tf.config.threading.get_intra_op_parallelism_threads() == 2**31 - 1
        assert tf.reduce_sum(tf.ones([1000])).numpy() == 1000
    finally:
        tf.config.threading.set_intra_op_parallelism_threads(saved)


# ---- source locations: ember's frames are those in its package directory, not any path with /ember/ ----

def test_user_file_in_a_directory_named_ember_keeps_its_location(tmp_path):
    user_dir = tmp_path / "ember"
    user_dir.mkdir()
    script = user_dir / "train.py"
    script.write_text(textwrap.dedent("""
        import ember as tf
        from ember import errors

        @tf.function
        def f(x, y):
            return tf.matmul(x, y)

        try:
            f(tf.zeros([2, 3]), tf.zeros([4, 5]))
        except errors.InvalidArgumentError as e:
            print(e)
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, *PYTHON_FLAGS, str(script)], capture_output=True, text=True, timeout=120,
                          env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "MatMul (created at train.py:7)" in proc.stdout, proc.stdout


def test_package_dir_is_shared_with_the_traceback_filter():
    from ember import traceback_filter

    assert traceback_filter.PACKAGE_DIR == os.path.dirname(os.path.abspath(tf.__file__)) + os.sep


# ---- item 12: Python-composed ops under an input_signature with unknown dimensions --------------------

def _tensordot_cases():
    rng = np.random.default_rng(12)
    cases = []
    for a_shape, b_shape, axes in [
        ([2, 3, 4], [4, 5], 1), ([2, 3, 4], [4, 5, 6], 1), ([2, 3, 4], [3, 4, 5], 2), ([3, 4], [3, 4], 2),
        ([2, 3], [4, 5], 0), ([4], [4], 1), ([4], [4, 2, 3], 1), ([2, 3, 4], [4], 1),
        ([2, 3, 4], [5, 3], [[1], [1]]), ([2, 3, 4], [4, 2], [[0, 2], [1, 0]]), ([2, 3, 4, 5], [5, 4, 6, 7], [[3, 2], [0, 1]]),
    ]:
        ndim = len(a_shape) + len(b_shape)
        for bits in {0, (1 << ndim) - 1, *rng.integers(0, 1 << ndim, size=6).tolist()}:
            cases.append((a_shape, b_shape, axes, bits))
    return cases


@pytest.mark.parametrize("a_shape,b_shape,axes,unknown", _tensordot_cases())
def test_tensordot_with_unknown_dimensions_matches_numpy(a_shape, b_shape, axes, unknown):
    rng = np.random.default_rng(sum(a_shape) * 31 + unknown)
    a = rng.standard_normal(a_shape)
    b = rng.standard_normal(b_shape)
    spec = lambda dims, offset: [None if unknown >> (offset + i) & 1 else d for i, d in enumerate(dims)]
    sig = [tf.TensorSpec(spec(a_shape, 0), tf.float64), tf.TensorSpec(spec(b_shape, len(a_shape)), tf.float64)]
    f = tf.function(lambda x, y: tf.tensordot(x, y, axes), input_signature=sig)
    expected = np.tensordot(a, b, axes)
    got = f(tf.constant(a), tf.constant(b))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tf.tensordot(tf.constant(a), tf.constant(b), axes).numpy(), expected, rtol=1e-12)


def test_tensordot_dense_layer_shape_with_unknown_batch_and_time():
    w = np.arange(20.0).reshape(4, 5)

    @tf.function(input_signature=[tf.TensorSpec([None, None, 4], tf.float64)])
    def dense(x):
        return tf.tensordot(x, w, axes=1)

    x = np.ones([2, 3, 4])
    np.testing.assert_allclose(dense(x).numpy(), np.tensordot(x, w, 1))
    np.testing.assert_allclose(dense(np.ones([5, 1, 4])).numpy(), np.tensordot(np.ones([5, 1, 4]), w, 1))


def test_tensordot_with_several_unknown_collapsed_dims_uses_no_reshape():
    @tf.function(input_signature=[tf.TensorSpec([None, None, 3, 4])])
    def f(x):
        return tf.tensordot(x, tf.ones([3, 4, 5]), axes=2)

    np.testing.assert_allclose(f(tf.ones([2, 2, 3, 4])).numpy(), np.full([2, 2, 5], 12.0))


def test_tensordot_still_rejects_differing_known_contracted_dims():
    @tf.function(input_signature=[tf.TensorSpec([None, 3])])
    def f(x):
        return tf.tensordot(x, tf.ones([4, 5]), axes=1)

    with pytest.raises(errors.InvalidArgumentError, match="contracted but differ"):
        f(tf.ones([2, 3]))


@pytest.mark.parametrize("spec,mask_fn", [
    ([None, 3, 4], lambda x: tf.ones([2, 3], tf.bool)),
    ([None, None, 4], lambda x: x[:, :, 0] > 0.5),
    ([2, None, 4], lambda x: x[:, :, 0] > 0.5),
])
def test_boolean_mask_with_unknown_dimensions(spec, mask_fn):
    x = np.random.default_rng(3).random([2, 3, 4]).astype(np.float32)
    f = tf.function(lambda t: tf.boolean_mask(t, mask_fn(t)), input_signature=[tf.TensorSpec(spec)])
    expected = tf.boolean_mask(tf.constant(x), mask_fn(tf.constant(x))).numpy()
    np.testing.assert_array_equal(f(x).numpy(), expected)


def test_boolean_mask_with_several_unknown_dims_uses_run_time_shapes():
    mask = np.array([True, False, True])
    f = tf.function(lambda t: tf.boolean_mask(t, mask, axis=1), input_signature=[tf.TensorSpec([None, None, None])])
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(f(x).numpy(), x[:, mask, :])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_linspace_with_unknown_dimensions(axis):
    f = tf.function(lambda a, b: tf.linspace(a, b, 5, axis=axis),
                    input_signature=[tf.TensorSpec([None]), tf.TensorSpec([None])])
    a, b = np.array([0.0, 1.0], np.float32), np.array([1.0, -3.0], np.float32)
    np.testing.assert_allclose(f(a, b).numpy(), tf.linspace(a, b, 5, axis=axis).numpy(), rtol=1e-6)


def test_shape_from_tf_shape_flows_into_shape_operands():
    # Shapes computed at run time feed Reshape, Fill and BroadcastTo (TensorFlow builds the same graph).
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for build, expected in ((lambda x: tf.reshape(x, tf.shape(x)), x), (lambda x: tf.zeros(tf.shape(x)), 0 * x),
                            (lambda x: tf.broadcast_to(x[:1], tf.shape(x)), np.broadcast_to(x[:1], x.shape))):
        f = tf.function(build, input_signature=[tf.TensorSpec([None, 4])])
        np.testing.assert_array_equal(f(x).numpy(), expected)
        assert f.get_concrete_function().structured_outputs.shape.as_list() == [None, 4]


# ---- found by tests/fuzz/test_api_fuzz.py ---------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: tf.clip_by_value(np.array([1, 2], np.int8), 2**64, 3),
    lambda: tf.math.truediv(2, -(2**63) - 1),
    lambda: tf.greater(tf.constant([2, 2]), np.array(HUGE, dtype=object)),
    lambda: tf.matmul([[1, 2]], [[HUGE], [1]]),
    lambda: tf.math.log_softmax([2.0, 2.0], axis=float("inf")),
    lambda: tf.nn.softmax([2.0, 2.0], axis=float("inf")),
    lambda: tf.squeeze([[1.0]], axis=float("inf")),
    lambda: tf.stack([tf.constant([0, 1])], axis=float("inf")),
    lambda: tf.unstack(tf.ones([2, 2]), num=float("inf")),
    lambda: tf.gather([[1.0, 2.0]], [0], batch_dims=float("inf")),
    lambda: tf.linspace(0.0, 1.0, float("inf")),
])
def test_overflow_in_conversions_is_a_value_error(call):
    # TypeError where TF's conversion says so (a value for another operand's dtype, linspace's num).
    with pytest.raises((ValueError, TypeError)):
        call()


@pytest.mark.parametrize("axes", [[[5], [0]], [[0], [7]], [[-3], [0]], [[0], [2**63]]])
def test_tensordot_axes_out_of_range_are_rejected_not_wrapped(axes):
    # [[5], [0]] on rank 2 used to wrap around to axis 1 and return a value.
    with pytest.raises(ValueError, match="tensordot: axis .* out of range"):
        tf.tensordot(tf.ones([2, 2]), tf.ones([2, 2]), axes)


def test_tensordot_of_scalars_with_axes_is_a_value_error():
    with pytest.raises(ValueError):
        tf.tensordot(True, 1, tf.constant([True, False]))


def test_huge_unpack_while_tracing_is_refused_before_allocating():
    # Unpack with num = 2**31 - 1 on a dimension unknown while tracing made the trace allocate 2**31
    # outputs: std::bad_alloc used to unwind into CPython and abort the process. The shape function now
    # refuses the count before anything is made.
    code, stderr = run_isolated("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        import ember as tf
        from ember import errors
        f = tf.function(lambda x: tf._C.op("Unpack")(x, 2**31 - 1, 0), input_signature=[tf.TensorSpec([None])])
        try:
            f(tf.constant([0.0, 1.0]))
            raise SystemExit("no error")
        except errors.InvalidArgumentError as e:
            assert "Unpack" in str(e) and "at most 1048576 outputs" in str(e), e
    """)
    assert code == 0, stderr


def test_split_into_too_many_or_unknown_parts():
    with pytest.raises(errors.ResourceExhaustedError, match="Split: num_split"):
        tf.split(tf.zeros([0, 3]), 2**63)
    assert len(tf.split(tf.zeros([0, 3]), 5)) == 5
    f = tf.function(lambda x: tf.split(x, 2), input_signature=[tf.TensorSpec([None])])
    parts = f(tf.range(4.0))  # equal sizes computed at run time
    np.testing.assert_array_equal([p.numpy() for p in parts], [[0.0, 1.0], [2.0, 3.0]])
    with pytest.raises(errors.InvalidArgumentError, match="SplitV"):
        f(tf.ones([5]))
    g = tf.function(lambda x: tf.split(x, 1)[0], input_signature=[tf.TensorSpec([None])])
    assert g(tf.ones([4])).shape == (4,)


def test_constant_too_big_for_memory_is_a_resource_error():
    code, stderr = run_isolated("""
        import resource
        resource.setrlimit(resource.RLIMIT_DATA, (2 << 30, 2 << 30))
        import ember as tf
        from ember import errors
        try:
            tf.constant(2**31, shape=2**31)
            raise SystemExit("no error")
        except errors.ResourceExhaustedError as e:
            assert "constant: out of memory" in str(e), e
    """)
    assert code == 0, stderr


def test_graph_function_called_directly_on_a_symbolic_tensor_is_a_type_error():
    code, stderr = run_isolated("""
        import ember as tf
        concrete = tf.function(lambda x: x * 2).get_concrete_function(tf.TensorSpec([2]))
        @tf.function
        def outer(y):
            return concrete._gf([y])
        try:
            outer(tf.ones([2]))
            raise SystemExit("no error")
        except TypeError as e:
            assert "cannot run on a symbolic tensor" in str(e), e
    """)
    assert code == 0, stderr


def test_source_file_name_that_does_not_encode_is_escaped():
    namespace = {"tf": tf}
    exec(compile("def f(x):\n    return tf.matmul(x, x)\n", "/tmp/bad\udcff.py", "exec"), namespace)
    with pytest.raises(errors.InvalidArgumentError, match=r"MatMul \(created at bad\\udcff.py:2\)"):
        tf.function(namespace["f"])(tf.ones([2, 3]))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_floordiv_floormod_of_the_minimum_by_minus_one(dtype):
    # int32/int64 min // -1 trapped (SIGFPE) in the kernel; TF wraps to min, and min % -1 is 0.
    code, stderr = run_isolated(f"""
        import numpy as np
        import ember as tf
        mn = np.iinfo(np.{dtype}).min
        a = tf.constant([mn, 7, -7], tf.{dtype})
        b = tf.constant([-1, -1, -1], tf.{dtype})
        assert tf.math.floordiv(a, b).numpy().tolist() == [mn, -7, 7]
        assert tf.math.floormod(a, b).numpy().tolist() == [0, 0, 0]
        traced = tf.function(lambda x, y: (x // y, x % y))(a, b)
        assert traced[0].numpy().tolist() == [mn, -7, 7] and traced[1].numpy().tolist() == [0, 0, 0]
    """)
    assert code == 0, stderr


def test_split_num_infinity_is_a_value_error():
    with pytest.raises(ValueError, match="SplitV: num must be a finite integer"):
        tf.split(tf.constant([0, 1]), [1, 1], num=float("inf"))
