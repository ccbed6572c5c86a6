"""``ember.test``: TensorFlow's testing helpers (``tf.test.TestCase``, ``tf.test.main``,
``tf.test.compute_gradient`` ...), so that TF 2 test files run with only the import changed.

ember runs eagerly, so ``evaluate`` turns (nested) tensors into NumPy values and ``session`` /
``cached_session`` yield an object whose ``run`` does the same, as TensorFlow's tests find them in eager mode.
"""

import contextlib
import os
import re
import tempfile
import unittest

import numpy as np

from ember import dtypes, errors
from ember.util import nest

__all__ = ["TestCase", "main", "compute_gradient", "is_gpu_available", "gpu_device_name", "is_built_with_cuda",
           "is_built_with_gpu_support", "is_built_with_rocm", "is_built_with_xla", "get_temp_dir", "Benchmark"]


def _as_numpy(value):
    """A tensor, variable, ragged or sparse tensor as its NumPy value; anything else as given."""
    from ember.framework.tensor import Tensor

    if isinstance(value, Tensor):
        return value.numpy()
    numpy = getattr(value, "numpy", None)
    if callable(numpy) and not isinstance(value, np.ndarray):
        return numpy()
    return value


def _evaluate(structure):
    from ember.ragged import RaggedTensor
    from ember.sparse import SparseTensor

    def one(value):
        if isinstance(value, RaggedTensor):
            return RaggedTensorValue(value)
        if isinstance(value, SparseTensor):
            return SparseTensorValue(value.indices.numpy(), value.values.numpy(), value.dense_shape.numpy())
        return _as_numpy(value)

    return nest.map_structure(one, structure)


class RaggedTensorValue:
    """A RaggedTensor's value after ``evaluate``: ``to_list()``, ``values``, ``row_splits`` as NumPy."""

    def __init__(self, ragged):
        self._list = ragged.to_list()
        self.values = _evaluate(ragged.values)
        self.row_splits = ragged.row_splits.numpy()
        self.flat_values = _evaluate(ragged.flat_values)
        self.nested_row_splits = tuple(s.numpy() for s in ragged.nested_row_splits)
        self.dtype = ragged.dtype

    def to_list(self):
        return self._list

    def __repr__(self):
        return f"RaggedTensorValue({self._list!r})"


class SparseTensorValue:
    """A SparseTensor's value after ``evaluate``: NumPy indices, values and dense_shape."""

    def __init__(self, indices, values, dense_shape):
        self.indices, self.values, self.dense_shape = indices, values, dense_shape

    def __repr__(self):
        return f"SparseTensorValue(indices={self.indices!r}, values={self.values!r}, dense_shape={self.dense_shape!r})"


class _EagerSession:
    """What ``session()`` yields: ``run`` evaluates its fetches, as TF 2's fake eager session does."""

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if feed_dict:
            raise RuntimeError("session.run: feed_dict needs graph mode; ember runs eagerly (pass values to "
                               "an ember.function instead)")
        return _evaluate(fetches)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _as_list_if_ragged(value):
    from ember.ragged import RaggedTensor

    if isinstance(value, RaggedTensor):
        return value.to_list()
    if isinstance(value, RaggedTensorValue):
        return value.to_list()
    return None


def _numpy_array(value):
    ragged = _as_list_if_ragged(value)
    if ragged is not None:
        return np.array(ragged, dtype=object) if _is_ragged_list(ragged) else np.asarray(ragged)
    value = _as_numpy(value)
    if isinstance(value, (bytes, str)):
        return np.array(value, dtype=object)
    return np.asarray(value)


def _plain_list(value):
    """Nested Python lists of the values (rows may differ in length)."""
    if isinstance(value, (list, tuple)):
        return [_plain_list(v) for v in value]
    value = _as_numpy(value)
    return value.tolist() if isinstance(value, np.ndarray) else value


def _is_ragged_list(value):
    try:
        np.asarray(value)
        return False
    except ValueError:  # rows of different lengths
        return True


def _text_normalized(array):
    """Strings compare as text whichever of bytes or str each side holds, as TensorFlow's assertions."""
    if array.dtype.kind in "OSU":
        return np.vectorize(lambda v: v.decode() if isinstance(v, bytes) else v, otypes=[object])(array)
    return array


