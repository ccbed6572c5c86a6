"""Optimizers that scale each coordinate by its accumulated squared gradients: RMSprop, Adagrad, Adadelta,
and FTRL-Proximal.

The formulas are Keras 2's (``tf_keras``), op for op where rounding could differ; the slots carry Keras 3's
names and order, so checkpoints match TF 2.21's key for key.
"""

from ember.keras.optimizers.optimizer import Optimizer
from ember.ops import array_ops, math_ops
from ember.ops.math_ops import cast, rsqrt, sqrt, square


def _constant_initializer(value):
    return lambda shape, dtype: array_ops.fill(shape, cast(value, dtype))


class RMSprop(Optimizer):
    """RMSprop (Hinton): v = rho * v + (1 - rho) * g^2, w -= learning_rate * g / sqrt(v + epsilon); centered
    subtracts the square of the running mean gradient from v; momentum accumulates the increments."""

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, name=None,
                 ema_overwrite_frequency=100, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, ema_overwrite_frequency=ema_overwrite_frequency,
                         **kwargs)
        self.rho = rho
        self.momentum = momentum
        self.epsilon = epsilon
        self.centered = centered

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._velocities = [self.add_variable_from_reference(v, "velocity") for v in var_list]
        self._momentums = []
        if self.momentum > 0:
            self._momentums = [self.add_variable_from_reference(v, "momentum") for v in var_list]
        self._average_gradients = []
        if self.centered:
            self._average_gradients = [self.add_variable_from_reference(v, "average_gradient") for v in var_list]

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = cast(learning_rate, dtype)
        gradient = cast(gradient, dtype)
        index = self._get_variable_index(variable)
        rho = self.rho
        velocity = self._velocities[index]
        self.assign(velocity, rho * velocity + (1 - rho) * square(gradient))
        if self.centered:
            average_grad = self._average_gradients[index]
            self.assign(average_grad, rho * average_grad + (1 - rho) * gradient)
            denominator = velocity - square(average_grad) + self.epsilon
        else:
            denominator = velocity + self.epsilon
        increment = lr * gradient * rsqrt(denominator)
        if self.momentum > 0:
            momentum = self._momentums[index]
            self.assign(momentum, self.momentum * momentum + increment)
            self.assign_sub(variable, momentum)
        else:
            self.assign_sub(variable, increment)

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum, "epsilon": self.epsilon,
                "centered": self.centered}


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.): a += g^2, w -= learning_rate * g / sqrt(a + epsilon), a starting at
    ``initial_accumulator_value``."""

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.initial_accumulator_value = initial_accumulator_value
        self.epsilon = epsilon

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        init = _constant_initializer(self.initial_accumulator_value)
        self._accumulators = [self.add_variable_from_reference(v, "accumulator", init) for v in var_list]

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = cast(learning_rate, dtype)
        gradient = cast(gradient, dtype)
        accumulator = self._accumulators[self._get_variable_index(variable)]
        self.assign_add(accumulator, gradient * gradient)
        self.assign_sub(variable, lr * gradient / sqrt(accumulator + self.epsilon))

    def get_config(self):
        return {**super().get_config(), "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}


class Adadelta(Optimizer):
    """Adadelta (Zeiler): the step is g scaled by rms(past steps) / rms(past gradients), both running means
    with decay ``rho``, times ``learning_rate``."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._accumulated_grads, self._accumulated_delta_vars = [], []
        for v in var_list:
            self._accumulated_grads.append(self.add_variable_from_reference(v, "accumulated_grad"))
            self._accumulated_delta_vars.append(self.add_variable_from_reference(v, "accumulated_delta_var"))

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = cast(learning_rate, dtype)
        gradient = cast(gradient, dtype)
        index = self._get_variable_index(variable)
        accumulated_grad = self._accumulated_grads[index]
        accumulated_delta_var = self._accumulated_delta_vars[index]
        rho = self.rho

        def rms(x):
            return sqrt(x + self.epsilon)

        self.assign(accumulated_grad, rho * accumulated_grad + (1 - rho) * gradient * gradient)
        delta_var = -rms(accumulated_delta_var) * gradient / rms(accumulated_grad)
        self.assign(accumulated_delta_var, rho * accumulated_delta_var + (1 - rho) * delta_var * delta_var)
        self.assign_add(variable, lr * delta_var)

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "epsilon": self.epsilon}


class Ftrl(Optimizer):
    """FTRL-Proximal (McMahan et al.), with L1, L2 and L2-shrinkage regularization and ``beta``."""

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 l2_shrinkage_regularization_strength=0.0, beta=0.0, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        for arg, value, sign in (("initial_accumulator_value", initial_accumulator_value, "positive or zero"),
                                 ("learning_rate_power", -learning_rate_power, "negative or zero"),
                                 ("l1_regularization_strength", l1_regularization_strength, "positive or zero"),
                                 ("l2_regularization_strength", l2_regularization_strength, "positive or zero"),
                                 ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength,
                                  "positive or zero")):
            if value < 0.0:
                shown = -value if arg == "learning_rate_power" else value
                raise ValueError(f"`{arg}` needs to be {sign}. Received: {arg}={shown}.")
        self.learning_rate_power = learning_rate_power
        self.initial_accumulator_value = initial_accumulator_value
        self.l1_regularization_strength = l1_regularization_strength
        self.l2_regularization_strength = l2_regularization_strength
        self.l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength
        self.beta = beta

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        init = _constant_initializer(self.initial_accumulator_value)
        self._accumulators, self._linears = [], []
        for v in var_list:
            self._accumulators.append(self.add_variable_from_reference(v, "accumulator", init))
            self._linears.append(self.add_variable_from_reference(v, "linear"))

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = cast(learning_rate, dtype)
        gradient = cast(gradient, dtype)
        index = self._get_variable_index(variable)
        accum, linear = self._accumulators[index], self._linears[index]
        lr_power = self.learning_rate_power
        l2_reg = self.l2_regularization_strength + self.beta / (2.0 * lr)
        grad_to_use = gradient + 2 * self.l2_shrinkage_regularization_strength * variable
        new_accum = accum + math_ops.pow(gradient, cast(2, dtype))
        power = cast(-lr_power, dtype)
        self.assign_add(linear, grad_to_use - (math_ops.pow(new_accum, power) - math_ops.pow(accum, power)) / lr
                        * variable)
        quadratic = math_ops.pow(new_accum, power) / lr + 2 * l2_reg
        l1 = self.l1_regularization_strength
        linear_clipped = array_ops.clip_by_value(linear, cast(-l1, dtype), cast(l1, dtype))
        self.assign(variable, (linear_clipped - linear) / quadratic)
        self.assign(accum, new_accum)

    def get_config(self):
        return {**super().get_config(), "learning_rate_power": self.learning_rate_power,
                "initial_accumulator_value": self.initial_accumulator_value,
                "l1_regularization_strength": self.l1_regularization_strength,
                "l2_regularization_strength": self.l2_regularization_strength,
                "l2_shrinkage_regularization_strength": self.l2_shrinkage_regularization_strength,
                "beta": self.beta}
