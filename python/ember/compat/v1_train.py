"""``ember.compat.v1.train``: TensorFlow 1.x's optimizers as they behave under eager execution.

``GradientDescentOptimizer(learning_rate).apply_gradients(grads_and_vars)`` takes any iterable of
``(gradient, variable)`` pairs (a generator too), skips None gradients, and updates each variable in place
(``var -= learning_rate * grad``), eagerly or inside ember.function. ``minimize(loss, var_list=None)``
needs ``loss`` to be a callable, as TF 1.x's does once eager execution is on."""

from ember.backprop import GradientTape
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops.math_ops import cast


class Optimizer:
    """The TF 1.x optimizer protocol: compute_gradients, apply_gradients, minimize."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name

    def get_name(self):
        return self._name

    def get_slot(self, var, name):
        return None

    def get_slot_names(self):
        return []

    def variables(self):
        return []

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP, aggregation_method=None,
                          colocate_gradients_with_ops=False, grad_loss=None):
        """``[(gradient, variable), ...]`` of ``loss()``; var_list defaults to the variables it read."""
        if not callable(loss):
            raise RuntimeError("`loss` passed to Optimizer.compute_gradients should be a function when eager "
                               "execution is enabled.")
        with GradientTape() as tape:
            if var_list is not None:
                tape.watch(var_list)
            loss_value = loss()
        if var_list is None:
            var_list = tape.watched_variables()
        var_list = list(var_list)
        grads = tape.gradient(loss_value, var_list, grad_loss)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Updates each variable whose gradient is not None; increments ``global_step`` if given."""
        grads_and_vars = tuple(grads_and_vars)  # it may be a generator
        from ember.distribute import distribute_lib

        if grads_and_vars and distribute_lib.in_distributed_replica_context():
            return distribute_lib.all_reduce_and_apply(
                [(g if g is None or isinstance(g, Tensor) else convert_to_tensor(g), v) for g, v in grads_and_vars], lambda pairs: self.apply_gradients(pairs, global_step=global_step, name=name))
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        converted = []
        for g, v in grads_and_vars:
            if not getattr(v, "_ember_variable", False):
                raise NotImplementedError(f"Trying to update a Tensor {v!r}: apply_gradients updates variables")
            if g is not None:
                try:
                    g = convert_to_tensor(g)
                except (TypeError, ValueError):
                    raise TypeError(f"Gradient must be convertible to a Tensor or IndexedSlices, or None: {g!r}")
            converted.append((g, v))
        if all(g is None for g, _ in converted):
            raise ValueError(f"No gradients provided for any variable: {[str(v) for _, v in converted]}.")
        learning_rate = self._learning_rate() if callable(self._learning_rate) else self._learning_rate
        for g, v in converted:
            if g is not None:
                self._apply_dense(g, v, learning_rate)
        if global_step is not None:
            global_step.assign_add(1)
        return None

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP, aggregation_method=None,
                 colocate_gradients_with_ops=False, name=None, grad_loss=None):
        grads_and_vars = self.compute_gradients(loss, var_list=var_list, grad_loss=grad_loss)
        if not [v for g, v in grads_and_vars if g is not None]:
            raise ValueError("No gradients provided for any variable, check your graph for ops that do not "
                             f"support gradients, between variables {[str(v) for _, v in grads_and_vars]} and "
                             f"loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def _apply_dense(self, grad, var, learning_rate):
        raise NotImplementedError(f"{type(self).__name__} must implement _apply_dense(grad, var, learning_rate)")


class GradientDescentOptimizer(Optimizer):
    """``var -= learning_rate * grad`` (the learning rate may be a float, a tensor or a callable)."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _apply_dense(self, grad, var, learning_rate):
        var.assign_sub(cast(learning_rate, grad.dtype) * grad)
