"""``tf.keras.layers.Layer`` with Keras 2's semantics (tf_keras): a layer is an ``ember.Module``.

A layer makes its weights in ``build(input_shape)`` with ``add_weight``, and computes in
``call(inputs, ...)``. ``__call__`` does the rest, in this order: converts NumPy inputs to tensors, checks
them against ``input_spec`` (an ``IncompatibleInputError`` names the layer, the expectation and the
shape), builds the layer on the first call (inside its name scope, so weights are named
"dense/kernel:0"), fills in ``training`` (the caller's value, else the enclosing layer call's, else the
default of ``call``'s signature) and ``mask`` (the inputs' ``_keras_mask``), casts floating inputs to the
layer's dtype, runs ``call``, adds the activity regularizer's loss and sets the outputs' masks.
Called on symbolic ``KerasTensor``s (the functional API) it instead records a Node and returns new
KerasTensors, whose shapes come from tracing ``call`` once in a scratch ember.function.

Weights are found as Keras finds them: those made by ``add_weight`` or assigned as attributes, then those
of nested layers (attributes, also inside lists and dicts) in the order they were set; a non-trainable
layer reports all of them as non-trainable. ``trainable_variables`` is ``trainable_weights``, so
``GradientTape.gradient(loss, model.trainable_variables)`` works as in TensorFlow.

Checkpoints (ember/trackable.py) see a layer's weights under the names given to ``add_weight`` and its
other attributes under their names, as tf_keras' do. Internal state is kept in attributes whose names begin
with ``_ember``, which neither Module's variable search nor checkpoints look at.
"""

import collections
import functools
import inspect
import re
import threading

import numpy as np

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_shape import TensorShape
from ember.module import Module
from ember.name_scope import name_scope
from ember.ops import math_ops, array_ops
from ember.util import nest
from ember.variables import Variable
from ember.keras import activations, initializers, regularizers  # noqa: F401 - re-exported helpers
from ember.keras.engine import input_spec as input_spec_lib
from ember.keras.engine.keras_tensor import KerasTensor, get_mask, set_mask
from ember.keras.mixed_precision import autocast_variable
from ember.keras.mixed_precision import policy as policy_lib

# ---- unique layer names ("dense", "dense_1", ...), reset by ember.keras.backend.clear_session()
_name_counts = collections.Counter()


def unique_object_name(base):
    count = _name_counts[base]
    _name_counts[base] += 1
    return base if count == 0 else f"{base}_{count}"


def reset_names():
    _name_counts.clear()


# ---- the stack of layer calls in progress: nested layers inherit `training` from it
_local = threading.local()


def _call_stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def call_context_training():
    """The `training` value of the innermost enclosing layer call that has one (None outside calls)."""
    for _, training in reversed(_call_stack()):
        if training is not None:
            return training
    return None


_learning_phase = [None]

# How many layers hold losses of a call (add_loss of a tensor): while none do, an outermost call has no
# losses to clear and skips walking its nested layers.
_layers_holding_losses = [0]  # ember.keras.backend.set_learning_phase (deprecated in Keras too)


def _keras_snake_case(name):
    """A layer's default name from its class name, by Keras' rule rather than tf.Module's: a capitalized word
    (an upper-case letter and lower-case ones) after anything starts with "_", as does an upper-case letter
    after a lower-case one; digits split nothing, so Conv2D is "conv2d" (tf.Module: "conv2_d"), and a
    private class gets "private" in front."""
    name = re.sub(r"(?<=.)([A-Z][a-z]+)", r"_\1", name)
    name = re.sub(r"(?<=[a-z])([A-Z])", r"_\1", name).lower()
    return "private" + name if name.startswith("_") else name


_ALLOWED_KWARGS = {"input_dim", "input_shape", "batch_input_shape", "batch_size", "weights",
                   "activity_regularizer", "autocast", "implementation", "dynamic"}


def _to_tensor(x):
    if isinstance(x, (np.ndarray, np.generic, float, int)) and not isinstance(x, bool):
        return convert_to_tensor(x)
    return x


def _shape_of(x):
    return TensorShape(x.shape) if hasattr(x, "shape") else TensorShape(None)


