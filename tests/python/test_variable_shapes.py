"""Variables of partially known shape (``tf.Variable(v, shape=[None])``, ``[None, 3]``,
``tf.TensorShape(None)``; python/ember/variables.py, core/resource.h) against TensorFlow 2.21: the declared
shape is what ``v.shape`` reports and what reads inside a function have, so one trace serves every length;
``assign`` may change the value's shape within it while ``assign_add``/``assign_sub`` need the current
shape; checkpoints and SavedModels keep the declared shape and restore the saved value (TensorFlow's rules
for another length); tf_keras' lookup layers keep their idf weights in one variable of shape (None,)."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import ember as em

SHAPES = {"vector": ([1.0, 2.0, 3.0], [None]),
          "rows": ([[1.0, 2.0, 3.0]], [None, 3]),
          "any_rank": (1.0, None)}


def _shape(lib, declared):
    return lib.TensorShape(declared)


@pytest.mark.parametrize("case", SHAPES)
def test_shape_and_repr_are_the_declared_ones(case):
    initial, declared = SHAPES[case]
    ours = em.Variable(initial, shape=_shape(em, declared))
    theirs = tf.Variable(initial, shape=_shape(tf, declared))
    assert str(ours.shape) == str(theirs.shape)
    assert ours.shape.rank == theirs.shape.rank == (None if declared is None else len(declared))
    assert ours.ndim == theirs.shape.rank
    assert ours.get_shape() == ours.shape
    assert repr(ours).split("shape=")[1] == repr(theirs).split("shape=")[1]
    assert str(ours.value().shape) == str(theirs.value().shape)  # an eager read has the value's own shape
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("case,value", [("vector", [1.0, 2.0, 3.0, 4.0, 5.0]), ("vector", []),
                                        ("rows", np.ones((4, 3), np.float32)),
                                        ("any_rank", np.arange(6, dtype=np.float32).reshape(2, 3))])
def test_assign_changes_the_value_shape_within_the_declared_one(case, value):
    initial, declared = SHAPES[case]
    ours = em.Variable(initial, shape=_shape(em, declared))
    theirs = tf.Variable(initial, shape=_shape(tf, declared))
    ours.assign(np.asarray(value, np.float32))
    theirs.assign(np.asarray(value, np.float32))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert str(ours.read_value().shape) == str(theirs.read_value().shape)
    assert str(ours.shape) == str(theirs.shape)  # still the declared one
    if case == "vector":  # an update of the current shape
        ours.assign_add(np.ones(len(value), np.float32))
        theirs.assign_add(np.ones(len(value), np.float32))
        ours.assign_sub(np.full(len(value), 0.5, np.float32))
        theirs.assign_sub(np.full(len(value), 0.5, np.float32))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def _raises(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the kind of error is what is compared
        return e
    return None


def _same_error(ours, theirs, tf_type, em_type, *words):
    got_tf, got_em = _raises(theirs), _raises(ours)
    assert isinstance(got_tf, tf_type), repr(got_tf)
    assert isinstance(got_em, em_type), repr(got_em)
    for word in words:
        assert word in str(got_em), (word, str(got_em))
    return got_em


@pytest.mark.parametrize("case,value", [("vector", [[1.0]]), ("vector", 1.0),
                                        ("rows", np.ones((2, 4), np.float32))])
def test_assigning_a_value_that_does_not_fit_is_a_value_error(case, value):
    initial, declared = SHAPES[case]
    ours = em.Variable(initial, shape=_shape(em, declared))
    theirs = tf.Variable(initial, shape=_shape(tf, declared))
    value = np.asarray(value, np.float32)
    error = _same_error(lambda: ours.assign(value), lambda: theirs.assign(value), ValueError, ValueError,
                        "Shape mismatch")
    expected = str(_raises(lambda: theirs.assign(value))).replace("Variable:0", ours.name)
    assert str(error) == expected
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())  # unchanged


@pytest.mark.parametrize("delta", [[1.0, 2.0], 1.0])
@pytest.mark.parametrize("method", ["assign_add", "assign_sub"])
def test_updates_need_the_current_shape(method, delta):
    ours = em.Variable([1.0, 2.0, 3.0], shape=em.TensorShape([None]))
    theirs = tf.Variable([1.0, 2.0, 3.0], shape=tf.TensorShape([None]))
    delta = np.asarray(delta, np.float32)
    _same_error(lambda: getattr(ours, method)(delta), lambda: getattr(theirs, method)(delta),
                tf.errors.InvalidArgumentError, em.errors.InvalidArgumentError, "shapes must be equal")
    np.testing.assert_array_equal(ours.numpy(), [1.0, 2.0, 3.0])


def test_fully_defined_variables_keep_their_shape():
    ours, theirs = em.Variable([1.0, 2.0]), tf.Variable([1.0, 2.0])
    value = np.ones(3, np.float32)
    _same_error(lambda: ours.assign(value), lambda: theirs.assign(value), ValueError, ValueError,
                "Shape mismatch", "(2,)", "(3,)")
    _same_error(lambda: ours.assign_add(value), lambda: theirs.assign_add(value),
                tf.errors.InvalidArgumentError, em.errors.InvalidArgumentError)


@pytest.mark.parametrize("initial,declared", [([1.0, 2.0], [3]), ([1.0, 2.0], [None, None]),
                                              ([[1.0, 2.0]], [None, 3])])
def test_declared_shape_must_admit_the_initial_value(initial, declared):
    error = _same_error(lambda: em.Variable(initial, shape=declared), lambda: tf.Variable(initial, shape=declared),
                        ValueError, ValueError)
    assert str(error) == str(_raises(lambda: tf.Variable(initial, shape=declared)))


def test_validate_shape_false_keeps_the_value_shape():
    # TensorFlow 2.21 eager: validate_shape=False leaves the shape the initial value's.
    assert em.Variable([1.0, 2.0], validate_shape=False).shape == tf.Variable([1.0, 2.0], validate_shape=False).shape


def test_one_trace_reads_every_length():
    def program(lib, v, traced_shapes):
        @lib.function
        def scaled(scale):
            read = v.read_value()
            traced_shapes.append((str(read.shape), str(lib.convert_to_tensor(v).shape), str((v * 2).shape)))
            return read * scale, lib.shape(v)

        @lib.function(input_signature=[lib.TensorSpec([None], lib.float32)])
        def set_and_sum(x):
            v.assign(x)
            traced_shapes.append(str(v.read_value().shape))
            return lib.reduce_sum(v)

        out = []
        for n in (2, 5, 0):
            v.assign(np.arange(n, dtype=np.float32))  # eagerly
            out.append([t.numpy().tolist() for t in scaled(lib.constant(2.0))])
            out.append(float(set_and_sum(lib.constant(np.ones(n + 1, np.float32)))))
            out.append(v.numpy().tolist())
        return out

    ours_traces, theirs_traces = [], []
    ours = program(em, em.Variable([1.0], shape=em.TensorShape([None])), ours_traces)
    theirs = program(tf, tf.Variable([1.0], shape=tf.TensorShape([None])), theirs_traces)
    assert ours == theirs
    # One trace of each function for every length.
    assert ours_traces == theirs_traces == [("(None,)", "(None,)", "(None,)"), "(None,)"]


def test_variable_arguments_of_one_declared_shape_share_a_trace():
    def program(lib, traced_shapes):
        @lib.function
        def total(v):
            traced_shapes.append(str(v.read_value().shape))
            return lib.reduce_sum(v)

        a = lib.Variable([1.0, 2.0], shape=lib.TensorShape([None]))
        b = lib.Variable([1.0, 2.0, 3.0], shape=lib.TensorShape([None]))
        out = [float(total(a)), float(total(b))]
        a.assign([5.0])
        return out + [float(total(a))]

    ours_traces, theirs_traces = [], []
    assert program(em, ours_traces) == program(tf, theirs_traces)
    assert ours_traces == theirs_traces == ["(None,)"]


def test_a_function_reading_a_variable_of_unknown_rank():
    def reader(lib, v, traced_shapes):
        @lib.function
        def read():
            value = v.read_value()
            traced_shapes.append(str(value.shape))
            return value

        return read

    ours_traces, theirs_traces = [], []
    ours = em.Variable(1.0, shape=em.TensorShape(None))
    theirs = tf.Variable(1.0, shape=tf.TensorShape(None))
    read_ours, read_theirs = reader(em, ours, ours_traces), reader(tf, theirs, theirs_traces)
    for value in (np.float32(2.0), np.ones((2, 3), np.float32)):
        ours.assign(value)
        theirs.assign(value)
        np.testing.assert_array_equal(read_ours().numpy(), read_theirs().numpy())
    assert ours_traces == theirs_traces == ["<unknown>"]


def test_errors_inside_a_function():
    ours = em.Variable([1.0, 2.0], shape=em.TensorShape([None]))
    theirs = tf.Variable([1.0, 2.0], shape=tf.TensorShape([None]))
    # Another rank is refused while tracing, with the same ValueError as eagerly.
    _same_error(lambda: em.function(lambda x: ours.assign(x))(em.constant([[1.0]])),
                lambda: tf.function(lambda x: theirs.assign(x))(tf.constant([[1.0]])),
                ValueError, ValueError, "Shape mismatch")
    # An update of another length passes tracing ([None] admits it) and fails when it runs.
    _same_error(lambda: em.function(lambda x: ours.assign_add(x))(em.constant([1.0, 2.0, 3.0])),
                lambda: tf.function(lambda x: theirs.assign_add(x))(tf.constant([1.0, 2.0, 3.0])),
                tf.errors.InvalidArgumentError, em.errors.InvalidArgumentError, "shapes must be equal")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_gradient_of_a_variable_of_unknown_length():
    ours = em.Variable([1.0, 2.0, 3.0], shape=em.TensorShape([None]))
    theirs = tf.Variable([1.0, 2.0, 3.0], shape=tf.TensorShape([None]))
    with em.GradientTape() as tape_ours:
        y_ours = em.reduce_sum(ours * ours)
    with tf.GradientTape() as tape_theirs:
        y_theirs = tf.reduce_sum(theirs * theirs)
    np.testing.assert_array_equal(tape_ours.gradient(y_ours, ours).numpy(),
                                  tape_theirs.gradient(y_theirs, theirs).numpy())


def test_while_loop_gradient_of_a_variable_of_unknown_length():
    def gradients(lib):
        v = lib.Variable([1.0, 2.0, 3.0], shape=lib.TensorShape([None]))

        @lib.function
        def grad(n):
            with lib.GradientTape() as tape:
                _, total = lib.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a + lib.reduce_sum(v * v)),
                                          (lib.constant(0), lib.constant(0.0)))
            return tape.gradient(total, v)

        out = [grad(lib.constant(3)).numpy().tolist(), grad(lib.constant(0)).numpy().tolist()]
        v.assign([1.0, 2.0])
        return out + [grad(lib.constant(2)).numpy().tolist(), grad(lib.constant(0)).numpy().tolist()]

    assert gradients(em) == gradients(tf)  # no iteration: zeros of the current length


def _cond_gradient(lib, v):
    @lib.function
    def grad(c):
        with lib.GradientTape() as tape:
            y = lib.cond(c, lambda: lib.reduce_sum(v * 2.0), lambda: lib.constant(0.0))
        return tape.gradient(y, v)

    return grad


def test_cond_gradient_of_a_variable_of_unknown_length():
    # TensorFlow 2.21 cannot build this gradient ("Cannot convert a partially known TensorShape (None,) to a
    # Tensor"); ember's branch without a use of the variable gives zeros of its current length.
    tf_grad = _cond_gradient(tf, tf.Variable([1.0, 2.0, 3.0], shape=tf.TensorShape([None])))
    with pytest.raises(ValueError, match="partially known TensorShape"):
        tf_grad(tf.constant(True))
    ours = em.Variable([1.0, 2.0, 3.0], shape=em.TensorShape([None]))
    grad = _cond_gradient(em, ours)
    assert grad(em.constant(True)).numpy().tolist() == [2.0, 2.0, 2.0]
    assert grad(em.constant(False)).numpy().tolist() == [0.0, 0.0, 0.0]
    ours.assign([5.0, 6.0])
    assert grad(em.constant(False)).numpy().tolist() == [0.0, 0.0]


# ---- checkpoints


def _restore(lib, path, variable):
    def run():
        lib.train.Checkpoint(v=variable).read(path)
        return variable.numpy()

    return _raises(run) or variable.numpy()


@pytest.mark.parametrize("writer", ["ember", "tensorflow"])
def test_checkpoint_restores_the_saved_length(writer, tmp_path):
    lib = em if writer == "ember" else tf
    saved = lib.Variable([1.0, 2.0, 3.0, 4.0, 5.0], shape=lib.TensorShape([None]))
    path = lib.train.Checkpoint(v=saved).write(str(tmp_path / "ckpt"))
    targets = [([9.0, 9.0], [None]), ([9.0, 9.0], None), ([[9.0, 9.0]], [None, 2]), (0.0, "unknown_rank"),
               (np.zeros(5, np.float32), None)]
    for initial, declared in targets:
        results = []
        for reader in (em, tf):
            shape = reader.TensorShape(None) if declared == "unknown_rank" else declared
            variable = reader.Variable(initial, shape=shape)
            results.append((_restore(reader, path, variable), variable))
        (ours, ours_var), (theirs, theirs_var) = results
        if isinstance(theirs, Exception):  # a fully defined or rank-2 shape the saved value does not fit
            assert isinstance(ours, ValueError) and isinstance(theirs, ValueError), (ours, theirs)
            assert "Received incompatible tensor with shape (5,)" in str(ours)
            np.testing.assert_array_equal(ours_var.numpy(), theirs_var.numpy())  # left as it was
        else:
            np.testing.assert_array_equal(ours, theirs)
            assert str(ours_var.shape) == str(theirs_var.shape)


# ---- SavedModels


def _module(lib):
    module = lib.Module()
    module.v = lib.Variable([1.0, 2.0, 3.0, 4.0, 5.0], shape=lib.TensorShape([None]))

    @lib.function(input_signature=[lib.TensorSpec([None], lib.float32)])
    def set_and_sum(x):
        module.v.assign(x)
        return lib.reduce_sum(module.v)

    @lib.function(input_signature=[])
    def read():
        return module.v.read_value()

    module.set_and_sum, module.read = set_and_sum, read
    return module


def _exercise(lib, loaded):
    out = [loaded.v.numpy().tolist(), loaded.read().numpy().tolist(), str(loaded.v.shape)]
    out.append(float(loaded.set_and_sum(lib.constant([1.0, 2.0]))))
    out += [loaded.v.numpy().tolist(), loaded.read().numpy().tolist(), str(loaded.v.shape)]
    loaded.v.assign([7.0, 8.0, 9.0])
    out.append(loaded.read().numpy().tolist())
    return out


@pytest.mark.parametrize("writer", ["ember", "tensorflow"])
def test_saved_model_keeps_the_declared_shape(writer, tmp_path):
    lib = em if writer == "ember" else tf
    lib.saved_model.save(_module(lib), str(tmp_path / "model"))
    ours = _exercise(em, em.saved_model.load(str(tmp_path / "model")))
    theirs = _exercise(tf, tf.saved_model.load(str(tmp_path / "model")))
    assert ours == theirs
    assert ours[2] == "(None,)"


@pytest.mark.parametrize("writer", ["ember", "tensorflow"])
def test_saved_model_keeps_an_unknown_rank(writer, tmp_path):
    lib = em if writer == "ember" else tf
    module = lib.Module()
    module.v = lib.Variable(2.0, shape=lib.TensorShape(None))
    module.read = lib.function(lambda: module.v * 2.0, input_signature=[])
    lib.saved_model.save(module, str(tmp_path / "model"))
    results = []
    for reader in (em, tf):
        loaded = reader.saved_model.load(str(tmp_path / "model"))
        out = [str(loaded.v.shape), loaded.read().numpy().tolist()]
        loaded.v.assign(np.ones((2, 2), np.float32))
        results.append(out + [loaded.read().numpy().tolist()])
    assert results[0] == results[1] == ["<unknown>", 4.0, [[2.0, 2.0], [2.0, 2.0]]]


def test_saved_model_records_the_declared_shape(tmp_path):
    from tensorflow.core.protobuf import saved_model_pb2

    em.saved_model.save(_module(em), str(tmp_path / "model"))
    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((tmp_path / "model" / "saved_model.pb").read_bytes())
    variables = [n.variable for n in saved.meta_graphs[0].object_graph_def.nodes if n.HasField("variable")]
    assert [[d.size for d in v.shape.dim] for v in variables] == [[-1]]
    handles = [n for n in saved.meta_graphs[0].graph_def.node if n.op == "VarHandleOp"]
    assert [[d.size for d in n.attr["shape"].shape.dim] for n in handles] == [[-1]]


# ---- Keras: the lookup layers' idf weights


def _lookup(lib, **kwargs):
    return lib.layers.StringLookup(output_mode="tf_idf", **kwargs)


def test_lookup_idf_weights_are_one_variable_of_unknown_length():
    ours, theirs = _lookup(em.keras), _lookup(tf_keras)
    ours_idf, theirs_idf = ours.weights[0], theirs.weights[0]
    assert str(ours_idf.shape) == str(theirs_idf.shape) == "(None,)"
    for layer in (ours, theirs):
        layer.set_vocabulary(["a", "b", "c"], idf_weights=[0.5, 0.25, 0.125])
    assert ours.weights[0] is ours_idf and theirs.weights[0] is theirs_idf  # assigned, not replaced
    np.testing.assert_allclose(ours_idf.numpy(), theirs_idf.numpy(), rtol=1e-6)
    inputs = [["a", "b", "a", "z"]]
    np.testing.assert_allclose(ours(em.constant(inputs)).numpy(), theirs(tf.constant(inputs)).numpy(), rtol=1e-6)


def test_lookup_idf_weights_set_weights_and_adapt_take_any_length():
    ours, theirs = _lookup(em.keras), _lookup(tf_keras)
    for layer in (ours, theirs):
        layer.adapt([["a", "b"], ["a", "c"], ["d", "a"]])
    ours_idf = ours.weights[0]
    np.testing.assert_allclose(ours_idf.numpy(), theirs.weights[0].numpy(), rtol=1e-6)
    # Another layer's weights of another length go into the same variable.
    other = _lookup(em.keras)
    other.set_weights([np.asarray([0.1, 0.2], np.float32)] + other.get_weights()[1:])
    np.testing.assert_allclose(other.weights[0].numpy(), [0.1, 0.2])
    with pytest.raises(ValueError, match="is not compatible with provided weight shape"):
        other.set_weights([np.zeros((2, 2), np.float32)] + other.get_weights()[1:])
    assert ours.weights[0] is ours_idf


def test_lookup_idf_weights_round_trip_a_checkpoint(tmp_path):
    results = []
    for lib, keras in ((em, em.keras), (tf, tf_keras)):
        layer = _lookup(keras)
        layer.set_vocabulary(["a", "b", "c"], idf_weights=[0.5, 0.25, 0.125])
        path = lib.train.Checkpoint(layer=layer).write(str(tmp_path / lib.__name__ / "ckpt"))
        restored = _lookup(keras)
        idf = restored.weights[0]
        lib.train.Checkpoint(layer=restored).read(path)
        assert restored.weights[0] is idf  # the saved length went into the same variable
        # Neither restores the vocabulary size a call needs (tf_keras: the vocabulary was not adapted).
        with pytest.raises(RuntimeError, match="must set the layer's vocabulary"):
            restored(lib.constant([["a", "c", "z"]]))
        results.append((str(idf.shape), idf.numpy()))
    assert results[0][0] == results[1][0] == "(None,)"
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)
