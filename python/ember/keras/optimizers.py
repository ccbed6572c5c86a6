"""``ember.keras.optimizers``: Keras 3's optimizers as ``tf.keras.optimizers`` has them (TF 2.16+).

``optimizer.apply_gradients(zip(grads, variables))`` updates each variable in place with its own
assign ops, so a step runs the same eagerly and inside ember.function. The optimizer's variables (its
``iterations`` counter, its learning rate, and one or more slots per model variable, such as Adam's
moments) are ember.Variables. Slots are made on the first apply, for every variable passed, gradient or
not, as Keras does; made with a callable initial value, they are created eagerly even when that apply is
traced, and they count as the function's variables (so ember.function traces once more, and a later trace
that would create them is an error, as tf.function's is).

The update formulas are Keras 3's, op for op (keras/src/optimizers/sgd.py, adam.py), so float32 results
agree with TensorFlow's to rounding. A subclass, as in Keras, overrides ``build(var_list)`` (to add slots
with ``add_variable_from_reference``) and ``update_step(gradient, variable, learning_rate)``.
"""

import collections
import warnings

from ember import dtypes
from ember.backprop import GradientTape
from ember.framework.tensor import convert_to_tensor
from ember.init_scope import init_scope
from ember.module import _camel_to_snake
from ember.name_scope import name_scope
from ember.ops.array_ops import ones, zeros
from ember.ops import math_ops
from ember.ops.math_ops import cast, maximum, sqrt, square
from ember import trackable
from ember.variables import Variable

# Keras 3 arguments ember does not implement yet: a non-default value is an error, never silently ignored.
_UNSUPPORTED_DEFAULTS = {"weight_decay": None, "clipnorm": None, "clipvalue": None, "global_clipnorm": None,
                         "use_ema": False, "ema_momentum": 0.99, "ema_overwrite_frequency": None,
                         "loss_scale_factor": None, "gradient_accumulation_steps": None}

_name_counts = collections.Counter()


def _unique_name(class_name):
    """'Adam' -> 'adam', then 'adam_1', 'adam_2', ... (Keras' auto_name)."""
    base = _camel_to_snake(class_name)
    count = _name_counts[base]
    _name_counts[base] += 1
    return base if count == 0 else f"{base}_{count}"