def _is_array_like(value):
    """Whether a list or tuple is one array (numbers, or tensors of one shape), not a structure."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return False  # a namedtuple is a structure, compared field by field
    try:
        return np.asarray([_as_numpy(v) for v in value]).dtype != object
    except (ValueError, TypeError):
        return False


class TestCase(unittest.TestCase):
    """unittest.TestCase with TensorFlow's assertions over tensors and nested structures."""

    def setUp(self):
        super().setUp()
        from ember.ops import random_ops

        random_ops.set_seed(87654321)  # TensorFlow's test cases seed every test the same way
        np.random.seed(87654321)

    # ---- values
    def evaluate(self, tensors):
        return _evaluate(tensors)

    @contextlib.contextmanager
    def session(self, graph=None, config=None, use_gpu=True, force_gpu=False):
        yield _EagerSession()

    cached_session = session

    def test_session(self, graph=None, config=None, use_gpu=True, force_gpu=False):
        # unittest collects every test_* method, this one too: run as a test, it skips itself
        if self.id().endswith(".test_session"):
            self.skipTest("test_session is TensorFlow's session helper, not a test")
        return self.session(graph, config, use_gpu, force_gpu)

    def get_temp_dir(self):
        if not hasattr(self, "_temp_dir"):
            self._temp_dir = tempfile.mkdtemp(prefix=f"{type(self).__name__}_")
        return self._temp_dir

    # ---- closeness
    def _assert_close(self, a, b, rtol, atol, msg, path):
        if isinstance(a, dict) or isinstance(b, dict):
            if not (isinstance(a, dict) and isinstance(b, dict)) or set(a) != set(b):
                raise AssertionError(f"{path or 'value'}: mismatched structures: {a!r} vs {b!r}. {msg or ''}")
            for key in a:
                self._assert_close(a[key], b[key], rtol, atol, msg, f"{path}[{key!r}]")
            return
        a_value, b_value = _as_numpy(a), _as_numpy(b)
        if isinstance(a_value, (list, tuple)) and isinstance(b_value, (list, tuple)) and not (
                _is_array_like(a_value) and _is_array_like(b_value)):
            if len(a_value) != len(b_value):
                raise AssertionError(f"{path or 'value'}: lengths differ: {len(a_value)} vs {len(b_value)}. "
                                     f"{msg or ''}")
            for i, (x, y) in enumerate(zip(a_value, b_value)):
                self._assert_close(x, y, rtol, atol, msg, f"{path}[{i}]")
            return
        a_array, b_array = _numpy_array(a_value), _numpy_array(b_value)
        if a_array.shape != b_array.shape:
            raise AssertionError(f"{path or 'value'}: shapes differ: {a_array.shape} vs {b_array.shape}. "
                                 f"{msg or ''}")
        header = f"Mismatched value: a{path} is different from b{path}. {msg or ''}"
        if a_array.dtype == object or b_array.dtype == object:
            np.testing.assert_array_equal(a_array, b_array, err_msg=header)
            return
        np.testing.assert_allclose(a_array, b_array, rtol=rtol, atol=atol, err_msg=header, equal_nan=True)

    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802 - TensorFlow's names
        self._assert_close(a, b, rtol, atol, msg, "")

    def assertAllCloseAccordingToType(self, a, b, rtol=1e-6, atol=1e-6, float_rtol=1e-6,  # noqa: N802
                                      float_atol=1e-6, half_rtol=1e-3, half_atol=1e-3, bfloat16_rtol=1e-2,
                                      bfloat16_atol=1e-2, msg=None):
        kinds = {_numpy_array(x).dtype for x in (a, b)}
        names = {getattr(getattr(x, "dtype", None), "name", None) for x in (a, b)}
        if np.dtype(np.float32) in kinds:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if np.dtype(np.float16) in kinds:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        if "bfloat16" in names:
            rtol, atol = max(rtol, bfloat16_rtol), max(atol, bfloat16_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertNotAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802
        try:
            self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)
        except AssertionError:
            return
        raise AssertionError(msg or "The two values are close at all elements")

    def assertAllEqual(self, a, b, msg=None):  # noqa: N802
        ragged_a, ragged_b = _as_list_if_ragged(a), _as_list_if_ragged(b)
        if ragged_a is not None or ragged_b is not None:  # compared as nested lists, row by row
            lists = [r if r is not None else _plain_list(v) for r, v in ((ragged_a, a), (ragged_b, b))]
            if lists[0] != lists[1]:
                raise AssertionError(f"Not equal: {lists[0]} != {lists[1]}. {msg or ''}")
            return
        a_array, b_array = _text_normalized(_numpy_array(a)), _text_normalized(_numpy_array(b))
        if a_array.shape != b_array.shape and a_array.size != 0 and b_array.size != 0:
            raise AssertionError(f"Shape mismatch: expected {a_array.shape}, got {b_array.shape} with contents "
                                 f"{b_array}. {msg or ''}")
        np.testing.assert_array_equal(a_array, b_array, err_msg=msg or "")

    def assertNotAllEqual(self, a, b, msg=None):  # noqa: N802
        try:
            self.assertAllEqual(a, b, msg)
        except AssertionError:
            return
        raise AssertionError(msg or "The two values are equal at all elements")

    def assertAllGreater(self, a, comparison_target):  # noqa: N802
        self.assertGreater(np.min(_numpy_array(a)), comparison_target)

    def assertAllLess(self, a, comparison_target):  # noqa: N802
        self.assertLess(np.max(_numpy_array(a)), comparison_target)

    def assertAllGreaterEqual(self, a, comparison_target):  # noqa: N802
        self.assertGreaterEqual(np.min(_numpy_array(a)), comparison_target)

    def assertAllLessEqual(self, a, comparison_target):  # noqa: N802
        self.assertLessEqual(np.max(_numpy_array(a)), comparison_target)

    def assertAllInRange(self, target, lower_bound, upper_bound, open_lower_bound=False,  # noqa: N802
                         open_upper_bound=False):
        values = _numpy_array(target)
        below = values <= lower_bound if open_lower_bound else values < lower_bound
        above = values >= upper_bound if open_upper_bound else values > upper_bound
        outside = np.argwhere(below | above)
        if outside.size:
            raise AssertionError(f"{len(outside)} of {values.size} elements are outside the range "
                                 f"{'(' if open_lower_bound else '['}{lower_bound}, {upper_bound}"
                                 f"{')' if open_upper_bound else ']'}: at {outside.tolist()[:10]}")

    def assertAllInSet(self, target, expected_set):  # noqa: N802
        values = set(np.unique(_numpy_array(target)).tolist())
        extra = values - set(expected_set)
        if extra:
            raise AssertionError(f"{sorted(extra)} not in the expected set {sorted(expected_set)}")

    def assertArrayNear(self, farray1, farray2, err, msg=None):  # noqa: N802
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def assertNear(self, f1, f2, err, msg=None):  # noqa: N802
        self.assertTrue(f1 == f2 or abs(f1 - f2) <= err,
                        f"{f1!r} != {f2!r} +/- {err!r}" + (f" ({msg})" if msg is not None else ""))

    def assertShapeEqual(self, input_a, input_b, msg=None):  # noqa: N802
        shape_a = tuple(_numpy_array(input_a).shape)
        shape_b = tuple(input_b.shape.as_list()) if hasattr(input_b, "shape") and hasattr(
            input_b.shape, "as_list") else tuple(np.shape(input_b))
        self.assertEqual(shape_a, shape_b, msg=msg)

    def assertDTypeEqual(self, target, expected_dtype):  # noqa: N802
        expected = dtypes.as_dtype(expected_dtype).as_numpy_dtype
        for value in nest.flatten(target):
            self.assertEqual(_numpy_array(value).dtype, np.dtype(expected))

    def assertStartsWith(self, actual, expected_start, msg=None):  # noqa: N802
        if not actual.startswith(expected_start):
            raise AssertionError(f"{actual!r} does not start with {expected_start!r}" + (f" : {msg!r}" if msg
                                                                                          else ""))

    def assertItemsEqual(self, first, second, msg=None):  # noqa: N802
        self.assertCountEqual(first, second, msg)

    def assertDeviceEqual(self, device1, device2, msg=None):  # noqa: N802
        from ember.distribute.mirrored_strategy import canonicalize_device

        self.assertEqual(canonicalize_device(device1), canonicalize_device(device2), msg)

    # ---- errors
    def assertRaisesWithPredicateMatch(self, exception_type, expected_err_re_or_predicate):  # noqa: N802
        if callable(expected_err_re_or_predicate):
            predicate = expected_err_re_or_predicate
        else:
            pattern = expected_err_re_or_predicate

            def predicate(e):
                return re.search(pattern, str(e)) is not None

        @contextlib.contextmanager
        def raises():
            try:
                yield
            except exception_type as e:
                if not predicate(e):
                    raise AssertionError(f"Exception of type {type(e).__name__}: {e}") from e
                return
            raise AssertionError(f"{exception_type.__name__} not raised")

        return raises()

    def assertRaisesOpError(self, expected_err_re_or_predicate):  # noqa: N802
        return self.assertRaisesWithPredicateMatch(errors.OpError, expected_err_re_or_predicate)


