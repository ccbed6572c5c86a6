"""Variable.sparse_read / gather_nd / scatter_* / scatter_nd_* / batch_scatter_update, the variable's
handle and the resource raw ops, each compared with TensorFlow 2 (ops/scatter_nd.cc, variables.py)."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf
from ember import errors

INIT = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
ROWS = ("scatter_update", "scatter_add", "scatter_sub", "scatter_mul", "scatter_div", "scatter_min", "scatter_max")
ND = ("scatter_nd_update", "scatter_nd_add", "scatter_nd_sub", "scatter_nd_max", "scatter_nd_min")


def _both(init=INIT, dtype="float32"):
    return tf.Variable(np.array(init, dtype)), real_tf.Variable(np.array(init, dtype))


@pytest.mark.parametrize("method", ROWS)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_row_scatters_match_tensorflow(method, dtype):
    ours, theirs = _both(dtype=dtype)
    values, indices = np.array([[2, 4], [1, 3]], dtype), [2, 0]
    got = getattr(ours, method)(tf.IndexedSlices(tf.constant(values), tf.constant(indices)))
    getattr(theirs, method)(real_tf.IndexedSlices(real_tf.constant(values), real_tf.constant(indices)))
    assert got is ours
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # A scalar update applies to every named row, as TensorFlow's ResourceScatter* kernels.
    getattr(ours, method)(tf.IndexedSlices(tf.constant(np.array(2, dtype)), tf.constant([1])))
    getattr(theirs, method)(real_tf.IndexedSlices(real_tf.constant(np.array(2, dtype)), real_tf.constant([1])))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("method", ND)
def test_nd_scatters_match_tensorflow(method):
    ours, theirs = _both()
    for indices, updates in (([[0, 1], [2, 0], [0, 1]], [10.0, -1.0, 3.0]), ([[1]], [[7.0, 0.5]])):
        assert getattr(ours, method)(indices, updates) is ours
        getattr(theirs, method)(indices, updates)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_batch_scatter_update_matches_tensorflow():
    init = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    ours, theirs = _both(init)
    indices, updates = [[2, 0], [1, 1]], -np.ones([2, 2, 2], np.float32)
    ours.batch_scatter_update(tf.IndexedSlices(updates, indices))
    theirs.batch_scatter_update(real_tf.IndexedSlices(updates, indices))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    flat_ours, flat_theirs = _both([1.0, 2.0, 3.0])
    flat_ours.batch_scatter_update(tf.IndexedSlices([9.0], [1]))
    flat_theirs.batch_scatter_update(real_tf.IndexedSlices([9.0], [1]))
    np.testing.assert_array_equal(flat_ours.numpy(), flat_theirs.numpy())


def test_sparse_read_and_gather_nd_match_tensorflow():
    ours, theirs = _both()
    np.testing.assert_array_equal(ours.sparse_read([2, 0, 2]).numpy(), theirs.sparse_read([2, 0, 2]).numpy())
    np.testing.assert_array_equal(ours.sparse_read([[1], [0]]).numpy(), theirs.sparse_read([[1], [0]]).numpy())
    np.testing.assert_array_equal(ours.gather_nd([[1, 0], [2, 1]]).numpy(),
                                  theirs.gather_nd([[1, 0], [2, 1]]).numpy())


def test_compat_v1_scatter_functions_match_tensorflow():
    ours, theirs = _both()
    assert tf.compat.v1.scatter_add(ours, [0, 0], [[1.0, 1.0], [2.0, 2.0]]) is ours
    real_tf.compat.v1.scatter_add(theirs, [0, 0], [[1.0, 1.0], [2.0, 2.0]])
    tf.compat.v1.scatter_nd_sub(ours, [[2, 1]], [4.0])
    real_tf.compat.v1.scatter_nd_sub(theirs, [[2, 1]], [4.0])
    tf.compat.v1.scatter_div(ours, [1], [[2.0, 8.0]])
    real_tf.compat.v1.scatter_div(theirs, [1], [[2.0, 8.0]])
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def _sparse_gradient(module, variable, indices):
    with module.GradientTape() as tape:
        rows = variable.sparse_read(indices)
        loss = module.reduce_sum(rows * rows) + module.reduce_sum(variable.sparse_read([1]))
    return tape.gradient(loss, variable)


def test_sparse_read_gradient_is_indexed_slices_as_tensorflow():
    ours, theirs = _both()
    got = _sparse_gradient(tf, ours, [[2], [0]])
    want = _sparse_gradient(real_tf, theirs, [[2], [0]])
    assert isinstance(got, tf.IndexedSlices) and isinstance(want, real_tf.IndexedSlices)
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(got.dense_shape.numpy(), want.dense_shape.numpy())
    np.testing.assert_array_equal(tf.convert_to_tensor(got).numpy(), real_tf.convert_to_tensor(want).numpy())


def test_sparse_read_gradient_with_a_dense_read_too_is_dense_as_tensorflow():
    def grad(module, variable):
        with module.GradientTape() as tape:
            loss = module.reduce_sum(variable.sparse_read([0, 0])) + module.reduce_sum(variable * 2.0)
        return tape.gradient(loss, variable)

    ours, theirs = _both()
    got, want = grad(tf, ours), grad(real_tf, theirs)
    assert isinstance(got, tf.Tensor) and isinstance(want, real_tf.Tensor)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_sparse_read_under_a_stopped_or_unwatching_tape_has_no_gradient():
    v = tf.Variable(INIT)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        loss = tf.reduce_sum(v.sparse_read([0]))
    assert tape.gradient(loss, v) is None
    with tf.GradientTape() as tape:
        with tape.stop_recording():
            loss = tf.reduce_sum(v.sparse_read([0]))
    assert tape.gradient(loss, v) is None


def test_scatters_inside_a_function_keep_program_order():
    ours, theirs = _both()

    def step(module, v):
        before = v.sparse_read([0])
        v.scatter_add(module.IndexedSlices(module.constant([[10.0, 10.0]]), module.constant([0])))
        v.scatter_nd_update([[0, 1]], [-1.0])
        after = v.gather_nd([[0, 0], [0, 1]])
        v.scatter_mul(module.IndexedSlices(module.constant([[2.0, 2.0]]), module.constant([2])))
        return before, after, v.read_value()

    got = tf.function(step)(tf, ours)
    want = real_tf.function(step)(real_tf, theirs)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_scatters_leave_values_read_earlier_alone():
    v = tf.Variable(np.zeros([4, 3], np.float32))
    before = v.read_value()
    v.scatter_nd_add([[1, 1]], [5.0])
    held = v.read_value()
    v.scatter_nd_add([[1, 1]], [5.0])
    v.scatter_nd_add([[1, 1]], [5.0])  # in place: nothing else holds the value now
    assert before.numpy().sum() == 0.0 and held.numpy()[1, 1] == 5.0 and v.numpy()[1, 1] == 15.0
    assigned = tf.constant(np.ones([4, 3], np.float32))
    v.assign(assigned)
    v.scatter_update(tf.IndexedSlices(tf.constant([[7.0, 7.0, 7.0]]), tf.constant([3])))
    assert assigned.numpy().sum() == 12.0 and v.numpy()[3].tolist() == [7.0, 7.0, 7.0]


def test_bad_scatters_raise_naming_the_op():
    v = tf.Variable(INIT)
    with pytest.raises(errors.InvalidArgumentError, match=r"ResourceScatterUpdate.*indices\[0\] = 7 is not in \[0, 3\)"):
        v.scatter_update(tf.IndexedSlices(tf.constant([[1.0, 1.0]]), tf.constant([7])))
    with pytest.raises(errors.InvalidArgumentError, match=r"ResourceScatterNdAdd: indices\[0\] = \[7,0\] does not index into shape"):
        v.scatter_nd_add([[7, 0]], [1.0])
    with pytest.raises(errors.InvalidArgumentError, match="ResourceScatterAdd: must have updates.shape"):
        v.scatter_add(tf.IndexedSlices(tf.constant([1.0, 1.0]), tf.constant([1])))
    with pytest.raises(errors.InvalidArgumentError, match="ResourceScatterNdUpdate: expected updates of shape"):
        v.scatter_nd_update([[0, 0]], [1.0, 2.0])
    with pytest.raises(errors.InvalidArgumentError, match="GatherV2"):
        v.sparse_read([5])
    with pytest.raises(errors.InvalidArgumentError, match="GatherNd"):
        v.gather_nd([[5, 0]])
    with pytest.raises(TypeError, match="must be a `tf.IndexedSlices`"):
        v.scatter_update([1])
    with pytest.raises(errors.InvalidArgumentError, match="ResourceScatterDiv: updates must not contain 0"):
        tf.Variable([4, 6]).scatter_div(tf.IndexedSlices(tf.constant([0]), tf.constant([1])))
    with pytest.raises((TypeError, ValueError)):
        v.scatter_nd_add([[0, 0]], tf.constant([1], tf.int32))
    np.testing.assert_array_equal(v.numpy(), INIT)  # a failed scatter changes nothing


def test_handle_is_a_scalar_resource():
    v = tf.Variable(INIT, name="w")
    assert v.handle.dtype == tf.resource and v.handle.shape == () and tf.resource.name == "resource"
    assert real_tf.Variable(INIT).handle.dtype.name == tf.resource.name
    assert "w" in repr(v.handle)


def test_resource_raw_ops_match_tensorflow():
    ours, theirs = _both()
    raw, real = tf.raw_ops, real_tf.raw_ops
    for op, kwargs in (("AssignAddVariableOp", {"value": np.ones([3, 2], np.float32)}),
                       ("AssignSubVariableOp", {"value": np.full([3, 2], 0.5, np.float32)}),
                       ("ResourceScatterUpdate", {"indices": [1], "updates": [[9.0, 8.0]]}),
                       ("ResourceScatterAdd", {"indices": [0, 0], "updates": [[1.0, 1.0], [1.0, 1.0]]}),
                       ("ResourceScatterNdUpdate", {"indices": [[2, 1]], "updates": [-3.0]}),
                       ("ResourceScatterNdAdd", {"indices": [[2, 0]], "updates": [4.0], "use_locking": True}),
                       ("AssignVariableOp", {"value": np.array(INIT, np.float32) * 3})):
        key = "ref" if op.startswith("ResourceScatterNd") else "resource"
        getattr(raw, op)(**{key: ours.handle}, **kwargs)
        getattr(real, op)(**{key: theirs.handle}, **kwargs)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=op)
    for op, kwargs in (("ReadVariableOp", {"dtype": tf.float32}),
                       ("ResourceGather", {"indices": [2, 0], "dtype": tf.float32}),
                       ("ResourceGatherNd", {"indices": [[2, 0]], "dtype": tf.float32}),
                       ("VarIsInitializedOp", {})):
        real_kwargs = {k: (real_tf.float32 if k == "dtype" else v) for k, v in kwargs.items()}
        np.testing.assert_array_equal(getattr(raw, op)(resource=ours.handle, **kwargs).numpy(),
                                      getattr(real, op)(resource=theirs.handle, **real_kwargs).numpy(), err_msg=op)
    np.testing.assert_array_equal(raw.VariableShape(input=ours.handle).numpy(),
                                  real.VariableShape(input=theirs.handle).numpy())
    with pytest.raises(errors.InvalidArgumentError, match="ReadVariableOp.*float32"):
        raw.ReadVariableOp(resource=ours.handle, dtype=tf.int32)
    with pytest.raises(TypeError, match="handle"):
        raw.ReadVariableOp(resource=3, dtype=tf.float32)


def test_resource_raw_ops_inside_a_function():
    v = tf.Variable([1.0, 2.0])

    @tf.function
    def step(x):
        tf.raw_ops.AssignAddVariableOp(resource=v.handle, value=x)
        tf.raw_ops.ResourceScatterUpdate(resource=v.handle, indices=[0], updates=[0.0])
        return tf.raw_ops.ReadVariableOp(resource=v.handle, dtype=tf.float32)

    assert step(tf.constant([1.0, 1.0])).numpy().tolist() == [0.0, 3.0]
    assert step(tf.constant([1.0, 1.0])).numpy().tolist() == [0.0, 4.0]


def test_a_function_taking_handles_traces_once_per_variable():
    v, w = tf.Variable([1.0, 2.0]), tf.Variable([5.0, 6.0])
    traces = []

    @tf.function
    def bump(handle):
        traces.append(handle)
        tf.raw_ops.AssignAddVariableOp(resource=handle, value=[1.0, 1.0])
        return tf.raw_ops.ReadVariableOp(resource=handle, dtype=tf.float32)

    assert bump(v.handle).numpy().tolist() == [2.0, 3.0]
    assert bump(v.handle).numpy().tolist() == [3.0, 4.0]
    assert bump(w.handle).numpy().tolist() == [6.0, 7.0]
    assert len(traces) == 2 and v.handle == v.handle and v.handle != w.handle


def _scatter_module(module):
    class Scatters(module.Module):
        def __init__(self):
            super().__init__()
            self.v = module.Variable(INIT)

        @module.function(input_signature=[module.TensorSpec([None], module.int32),
                                          module.TensorSpec([None, 2], module.float32)])
        def update(self, i, u):
            self.v.scatter_update(module.IndexedSlices(u, i))
            self.v.scatter_nd_add(module.expand_dims(i, 1), u)
            self.v.scatter_div(module.IndexedSlices(u, i))
            return self.v.sparse_read(i) + self.v.gather_nd(module.expand_dims(i, 1))

        @module.function(input_signature=[module.TensorSpec([None], module.int32)])
        def gradient(self, i):
            with module.GradientTape() as tape:
                loss = module.reduce_sum(module.gather(self.v, i) * 3.0)
            return module.convert_to_tensor(tape.gradient(loss, self.v))

    return Scatters()


@pytest.mark.parametrize("saver, loader", [(real_tf, tf), (tf, real_tf)])
def test_saved_models_with_scatters_and_gathers_run_in_the_other_framework(saver, loader, tmp_path):
    """TensorFlow's ResourceGather/ResourceGatherNd import as a read and a gather (graph/
    resource_gather_import.cc), ordered after the scatters before them; ember's scatters export as
    TensorFlow's ResourceScatter* (graph_def_ops.cc)."""
    saved = _scatter_module(saver)
    saver.saved_model.save(saved, str(tmp_path))
    loaded = loader.saved_model.load(str(tmp_path))
    i, u = [2, 0], np.array([[2.0, 4.0], [8.0, 16.0]], np.float32)
    want = saved.update(saver.constant(i), saver.constant(u)).numpy()
    np.testing.assert_array_equal(loaded.update(loader.constant(i), loader.constant(u)).numpy(), want)
    np.testing.assert_array_equal(loaded.v.numpy(), saved.v.numpy())
    np.testing.assert_array_equal(loaded.gradient(loader.constant([0, 0, 2])).numpy(),
                                  saved.gradient(saver.constant([0, 0, 2])).numpy())


def test_scatter_div_edge_cases():
    # The lowest int32 over -1 wraps (it was a SIGFPE that killed the process); a zero divisor of any dtype
    # is refused before anything is written, as TensorFlow refuses it
    v = tf.Variable(np.array([-2 ** 31, 6], np.int32))
    v.scatter_div(tf.IndexedSlices(tf.constant([-1], tf.int32), tf.constant([0])))
    np.testing.assert_array_equal(v.numpy(), [-2 ** 31, 6])
    floats = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(errors.InvalidArgumentError, match="must not contain 0"):
        floats.scatter_div(tf.IndexedSlices(tf.constant([[2.0, 0.0]]), tf.constant([1])))
    np.testing.assert_array_equal(floats.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.Variable([[1.0, 2.0]]).scatter_div(real_tf.IndexedSlices(real_tf.constant([[2.0, 0.0]]),
                                                                         real_tf.constant([0])))
