"""Differential testing against TensorFlow: a case is a function of the library (``tensorflow`` or
``ember``) run once with each; ``same(case)`` compares what a program sees: values (floats rounded to 5
decimals, as different kernels agree to ~1 ulp), dtypes, shapes and the class of an error raised."""

import numpy as np
import tensorflow

import ember


def plain(value):
    if hasattr(value, "numpy") and hasattr(value, "dtype"):
        array = np.asarray(value.numpy())
        if array.dtype.kind == "f":
            array = np.round(array.astype(np.float64), 5)
        return ("tensor", value.dtype.name, list(value.shape), array.tolist())
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    if hasattr(value, "as_list") or type(value).__name__ == "TensorShape":
        return ("shape", None if value.rank is None else value.as_list())
    return value


def outcome(case, lib):
    try:
        return ("ok", plain(case(lib)))
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return ("raised", type(e))


def same(case):
    """Both runs return equal plain values, or both raise and ember's exception is an instance of a class of
    TensorFlow's name (ember's may subclass it). Returns the outcome."""
    expected, got = outcome(case, tensorflow), outcome(case, ember)
    if expected[0] == "raised" and got[0] == "raised":
        names = [c.__name__ for c in got[1].__mro__]
        assert expected[1].__name__ in names, f"TensorFlow raised {expected[1]}, ember {got[1]}"
        return expected
    assert got == expected, f"TensorFlow: {expected}\nember:      {got}"
    return got


def values_and_gradient(fn, x, lib, mode="eager", signature=None, grad=True):
    """fn(lib, t) for t = lib.constant(x), run eagerly (``mode`` "eager"), in ``ember.function`` ("traced") or
    traced with ``input_signature=[TensorSpec(signature)]`` ("unknown"), and, when ``grad``, the gradient with
    respect to t of sum(y sin y) (of sum(real(y) + |y|^2 / 2) for a complex y). Returns [y] or [y, gradient]
    as NumPy arrays, to compare between the libraries."""
    t = lib.constant(x)
    with lib.GradientTape() as tape:
        if grad:
            tape.watch(t)
        f = lambda v: fn(lib, v)  # noqa: E731
        if mode == "traced":
            f = ember.function(f)
        elif mode == "unknown":
            f = ember.function(f, input_signature=[ember.TensorSpec(signature, t.dtype)])
        y = f(t)
        if y.dtype.is_complex:
            loss = lib.reduce_sum(lib.math.real(y) + 0.5 * lib.abs(y) ** 2)
        else:
            wide = lib.cast(y, lib.float64)
            loss = lib.reduce_sum(wide * lib.sin(wide))
    return [y.numpy()] + ([tape.gradient(loss, t).numpy()] if grad else [])