def main(argv=None):
    """Runs the test cases of ``__main__``, as ``tf.test.main``."""
    import sys

    unittest.main(argv=argv if argv is not None else sys.argv)


def get_temp_dir():
    return tempfile.mkdtemp(prefix="ember_test_")


def compute_gradient(f, x, delta=None):
    """The theoretical (autodiff) and numerical (central differences) Jacobians of ``f`` at the list of
    tensors ``x``, each a tuple with one matrix per element of ``x``: shape [x size, y size], as
    ``tf.test.compute_gradient``."""
    from ember.backprop import GradientTape
    from ember.framework.tensor import constant, convert_to_tensor

    if not isinstance(x, (list, tuple)):
        raise ValueError(f"compute_gradient: x must be a list or tuple of the arguments of f, not a "
                         f"{type(x).__name__}")
    xs = [convert_to_tensor(v) for v in x]
    y = convert_to_tensor(f(*xs))
    y_size = int(np.prod(y.shape.as_list()))
    theoretical, numerical = [], []
    for i, xi in enumerate(xs):
        base = np.asarray(xi.numpy())
        x_size = base.size
        real_dtype = base.dtype if base.dtype.kind == "f" else np.float64
        # TensorFlow's default step, 2**-10: exact in binary, so x +- step adds no rounding of its own
        step = delta if delta is not None else 1.0 / 1024
        jac_t = np.zeros((x_size, y_size), dtype=real_dtype)
        for j in range(y_size):
            with GradientTape() as tape:
                tape.watch(xi)
                args = list(xs)
                args[i] = xi
                out = convert_to_tensor(f(*args))
            seed = np.zeros(y_size, dtype=np.asarray(out.numpy()).dtype)
            seed[j] = 1
            grad = tape.gradient(out, xi, output_gradients=constant(seed.reshape(out.shape.as_list())))
            if grad is not None:
                jac_t[:, j] = np.asarray(convert_to_tensor(grad).numpy()).reshape(-1)
        jac_n = np.zeros((x_size, y_size), dtype=real_dtype)
        for k in range(x_size):
            plus, minus = base.copy().reshape(-1), base.copy().reshape(-1)
            plus[k] += step
            minus[k] -= step
            args_plus, args_minus = list(xs), list(xs)
            args_plus[i] = constant(plus.reshape(base.shape))
            args_minus[i] = constant(minus.reshape(base.shape))
            y_plus = np.asarray(convert_to_tensor(f(*args_plus)).numpy()).reshape(-1)
            y_minus = np.asarray(convert_to_tensor(f(*args_minus)).numpy()).reshape(-1)
            jac_n[k, :] = (y_plus - y_minus) / (2 * step)
        theoretical.append(jac_t)
        numerical.append(jac_n)
    return tuple(theoretical), tuple(numerical)


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    from ember import config

    return bool(config.list_physical_devices("GPU"))


def gpu_device_name():
    from ember import config

    gpus = config.list_logical_devices("GPU")
    return gpus[0].name if gpus else ""


def is_built_with_cuda():
    return False  # ember's kernels are CPU kernels (docs/devices.md)


def is_built_with_gpu_support():
    return is_built_with_cuda()


def is_built_with_rocm():
    return False


def is_built_with_xla():
    return False


class Benchmark:
    """``tf.test.Benchmark``: ``report_benchmark`` records what a benchmark method measured."""

    def __init__(self):
        self.reports = []

    def report_benchmark(self, iters=None, cpu_time=None, wall_time=None, throughput=None, extras=None,
                         name=None, metrics=None):
        self.reports.append({"iters": iters, "cpu_time": cpu_time, "wall_time": wall_time,
                             "throughput": throughput, "extras": extras, "name": name, "metrics": metrics})

    def evaluate(self, tensors):
        return _evaluate(tensors)


del os
