"""TensorFlow 2.21 top-level names that are aliases or small helpers (python/ember/api_aliases.py,
framework/device_spec.py), against TensorFlow: values, dtypes, configs and errors."""

import numpy as np
import pytest
import tensorflow as real_tf

import ember as em
from ember import errors


def test_keras_module_aliases():
    assert em.losses is em.keras.losses and em.metrics is em.keras.metrics and em.optimizers is em.keras.optimizers
    for name in ("MeanSquaredError", "categorical_crossentropy"):
        assert hasattr(em.losses, name) and hasattr(real_tf.losses, name)
    assert hasattr(em.metrics, "Mean") and hasattr(em.optimizers, "Adam")


def test_as_string_guarantee_const_matrix_square_root():
    x = np.array([1.5, -2.0], np.float32)
    np.testing.assert_array_equal(em.as_string(em.constant(x), precision=2).numpy(),
                                  real_tf.as_string(real_tf.constant(x), precision=2).numpy())
    g = em.guarantee_const(em.constant(x))
    assert g.dtype == em.float32
    np.testing.assert_array_equal(g.numpy(), x)
    m = np.array([[4.0, 1.0], [1.0, 3.0]])
    np.testing.assert_allclose(em.matrix_square_root(em.constant(m)).numpy(),
                               real_tf.linalg.sqrtm(real_tf.constant(m)).numpy(), rtol=1e-12)


def test_parallel_stack_only_in_functions():
    with pytest.raises(RuntimeError, match="not compatible with eager execution"):
        em.parallel_stack([em.constant([1, 2]), em.constant([3, 4])])
    with pytest.raises(RuntimeError, match="not compatible with eager execution"):
        real_tf.parallel_stack([real_tf.constant([1, 2])])
    out = em.function(lambda a, b: em.parallel_stack([a, b]))(em.constant([1, 2]), em.constant([3, 4]))
    theirs = real_tf.function(lambda a, b: real_tf.parallel_stack([a, b]))(real_tf.constant([1, 2]),
                                                                            real_tf.constant([3, 4]))
    np.testing.assert_array_equal(out.numpy(), theirs.numpy())


def test_is_symbolic_tensor_and_name_scope():
    assert em.is_symbolic_tensor(em.constant(1.0)) is False and em.is_symbolic_tensor(1.0) is False
    seen = []

    @em.function
    def f(x):
        seen.append(em.is_symbolic_tensor(x))
        return x

    f(em.constant(1.0))
    assert seen == [True]
    assert em.get_current_name_scope() == real_tf.get_current_name_scope() == ""
    with em.name_scope("a"), real_tf.name_scope("a"):
        with em.name_scope("b"), real_tf.name_scope("b"):
            assert em.get_current_name_scope() == real_tf.get_current_name_scope() == "a/b"


def test_truncatediv_truncatemod_top_level():
    # TF 2.21 exports them only at the top level.
    for name in ("truncatediv", "truncatemod"):
        assert hasattr(em, name) and hasattr(real_tf, name)
        assert not hasattr(em.math, name) and not hasattr(real_tf.math, name)


def test_aggregation_method():
    for n in ("ADD_N", "DEFAULT", "EXPERIMENTAL_TREE", "EXPERIMENTAL_ACCUMULATE_N"):
        assert getattr(em.AggregationMethod, n) == getattr(real_tf.AggregationMethod, n)


@pytest.mark.parametrize("make", ["random_normal_initializer", "random_uniform_initializer"])
def test_tf2_initializers(make):
    ours, theirs = getattr(em, make), getattr(real_tf, make)
    assert ours().get_config() == theirs().get_config()
    args = (1.0, 2.0, 3)
    assert ours(*args).get_config() == theirs(*args).get_config()
    init = ours.from_config(ours(*args).get_config())
    assert init.get_config() == theirs(*args).get_config()
    v = init([3, 4])
    assert v.dtype == em.float32 and v.shape == (3, 4)
    v = init([5], em.float64)
    assert v.dtype == em.float64
    if make == "random_uniform_initializer":
        v = ours(-3, 3, seed=1)([100], em.int32)
        assert v.dtype == em.int32 and -3 <= v.numpy().min() and v.numpy().max() < 3
        with pytest.raises(ValueError):
            theirs()([2], real_tf.bool)
        with pytest.raises(ValueError):
            ours()([2], em.bool)
        u = ours(0.0, 1.0)([1000]).numpy()
        assert 0 <= u.min() and u.max() < 1
    else:
        with pytest.raises(ValueError):
            theirs()([2], real_tf.int32)
        with pytest.raises(ValueError, match="floating point"):
            ours()([2], em.int32)
        n = ours(1.0, 2.0)([20000]).numpy()
        assert abs(n.mean() - 1.0) < 0.1 and abs(n.std() - 2.0) < 0.1


