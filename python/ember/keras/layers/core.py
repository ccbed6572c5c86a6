"""Keras 2's core layers (tf_keras): Dense, Activation, Dropout, Flatten, Reshape, Lambda, Embedding, the
merge layers (Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate) and their functional
spellings (``add([a, b])``, ``concatenate([a, b])``)."""

import math

import numpy as np

from ember import dtypes
from ember.framework.tensor import convert_to_tensor
from ember.framework.tensor_shape import TensorShape
from ember.ops import array_ops, math_ops, nn_ops, random_ops
from ember.keras import activations, constraints, initializers, regularizers
from ember.keras.engine.base_layer import Layer
from ember.keras.engine.input_spec import InputSpec

__all__ = ["Dense", "Activation", "Dropout", "Flatten", "Reshape", "Lambda", "Embedding", "Masking", "Identity",
           "Add", "Subtract",
           "Multiply", "Average", "Maximum", "Minimum", "Concatenate", "add", "subtract", "multiply", "average",
           "maximum", "minimum", "concatenate"]


def _constraint_config(constraint):
    return constraints.serialize(constraint)


class Dense(Layer):
    """``activation(inputs @ kernel + bias)`` over the last axis; kernel (in, units), bias (units,)."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units) if not isinstance(units, int) else units
        if self.units <= 0:
            raise ValueError(f"Received an invalid value for `units`, expected a positive integer. Received: "
                             f"units={units}")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(min_ndim=2)
        self.supports_masking = True

    def build(self, input_shape):
        input_shape = TensorShape(input_shape)
        last_dim = input_shape[-1] if input_shape.rank else None
        if last_dim is None:
            raise ValueError("The last dimension of the inputs to a Dense layer should be defined. Found None. "
                             f"Full input shape received: {input_shape}")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last_dim})
        self.kernel = self.add_weight("kernel", shape=[last_dim, self.units], initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      dtype=self._dtype, trainable=True)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.units], initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                        dtype=self._dtype, trainable=True)
        else:
            self.bias = None
        self.built = True

    def call(self, inputs):
        if inputs.dtype != self._ember_compute_dtype:
            inputs = math_ops.cast(inputs, self._ember_compute_dtype)
        rank = inputs.shape.rank
        if rank == 2 or rank is None:
            outputs = math_ops.matmul(inputs, self.kernel)
        else:
            outputs = math_ops.tensordot(inputs, self.kernel, [[rank - 1], [0]])
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        input_shape = TensorShape(input_shape)
        if input_shape[-1] is None:
            raise ValueError(f"The last dimension of the input shape of a Dense layer should be defined. Found "
                             f"None. Received: input_shape={input_shape}")
        return TensorShape(input_shape.as_list()[:-1] + [self.units])

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units, "activation": activations.serialize(self.activation),
                       "use_bias": self.use_bias,
                       "kernel_initializer": initializers.serialize(self.kernel_initializer),
                       "bias_initializer": initializers.serialize(self.bias_initializer),
                       "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                       "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                       "activity_regularizer": regularizers.serialize(self._activity_regularizer),
                       "kernel_constraint": _constraint_config(self.kernel_constraint),
                       "bias_constraint": _constraint_config(self.bias_constraint)})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("kernel_initializer", "bias_initializer"):
            config[key] = initializers.get(config.get(key))
        for key in ("kernel_regularizer", "bias_regularizer", "activity_regularizer"):
            config[key] = regularizers.get(config.get(key))
        for key in ("kernel_constraint", "bias_constraint"):
            config[key] = constraints.get(config.get(key))
        return cls(**config)


class Activation(Layer):
    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config["activation"] = activations.serialize(self.activation)
        return config


class Dropout(Layer):
    """In training, zeroes each input with probability ``rate`` and scales the others by 1 / (1 - rate);
    at inference (the default, as in Keras 2) the identity. The batch dimension may be unknown."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(rate, (int, float)) and not 0 <= rate <= 1:
            raise ValueError(f"Invalid value {rate} received for `rate`, expected a value between 0 and 1.")
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed
        self.supports_masking = True

    def _noise_shape(self, inputs):
        if self.noise_shape is None:
            return array_ops.shape(inputs)
        dynamic = array_ops.shape(inputs)
        dims = [dynamic[i] if d is None else d for i, d in enumerate(self.noise_shape)]
        return array_ops.stack([convert_to_tensor(d, dtype=dtypes.int32) for d in dims])

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return array_ops.identity(inputs)
        if self.rate >= 1:
            return array_ops.zeros_like(inputs)
        noise = random_ops.uniform(self._noise_shape(inputs), dtype=inputs.dtype, seed=self.seed)
        keep = noise >= convert_to_tensor(self.rate, dtype=inputs.dtype)
        scale = convert_to_tensor(1.0 / (1.0 - self.rate), dtype=inputs.dtype)
        return inputs * scale * math_ops.cast(keep, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"rate": self.rate, "noise_shape": self.noise_shape, "seed": self.seed})
        return config


