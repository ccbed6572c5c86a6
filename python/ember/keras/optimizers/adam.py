"""The Adam family: Adam (with AMSGrad), AdamW, Adamax, Nadam, and Lion (a sign-of-momentum relative).

The formulas are Keras 2's (``tf_keras``), op for op where rounding could differ; the slots carry Keras 3's
names and order, so checkpoints match TF 2.21's key for key.
"""

from ember.keras.optimizers.optimizer import Optimizer
from ember.ops import math_ops
from ember.ops.math_ops import abs as abs_, cast, maximum, sign, sqrt, square


class Adam(Optimizer):
    """Adam (Kingma & Ba), with the bias correction folded into the step size, t = iterations + 1:

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


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): each step first does
    ``w -= w * weight_decay * learning_rate``, then Adam's update. ``weight_decay`` is required."""

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name=None, **kwargs):
        if weight_decay is None:
            raise ValueError("Argument `weight_decay` must be a float. Received: weight_decay=None")
        super().__init__(learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
                         amsgrad=amsgrad, name=name, weight_decay=weight_decay, **kwargs)


class Adamax(Optimizer):
    """Adam with the infinity norm (Kingma & Ba, section 7), t = iterations + 1:

        m = m + (g - m) * (1 - beta_1);   u = max(beta_2 * u, |g|)
        w = w - learning_rate * m / ((1 - beta_1^t) * (u + epsilon))
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._m, self._u = [], []
        for v in var_list:
            self._m.append(self.add_variable_from_reference(v, "momentum"))
            self._u.append(self.add_variable_from_reference(v, "norm"))

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = cast(learning_rate, dtype)
        gradient = cast(gradient, dtype)
        beta_1_power = math_ops.pow(cast(self.beta_1, dtype), cast(self.iterations + 1, dtype))
        index = self._get_variable_index(variable)
        m, u = self._m[index], self._u[index]
        self.assign_add(m, (gradient - m) * (1 - self.beta_1))
        self.assign(u, maximum(self.beta_2 * u, abs_(gradient)))
        self.assign_sub(variable, (lr * m) / ((1 - beta_1_power) * (u + self.epsilon)))

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}


class Nadam(Optimizer):
    """Adam with Nesterov momentum (Dozat), its momentum schedule u_t = beta_1 * (1 - 0.5 * 0.96^t) and
    their running product, kept in ``_u_product`` and advanced once per step."""

    _schedule_steps_scale = 1.0

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._momentums, self._velocities = [], []
        for v in var_list:
            self._momentums.append(self.add_variable_from_reference(v, "momentum"))
            self._velocities.append(self.add_variable_from_reference(v, "velocity"))
        dtype = var_list[0].dtype if var_list else "float32"
        self._u_product = self.add_variable([], "ones", dtype, "variable")

    def apply(self, grads, trainable_variables=None):
        self._ember_u_product_advanced = False
        super().apply(grads, trainable_variables)

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = cast(learning_rate, dtype)
        gradient = cast(gradient, dtype)
        local_step = cast(self.iterations + 1, dtype)
        next_step = cast(self.iterations + 2, dtype)
        decay = cast(0.96, dtype)
        beta_1 = cast(self.beta_1, dtype)
        beta_2 = cast(self.beta_2, dtype)
        # the legacy Nadam slows the schedule: 0.96^(schedule_decay * t), schedule_decay 0.004 by default
        scale = cast(self._schedule_steps_scale, dtype)
        u_t = beta_1 * (1.0 - 0.5 * math_ops.pow(decay, local_step * scale))
        u_t_1 = beta_1 * (1.0 - 0.5 * math_ops.pow(decay, next_step * scale))
        if not self._ember_u_product_advanced:  # once per step, by the first variable updated
            self._u_product.assign(self._u_product * cast(u_t, self._u_product.dtype))
            self._ember_u_product_advanced = True
        u_product_t = cast(self._u_product, dtype)
        u_product_t_1 = u_product_t * u_t_1
        beta_2_power = math_ops.pow(beta_2, local_step)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        self.assign_add(m, (gradient - m) * (1 - beta_1))
        self.assign_add(v, (square(gradient) - v) * (1 - beta_2))
        m_hat = u_t_1 * m / (1 - u_product_t_1) + (1 - u_t) * gradient / (1 - u_product_t)
        v_hat = v / (1 - beta_2_power)
        self.assign_sub(variable, (m_hat * lr) / (sqrt(v_hat) + self.epsilon))

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}


class Lion(Optimizer):
    """Lion (Chen et al., 2023): a step of fixed size along the sign of interpolated momentum:

        w = w - learning_rate * sign(beta_1 * m + (1 - beta_1) * g);   m = beta_2 * m + (1 - beta_2) * g
    """

    def __init__(self, learning_rate=0.0001, beta_1=0.9, beta_2=0.99, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        if beta_1 <= 0 or beta_1 > 1:
            raise ValueError(f"Argument `beta_1` must be in the [0, 1] range. Otherwise, the optimizer "
                             f"degenerates to SignSGD. Received: beta_1={beta_1}.")
        self.beta_1 = beta_1
        self.beta_2 = beta_2

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._momentums = [self.add_variable_from_reference(v, "momentum") for v in var_list]

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = cast(learning_rate, dtype)
        gradient = cast(gradient, dtype)
        beta_1 = cast(self.beta_1, dtype)
        beta_2 = cast(self.beta_2, dtype)
        m = self._momentums[self._get_variable_index(variable)]
        self.assign_sub(variable, lr * sign(m * beta_1 + gradient * (1.0 - beta_1)))
        self.assign(m, m * beta_2 + gradient * (1.0 - beta_2))

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2}


