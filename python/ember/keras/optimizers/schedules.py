"""``ember.keras.optimizers.schedules``: learning rates that change with the optimizer's step, as Keras 2
(``tf_keras``) computes them.

A schedule is a callable of the step (an integer tensor: the optimizer passes its ``iterations``) returning
a scalar tensor in the dtype of its initial learning rate. Each is built from ember ops only, so the same
schedule runs eagerly and inside ember.function, where the step is read when the function runs and no
retrace happens as it grows. ``serialize``/``deserialize`` write and read Keras' dict.
"""

import math

from ember import dtypes, errors
from ember.framework.tensor import convert_to_tensor
from ember.name_scope import name_scope
from ember.ops import array_ops, math_ops


class LearningRateSchedule:
    """The base of learning-rate schedules: a subclass implements ``__call__(step)`` and ``get_config``."""

    def __call__(self, step):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must override "
                                  "`__call__(self, step)`.")

    def get_config(self):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must override "
                                  "`get_config()` in order to be serializable.")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _initial(value, what):
    """The initial learning rate as a float tensor (a Python number becomes float32, as in Keras)."""
    try:
        value = convert_to_tensor(value)
    except (TypeError, ValueError) as e:
        raise errors.InvalidArgumentError(None, None, f"{what}: initial_learning_rate must be a number or a "
                                                      f"scalar tensor; got {value!r} ({e})")
    if value.shape.rank not in (0, None):
        raise errors.InvalidArgumentError(None, None, f"{what}: initial_learning_rate must be a scalar; got "
                                                      f"shape {value.shape.as_list()}")
    if not value.dtype.is_floating:
        value = math_ops.cast(value, dtypes.float32)
    return value


def _positive_steps(value, name, what):
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
        raise ValueError(f"{what}: {name} must be positive; got {name}={value}")