class Flatten(Layer):
    """(batch, d1, d2, ...) -> (batch, d1 * d2 * ...); a 1-D input becomes (batch, 1)."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format or "channels_last"
        if self.data_format not in ("channels_last", "channels_first"):
            raise ValueError(f"The `data_format` argument must be one of 'channels_first', 'channels_last'. "
                             f"Received: {data_format}")
        self.input_spec = InputSpec(min_ndim=1)
        self._channels_first = self.data_format == "channels_first"

    def call(self, inputs):
        rank = inputs.shape.rank
        if self._channels_first and rank is not None and rank > 2:
            inputs = array_ops.transpose(inputs, [0] + list(range(2, rank)) + [1])
        if rank == 1:
            return array_ops.expand_dims(inputs, 1)
        dims = inputs.shape.as_list()
        if all(d is not None for d in dims[1:]):
            return array_ops.reshape(inputs, [-1 if dims[0] is None else dims[0], int(np.prod(dims[1:]))])
        batch = array_ops.shape(inputs)[0]
        return array_ops.reshape(inputs, array_ops.stack([batch, convert_to_tensor(-1, dtype=dtypes.int32)]))

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if len(dims) == 1:
            return TensorShape([dims[0], 1])
        rest = None if any(d is None for d in dims[1:]) else int(np.prod(dims[1:]))
        return TensorShape([dims[0], rest])

    def get_config(self):
        config = super().get_config()
        config["data_format"] = self.data_format
        return config


class Reshape(Layer):
    """(batch, ...) -> (batch,) + target_shape; one entry of target_shape may be -1."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)

    def _resolve(self, input_dims):
        target = list(self.target_shape)
        unknown = [i for i, d in enumerate(target) if d == -1]
        if len(unknown) > 1:
            raise ValueError(f"There must be at most one unknown dimension in output_shape. Received: "
                             f"output_shape={self.target_shape}.")
        if any(d is None for d in input_dims):
            return target
        total = int(np.prod(input_dims)) if input_dims else 1
        known = int(np.prod([d for d in target if d != -1])) if target else 1
        if unknown:
            if known == 0 or total % known:
                raise ValueError(f"Layer {self.name}: total size of the new array must be unchanged, "
                                 f"input_shape = {list(input_dims)}, output_shape = {list(self.target_shape)}")
            target[unknown[0]] = total // known
        elif total != known:
            raise ValueError(f"Layer {self.name}: total size of the new array must be unchanged, "
                             f"input_shape = {list(input_dims)}, output_shape = {list(self.target_shape)}")
        return target

    def call(self, inputs):
        target = self._resolve(inputs.shape.as_list()[1:])
        batch = inputs.shape[0]
        if batch is not None:
            return array_ops.reshape(inputs, [batch] + target)
        return array_ops.reshape(inputs, [-1] + target)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        target = self._resolve(dims[1:])
        return TensorShape([dims[0]] + [None if d == -1 else d for d in target])

    def get_config(self):
        config = super().get_config()
        config["target_shape"] = self.target_shape
        return config


