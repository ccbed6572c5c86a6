"""ember.raw_ops against TensorFlow's tf.raw_ops: every op both have takes TensorFlow's keyword arguments,
and the registry's example of each runs through both with the same results."""
import inspect

import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf
from ember import _C, raw_ops
from test_op_registry import EXAMPLES

SHARED = sorted(n for n in dir(raw_ops) if not n.startswith("_") and n in set(_C.op_names())
                and hasattr(real_tf.raw_ops, n))

# Where the two cannot agree on values, and why.
VALUES_DIFFER = {
    # ember's TensorLists are dense tensors (Note [TensorLists as dense tensors]), TensorFlow's variants.
    **{n: "dense lists" for n in SHARED if n.startswith("TensorList") or n == "EmptyTensorList"},
    "HashTableV2": "a table handle", "MutableHashTableV2": "a table handle",
    "Svd": "singular vectors up to sign", "SelfAdjointEigV2": "eigenvectors up to sign",
    "Eig": "eigenvalue order and eigenvector phases are LAPACK's (test_linalg_eig_lu.py compares them)",
    "FusedBatchNormGradV3": "the reserve-space outputs are each framework's own",
    "WriteFile": "writes a file", "RFFT": "the registry example's fft_length is ember's",
    "RaggedTensorToTensor": "the example's partitions are ember's", "StatelessRandomUniformInt": "seeded stream",
    "ParseExampleV2": "the example puts one key in three groups, which TensorFlow refuses",
    "ParseSequenceExampleV2": "the example puts one key in several groups, which TensorFlow refuses",
    **{n: "the example names an ember variable by id; TensorFlow's takes a handle (both compared through "
          "Variable.handle in test_variables_scatter.py)"
       for n in SHARED if n.startswith("ResourceScatter") or n.endswith("VariableOp")},
}

# Arguments TensorFlow needs beside the registry example's.
def _tensorflow_only(name, kwargs):
    if name == "SplitV":
        return {"num_split": len(np.asarray(kwargs["size_splits"]))}
    if name in raw_ops._UINT64_BITS:  # TensorFlow's key and counter are uint64 (the same bits)
        return {k: np.asarray(kwargs[k].numpy()).view(np.uint64) for k in raw_ops._UINT64_BITS[name]}
    return {}


def test_every_shared_op_takes_tensorflows_arguments():
    assert len(SHARED) > 250
    for name in SHARED:
        ours = inspect.signature(getattr(raw_ops, name)).parameters
        theirs = inspect.signature(getattr(real_tf.raw_ops, name)).parameters
        assert set(ours) == set(theirs), name
        required = {k for k, p in theirs.items() if p.default is inspect.Parameter.empty}
        # ember may default what TensorFlow requires (a dtype it can infer), never the other way round
        assert {k for k, p in ours.items() if p.default is inspect.Parameter.empty} <= required, name


def _to_tf(value):
    if isinstance(value, tf.Tensor):
        return real_tf.constant(value.numpy())
    if isinstance(value, tf.DType):
        return real_tf.as_dtype(value.name)
    if isinstance(value, (list, tuple)):
        return [_to_tf(v) for v in value]
    return value


def _keyword_arguments(name):
    """The registry example (ember's positional inputs and attributes) under TensorFlow's names."""
    inputs, attrs = EXAMPLES[name]
    info = _C.op_info(name)
    theirs_of_ours = {v: k for k, v in raw_ops._RENAMED.get(name, {}).items()}
    keys = set(inspect.signature(getattr(raw_ops, name)).parameters)
    values = dict(zip(info["inputs"] + info["attrs"], list(inputs) + list(attrs)))
    if name == "EnsureShape":  # TensorFlow's shape is ember's dims (-1 unknown) and its unknown_rank flag
        values["shape"] = None if values.pop("unknown_rank") else [None if d < 0 else d for d in values["shape"]]
    return {theirs_of_ours.get(k, k): v for k, v in values.items() if theirs_of_ours.get(k, k) in keys}