class TrackableWeightHandler:
    """A weight that is not a variable (tf_keras' ``TrackableWeightHandler``): state a layer lists in its
    ``weights`` so that ``get_weights``/``set_weights`` carry it, as ``num_tensors`` arrays. tf_keras' lookup
    layers list their adapted vocabulary so. It is not trainable, counts for no parameters, is not one of
    ``variables`` and cannot go to HDF5 (tf_keras' NotImplementedError)."""

    trainable = False
    num_tensors = 1

    def get_tensors(self):
        raise NotImplementedError

    def set_weights(self, weights):
        raise NotImplementedError


def _variables_only(weights):
    return [w for w in weights if not isinstance(w, TrackableWeightHandler)]


class Layer(Module):
    """The base class of Keras layers (see the module docstring)."""

    # A config keeps the structure of the first argument even when it is a single tensor (TFOpLambda).
    _preserve_input_structure_in_config = False
    # NumPy and Python numbers given as inputs become tensors before `call` (not for TFOpLambda: the op
    # converts its constants itself, with the other operand's dtype).
    _ember_convert_inputs = True

    def __init__(self, trainable=True, name=None, dtype=None, dynamic=False, **kwargs):
        unknown = set(kwargs) - _ALLOWED_KWARGS
        if unknown:
            raise TypeError(f"Keyword argument not understood: {sorted(unknown)[0]!r}")
        if name is None:
            name = unique_object_name(_keras_snake_case(type(self).__name__))
        elif not isinstance(name, str):
            raise TypeError(f"Layer name must be a string, got {name!r}")
        self._ember_weights = []  # [(name, variable)] in creation order, made by add_weight or assigned
        self._ember_losses = []  # tensors added during the current call
        self._ember_callable_losses = []  # regularizers: evaluated whenever `losses` is read
        self._ember_added_metrics = []  # Means made by add_metric (not weights, not checkpointed)
        self._ember_inbound_nodes = []
        self._ember_outbound_nodes = []
        self._ember_initial_weights = kwargs.get("weights")
        Module.__init__(self, None)
        self._name = name  # Keras allows names Module's check would refuse (spaces, for one)
        self._trainable = bool(trainable)
        self.built = False
        self.input_spec = None
        self.supports_masking = False
        self._dynamic = dynamic
        self._autocast = kwargs.get("autocast", True)
        self._set_dtype(dtype)
        self._activity_regularizer = regularizers.get(kwargs.get("activity_regularizer"))
        self._expects_training_arg, self._expects_mask_arg, self._default_training = self._inspect_call()
        batch_input_shape = kwargs.get("batch_input_shape")
        if batch_input_shape is None and ("input_shape" in kwargs or "input_dim" in kwargs):
            shape = kwargs.get("input_shape")
            if shape is None:
                shape = (kwargs["input_dim"],)
            batch_input_shape = (kwargs.get("batch_size"),) + tuple(shape)
        self._batch_input_shape = tuple(batch_input_shape) if batch_input_shape is not None else None

    # ---- dtype
    def _set_dtype(self, dtype):
        """The layer's dtype policy (docs/keras.md, "Mixed precision"): ``_dtype`` is its variables' dtype,
        ``_ember_compute_dtype`` the one it computes in (float16 under "mixed_float16")."""
        policy = policy_lib.get(dtype)
        if policy.variable_dtype is None:  # "_infer": the dtype of the first input, float32 here
            policy = policy_lib.Policy("float32")
        self._ember_policy = policy
        self._dtype = dtypes.as_dtype(policy.variable_dtype)
        self._ember_compute_dtype = dtypes.as_dtype(policy.compute_dtype)

    @property
    def dtype(self):
        """The dtype of the layer's weights, as a string ("float32"), as Keras 2 reports it."""
        return self._dtype.name

    @property
    def compute_dtype(self):
        return self._ember_compute_dtype.name

    _compute_dtype = compute_dtype

    @property
    def variable_dtype(self):
        return self._dtype.name

    @property
    def dtype_policy(self):
        return self._ember_policy

    # ---- call signature
    def _inspect_call(self):
        call = self.call
        # An ember.function-decorated call: read the Python function's signature (the wrapper's
        # __wrapped__ chain is not one inspect can follow).
        call = getattr(call, "_python_function", call)
        try:
            params = inspect.signature(call).parameters
        except (TypeError, ValueError, RecursionError):
            return False, False, None
        var_kw = any(p.kind == p.VAR_KEYWORD for p in params.values())
        positional = [n for n, p in params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if positional and positional[0] == "self":  # the unbound function of a decorated method
            positional = positional[1:]
        # Where `training` and `mask` sit among the arguments after the inputs (None: keyword only).
        self._ember_positions = {n: positional.index(n) for n in ("training", "mask") if n in positional[1:]}
        training = params.get("training")
        default = training.default if training is not None and training.default is not inspect.Parameter.empty \
            else None
        return ("training" in params or var_kw), "mask" in params, default

    @property
    def _call_arg_names(self):
        params = inspect.signature(getattr(self.call, "_python_function", self.call)).parameters
        return [n for n, p in params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    # ---- naming
    @property
    def name(self):
        return self._name

    @property
    def dynamic(self):
        return self._dynamic

    # ---- weights
    def add_weight(self, name=None, shape=None, dtype=None, initializer=None, regularizer=None, trainable=None,
                   constraint=None, use_resource=None, synchronization=None, aggregation=None, **kwargs):
        """Makes a Variable owned by this layer, initialized by ``initializer(shape, dtype)``; a
        ``regularizer`` adds ``regularizer(variable)`` to ``losses`` each time they are read."""
        unknown = set(kwargs) - {"getter", "collections", "experimental_autocast", "caching_device",
                                 "partitioner", "experimental_enable_variable_lifting"}
        if unknown:
            raise TypeError(f"Unknown keyword argument: {sorted(unknown)[0]}")
        shape = () if shape is None else tuple(TensorShape(shape).as_list())
        if any(d is None for d in shape):
            raise ValueError(f"Layer {self.name}: add_weight '{name}' needs a fully known shape, got {shape}")
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self._dtype
        if initializer is None:
            if dtype.is_floating:
                initializer = initializers.GlorotUniform()
            elif dtype.is_integer or dtype.is_unsigned or dtype == dtypes.bool:
                initializer = initializers.Zeros()
            else:
                raise ValueError(f"An initializer for variable {name} of type {dtype.name} is required for "
                                 f"layer {self.name}. Received: {initializer}.")
        else:
            initializer = initializers.get(initializer)
        if trainable is None:
            trainable = True
        if synchronization is not None and "ON_READ" in str(synchronization) and trainable:
            raise ValueError("Synchronization value can be set to VariableSynchronization.ON_READ only for "
                             "non-trainable variables. You have specified trainable=True and "
                             "synchronization=VariableSynchronization.ON_READ.")
        name = name or "Variable"
        init = functools.partial(initializer, shape, dtype=dtype)
        variable = Variable(lambda: init(), trainable=trainable, name=name, dtype=dtype,
                            synchronization=synchronization, aggregation=aggregation)
        if self._ember_policy.is_mixed and kwargs.get("experimental_autocast", True):
            autocast_variable.make_autocast(variable)  # Note [Autocast variables]
        from ember.keras import constraints

        variable.constraint = constraints.get(constraint)
        self._ember_weights.append((name, variable))
        regularizer = regularizers.get(regularizer)
        if regularizer is not None:
            self._ember_callable_losses.append(functools.partial(_regularization_loss, regularizer, variable))
        return variable

    def __setattr__(self, name, value):
        # A Variable assigned to a layer attribute is one of the layer's weights (Keras tracks it so).
        if not name.startswith("_ember") and "_ember_weights" in self.__dict__:
            for leaf in _leaves(value):
                if isinstance(leaf, Variable) and all(leaf is not v for _, v in self._ember_weights):
                    self._ember_weights.append((name, leaf))
        super().__setattr__(name, value)

    def _own_variables(self):
        """This layer's own weights: from add_weight and attributes, then those of plain Modules it holds."""
        out = [v for _, v in self._ember_weights]
        for leaf in self._attribute_leaves():
            if isinstance(leaf, Module) and not isinstance(leaf, Layer):
                out.extend(leaf.variables)
        return _dedupe(out)

    def _attribute_leaves(self):
        for key, value in vars(self).items():
            if key.startswith("_ember"):
                continue
            yield from _leaves(value)

    def _sublayers(self):
        """The layers directly inside this one (attributes, lists, dicts), in the order they were set."""
        return _dedupe([v for v in self._attribute_leaves() if isinstance(v, Layer) and v is not self])

    def _flatten_layers(self, include_self=True, recursive=True):
        seen, out = set(), []
        queue = [self] if include_self else list(self._sublayers())
        while queue:
            layer = queue.pop(0)
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            out.append(layer)
            if recursive:
                queue.extend(layer._sublayers())
        return out

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        for layer in self._flatten_layers():
            layer._trainable = bool(value)

    @property
    def trainable_weights(self):
        if not self._trainable:
            return []
        out = [v for v in self._own_variables() if v.trainable]
        for layer in self._sublayers():
            out.extend(layer.trainable_weights)
        return _dedupe(out)

    @property
    def non_trainable_weights(self):
        if self._trainable:
            out = [v for v in self._own_variables() if not v.trainable]
            for layer in self._sublayers():
                out.extend(layer.non_trainable_weights)
        else:
            out = list(self._own_variables())
            for layer in self._sublayers():
                out.extend(layer.weights)
        return _dedupe(out)

    @property
    def weights(self):
        return _dedupe(self.trainable_weights + self.non_trainable_weights)

    @property
    def variables(self):
        return _variables_only(self.weights)

    @property
    def trainable_variables(self):
        return self.trainable_weights

    @property
    def non_trainable_variables(self):
        return _variables_only(self.non_trainable_weights)

    @property
    def _trainable_weights(self):
        return [v for v in self._own_variables() if v.trainable]

    @property
    def _non_trainable_weights(self):
        return [v for v in self._own_variables() if not v.trainable]

    def get_weights(self):
        """The weights' values as NumPy arrays, in the order of ``weights`` (a weight handler gives its
        ``num_tensors`` arrays in its place)."""
        out = []
        for weight in self.weights:
            if isinstance(weight, TrackableWeightHandler):
                out.extend(np.asarray(t.numpy()) for t in weight.get_tensors())
            else:
                out.append(weight.numpy())
        return out

    def set_weights(self, weights):
        """Assigns NumPy arrays to ``weights`` in order; each must fit its weight's shape, which may leave a
        dimension unknown (a lookup layer's idf weights, of shape (None,))."""
        params = self.weights
        expected = sum(p.num_tensors if isinstance(p, TrackableWeightHandler) else 1 for p in params)
        if expected != len(weights):
            raise ValueError(f'Layer {self.name} weight shape mismatch: you called `set_weights(weights)` on layer '
                             f'"{self.name}" with a weight list of length {len(weights)}, but the layer was '
                             f"expecting {expected} weights. Provided weights: {_short(weights)}...")
        position = 0
        for param in params:
            if isinstance(param, TrackableWeightHandler):
                param.set_weights(list(weights[position:position + param.num_tensors]))
                position += param.num_tensors
                continue
            value = np.asarray(weights[position])
            position += 1
            if not param.shape.is_compatible_with(value.shape):
                raise ValueError(f"Layer {self.name} weight shape {param.shape} is not "
                                 f"compatible with provided weight shape {value.shape}.")
            param.assign(value.astype(param.dtype.as_numpy_dtype))

    def count_params(self):
        if not self.built:
            if type(self).build is Layer.build and not self.weights:
                self.built = True  # a layer without weights needs no build to count them
            else:
                raise ValueError(f"You tried to call `count_params` on layer {self.name}, but the layer isn't "
                                 f"built. You can build it manually via: `{self.name}.build(batch_input_shape)`.")
        from ember.keras.utils import layer_utils

        return layer_utils.count_params(self.weights)

    # ---- checkpoint dependencies
    def _trackable_children(self):
        children, names = [], set()
        for name, variable in self._ember_weights:
            if name not in names:
                children.append((name, variable))
                names.add(name)
        for name, value in Module._trackable_children(self):
            if name not in names and not _is_plain_empty(value):
                children.append((name, value))
                names.add(name)
        return children

    # ---- losses
    def add_loss(self, losses, inputs=None):
        """A tensor (or list) is a loss of the current call; a zero-argument callable is evaluated each
        time ``losses`` is read (regularizers of weights)."""
        for loss in nest.flatten(losses):
            if loss is None:
                continue
            if callable(loss):
                self._ember_callable_losses.append(loss)
            elif isinstance(loss, KerasTensor):
                raise NotImplementedError(f"Layer {self.name}: add_loss of a symbolic (functional API) tensor is "
                                          "not implemented in ember.keras; add it inside a layer's call")
            else:
                loss = convert_to_tensor(loss)
                if not loss.dtype.is_floating:
                    loss = math_ops.cast(loss, dtypes.float32)
                if not self._ember_losses:
                    _layers_holding_losses[0] += 1
                self._ember_losses.append(loss)

    @property
    def losses(self):
        """Losses of the last call (add_loss, activity regularizers), then the weight regularizers', for this
        layer and every nested one."""
        out = []
        for layer in self._flatten_layers():
            out.extend(layer._ember_losses)
            for fn in layer._ember_callable_losses:
                value = fn()
                if value is not None:
                    out.append(convert_to_tensor(value))
        return out

    def _clear_losses(self):
        if not _layers_holding_losses[0]:
            return
        for layer in self._flatten_layers():
            if layer._ember_losses:
                _layers_holding_losses[0] -= 1
                layer._ember_losses = []

    def add_metric(self, value, name=None, aggregation=None, **kwargs):
        """Inside ``call``: the mean of ``value`` over the calls, a ``Mean`` metric named ``name`` listed in
        ``metrics`` (so in fit/evaluate's logs, reset with the other metrics), as tf_keras does."""
        if kwargs:
            raise TypeError(f"Unknown keyword arguments: {kwargs.keys()}. Expected `aggregation`.")
        if aggregation not in (None, "mean"):
            raise ValueError(f"We currently support only `mean` sample-wise metric aggregation. You provided "
                             f"aggregation=`{aggregation}`")
        if name is None:
            raise ValueError("Please provide a name for your metric like `self.add_metric(tf.reduce_sum(inputs), "
                             "name='mean_activation')`")
        if isinstance(value, KerasTensor):
            raise NotImplementedError(f"Layer {self.name}: add_metric of a symbolic (functional API) tensor is not "
                                      "implemented in ember.keras; call add_metric inside a layer's call")
        if not _call_stack():
            raise ValueError(f"Expected a symbolic Tensor for the metric value, received: {value}")
        metric = next((m for m in self._ember_added_metrics if m.name == name), None)
        if metric is None:
            from ember.keras.metrics import Mean

            dtype = getattr(value, "dtype", None)
            metric = Mean(name=name, dtype=dtype if dtype is not None and dtypes.as_dtype(dtype).is_floating
                          else None)
            self._ember_added_metrics.append(metric)
        metric.update_state(value)

    @property
    def metrics(self):
        """The metrics added by add_metric in this layer and the layers inside it."""
        return [m for layer in self._flatten_layers() for m in layer.__dict__.get("_ember_added_metrics", ())]

    def add_update(self, updates):
        """Keras 2 applies updates at once in eager code; so does ember (a callable is called)."""
        for update in nest.flatten(updates):
            if callable(update):
                update()

    # ---- build and call
    def build(self, input_shape):
        self._build_input_shape = input_shape
        self.built = True

    build._ember_default = True

    def call(self, inputs, *args, **kwargs):
        return inputs

    def _maybe_build(self, inputs):
        if self.built:
            return
        shapes = nest.map_structure(_shape_of, inputs)
        if not nest.is_nested(inputs):
            shapes = _shape_of(inputs)
        # A default build (Layer's, Model's) is not run from __call__: the weights come from running call,
        # as in Keras 2, where such a build is marked `_is_default`.
        if not getattr(type(self).build, "_ember_default", False):
            with name_scope(self._name):
                self.build(shapes)
        if not hasattr(self, "_build_input_shape"):
            self._build_input_shape = shapes
        self.built = True
        if self._ember_initial_weights is not None:
            self.set_weights(self._ember_initial_weights)
            self._ember_initial_weights = None

    def __call__(self, *args, **kwargs):
        if not args:
            if "inputs" not in kwargs:
                raise TypeError(f"Layer {self.name}.__call__ needs its inputs as the first argument")
            args = (kwargs.pop("inputs"),)
        inputs, rest = args[0], args[1:]
        simple = isinstance(inputs, Tensor) and not rest and not any(isinstance(v, KerasTensor)
                                                                     for v in kwargs.values())
        if not simple and any(isinstance(x, KerasTensor) for x in nest.flatten((inputs, rest, kwargs))):
            from ember.keras.engine import node as node_lib

            return node_lib.call_symbolic(self, inputs, rest, kwargs)
        if not isinstance(inputs, Tensor) and self._ember_convert_inputs:
            inputs = nest.map_structure(_to_tensor, inputs)
        input_spec_lib.assert_input_compatibility(self.input_spec, inputs, self.name)
        kwargs, training = self._fill_training(kwargs, rest)
        previous_mask = self._input_masks(inputs)
        mask_position = self.__dict__.get("_ember_positions", {}).get("mask")
        mask_given = mask_position is not None and len(rest) >= mask_position
        if self._expects_mask_arg and not mask_given and kwargs.get("mask") is None and previous_mask is not None:
            kwargs["mask"] = previous_mask
        stack = _call_stack()
        if not stack:
            self._clear_losses()
        stack.append((self, training))
        try:
            self._maybe_build(inputs)
            if self._autocast:
                inputs = self._autocast_inputs(inputs)
            call = self.call
            if _C.in_trace():
                # As Keras converts `call` with AutoGraph in a graph: Python `if`/`while` on tensors in a
                # user's call (ember's own layers are left as they are) become cond/while_loop.
                from ember.autograph import api as autograph_api

                call = autograph_api.converted(call, recursive_only=True)
            if self._ember_policy.is_mixed or autocast_variable.autocast_dtype() is not None:
                # Note [Autocast variables]: this layer's (and its sublayers') variables read as its compute dtype.
                with name_scope(self._name), autocast_variable.enable_auto_cast_variables(self._ember_compute_dtype):
                    outputs = call(inputs, *rest, **kwargs)
            else:
                with name_scope(self._name):
                    outputs = call(inputs, *rest, **kwargs)
            self._apply_activity_regularizer(outputs)
            self._set_output_masks(inputs, outputs, previous_mask)
        finally:
            stack.pop()
        return outputs

    def _fill_training(self, kwargs, rest=()):
        """(kwargs with `training` filled in, the value): the caller's, else the enclosing call's, else the
        learning phase, else the default of `call`'s signature."""
        position = self.__dict__.get("_ember_positions", {}).get("training")
        if position is not None and len(rest) >= position:  # given positionally: layer(x, True)
            return kwargs, rest[position - 1]
        training = kwargs.get("training")
        if training is None:
            training = call_context_training()
            if training is None:
                training = _learning_phase[0]
            if training is None:
                training = self._default_training
            if self._expects_training_arg and training is not None:
                kwargs = dict(kwargs, training=training)
        elif not self._expects_training_arg:
            kwargs = {k: v for k, v in kwargs.items() if k != "training"}
        if isinstance(training, Tensor) and not training._is_symbolic:
            training = bool(training.numpy())
            kwargs = dict(kwargs, training=training)
        return kwargs, training

    def _input_masks(self, inputs):
        if isinstance(inputs, Tensor):
            return get_mask(inputs)
        masks = [get_mask(x) for x in nest.flatten(inputs)]
        if all(m is None for m in masks):
            return None
        return nest.pack_sequence_as(inputs, masks) if nest.is_nested(inputs) else masks[0]

    def _autocast_inputs(self, inputs):
        target = self._ember_compute_dtype
        if not target.is_floating:
            return inputs
        if isinstance(inputs, Tensor) and (inputs.dtype == target or not inputs.dtype.is_floating):
            return inputs

        def cast(x):
            if isinstance(x, Tensor) and x.dtype.is_floating and x.dtype != target:
                mask = get_mask(x)
                y = math_ops.cast(x, target)
                if mask is not None:
                    set_mask(y, mask)
                return y
            return x

        return nest.map_structure(cast, inputs)

    def _apply_activity_regularizer(self, outputs):
        if self._activity_regularizer is None:
            return
        for output in nest.flatten(outputs):
            loss = self._activity_regularizer(output)
            batch = math_ops.cast(array_ops.shape(output)[0], loss.dtype)
            self.add_loss(loss / batch)

    def _set_output_masks(self, inputs, outputs, previous_mask):
        flat = nest.flatten(outputs)
        if all(get_mask(x) is not None for x in flat if isinstance(x, Tensor)) and flat:
            return
        if not self.supports_masking and type(self).compute_mask is Layer.compute_mask:
            return
        masks = self.compute_mask(inputs, previous_mask)
        if masks is None:
            return
        flat_masks = nest.flatten(masks)
        for tensor, mask in zip(flat, flat_masks):
            if isinstance(tensor, Tensor):
                set_mask(tensor, mask)

    def compute_mask(self, inputs, mask=None):
        if not self.supports_masking:
            if any(m is not None for m in nest.flatten(mask)):
                raise TypeError(f"Layer {self.name} does not support masking, but was passed an input_mask: {mask}")
            return None
        return mask

    # ---- shapes
    def compute_output_shape(self, input_shape):
        """Found by tracing ``call`` on placeholders of ``input_shape`` (Keras 2 does the same)."""
        from ember.keras.engine import node as node_lib

        return node_lib.traced_output_shape(self, input_shape)

    def compute_output_signature(self, input_signature):
        from ember.framework.tensor_spec import TensorSpec

        shapes = self.compute_output_shape(nest.map_structure(lambda s: s.shape, input_signature))
        dtype = nest.flatten(input_signature)[0].dtype if self._dtype is None else self._dtype
        return nest.map_structure(lambda s: TensorSpec(s, dtype), shapes)

    # ---- the functional API's view of a layer
    @property
    def _inbound_nodes(self):
        return self._ember_inbound_nodes

    @property
    def _outbound_nodes(self):
        return self._ember_outbound_nodes

    def _node_attribute(self, attr, what):
        if not self._ember_inbound_nodes:
            raise AttributeError(f"The layer {self.name} has never been called and thus has no defined {what}.")
        if len(self._ember_inbound_nodes) > 1:
            raise AttributeError(f'The layer "{self.name}" has multiple inbound nodes, with different {what}s. '
                                 f"Use `get_{what.replace(' ', '_')}_at(node_index)` instead.")
        return getattr(self._ember_inbound_nodes[0], attr)

    @property
    def input(self):
        return self._node_attribute("input_tensors", "input")

    @property
    def output(self):
        return self._node_attribute("output_tensors", "output")

    @property
    def input_shape(self):
        shapes = nest.map_structure(lambda t: tuple(t.shape.as_list()),
                                    self._node_attribute("input_tensors", "input shape"))
        return shapes

    @property
    def output_shape(self):
        if not self._ember_inbound_nodes:
            raise AttributeError(f"The layer {self.name} has never been called and thus has no defined output shape.")
        shapes = [nest.map_structure(lambda t: tuple(t.shape.as_list()), node.output_tensors)
                  for node in self._ember_inbound_nodes]
        if any(s != shapes[0] for s in shapes[1:]):
            raise AttributeError(f'The layer "{self.name}" has multiple inbound nodes, with different output shapes. '
                                 "Hence the notion of \"output shape\" is ill-defined for the layer. Use "
                                 "`get_output_shape_at(node_index)` instead.")
        return shapes[0]

    def get_input_at(self, node_index):
        return self._ember_inbound_nodes[node_index].input_tensors

    def get_output_at(self, node_index):
        return self._ember_inbound_nodes[node_index].output_tensors

    # ---- configuration
    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable, "dtype": policy_lib.serialize(self._ember_policy)}
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = self._batch_input_shape
        init = type(self).__init__
        if init is not Layer.__init__ and type(self).get_config is Layer.get_config:
            extra = [n for n in inspect.signature(init).parameters
                     if n not in ("self", "trainable", "name", "dtype", "dynamic", "args", "kwargs")]
            if extra:
                raise NotImplementedError(f"Layer {type(self).__name__} has arguments {extra} in `__init__()` and "
                                          "therefore must override `get_config()`.")
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__module__}.{type(self).__name__} object at {hex(id(self))}>"


def _regularization_loss(regularizer, variable):
    return regularizer(variable)


def _leaves(value):
    """Values inside dicts, lists and tuples; a dict's in the order of its sorted keys, as tf_keras' tracked
    dicts list their layers and weights (insertion order where the keys do not sort)."""
    if isinstance(value, dict):
        try:
            keys = sorted(value)
        except TypeError:
            keys = list(value)
        for k in keys:
            yield from _leaves(value[k])
    elif isinstance(value, (list, tuple)) and not isinstance(value, Tensor):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _is_plain_empty(value):
    """A list/tuple/dict holding nothing a checkpoint saves (shapes, names): not a checkpoint child."""
    from ember.trackable import Trackable, is_variable

    return isinstance(value, (list, tuple, dict)) and not any(
        is_variable(v) or isinstance(v, Trackable) for v in _leaves(value))


def _dedupe(values):
    seen, out = set(), []
    for v in values:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def _short(weights):
    text = str(weights)
    return text[:50]