class Lambda(Layer):
    """Wraps ``function(inputs, **arguments)`` as a layer (no weights)."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function = function
        self.arguments = arguments or {}
        self._output_shape = output_shape
        self.mask = mask
        self.supports_masking = mask is not None

    def call(self, inputs, mask=None, training=None):
        import inspect

        kwargs = dict(self.arguments)
        params = inspect.signature(self.function).parameters
        if "mask" in params:
            kwargs["mask"] = mask
        if "training" in params:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs, mask=None):
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask

    def compute_output_shape(self, input_shape):
        if self._output_shape is None:
            return super().compute_output_shape(input_shape)
        if callable(self._output_shape):
            return TensorShape(self._output_shape(input_shape))
        input_shape = TensorShape(input_shape)
        return TensorShape([input_shape[0]] + list(self._output_shape))

    def get_config(self):
        config = super().get_config()
        name = getattr(self.function, "__name__", "")
        config.update({"function": name, "function_type": "lambda" if name == "<lambda>" else "function",
                       "module": getattr(self.function, "__module__", None), "output_shape": self._output_shape,
                       "output_shape_type": "raw", "output_shape_module": None, "arguments": self.arguments})
        return config

    @classmethod
    def from_config(cls, config):
        raise NotImplementedError("ember.keras: a Lambda layer's Python function cannot be restored from its config "
                                  "(Keras stores its bytecode; ember does not); rebuild the layer in code")


class TFOpLambda(Layer):
    """The layer that an ember op called on Keras symbolic tensors becomes (``tf.nn.relu(x)``, ``x + 1``,
    ``tf.concat([x, y], 1)``), named after the op's TensorFlow API name as Keras names it."""

    def __init__(self, function, api_name=None, **kwargs):
        from ember.keras.engine.base_layer import unique_object_name

        api_name = api_name or getattr(function, "_ember_api_name", None) or f"tf.{function.__name__}"
        kwargs.setdefault("name", unique_object_name(api_name))
        kwargs.pop("function", None)
        super().__init__(**kwargs)
        self.function = function
        self.symbol = api_name
        self._autocast = False
        # call(**kwargs) forwards to the op, which takes neither: Keras must not pass them
        self._expects_training_arg = self._expects_mask_arg = False

    _preserve_input_structure_in_config = True
    _ember_convert_inputs = False

    @property
    def _call_arg_names(self):
        """The op's parameters: a node's arguments after the first are recorded under these names."""
        import inspect

        from ember.util import dispatch

        try:
            params = inspect.signature(dispatch.unwrap(self.function)).parameters
        except (TypeError, ValueError):
            return []
        return [n for n, p in params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def __call__(self, *args, **kwargs):
        if not args and kwargs:  # tf.concat(values=[x, y], axis=1): the first parameter becomes positional
            names = self._call_arg_names
            if names and names[0] in kwargs:
                kwargs = dict(kwargs)
                args = (kwargs.pop(names[0]),)
        return super().__call__(*args, **kwargs)

    def call(self, inputs, *args, **kwargs):
        return self.function(inputs, *args, **kwargs)

    def get_config(self):
        config = super().get_config()
        config["function"] = self.symbol[len("tf."):]  # tf_keras writes "nn.relu", "__operators__.add"
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        symbol = config.pop("function")
        symbol = symbol if symbol.startswith("tf.") else "tf." + symbol
        return cls(_function_of_api_name(symbol), symbol, **config)


class SlicingOpLambda(TFOpLambda):
    """``x[...]`` on a Keras symbolic tensor (Keras' SlicingOpLambda)."""


# TensorFlow API names in a namespace ember does not have (ember.dtypes is the dtype module): where the
# function is.
_API_NAME_LOCATIONS = {"tf.dtypes.complex": "tf.complex"}


def _function_of_api_name(symbol):
    """The ember function of a TensorFlow API name ("tf.math.add", "tf.__operators__.add")."""
    import ember
    from ember.keras.engine import keras_tensor

    operator = keras_tensor.operator_function(symbol)
    if operator is not None:
        return operator
    parts = _API_NAME_LOCATIONS.get(symbol, symbol).split(".")
    if parts[:3] == ["tf", "compat", "v1"]:
        parts = ["tf"] + parts[3:]
    target = ember
    for part in parts[1:]:
        target = getattr(target, part, None)
    if target is None or len(parts) < 2 or not callable(target) or isinstance(target, type):
        raise ValueError(f"TFOpLambda: ember has no function {symbol!r}")
    return target


class Embedding(Layer):
    """Rows of ``embeddings`` (input_dim, output_dim) gathered by integer ids; with ``mask_zero`` the
    outputs carry a mask that is False where the id is 0."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", embeddings_regularizer=None,
                 activity_regularizer=None, embeddings_constraint=None, mask_zero=False, input_length=None,
                 sparse=False, **kwargs):
        if "input_shape" not in kwargs and "batch_input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,) if input_length is not None else (None,)
        if input_dim <= 0 or output_dim <= 0:
            raise ValueError(f"Both `input_dim` and `output_dim` should be positive, Received input_dim = "
                             f"{input_dim} and output_dim = {output_dim}")
        if sparse:
            raise NotImplementedError("ember.keras: Embedding(sparse=True) is not implemented")
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.input_dim, self.output_dim = input_dim, output_dim
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        self.mask_zero = mask_zero
        self.supports_masking = mask_zero
        self.input_length = input_length
        self.sparse = sparse
        self._autocast = False

    def build(self, input_shape=None):
        self.embeddings = self.add_weight("embeddings", shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)
        self.built = True

    def call(self, inputs):
        if inputs.dtype not in (dtypes.int32, dtypes.int64):
            inputs = math_ops.cast(inputs, dtypes.int32)
        return array_ops.gather(self.embeddings, inputs)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return math_ops.not_equal(inputs, convert_to_tensor(0, dtype=inputs.dtype))

    def compute_output_shape(self, input_shape):
        return TensorShape(TensorShape(input_shape).as_list() + [self.output_dim])

    def get_config(self):
        config = super().get_config()
        config.update({"input_dim": self.input_dim, "output_dim": self.output_dim,
                       "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                       "embeddings_regularizer": regularizers.serialize(self.embeddings_regularizer),
                       "activity_regularizer": regularizers.serialize(self._activity_regularizer),
                       "embeddings_constraint": _constraint_config(self.embeddings_constraint),
                       "mask_zero": self.mask_zero, "input_length": self.input_length})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["embeddings_initializer"] = initializers.get(config.get("embeddings_initializer"))
        config["embeddings_regularizer"] = regularizers.get(config.get("embeddings_regularizer"))
        config["activity_regularizer"] = regularizers.get(config.get("activity_regularizer"))
        config["embeddings_constraint"] = constraints.get(config.get("embeddings_constraint"))
        return cls(**config)


# ---- merge layers
class _Merge(Layer):
    """Elementwise merge of a list of at least two tensors (broadcasting as the op does)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def build(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or isinstance(input_shape, TensorShape) or \
                (input_shape and not isinstance(input_shape[0], (TensorShape, list, tuple))):
            raise ValueError("A merge layer should be called on a list of inputs. Received: "
                             f"input_shape={input_shape} (not a list of shapes)")
        if len(input_shape) < 2:
            raise ValueError(f"A merge layer should be called on a list of at least 2 inputs. Got "
                             f"{len(input_shape)} inputs. Full input_shape received: {input_shape}")
        self._check_shapes([TensorShape(s) for s in input_shape])
        self.built = True

    def _check_shapes(self, shapes):
        ranks = {s.rank for s in shapes}
        if len(ranks) == 1 and None not in ranks:
            for axis in range(1, shapes[0].rank):
                dims = {s[axis] for s in shapes if s[axis] not in (None, 1)}
                if len(dims) > 1:
                    raise ValueError(f"Inputs have incompatible shapes. Received shapes "
                                     f"{tuple(tuple(s.as_list()) for s in shapes)}")

    def _merge(self, inputs):
        raise NotImplementedError

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"A merge layer should be called on a list of inputs. Received: inputs={inputs} "
                             "(not a list of tensors)")
        return self._merge(list(inputs))

    def compute_mask(self, inputs, mask=None):
        if mask is None or all(m is None for m in mask):
            return None
        masks = [array_ops.expand_dims(m, 0) for m in mask if m is not None]
        return math_ops.reduce_all(array_ops.concat(masks, axis=0), axis=0)


class Add(_Merge):
    def _merge(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return out


class Subtract(_Merge):
    def build(self, input_shape):
        super().build(input_shape)
        if len(input_shape) != 2:
            raise ValueError(f"A `Subtract` layer should be called on exactly 2 inputs. Received: "
                             f"input_shape={input_shape}")

    def _merge(self, inputs):
        if len(inputs) != 2:
            raise ValueError(f"A `Subtract` layer should be called on exactly 2 inputs. Received: inputs={inputs}")
        return inputs[0] - inputs[1]


class Multiply(_Merge):
    def _merge(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = out * x
        return out


class Average(_Merge):
    def _merge(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return out / convert_to_tensor(float(len(inputs)), dtype=out.dtype)


class Maximum(_Merge):
    def _merge(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = math_ops.maximum(out, x)
        return out


class Minimum(_Merge):
    def _merge(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = math_ops.minimum(out, x)
        return out


class Concatenate(_Merge):
    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def _check_shapes(self, shapes):
        if any(s.rank is None for s in shapes):
            return
        ranks = {s.rank for s in shapes}
        if len(ranks) != 1:
            raise ValueError(f"A `Concatenate` layer requires inputs with matching shapes except for the concatenation "
                             f"axis. Received: input_shape={[tuple(s.as_list()) for s in shapes]}")
        rank = ranks.pop()
        axis = self.axis % rank
        for i in range(rank):
            if i == axis:
                continue
            dims = {s[i] for s in shapes if s[i] is not None}
            if len(dims) > 1:
                raise ValueError(f"A `Concatenate` layer requires inputs with matching shapes except for the "
                                 f"concatenation axis. Received: input_shape={[tuple(s.as_list()) for s in shapes]}")

    def _merge(self, inputs):
        return array_ops.concat(inputs, axis=self.axis)

    def compute_mask(self, inputs, mask=None):
        if mask is None or all(m is None for m in mask):
            return None
        full = []
        for x, m in zip(inputs, mask):
            if m is None:
                m = array_ops.ones_like(x, dtype=dtypes.bool)
                m = math_ops.reduce_all(m, axis=-1) if m.shape.rank > (mask[0].shape.rank if mask[0] is not None
                                                                       else 0) else m
            full.append(m)
        if self.axis in (-1, len(inputs[0].shape) - 1):
            return math_ops.reduce_all(array_ops.stack(full, axis=0), axis=0)
        return array_ops.concat(full, axis=self.axis)

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config


def _functional(cls):
    def merge(inputs, **kwargs):
        return cls(**kwargs)(inputs)

    merge.__name__ = cls.__name__.lower()
    merge.__doc__ = f"``{cls.__name__}(**kwargs)(inputs)``."
    return merge


add, subtract, multiply, average = _functional(Add), _functional(Subtract), _functional(Multiply), \
    _functional(Average)
maximum, minimum = _functional(Maximum), _functional(Minimum)


def concatenate(inputs, axis=-1, **kwargs):
    return Concatenate(axis=axis, **kwargs)(inputs)


del math


class Masking(Layer):
    """Marks the time steps whose features all equal ``mask_value`` as masked (their outputs zeroed), for
    the layers downstream that support masking."""

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.mask_value = mask_value

    def compute_mask(self, inputs, mask=None):
        value = convert_to_tensor(self.mask_value, dtype=inputs.dtype)
        return math_ops.reduce_any(math_ops.not_equal(inputs, value), axis=-1)

    def call(self, inputs):
        keep = self.compute_mask(inputs)
        return inputs * math_ops.cast(array_ops.expand_dims(keep, -1), inputs.dtype)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}


class Identity(Layer):
    """Returns its input unchanged (a placeholder in a model)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs):
        return array_ops.identity(inputs) if not isinstance(inputs, (list, tuple, dict)) else inputs

    def compute_output_shape(self, input_shape):
        return input_shape