class Optimizer(trackable.Trackable):
    """The base of Keras optimizers: variables, the apply loop, the learning rate. Its attributes
    (``_variables``, ``_iterations``, ``_momentums``, ...) are its checkpoint dependencies, named as Keras 3's
    are, so a checkpoint of an ember optimizer and of tf.keras's match key for key."""

    def __init__(self, learning_rate, name=None, **kwargs):
        unsupported = {k: v for k, v in kwargs.items() if k in _UNSUPPORTED_DEFAULTS
                       and v != _UNSUPPORTED_DEFAULTS[k]}
        if unsupported:
            raise NotImplementedError(f"ember.keras.optimizers does not implement {sorted(unsupported)} yet "
                                      f"(got {unsupported})")
        unknown = [k for k in kwargs if k not in _UNSUPPORTED_DEFAULTS]
        if unknown:
            raise ValueError(f"Argument(s) not recognized: { {k: kwargs[k] for k in unknown} }")
        self.name = name if name is not None else _unique_name(type(self).__name__)
        self.built = False
        self._variables = []
        self._trainable_variables = []
        self._trainable_variables_indices = {}
        self._iterations = self._make_variable(0, dtypes.int64, "iteration")
        if callable(learning_rate):
            self._learning_rate = learning_rate
        elif isinstance(learning_rate, float):
            self._learning_rate = self._make_variable(learning_rate, dtypes.float32, "learning_rate")
        else:
            raise ValueError("Argument `learning_rate` should be float, or an instance of LearningRateSchedule, "
                             "or a callable (that takes in the current iteration value and returns the "
                             f"corresponding learning rate value). Received instead: learning_rate={learning_rate}")

    # ---- variables
    def _make_variable(self, value, dtype, name):
        with name_scope(self.name):
            variable = Variable(lambda: convert_to_tensor(value, dtype=dtype), trainable=False, name=name)
        self._variables.append(variable)
        return variable

    def add_variable(self, shape, initializer="zeros", dtype=None, name=None):
        """A non-trainable optimizer variable, named ``<optimizer name>/<name>``."""
        dtype = dtypes.as_dtype(dtype or dtypes.float32)
        if initializer == "zeros":
            initializer = zeros
        elif initializer == "ones":
            initializer = ones
        elif not callable(initializer):
            raise ValueError(f"initializer must be 'zeros', 'ones' or a callable (shape, dtype), got "
                             f"{initializer!r}")
        with name_scope(self.name):
            # A callable initial value runs under init_scope: eager even while a function traces.
            variable = Variable(lambda: initializer(shape, dtype), trainable=False, name=name)
        self._variables.append(variable)
        return variable

    def add_variable_from_reference(self, reference_variable, name=None, initializer="zeros"):
        """A slot shaped and typed like ``reference_variable``, named ``<its name>_<name>``."""
        reference_name = str(reference_variable.name).replace("/", "_").replace(":", "_")
        return self.add_variable(reference_variable.shape.as_list(), initializer, reference_variable.dtype,
                                 f"{reference_name}_{name or 'var'}")

    def build(self, var_list):
        """Records the variables this optimizer updates; subclasses add their slots after calling this."""
        for i, variable in enumerate(var_list):
            self._trainable_variables_indices[self._var_key(variable)] = i
        self._trainable_variables = list(var_list)
        self.built = True

    @staticmethod
    def _var_key(variable):
        return variable._id if getattr(variable, "_ember_variable", False) else id(variable)

    def _get_variable_index(self, variable):
        return self._trainable_variables_indices[self._var_key(variable)]

    @property
    def variables(self):
        return list(self._variables)

    @property
    def iterations(self):
        return self._iterations

    @property
    def learning_rate(self):
        if isinstance(self._learning_rate, Variable):
            return self._learning_rate
        return self._learning_rate()

    @learning_rate.setter
    def learning_rate(self, learning_rate):
        previous = self._learning_rate
        if callable(learning_rate):
            self._learning_rate = learning_rate
            if isinstance(previous, Variable):
                self._variables.remove(previous)
        elif isinstance(previous, Variable):
            previous.assign(learning_rate)
        else:
            self._learning_rate = self._make_variable(float(learning_rate), dtypes.float32, "learning_rate")

    # ---- applying gradients
    def apply_gradients(self, grads_and_vars):
        """Applies ``(gradient, variable)`` pairs (any iterable); None gradients are skipped with a warning.
        Returns the ``iterations`` variable, as tf.keras does."""
        pairs = list(grads_and_vars)
        if not pairs:
            raise ValueError("apply_gradients() needs at least one (gradient, variable) pair; got none")
        grads, trainable_variables = zip(*pairs)
        self.apply(grads, trainable_variables)
        return self._iterations

    def apply(self, grads, trainable_variables=None):
        """Updates ``trainable_variables`` (or the variables the optimizer was built with) by ``grads``."""
        grads = list(grads)
        if not grads:
            return
        if trainable_variables is None:
            if not self.built:
                raise ValueError("When passing `grads` without `variables`, the optimizer must already be built "
                                 "on a list of variables. Call `optimizer.build(trainable_variables)` first.")
            if len(grads) != len(self._trainable_variables):
                raise ValueError(f"When passing `grads` as a list of gradient tensors, the gradients must match "
                                 f"the optimizer's variables one to one. Received {len(grads)} gradients, but "
                                 f"the optimizer is tracking {len(self._trainable_variables)} variables.")
            trainable_variables = self._trainable_variables
        else:
            trainable_variables = list(trainable_variables)
            if not self.built:
                self.build(trainable_variables)
                self.built = True
                if trackable._pending:  # slots made just now take their values from a pending restore
                    trackable.attribute_set()
            self._check_variables_are_known(trainable_variables)
        grads, trainable_variables = _filter_empty_gradients(grads, trainable_variables)
        learning_rate = self.learning_rate
        for grad, variable in zip(grads, trainable_variables):
            self.update_step(grad, variable, learning_rate)
        self._iterations.assign_add(1)

    def _check_variables_are_known(self, variables):
        for v in variables:
            if self._var_key(v) not in self._trainable_variables_indices:
                raise ValueError(f"Unknown variable: {v}. This optimizer can only be called for the variables it "
                                 "was originally built with. When working with a new set of variables, you "
                                 "should recreate a new optimizer instance.")

    def update_step(self, gradient, variable, learning_rate):
        raise NotImplementedError(f"{type(self).__name__} must implement update_step(gradient, variable, "
                                  "learning_rate)")

    def minimize(self, loss, var_list, tape=None):
        """Computes the gradients of ``loss`` (a callable, or a tensor recorded by ``tape``) and applies
        them. TF 2.16+'s Keras 3 optimizers lack it; this is tf.keras 2's (TF <= 2.15) signature."""
        if not callable(loss) and tape is None:
            raise ValueError("`tape` is required when a `Tensor` loss is passed. Received: loss={loss}, "
                             "tape={tape}.".format(loss=loss, tape=tape))
        tape = tape if tape is not None else GradientTape()
        if callable(loss):
            with tape:
                if not callable(var_list):
                    tape.watch(var_list)
                loss = loss()
                if callable(var_list):
                    var_list = var_list()
        var_list = list(var_list)
        grads = tape.gradient(loss, var_list)
        return self.apply_gradients(zip(grads, var_list))

    # ---- writing variables (Keras' helpers: a subclass's update_step uses them)
    def assign(self, variable, value):
        variable.assign(cast(value, variable.dtype))

    def assign_add(self, variable, value):
        variable.assign_add(cast(value, variable.dtype))

    def assign_sub(self, variable, value):
        variable.assign_sub(cast(value, variable.dtype))

    # ---- configuration
    def get_config(self):
        if isinstance(self._learning_rate, Variable):
            with init_scope():
                learning_rate = float(self._learning_rate.numpy())
        else:
            learning_rate = self._learning_rate
        return {"name": self.name, "learning_rate": learning_rate, **_UNSUPPORTED_DEFAULTS}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _filter_empty_gradients(grads, variables):
    kept = [(g, v) for g, v in zip(grads, variables) if g is not None]
    if not kept:
        raise ValueError("No gradients provided for any variable.")
    missing = [v.name for g, v in zip(grads, variables) if g is None]
    if missing:
        warnings.warn(f"Gradients do not exist for variables {missing} when minimizing the loss. If using "
                      "`model.compile()`, did you forget to provide a `loss` argument?", stacklevel=4)
    return [g for g, _ in kept], [v for _, v in kept]


