"""SGD: gradient descent with optional (Nesterov) momentum."""

from ember.keras.optimizers.optimizer import Optimizer
from ember.ops.math_ops import cast


class SGD(Optimizer):
    """Gradient descent, with momentum and Nesterov momentum as Keras writes them:

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
