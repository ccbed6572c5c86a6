"""``keras.optimizers.legacy``: the optimizers of TF 2.0-2.10 Keras, which older code still builds.

They are ember's optimizers with the legacy arguments and formulas: ``decay`` (the learning rate of step t is
``learning_rate / (1 + decay * t)``), ``lr`` as a deprecated spelling of ``learning_rate``, a ``get_config``
with ``decay`` and without the new optimizers' keys, and RMSprop without momentum dividing by
``sqrt(v) + epsilon`` rather than ``sqrt(v + epsilon)``. Their slots and checkpoints are the new
optimizers' (an ember checkpoint of a legacy optimizer restores into the same ember class)."""

import warnings

from ember.framework.tensor import convert_to_tensor
from ember.keras.optimizers import adam as _adam, adaptive as _adaptive, optimizer as _optimizer, sgd as _sgd
from ember.ops.math_ops import cast, sqrt, square

_NEW_ONLY_KEYS = ("weight_decay", "use_ema", "ema_momentum", "ema_overwrite_frequency", "loss_scale_factor",
                  "gradient_accumulation_steps")


class _Legacy:
    def __init__(self, *args, **kwargs):
        if "lr" in kwargs:
            warnings.warn("The `lr` argument is deprecated, use `learning_rate` instead.", stacklevel=3)
            kwargs["learning_rate"] = kwargs.pop("lr")
        decay = kwargs.pop("decay", 0.0)
        if not isinstance(decay, (int, float)) or decay < 0:
            raise ValueError(f"decay cannot be less than 0. Received: decay={decay!r}.")
        for key in ("weight_decay", "use_ema", "ema_momentum", "ema_overwrite_frequency"):
            if key in kwargs:
                raise TypeError(f"{type(self).__name__}: unexpected keyword argument passed to optimizer: "
                                f"{key} (a new-optimizer argument; the legacy optimizers do not take it)")
        self.decay = float(decay)
        if kwargs.get("name") is None:
            kwargs["name"] = type(self).__name__  # the legacy optimizers are named by their class: "Adam"
        super().__init__(*args, **kwargs)

    def _step_learning_rate(self):
        learning_rate = super()._step_learning_rate()
        if not self.decay:
            return learning_rate
        learning_rate = convert_to_tensor(learning_rate)
        steps = cast(self.iterations, learning_rate.dtype)
        return learning_rate / (1.0 + self.decay * steps)

    @property
    def lr(self):
        return self.learning_rate

    @lr.setter
    def lr(self, value):
        self.learning_rate = value

    def get_config(self):
        config = {k: v for k, v in super().get_config().items() if k not in _NEW_ONLY_KEYS}
        for key in ("clipnorm", "global_clipnorm", "clipvalue"):
            if config.get(key) is None:
                config.pop(key, None)
        config["decay"] = self.decay
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config.pop("is_legacy_optimizer", None)
        if "lr" in config:
            config["learning_rate"] = config.pop("lr")
        return super().from_config(config, custom_objects)


class Optimizer(_Legacy, _optimizer.Optimizer):
    """The base to subclass for a legacy-style optimizer."""


class SGD(_Legacy, _sgd.SGD):
    pass


class Adam(_Legacy, _adam.Adam):
    pass


class Adamax(_Legacy, _adam.Adamax):
    pass


class Nadam(_Legacy, _adam.Nadam):
    """The legacy Nadam reads ``decay`` (``schedule_decay``, default 0.004) as the pace of its momentum
    schedule, u_t = beta_1 * (1 - 0.5 * 0.96^(decay * t)), and does not decay the learning rate."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name="Nadam", **kwargs):
        kwargs.setdefault("decay", kwargs.pop("schedule_decay", 0.004))
        super().__init__(learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon, name=name,
                         **kwargs)
        self._schedule_steps_scale = self.decay

    def _step_learning_rate(self):
        return _optimizer.Optimizer._step_learning_rate(self)


class Adagrad(_Legacy, _adaptive.Adagrad):
    pass


class Adadelta(_Legacy, _adaptive.Adadelta):
    pass


class Ftrl(_Legacy, _adaptive.Ftrl):
    pass


class RMSprop(_Legacy, _adaptive.RMSprop):
    def update_step(self, gradient, variable, learning_rate):
        if self.momentum > 0:
            return super().update_step(gradient, variable, learning_rate)
        # Without momentum the legacy RMSprop adds epsilon after the square root
        dtype = variable.dtype
        lr = cast(learning_rate, dtype)
        gradient = cast(gradient, dtype)
        index = self._get_variable_index(variable)
        velocity = self._velocities[index]
        self.assign(velocity, self.rho * velocity + (1 - self.rho) * square(gradient))
        denominator = velocity
        if self.centered:
            average_grad = self._average_gradients[index]
            self.assign(average_grad, self.rho * average_grad + (1 - self.rho) * gradient)
            denominator = velocity - square(average_grad)
        self.assign_sub(variable, lr * gradient / (sqrt(denominator) + self.epsilon))