class SGD(Optimizer):
    """Gradient descent, with momentum and Nesterov momentum as Keras 3 writes them:

        velocity = momentum * velocity - learning_rate * g
        w = w + velocity                                         # nesterov=False
        w = w + momentum * velocity - learning_rate * g          # nesterov=True
        w = w - learning_rate * g                                # momentum=0 (no slot)
    """

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        if not isinstance(momentum, float) or momentum < 0 or momentum > 1:
            raise ValueError("`momentum` must be a float between [0, 1].")
        self.momentum = momentum
        self.nesterov = nesterov
        self.momentums = []

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        if self.momentum != 0:
            self.momentums = [self.add_variable_from_reference(v, "momentum") for v in var_list]

    def update_step(self, gradient, variable, learning_rate):
        learning_rate = cast(learning_rate, variable.dtype)
        gradient = cast(gradient, variable.dtype)
        if self.momentum == 0:
            self.assign_sub(variable, gradient * learning_rate)
            return
        m = self.momentums[self._get_variable_index(variable)]
        momentum = cast(self.momentum, variable.dtype)
        self.assign(m, m * momentum - gradient * learning_rate)
        if self.nesterov:
            self.assign_add(variable, m * momentum - gradient * learning_rate)
        else:
            self.assign_add(variable, m)

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}


