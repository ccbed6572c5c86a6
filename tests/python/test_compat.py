"""tf.compat's string and shape helpers and forward_compatible (python/ember/compat/__init__.py), value for
value against TensorFlow."""
import pytest
import tensorflow

import ember


@pytest.mark.parametrize("call", [
    lambda c: c.as_bytes("héllo"), lambda c: c.as_bytes(b"x"), lambda c: c.as_bytes(bytearray(b"ab")),
    lambda c: c.as_str(b"abc"), lambda c: c.as_text("x"), lambda c: c.as_str_any(3), lambda c: c.as_str_any(b"q"),
    lambda c: c.path_to_str("a/b"), lambda c: c.as_bytes(3), lambda c: c.as_text(1.5),
    lambda c: c.forward_compatible(2026, 1, 15), lambda c: c.forward_compatible(2026, 1, 16),
    lambda c: c.forward_compatible(2031, 1, 1), lambda c: c.dimension_value(7), lambda c: c.dimension_value(None),
    lambda c: isinstance(3, c.integral_types), lambda c: isinstance(2.5, c.real_types),
    lambda c: isinstance(1j, c.complex_types), lambda c: isinstance("s", c.bytes_or_text_types),
])
def test_helpers_match_tensorflow(call):
    def outcome(module):
        try:
            return ("ok", call(module))
        except Exception as e:  # noqa: BLE001 - the class is compared
            return ("error", type(e).__name__)

    assert outcome(ember.compat) == outcome(tensorflow.compat)


def test_dimension_at_index_and_the_horizon_scope():
    shape = ember.TensorShape([3, None])
    assert ember.compat.dimension_at_index(shape, 0) == 3
    assert ember.compat.dimension_value(ember.compat.dimension_at_index(shape, 1)) is None
    with ember.compat.forward_compatibility_horizon(2040, 1, 1):
        assert ember.compat.forward_compatible(2035, 1, 1)
    assert not ember.compat.forward_compatible(2035, 1, 1)
    assert ember.compat.v2.constant is ember.constant