class ExponentialDecay(LearningRateSchedule):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``; with ``staircase`` the exponent is
    floored."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name=None):
        _positive_steps(decay_steps, "decay_steps", "ExponentialDecay")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step):
        with name_scope(self.name or "ExponentialDecay"):
            lr = _initial(self.initial_learning_rate, "ExponentialDecay")
            p = math_ops.cast(step, lr.dtype) / math_ops.cast(self.decay_steps, lr.dtype)
            if self.staircase:
                p = math_ops.floor(p)
            return lr * math_ops.pow(math_ops.cast(self.decay_rate, lr.dtype), p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase, "name": self.name}


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` while step <= boundaries[0], ``values[i]`` while boundaries[i-1] < step <=
    boundaries[i], ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries, values, name=None):
        if len(boundaries) != len(values) - 1:
            raise ValueError("The length of boundaries should be 1 less than the length of values. Received: "
                             f"boundaries={boundaries} of length {len(boundaries)}, and values={values} of "
                             f"length {len(values)}.")
        self.boundaries = boundaries
        self.values = values
        self.name = name

    def __call__(self, step):
        with name_scope(self.name or "PiecewiseConstant"):
            step = convert_to_tensor(step)
            values = [convert_to_tensor(v) for v in self.values]
            result = values[-1]
            # From the last interval back: each boundary claims the steps at or below it.
            for boundary, value in zip(reversed(self.boundaries), reversed(values[:-1])):
                boundary = math_ops.cast(boundary, step.dtype)
                result = array_ops.where(step <= boundary, value, result)
            return result

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """``(initial - end) * (1 - step / decay_steps) ** power + end``, step clipped at decay_steps; with
    ``cycle`` decay_steps grows to the first multiple above step instead."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False,
                 name=None):
        _positive_steps(decay_steps, "decay_steps", "PolynomialDecay")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step):
        with name_scope(self.name or "PolynomialDecay"):
            lr = _initial(self.initial_learning_rate, "PolynomialDecay")
            dtype = lr.dtype
            end = math_ops.cast(self.end_learning_rate, dtype)
            step = math_ops.cast(step, dtype)
            decay_steps = math_ops.cast(self.decay_steps, dtype)
            if self.cycle:
                multiplier = array_ops.where(math_ops.equal(step, 0), math_ops.cast(1.0, dtype),
                                             math_ops.ceil(step / decay_steps))
                decay_steps = decay_steps * multiplier
            else:
                step = math_ops.minimum(step, decay_steps)
            p = step / decay_steps
            return (lr - end) * math_ops.pow(1 - p, math_ops.cast(self.power, dtype)) + end

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate, "power": self.power, "cycle": self.cycle,
                "name": self.name}


class InverseTimeDecay(LearningRateSchedule):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)``; with ``staircase`` the ratio is
    floored."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name=None):
        _positive_steps(decay_steps, "decay_steps", "InverseTimeDecay")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step):
        with name_scope(self.name or "InverseTimeDecay"):
            lr = _initial(self.initial_learning_rate, "InverseTimeDecay")
            p = math_ops.cast(step, lr.dtype) / math_ops.cast(self.decay_steps, lr.dtype)
            if self.staircase:
                p = math_ops.floor(p)
            return lr / (math_ops.cast(1, lr.dtype) + math_ops.cast(self.decay_rate, lr.dtype) * p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """An optional linear warmup from ``initial_learning_rate`` to ``warmup_target`` over ``warmup_steps``,
    then a cosine from there down to ``alpha`` times it over ``decay_steps``."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name=None, warmup_target=None,
                 warmup_steps=0):
        _positive_steps(decay_steps, "decay_steps", "CosineDecay")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name
        self.warmup_steps = warmup_steps
        self.warmup_target = warmup_target

    def _decay(self, step, decay_steps, decay_from, dtype):
        completed = step / decay_steps
        cosine = 0.5 * (1.0 + math_ops.cos(math_ops.cast(math.pi, dtype) * completed))
        return decay_from * ((1 - self.alpha) * cosine + self.alpha)

    def __call__(self, step):
        with name_scope(self.name or "CosineDecay"):
            lr = _initial(self.initial_learning_rate, "CosineDecay")
            dtype = lr.dtype
            decay_steps = math_ops.cast(self.decay_steps, dtype)
            step = math_ops.cast(step, dtype)
            if self.warmup_target is None:
                return self._decay(math_ops.minimum(step, decay_steps), decay_steps, lr, dtype)
            target = math_ops.cast(self.warmup_target, dtype)
            warmup_steps = math_ops.cast(self.warmup_steps, dtype)
            step = math_ops.minimum(step, decay_steps + warmup_steps)
            warming = (target - lr) * (step / warmup_steps) + lr
            decaying = self._decay(step - warmup_steps, decay_steps, target, dtype)
            return array_ops.where(step < warmup_steps, warming, decaying)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "alpha": self.alpha, "name": self.name, "warmup_target": self.warmup_target,
                "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay over ``first_decay_steps``, then warm restarts: period i lasts ``t_mul**i`` times as
    long and starts from ``m_mul**i`` times the initial rate (SGDR, Loshchilov & Hutter)."""

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0, name=None):
        _positive_steps(first_decay_steps, "first_decay_steps", "CosineDecayRestarts")
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step):
        with name_scope(self.name or "SGDRDecay"):
            lr = _initial(self.initial_learning_rate, "CosineDecayRestarts")
            dtype = lr.dtype
            alpha = math_ops.cast(self.alpha, dtype)
            t_mul = math_ops.cast(self._t_mul, dtype)
            m_mul = math_ops.cast(self._m_mul, dtype)
            completed = math_ops.cast(step, dtype) / math_ops.cast(self.first_decay_steps, dtype)
            if float(self._t_mul) == 1.0:
                i_restart = math_ops.floor(completed)
                completed = completed - i_restart
            else:
                # Periods grow geometrically: the restart index solves a geometric series for the step.
                i_restart = math_ops.floor(math_ops.log(1.0 - completed * (1.0 - t_mul)) / math_ops.log(t_mul))
                sum_r = (1.0 - math_ops.pow(t_mul, i_restart)) / (1.0 - t_mul)
                completed = (completed - sum_r) / math_ops.pow(t_mul, i_restart)
            m_fac = math_ops.pow(m_mul, i_restart)
            cosine = 0.5 * m_fac * (1.0 + math_ops.cos(math_ops.cast(math.pi, dtype) * completed))
            return lr * ((1 - alpha) * cosine + alpha)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "first_decay_steps": self.first_decay_steps,
                "t_mul": self._t_mul, "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


_CLASSES = {cls.__name__: cls for cls in (LearningRateSchedule, ExponentialDecay, PiecewiseConstantDecay,
                                          PolynomialDecay, InverseTimeDecay, CosineDecay, CosineDecayRestarts)}


def serialize(learning_rate_schedule, use_legacy_format=False):
    """A schedule as Keras writes it: ``{'module', 'class_name', 'config', 'registered_name'}``."""
    del use_legacy_format
    if not isinstance(learning_rate_schedule, LearningRateSchedule):
        raise ValueError(f"schedules.serialize expects a LearningRateSchedule; got {learning_rate_schedule!r}")
    return {"module": "keras.optimizers.schedules", "class_name": type(learning_rate_schedule).__name__,
            "config": learning_rate_schedule.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None, use_legacy_format=False):
    del use_legacy_format
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret serialized learning rate schedule: expected a dict with "
                         f"'class_name' and 'config'; got {config!r}")
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _CLASSES.get(name)
    if cls is None:
        raise ValueError(f"Unknown decay: '{name}'. Expected one of {sorted(_CLASSES)} or a name in "
                         "custom_objects.")
    return cls.from_config(dict(config.get("config") or {}))
