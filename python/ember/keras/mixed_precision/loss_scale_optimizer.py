"""tf_keras' LossScaleOptimizer: float16 gradients underflow, so the loss is multiplied by a scale before the
gradients are taken and the gradients divided by it before they are applied. With ``dynamic=True`` the scale
halves (down to 1) and the step is skipped whenever a gradient is not finite, and doubles after
``dynamic_growth_steps`` finite steps in a row. ``Model.compile`` wraps the optimizer in one under the
``mixed_float16`` policy, and ``fit``'s step scales the loss and unscales the gradients as tf_keras' does."""

from ember import _C, dtypes
from ember.framework.indexed_slices import IndexedSlices
from ember.init_scope import init_scope
from ember.ops import array_ops, control_flow_ops, math_ops
from ember.variables import Variable
from ember.keras.optimizers.optimizer import Optimizer


class LossScaleOptimizer(Optimizer):
    """``LossScaleOptimizer(inner_optimizer, dynamic=True, initial_scale=None, dynamic_growth_steps=None)``."""

    def __init__(self, inner_optimizer, dynamic=True, initial_scale=None, dynamic_growth_steps=None):
        # Optimizer.__init__ is not run: the iterations, learning rate and slots are the inner optimizer's.
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(f'"inner_optimizer" must be an instance of `tf.keras.optimizers.Optimizer`, but got: '
                            f"{inner_optimizer}.")
        if isinstance(inner_optimizer, LossScaleOptimizer):
            raise TypeError("LossScaleOptimizer cannot wrap another LossScaleOptimizer")
        if not isinstance(dynamic, bool):
            raise TypeError(f'"dynamic" argument to LossScaleOptimizer.__init__ must be a bool, but got: {dynamic!r}')
        if dynamic:
            initial_scale = 2.0 ** 15 if initial_scale is None else float(initial_scale)
            dynamic_growth_steps = 2000 if dynamic_growth_steps is None else int(dynamic_growth_steps)
            if dynamic_growth_steps <= 0:
                raise ValueError(f"dynamic_growth_steps must be positive, got {dynamic_growth_steps}")
        else:
            if initial_scale is None:
                raise ValueError('"initial_scale" must be specified if "dynamic" is False')
            if dynamic_growth_steps is not None:
                raise ValueError(f'"dynamic_growth_steps" must be None if "dynamic" is False, but got: '
                                 f"{dynamic_growth_steps}")
            initial_scale = float(initial_scale)
        if initial_scale < 1:
            raise ValueError(f"initial_scale must be at least 1, got {initial_scale}")
        self._optimizer = inner_optimizer
        self._dynamic = dynamic
        self._initial_scale = initial_scale
        self._dynamic_growth_steps = dynamic_growth_steps
        self.name = "loss_scale_optimizer"
        with init_scope():
            self._loss_scale = Variable(initial_scale, trainable=False, name="current_loss_scale",
                                        dtype=dtypes.float32)
            self._good_steps = Variable(0, trainable=False, name="good_steps", dtype=dtypes.int64)

    # ---- what tf_keras exposes
    @property
    def inner_optimizer(self):
        return self._optimizer

    @property
    def dynamic(self):
        return self._dynamic

    @property
    def loss_scale(self):
        """The current scale, a float32 scalar tensor."""
        return self._loss_scale.read_value()

    @property
    def dynamic_counter(self):
        """The number of finite steps since the scale last changed (None for a fixed scale)."""
        return self._good_steps if self._dynamic else None

    @property
    def initial_scale(self):
        return self._initial_scale

    @property
    def dynamic_growth_steps(self):
        return self._dynamic_growth_steps

    def get_scaled_loss(self, loss):
        """``loss * loss_scale`` (a callable loss gives a callable)."""
        if callable(loss):
            return lambda: self.get_scaled_loss(loss())
        return loss * math_ops.cast(self._loss_scale, loss.dtype)

    def get_unscaled_gradients(self, grads):
        """Each gradient divided by ``loss_scale`` (None stays None)."""
        reciprocal = 1.0 / self._loss_scale.read_value()

        def unscaled(g):
            if isinstance(g, IndexedSlices):  # the gradient of a sparse read: its values, as TensorFlow's
                return IndexedSlices(unscaled(g.values), g.indices, g.dense_shape)
            return None if g is None else g * math_ops.cast(reciprocal, g.dtype)

        return [unscaled(g) for g in grads]

    # ---- the inner optimizer's state
    @property
    def iterations(self):
        return self._optimizer.iterations

    @property
    def learning_rate(self):
        return self._optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self._optimizer.learning_rate = value

    lr = learning_rate

    @property
    def variables(self):
        return self._optimizer.variables

    @property
    def built(self):
        return self._optimizer.built

    @built.setter
    def built(self, value):
        self._optimizer.built = value

    def build(self, var_list):
        self._optimizer.build(var_list)
        self._optimizer.built = True

    def _trackable_children(self):
        return [("inner_optimizer", self._optimizer), ("current_loss_scale", self._loss_scale),
                ("good_steps", self._good_steps)]

    # ---- applying gradients
    def apply_gradients(self, grads_and_vars, name=None):
        """Applies the (already unscaled) gradients through the inner optimizer; with a dynamic scale, only
        when every gradient is finite, and updates the scale."""
        pairs = list(grads_and_vars)
        if not self._dynamic or not pairs:
            return self._optimizer.apply_gradients(pairs)
        variables = [v for _, v in pairs]
        if not self._optimizer.built:  # the slots must exist before the conditional update below
            self.build(variables)
        grads = [g for g, _ in pairs if g is not None]
        finite = math_ops.reduce_all(array_ops.stack(
            [math_ops.reduce_all(math_ops.is_finite(g.values if isinstance(g, IndexedSlices) else g))
             for g in grads])) if grads else True
        self._update_scale(finite)
        # A skipped step still counts in `iterations`, as in tf_keras.
        if not _C.in_trace():
            if bool(finite):
                self._optimizer.apply_gradients(pairs)
            else:
                self._optimizer.iterations.assign_add(1)
            return self._optimizer.iterations

        def apply():
            self._optimizer.apply_gradients(pairs)
            return array_ops.identity(finite)

        def skip():
            self._optimizer.iterations.assign_add(1)
            return array_ops.identity(finite)

        control_flow_ops.cond(finite, apply, skip)
        return self._optimizer.iterations

    def _update_scale(self, finite):
        """tf_keras' dynamic rule, without branches: a finite step counts, and the scale doubles (if the double
        is finite) when the count reaches ``dynamic_growth_steps``; a non-finite step halves it (not below 1)
        and resets the count."""
        scale = self._loss_scale.read_value()
        count = self._good_steps.read_value() + 1
        grow = math_ops.logical_and(finite, count >= self._dynamic_growth_steps)
        doubled = scale * 2.0
        grown = array_ops.where(math_ops.is_finite(doubled), doubled, scale)
        shrunk = math_ops.maximum(scale / 2.0, 1.0)
        self._loss_scale.assign(array_ops.where(finite, array_ops.where(grow, grown, scale), shrunk))
        self._good_steps.assign(array_ops.where(math_ops.logical_and(finite, math_ops.logical_not(grow)), count,
                                                array_ops.zeros_like(count)))

    def apply(self, grads, trainable_variables=None):
        if trainable_variables is None:
            trainable_variables = self._optimizer._trainable_variables
        self.apply_gradients(zip(grads, trainable_variables))

    def minimize(self, loss, var_list, tape=None):
        """As the inner optimizer's, with the loss scaled inside the tape and the gradients unscaled."""
        from ember.backprop import GradientTape

        if not callable(loss) and tape is None:
            raise ValueError("`tape` is required when a `Tensor` loss is passed.")
        tape = tape if tape is not None else GradientTape()
        with tape:
            if callable(loss):
                if not callable(var_list):
                    tape.watch(var_list)
                loss = loss()
            scaled = self.get_scaled_loss(loss)
        var_list = list(var_list() if callable(var_list) else var_list)
        grads = self.get_unscaled_gradients(tape.gradient(scaled, var_list))
        return self.apply_gradients(zip(grads, var_list))

    def __getattr__(self, name):
        # Hyperparameters and the rest of the inner optimizer's API (tf_keras delegates them too).
        if name.startswith("__") or name in ("_optimizer",):
            raise AttributeError(name)
        return getattr(self.__dict__["_optimizer"], name)

    def get_config(self):
        from ember.keras import optimizers

        return {"inner_optimizer": optimizers.serialize(self._optimizer), "dynamic": self._dynamic,
                "initial_scale": self._initial_scale, "dynamic_growth_steps": self._dynamic_growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from ember.keras import optimizers

        config = dict(config)
        config["inner_optimizer"] = optimizers.deserialize(config["inner_optimizer"], custom_objects=custom_objects)
        config.pop("is_legacy_optimizer", None)  # tf_keras' HDF5 files add these to every optimizer's config
        config.pop("jit_compile", None)
        return cls(**config)
