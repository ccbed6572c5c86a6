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
