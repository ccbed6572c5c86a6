"""``ember.keras.activations``: Keras 2's activation functions (tf_keras), and ``get`` / ``serialize`` /
``deserialize``, which turn a name (``"relu"``), None (linear) or a callable into the function."""

from ember.framework.tensor import convert_to_tensor
from ember.ops import array_ops, math_ops, nn_ops


def linear(x):
    return x


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    """max(x, 0) by default; ``alpha`` is the slope below ``threshold``, ``max_value`` caps the result."""
    x = convert_to_tensor(x)
    if alpha == 0.0 and max_value is None and threshold == 0.0:
        return nn_ops.relu(x)
    dtype = x.dtype
    threshold_t = convert_to_tensor(threshold, dtype=dtype)
    above = x > threshold_t  # at the threshold itself the result is 0, as Keras'
    y = array_ops.where(above, x, convert_to_tensor(alpha, dtype=dtype) * (x - threshold_t))
    if max_value is not None:
        y = math_ops.minimum(y, convert_to_tensor(max_value, dtype=dtype))
    return y


def sigmoid(x):
    output = math_ops.sigmoid(x)
    _keep_logits(output, x)
    return output


def _keep_logits(output, logits):
    """Remembers the logits of a sigmoid's or softmax's output: the cross-entropy losses use them, as
    tf_keras' do (losses._activation_logits)."""
    from ember.keras.engine.keras_tensor import set_logits

    set_logits(output, logits)


def tanh(x):
    return math_ops.tanh(x)


def softmax(x, axis=-1):
    x = convert_to_tensor(x)
    if x.shape.rank is not None and x.shape.rank <= 1:
        raise ValueError(f"Cannot apply softmax to a tensor that is 1D. Received input: {x}")
    output = nn_ops.softmax(x, axis=axis)
    _keep_logits(output, x)
    return output


def elu(x, alpha=1.0):
    y = nn_ops.elu(x)
    if alpha == 1.0:
        return y
    x = convert_to_tensor(x)
    return array_ops.where(x > 0, y, y * convert_to_tensor(alpha, dtype=x.dtype))


def selu(x):
    return nn_ops.selu(x)


def softplus(x):
    return nn_ops.softplus(x)


def softsign(x):
    return nn_ops.softsign(x)


def swish(x):
    return nn_ops.silu(x)


def gelu(x, approximate=False):
    return nn_ops.gelu(x, approximate=approximate)


def exponential(x):
    return math_ops.exp(x)


def hard_sigmoid(x):
    """Keras 2's piecewise line: 0 below -2.5, 1 above 2.5, 0.2 * x + 0.5 between."""
    x = convert_to_tensor(x)
    y = x * convert_to_tensor(0.2, dtype=x.dtype) + convert_to_tensor(0.5, dtype=x.dtype)
    return math_ops.minimum(math_ops.maximum(y, convert_to_tensor(0.0, dtype=x.dtype)),
                            convert_to_tensor(1.0, dtype=x.dtype))


def mish(x):
    return x * math_ops.tanh(nn_ops.softplus(x))


_ALL = {f.__name__: f for f in (linear, relu, sigmoid, tanh, softmax, elu, selu, softplus, softsign, swish, gelu,
                                exponential, hard_sigmoid, mish)}
_ALIASES = {"silu": swish, "relu6": lambda x: relu(x, max_value=6.0), "leaky_relu": nn_ops.leaky_relu,
            "log_softmax": nn_ops.log_softmax}


def serialize(activation):
    """The name of a Keras activation ("relu"); a function of the user's is named by its __name__."""
    for name, fn in _ALL.items():
        if activation is fn:
            return name
    name = getattr(activation, "__name__", None)
    if name is None:
        raise ValueError(f"Unknown activation function '{activation}' cannot be serialized.")
    from ember.keras.utils.object_registration import get_registered_name

    return get_registered_name(activation)


def deserialize(name, custom_objects=None):
    from ember.keras.utils.object_registration import effective_custom_objects

    custom_objects = effective_custom_objects(custom_objects)
    if name in custom_objects:
        return custom_objects[name]
    if name in _ALL:
        return _ALL[name]
    if name in _ALIASES:
        return _ALIASES[name]
    raise ValueError(f"Unknown activation function: '{name}'. Expected one of {sorted(_ALL)} or a callable; "
                     "please ensure you are using a `keras.utils.custom_object_scope` for custom objects.")


def get(identifier):
    """None -> linear; a name -> that activation; a callable -> itself."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        return deserialize(identifier)
    if isinstance(identifier, dict):  # {"class_name": ..., "config": ...} as Keras 2 serializes some
        return deserialize(identifier.get("config", identifier.get("class_name")))
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret activation function identifier: {identifier!r}")



