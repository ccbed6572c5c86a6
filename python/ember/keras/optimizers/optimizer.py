"""The base of ``ember.keras.optimizers``: variables, the apply loop, the learning rate, clipping, weight decay
and the moving average of the weights.

``optimizer.apply_gradients(zip(grads, variables))`` updates each variable in place with its own assign ops,
so a step runs the same eagerly and inside ember.function. The optimizer's variables (its ``iterations``
counter, its learning rate, and one or more slots per model variable, such as Adam's moments) are
ember.Variables. Slots are made on the first apply, for every variable passed, gradient or not, as Keras
does; made with a callable initial value, they are created eagerly even when that apply is traced, and they
count as the function's variables (so ember.function traces once more, and a later trace that would create
them is an error, as tf.function's is).

One step, in the order Keras 2 (``tf_keras``) and Keras 3 both take: drop None gradients (with a warning),
divide by ``loss_scale_factor``, clip (``clipnorm`` per gradient, ``global_clipnorm`` over all of them, or
``clipvalue``: at most one), decay the weights (``w -= w * weight_decay * lr``, decoupled as in AdamW),
``update_step`` for each variable, apply each variable's ``constraint``, update the moving average
(``use_ema``), count the step. The learning rate is read once per step: a float lives in a variable (so a
traced step sees a later assignment), a ``LearningRateSchedule`` is called with ``iterations``, any other
callable is called with no argument.

Checkpoints: the attributes (``_variables``, ``_iterations``, ``_learning_rate``, ``_trainable_variables``,
the slot lists) are the checkpoint dependencies, named as TF 2.21's Keras 3 names them, so a checkpoint of
an ember optimizer and of tf.keras's match key for key. State that is not saved lives in attributes whose
names start with ``_ember`` (trackable.py skips them).
"""

import collections
import numbers
import re
import warnings

import numpy as np

from ember import dtypes, errors
from ember.backprop import GradientTape
from ember.framework.indexed_slices import IndexedSlices
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.init_scope import init_scope
from ember.module import _camel_to_snake
from ember.name_scope import name_scope
from ember.ops import array_ops, control_flow_ops, math_ops, special_math_ops
from ember.ops.array_ops import ones, zeros
from ember.ops.math_ops import cast
from ember import trackable
from ember.variables import Variable
from ember.keras.optimizers import schedules

_name_counts = collections.Counter()


def _unique_name(class_name):
    """'Adam' -> 'adam', then 'adam_1', 'adam_2', ... (Keras' auto_name)."""
    base = _camel_to_snake(class_name)
    count = _name_counts[base]
    _name_counts[base] += 1
    return base if count == 0 else f"{base}_{count}"


def _map_values(gradient, fn):
    """fn of a gradient, or of an IndexedSlices' values (keeping its indices)."""
    if isinstance(gradient, IndexedSlices):
        return IndexedSlices(fn(gradient.values), gradient.indices, gradient.dense_shape)
    return fn(gradient)


def _is_number(value):
    return isinstance(value, (numbers.Real, np.floating, np.integer)) and not isinstance(value, (bool, np.bool_))


def _positive_or_none(name, value):
    if value is None:
        return None
    if not _is_number(value) or value <= 0:
        raise ValueError(f"Argument `{name}` must be a positive float or None. Received: {name}={value!r}")
    return float(value)


class _Keras2Variables(trackable.Trackable):
    """An optimizer's ``_variables`` as tf_keras (Keras 2) lists them: without the learning rate. Read when
    restoring, so slots made after the restore (restore-on-create) are seen too."""

    def __init__(self, optimizer):
        object.__setattr__(self, "_ember_optimizer", optimizer)

    def _trackable_children(self):
        variables = self._ember_optimizer._variables
        return [(str(i), v) for i, v in enumerate(variables[:1] + variables[2:])]