DEVICE_STRINGS = ["/job:worker/replica:1/task:2/device:GPU:3", "/gpu:0", "/CPU:1", "cpu:0", "GPU", "/device:gpu:0",
                  "/task:-1", "/job:", "/device:CPU:-1", "//job:a//", "tpu:0", "epu:1", "custom:0",
                  "/job:a/job:b", "/device:GPU:*", "", "/job:a/device:xla_cpu:0", "/CPU:*"]
BAD_DEVICE_STRINGS = ["/foo:1", "/job:a/task:x", "garbage", "/device:gpu:0/device:cpu:1", "/device:GPU:0:1",
                      "/job:a/cpu:0/device:CPU:0", "/replica:x", "/cpu:x", "/device:GPU", "xpu:0"]


def _fields(d):
    return (d.job, d.replica, d.task, d.device_type, d.device_index)


@pytest.mark.parametrize("text", DEVICE_STRINGS)
def test_device_spec_parse(text):
    ours, theirs = em.DeviceSpec.from_string(text), real_tf.DeviceSpec.from_string(text)
    assert ours.to_string() == theirs.to_string() and _fields(ours) == _fields(theirs)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("text", BAD_DEVICE_STRINGS)
def test_device_spec_bad(text):
    with pytest.raises(ValueError):
        real_tf.DeviceSpec.from_string(text)
    with pytest.raises(ValueError):
        em.DeviceSpec.from_string(text)


def test_device_spec_build_replace_merge():
    for kwargs in (dict(job="ps", device_type="cpu", device_index=0), dict(device_type="GPU"), dict(device_index=2),
                   dict(replica="2", task=2.0)):
        ours, theirs = em.DeviceSpec(**kwargs), real_tf.DeviceSpec(**kwargs)
        assert ours.to_string() == theirs.to_string() and _fields(ours) == _fields(theirs)
    text = "/job:worker/replica:1/task:2/device:GPU:3"
    ours, theirs = em.DeviceSpec.from_string(text), real_tf.DeviceSpec.from_string(text)
    assert ours.replace(job="x", device_index=None).to_string() == theirs.replace(job="x",
                                                                                  device_index=None).to_string()
    other = "/job:a/device:CPU:*"
    assert (ours.make_merged_spec(em.DeviceSpec.from_string(other)).to_string()
            == theirs.make_merged_spec(real_tf.DeviceSpec.from_string(other)).to_string())
    assert ours.parse_from_string("/task:7").to_string() == theirs.parse_from_string("/task:7").to_string()
    assert em.DeviceSpec.from_string("/job:a") == em.DeviceSpec(job="a")
    assert hash(em.DeviceSpec.from_string("/job:a")) == hash(em.DeviceSpec(job="a"))
    with pytest.raises(TypeError):
        ours.replace(foo=1)
    with pytest.raises(AttributeError):
        ours.job = "b"
    with pytest.raises(ValueError):
        em.DeviceSpec(device_index="x")
    with em.device(em.DeviceSpec(device_type="CPU", device_index=0).to_string()):
        assert float(em.constant(1.0) + 1.0) == 2.0


def test_type_spec_from_value():
    for value in ([1, 2], 3.0, True, np.zeros((2, 3), np.float64), "s"):
        ours, theirs = em.type_spec_from_value(value), real_tf.type_spec_from_value(value)
        assert ours.shape.as_list() == theirs.shape.as_list() and ours.dtype.name == theirs.dtype.name
    assert em.type_spec_from_value(em.constant([1, 2])) == em.TensorSpec([2], em.int32)
    ragged = em.type_spec_from_value(em.ragged.constant([[1], [2, 3]]))
    assert isinstance(ragged, em.RaggedTensorSpec)
    assert isinstance(em.type_spec_from_value(em.sparse.from_dense([[1, 0]])), em.SparseTensorSpec)
    for bad in (object(), [[1], [2, 3]]):
        with pytest.raises(TypeError, match="Could not build a TypeSpec"):
            real_tf.type_spec_from_value(bad)
        with pytest.raises(TypeError, match="Could not build a TypeSpec"):
            em.type_spec_from_value(bad)