def _flat(result):
    """The result's tensors in order, list outputs (CTCBeamSearchDecoder's) included."""
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in _flat(r)]
    return [result]


@pytest.mark.parametrize("name", [n for n in SHARED if n in EXAMPLES and n not in VALUES_DIFFER])
def test_registry_examples_match_tensorflow(name):
    # Seeded random kernels keep advancing their streams across calls in a process, as TensorFlow's do; this
    # process's TensorFlow calls each example once, so ember's streams restart here, whatever ran earlier
    # (test_op_registry.py calls the same examples).
    tf.random.set_seed(None)
    kwargs = _keyword_arguments(name)
    extra = _tensorflow_only(name, kwargs)
    theirs = getattr(real_tf.raw_ops, name)(**{**{k: _to_tf(v) for k, v in kwargs.items()}, **extra})
    ours = getattr(raw_ops, name)(**{**kwargs, **extra})
    ours, theirs = _flat(ours), _flat(theirs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        a, b = np.asarray(a.numpy()), np.asarray(b.numpy())
        assert a.shape == b.shape, name
        if a.dtype.kind in "OSU":
            assert (a == b).all(), name
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=name)


def test_list_outputs_are_grouped_as_tensorflows():
    logits = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32)
    kwargs = dict(inputs=logits, sequence_length=np.array([4, 3], np.int32), beam_width=3, top_paths=2)
    ours, theirs = raw_ops.CTCBeamSearchDecoder(**kwargs), real_tf.raw_ops.CTCBeamSearchDecoder(**kwargs)
    assert ours._fields == theirs._fields
    for a, b in zip(ours[:3], theirs[:3]):
        assert isinstance(a, list) and len(a) == len(b) == 2
    np.testing.assert_allclose(ours.log_probability.numpy(), theirs.log_probability.numpy(), rtol=1e-5)


def test_several_outputs_are_named_as_tensorflows():
    ours = raw_ops.Unique(x=[3, 1, 3, 2])
    theirs = real_tf.raw_ops.Unique(x=[3, 1, 3, 2])
    assert ours._fields == theirs._fields
    np.testing.assert_array_equal(ours.idx.numpy(), theirs.idx.numpy())


def test_renamed_and_derived_arguments():
    x = np.array([[-1.0, 2.0], [3.0, -4.0]], np.float32)
    np.testing.assert_array_equal(raw_ops.Relu(features=x).numpy(), real_tf.raw_ops.Relu(features=x).numpy())
    np.testing.assert_array_equal(raw_ops.Sum(input=x, axis=[1], keep_dims=True).numpy(),
                                  real_tf.raw_ops.Sum(input=x, axis=[1], keep_dims=True).numpy())
    np.testing.assert_array_equal(raw_ops.Squeeze(input=x[None], axis=[0]).numpy(), x)
    np.testing.assert_allclose(raw_ops.ComplexAbs(x=np.array([3 + 4j], np.complex64), Tout=tf.float32).numpy(),
                               [5.0])
    pieces = raw_ops.SplitV(value=x, size_splits=[1, 1], axis=1, num_split=2)
    assert [p.shape.as_list() for p in pieces] == [[2, 1], [2, 1]]


def test_inside_a_function():
    @tf.function
    def f(x):
        return raw_ops.AddV2(x=raw_ops.Square(x=x), y=1.0)

    np.testing.assert_allclose(f(tf.constant([2.0, 3.0])).numpy(), [5.0, 10.0])


def test_bad_calls_are_tensorflows_type_errors():
    with pytest.raises(TypeError, match="only takes keyword args"):
        raw_ops.Add(1.0, 2.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        raw_ops.Add(x=1.0, z=2.0)
    with pytest.raises(TypeError, match="missing required argument 'y'"):
        raw_ops.Add(x=1.0)
    with pytest.raises(AttributeError):
        raw_ops.NoSuchOp  # noqa: B018
    with pytest.raises(NotImplementedError, match="the table's lookup"):
        raw_ops.LookupTableFindV2  # noqa: B018