class Optimizer(trackable.Trackable):
    """The base of Keras optimizers. A subclass overrides ``build(var_list)`` (calling the base first, then
    adding its slots with ``add_variable_from_reference``) and ``update_step(gradient, variable,
    learning_rate)``, and adds its hyperparameters to ``get_config``."""

    def __init__(self, learning_rate, weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        kwargs.pop("jit_compile", None)  # tf_keras' flag: ember compiles its own way
        if kwargs.pop("is_legacy_optimizer", False):
            raise ValueError("ember.keras.optimizers are the new (TF 2.11+) optimizers; a config with "
                             "is_legacy_optimizer=True belongs to tf.keras.optimizers.legacy")
        if kwargs:
            raise ValueError(f"Argument(s) not recognized: {kwargs}")
        if gradient_accumulation_steps is not None:
            raise errors.UnimplementedError(None, None, f"{type(self).__name__}: gradient_accumulation_steps is "
                                                        f"not implemented; got {gradient_accumulation_steps!r}")
        self.name = name if name is not None else _unique_name(type(self).__name__)
        if weight_decay is not None and (not _is_number(weight_decay) or weight_decay < 0):
            raise ValueError(f"Argument `weight_decay` must be a non-negative float or None. Received: "
                             f"weight_decay={weight_decay!r}")
        self.weight_decay = None if weight_decay is None else float(weight_decay)
        self.clipnorm = _positive_or_none("clipnorm", clipnorm)
        self.global_clipnorm = _positive_or_none("global_clipnorm", global_clipnorm)
        self.clipvalue = _positive_or_none("clipvalue", clipvalue)
        if sum(x is not None for x in (self.clipnorm, self.clipvalue, self.global_clipnorm)) > 1:
            raise ValueError("Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. Received: "
                             f"clipnorm={clipnorm}, clipvalue={clipvalue}, global_clipnorm={global_clipnorm}")
        self.use_ema = bool(use_ema)
        if use_ema:
            if not _is_number(ema_momentum) or not 0 <= ema_momentum <= 1:
                raise ValueError(f"`ema_momentum` must be in the range [0, 1]. Received: ema_momentum="
                                 f"{ema_momentum!r}")
            if ema_overwrite_frequency is not None and (not isinstance(ema_overwrite_frequency, int)
                                                        or ema_overwrite_frequency < 1):
                raise ValueError("`ema_overwrite_frequency` must be an integer >= 1 or None. Received: "
                                 f"ema_overwrite_frequency={ema_overwrite_frequency!r}")
        self.ema_momentum = ema_momentum
        self.ema_overwrite_frequency = ema_overwrite_frequency
        self.loss_scale_factor = _positive_or_none("loss_scale_factor", loss_scale_factor)
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.built = False
        self._variables = []
        self._trainable_variables = []
        self._trainable_variables_indices = {}
        self._ember_exclude_ids = set()
        self._ember_exclude_pattern = None
        self._iterations = self._make_variable(0, dtypes.int64, "iteration")
        self._learning_rate = self._build_learning_rate(learning_rate)

    def _ember_restore_children(self, live, saved, saved_children):
        """The children a checkpoint's optimizer node is matched against (ember/train/checkpoint.py). ember
        saves TensorFlow 2.21's layout, where ``_variables`` lists the iterations, the learning rate, then
        the slots. tf_keras (Keras 2) lists no learning rate there: its ``_variables/1`` is the first slot.
        Such a checkpoint is read through a view of ``_variables`` without the learning rate."""
        if "_variables" not in saved or "_learning_rate" not in saved or not isinstance(live.get("_variables"), list):
            return live
        if saved_children(saved["_variables"]).get("1") == saved["_learning_rate"]:
            return live  # TensorFlow 2.21's layout: _variables[1] is the learning rate
        variables = self._variables
        if len(variables) < 2 or variables[1] is not self._learning_rate:
            return live  # a schedule: no learning-rate variable, the two layouts agree
        live = dict(live)
        live["_variables"] = _Keras2Variables(self)
        return live

    def _build_learning_rate(self, learning_rate):
        if callable(learning_rate):  # a LearningRateSchedule or a callable of no argument
            return learning_rate
        if isinstance(learning_rate, float) or isinstance(learning_rate, np.floating) \
                or (isinstance(learning_rate, Tensor) and learning_rate.dtype.is_floating
                    and learning_rate.shape.rank == 0 and not learning_rate._is_symbolic):
            return self._make_variable(float(learning_rate), dtypes.float32, "learning_rate")
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
        """A non-trainable optimizer variable, named ``<optimizer name>/<name>``. ``initializer`` is 'zeros',
        'ones', a callable (shape, dtype) or a tensor-like initial value."""
        dtype = dtypes.as_dtype(dtype or dtypes.float32)
        if isinstance(initializer, str):
            if initializer not in ("zeros", "ones"):
                raise ValueError(f"initializer must be 'zeros', 'ones', a callable (shape, dtype) or an initial "
                                 f"value; got {initializer!r}")
            make = zeros if initializer == "zeros" else ones
            value = lambda: make(shape, dtype)  # noqa: E731
        elif callable(initializer) and not isinstance(initializer, (Tensor, Variable)):
            value = lambda: initializer(shape, dtype)  # noqa: E731
        else:
            value = lambda: cast(convert_to_tensor(initializer), dtype)  # noqa: E731
        with name_scope(self.name):
            # A callable initial value runs under init_scope: eager even while a function traces.
            variable = Variable(value, trainable=False, name=name)
        self._variables.append(variable)
        return variable

    def add_variable_from_reference(self, reference_variable, name=None, initializer="zeros"):
        """A slot shaped and typed like ``reference_variable``, named ``<its name>_<name>``."""
        reference_name = str(reference_variable.name).replace("/", "_").replace(":", "_")
        return self.add_variable(reference_variable.shape.as_list(), initializer, reference_variable.dtype,
                                 f"{reference_name}_{name or 'var'}")

    def build(self, var_list):
        """Records the variables this optimizer updates (and their moving averages, with ``use_ema``);
        subclasses add their slots after calling this."""
        for i, variable in enumerate(var_list):
            self._trainable_variables_indices[self._var_key(variable)] = i
        self._trainable_variables = list(var_list)
        if self.use_ema:
            # Keras 2 starts each average at the variable's value (Keras 3 at its value after the first step).
            self._model_variables_moving_average = [
                self.add_variable_from_reference(v, "average", initializer=lambda shape, dtype, v=v: v.read_value())
                for v in var_list]
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
        """The learning rate of the next step: the variable, or the schedule's value at ``iterations``."""
        if isinstance(self._learning_rate, Variable):
            return self._learning_rate
        if isinstance(self._learning_rate, schedules.LearningRateSchedule):
            return self._learning_rate(self._iterations)
        return self._learning_rate()

    @learning_rate.setter
    def learning_rate(self, learning_rate):
        previous = self._learning_rate
        if isinstance(previous, schedules.LearningRateSchedule) and not callable(learning_rate):
            raise TypeError("This optimizer was created with a `LearningRateSchedule` object as its "
                            "`learning_rate` constructor argument, hence its learning rate is not settable. If "
                            "you need the learning rate to be settable, you should instantiate the optimizer with "
                            "a float `learning_rate` argument.")
        if callable(learning_rate):
            self._learning_rate = learning_rate
            if isinstance(previous, Variable):
                self._variables.remove(previous)
        elif isinstance(previous, Variable):
            previous.assign(learning_rate)
        else:
            self._learning_rate = self._make_variable(float(learning_rate), dtypes.float32, "learning_rate")

    lr = learning_rate  # tf_keras' alias

    # ---- applying gradients
    def apply_gradients(self, grads_and_vars, name=None):
        """Applies ``(gradient, variable)`` pairs (any iterable); None gradients are skipped with a warning,
        an empty iterable is a no-op (as tf_keras). Returns the ``iterations`` variable, as tf.keras does."""
        del name
        pairs = list(grads_and_vars)
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"{type(self).__name__}.apply_gradients expects (gradient, variable) pairs; "
                                f"got {pair!r}")
        if pairs:
            from ember.distribute import distribute_lib

            if distribute_lib.in_distributed_replica_context():  # one update from the replicas' summed gradients
                pairs = [(convert_to_tensor(g) if isinstance(g, IndexedSlices) else g, v) for g, v in pairs]
                return distribute_lib.all_reduce_and_apply(pairs, self.apply_gradients)
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
            for v in trainable_variables:
                if not getattr(v, "_ember_variable", False):
                    raise TypeError(f"{type(self).__name__} updates ember.Variables; got {v!r} of type "
                                    f"{type(v).__name__} where a variable was expected")
            if not self.built:
                self.build(trainable_variables)
                self.built = True
                if trackable._pending:  # slots made just now take their values from a pending restore
                    trackable.attribute_set()
            self._check_variables_are_known(trainable_variables)
        grads, trainable_variables = _filter_empty_gradients(grads, trainable_variables)
        grads = [self._check_gradient(g, v) for g, v in zip(grads, trainable_variables)]
        if self.loss_scale_factor is not None:
            grads = [_map_values(g, lambda x: x / cast(self.loss_scale_factor, x.dtype)) for g in grads]
        # IndexedSlices (the gradient of a sparse read) are clipped by their values, as tf.clip_by_norm and
        # tf.clip_by_value clip them, and then made dense for the update.
        grads = [g if isinstance(g, Tensor) else convert_to_tensor(g) for g in self._clip_gradients(grads)]
        learning_rate = self._step_learning_rate()
        self._apply_weight_decay(trainable_variables, learning_rate)
        for grad, variable in zip(grads, trainable_variables):
            self.update_step(grad, variable, learning_rate)
        for variable in trainable_variables:
            constraint = getattr(variable, "constraint", None)
            if constraint is not None:
                variable.assign(constraint(variable))
        if self.use_ema:
            self._update_moving_average(trainable_variables)
        self._iterations.assign_add(1)

    def _check_gradient(self, gradient, variable):
        """A gradient as a tensor shaped like its variable: a silent broadcast would update the wrong way."""
        what = f"{type(self).__name__}.apply_gradients"
        sparse = isinstance(gradient, IndexedSlices)
        if sparse:
            slices, gradient = gradient, gradient.values
            if not slices.shape.is_compatible_with(variable.shape):
                raise errors.InvalidArgumentError(None, None, f"{what}: the gradient of {variable.name} must have "
                                                              f"the variable's shape {variable.shape.as_list()}; "
                                                              f"got IndexedSlices of dense shape {slices.shape}")
        try:
            gradient = gradient if isinstance(gradient, Tensor) else convert_to_tensor(gradient)
        except (TypeError, ValueError) as e:
            raise errors.InvalidArgumentError(None, None, f"{what}: the gradient of {variable.name} must be a "
                                                          f"tensor; got {gradient!r} ({e})")
        if not (gradient.dtype.is_floating or gradient.dtype.is_complex):
            raise errors.InvalidArgumentError(None, None, f"{what}: the gradient of {variable.name} must be a "
                                                          f"floating tensor; got dtype {gradient.dtype.name}")
        if sparse:
            return IndexedSlices(gradient, slices.indices, slices.dense_shape)
        if not gradient.shape.is_compatible_with(variable.shape):
            raise errors.InvalidArgumentError(None, None, f"{what}: the gradient of {variable.name} must have the "
                                                          f"variable's shape {variable.shape.as_list()}; got shape "
                                                          f"{gradient.shape.as_list()}")
        return gradient

    def _check_variables_are_known(self, variables):
        for v in variables:
            if self._var_key(v) not in self._trainable_variables_indices:
                raise ValueError(f"Unknown variable: {v}. This optimizer can only be called for the variables it "
                                 "was originally built with. When working with a new set of variables, you "
                                 "should recreate a new optimizer instance.")

    def _clip_gradients(self, grads):
        if self.clipnorm is not None:
            return [special_math_ops.clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm is not None:
            return special_math_ops.clip_by_global_norm(grads, self.global_clipnorm)[0]
        if self.clipvalue is not None:
            return [array_ops.clip_by_value(g, -self.clipvalue, self.clipvalue) for g in grads]
        return grads

    # ---- weight decay
    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Exempts ``var_list`` and every variable whose name contains a match of one of ``var_names`` (regular
        expressions, e.g. ['bias']) from weight decay. Only before the optimizer is built."""
        if self.built:
            raise ValueError("`exclude_from_weight_decay()` can only be configured before the optimizer is "
                             "built.")
        self._ember_exclude_ids = {self._var_key(v) for v in (var_list or [])}
        self._ember_exclude_pattern = re.compile("|".join(var_names)) if var_names else None

    def _use_weight_decay(self, variable):
        if self._var_key(variable) in self._ember_exclude_ids:
            return False
        pattern = self._ember_exclude_pattern
        return pattern is None or pattern.search(str(variable.name)) is None

    def _apply_weight_decay(self, variables, learning_rate):
        if not self.weight_decay:
            return
        for variable in variables:
            if self._use_weight_decay(variable):
                lr = cast(learning_rate, variable.dtype)
                wd = cast(self.weight_decay, variable.dtype)
                variable.assign_sub(variable * wd * lr)

    # ---- moving average of the weights
    def _update_moving_average(self, variables):
        momentum = self.ema_momentum
        for variable in variables:
            average = self._model_variables_moving_average[self._get_variable_index(variable)]
            average.assign(momentum * average + (1 - momentum) * variable)
        if self.ema_overwrite_frequency:
            overwrite = math_ops.equal(math_ops.floormod(self._iterations + 1, self.ema_overwrite_frequency), 0)

            def copy():
                for variable in variables:
                    variable.assign(self._model_variables_moving_average[self._get_variable_index(variable)])
                return convert_to_tensor(True)

            control_flow_ops.cond(overwrite, copy, lambda: convert_to_tensor(False))

    def finalize_variable_values(self, var_list):
        """With ``use_ema``, sets each variable to its moving average (Keras calls it at the end of fit)."""
        if self.use_ema:
            for variable in var_list:
                variable.assign(self._model_variables_moving_average[self._get_variable_index(variable)])

    def update_step(self, gradient, variable, learning_rate):
        raise NotImplementedError(f"{type(self).__name__} must implement update_step(gradient, variable, "
                                  "learning_rate)")

    def minimize(self, loss, var_list, tape=None):
        """Computes the gradients of ``loss`` (a callable, or a tensor recorded by ``tape``) and applies
        them (tf_keras' signature; Keras 3 lacks it)."""
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
    def _step_learning_rate(self):
        """The learning rate of the step being applied (the legacy optimizers decay it with the steps)."""
        return self.learning_rate

    def get_config(self):
        """Keras 3's dict (TF 2.21's tf.keras), which tf_keras' from_config also reads."""
        if isinstance(self._learning_rate, Variable):
            with init_scope():
                learning_rate = float(self._learning_rate.numpy())
        elif isinstance(self._learning_rate, schedules.LearningRateSchedule):
            learning_rate = schedules.serialize(self._learning_rate)
        else:
            learning_rate = self._learning_rate
        return {"name": self.name, "learning_rate": learning_rate,
                "weight_decay": self.weight_decay, "clipnorm": self.clipnorm,
                "global_clipnorm": self.global_clipnorm, "clipvalue": self.clipvalue, "use_ema": self.use_ema,
                "ema_momentum": self.ema_momentum, "ema_overwrite_frequency": self.ema_overwrite_frequency,
                "loss_scale_factor": self.loss_scale_factor,
                "gradient_accumulation_steps": self.gradient_accumulation_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules.deserialize(config["learning_rate"], custom_objects)
        return cls(**config)


def _filter_empty_gradients(grads, variables):
    kept = [(g, v) for g, v in zip(grads, variables) if g is not None]
    if not kept:
        raise ValueError(f"No gradients provided for any variable: {[v.name for v in variables]}.")
    missing = [v.name for g, v in zip(grads, variables) if g is None]
    if missing:
        warnings.warn(f"Gradients do not exist for variables {missing} when minimizing the loss. If using "
                      "`model.compile()`, did you forget to provide a `loss` argument?", stacklevel=4)
    return [g for g, _ in kept], [v for _, v in kept]