class Adam(Optimizer):
    """Adam (Kingma & Ba), with Keras 3's bias correction folded into the step size, t = iterations + 1:

        m = m + (g - m) * (1 - beta_1);   v = v + (g^2 - v) * (1 - beta_2)
        alpha = learning_rate * sqrt(1 - beta_2^t) / (1 - beta_1^t)
        w = w - m * alpha / (sqrt(v) + epsilon)       # amsgrad: v_hat = max(v_hat, v) replaces v
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False, name=None,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.amsgrad = amsgrad

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._momentums, self._velocities = [], []
        for v in var_list:  # interleaved, as Keras creates them
            self._momentums.append(self.add_variable_from_reference(v, "momentum"))
            self._velocities.append(self.add_variable_from_reference(v, "velocity"))
        if self.amsgrad:
            self._velocity_hats = [self.add_variable_from_reference(v, "velocity_hat") for v in var_list]

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = cast(learning_rate, dtype)
        gradient = cast(gradient, dtype)
        local_step = cast(self.iterations + 1, dtype)
        beta_1_power = math_ops.pow(cast(self.beta_1, dtype), local_step)
        beta_2_power = math_ops.pow(cast(self.beta_2, dtype), local_step)
        index = self._get_variable_index(variable)
        m = self._momentums[index]
        v = self._velocities[index]
        alpha = lr * sqrt(1 - beta_2_power) / (1 - beta_1_power)
        self.assign_add(m, (gradient - m) * (1 - self.beta_1))
        self.assign_add(v, (square(gradient) - v) * (1 - self.beta_2))
        if self.amsgrad:
            v_hat = self._velocity_hats[index]
            self.assign(v_hat, maximum(v_hat, v))
            v = v_hat
        self.assign_sub(variable, (m * alpha) / (sqrt(v) + self.epsilon))

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon,
                "amsgrad": self.amsgrad}


# ---- resolving what compile(optimizer=...) accepts

def _builtin_classes():
    return {cls.__name__.lower(): cls for cls in (SGD, Adam)}


def serialize(optimizer):
    """An optimizer as Keras writes it: ``{'module', 'class_name', 'config', 'registered_name'}``."""
    if not isinstance(optimizer, Optimizer):
        raise ValueError(f"optimizers.serialize expects an Optimizer instance; got {optimizer!r}")
    return {"module": "keras.optimizers", "class_name": type(optimizer).__name__,
            "config": optimizer.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None, use_legacy_format=False):
    """An optimizer from ``serialize``'s dict; built-in class names match in any case ('adam', 'Adam')."""
    del use_legacy_format
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret serialized optimizer: expected a dict with 'class_name' and "
                         f"'config'; got {config!r}")
    class_name = config["class_name"]
    if custom_objects and class_name in custom_objects:
        cls = custom_objects[class_name]
    else:
        cls = _builtin_classes().get(str(class_name).lower())
        if cls is None:
            raise ValueError(f"Unknown optimizer: '{class_name}'. Expected one of {sorted(_builtin_classes())} "
                             "or a name in custom_objects.")
    return cls.from_config(dict(config.get("config") or {}))


def get(identifier, **kwargs):
    """An optimizer from what ``compile(optimizer=...)`` accepts: an instance (returned as is), a name such as
    'adam' (a new instance with Keras' defaults), or a dict from ``serialize``."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier, **kwargs)
    if isinstance(identifier, str):
        return deserialize({"class_name": identifier, "config": {}}, **kwargs)
    raise ValueError(f"Could not interpret optimizer identifier: {identifier}")
