"""Forward-mode autodiff, ``tf.autodiff.ForwardAccumulator``, built on ember's reverse mode.

ember has no forward-mode rules; a Jacobian-vector product comes from two reverse passes (Note [Double
VJP]). The accumulator is a persistent tape watching the primals; ``jvp(y)`` differentiates the tape's
vector-Jacobian product of ``y`` with respect to the cotangent it was seeded with."""
from ember import errors
from ember.backprop import GradientTape, UnconnectedGradients, _is_variable
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.util import nest

# Note [Double VJP]
# For y = f(x), the tape gives u -> vjp(u) = J^T u, which is linear in u. Then
#   d/du <J^T u, v> = d/du <u, J v> = J v,
# the JVP, as the gradient of a scalar with respect to u: one backward pass recorded on a second tape
# watching u, then a backward pass of that. u's value never matters (linearity), so it is zeros. Because
# both passes are ordinary ember ops, the result is itself differentiable by any enclosing tape (Hessian-
# vector products, backward over forward), and it works the same while an ember.function traces.


class ForwardAccumulator:
    """Computes Jacobian-vector products of the computation run inside its ``with`` block.

    ``primals`` (tensors or variables, any nesting) are watched; ``tangents`` has the same structure, one
    direction per primal. ``acc.jvp(y)`` is d y / d primals applied to the tangents."""

    def __init__(self, primals, tangents):
        nest.assert_same_structure(primals, tangents)
        self._primals = nest.flatten(primals)
        self._tangents = []
        for primal, tangent in zip(self._primals, nest.flatten(tangents)):
            if not (_is_variable(primal) or isinstance(primal, Tensor)):
                raise AttributeError(f"'{type(primal).__name__}' object has no attribute 'dtype'")
            tangent = convert_to_tensor(tangent, dtype=primal.dtype)
            if not primal.shape.is_compatible_with(tangent.shape):
                raise ValueError(f"ForwardAccumulator: a tangent of shape {tangent.shape} was given for a "
                                 f"primal of shape {primal.shape}; each tangent must have its primal's shape")
            self._tangents.append(tangent)
        self._tape = GradientTape(persistent=True, watch_accessed_variables=False)
        self._tape.watch(self._primals)

    def __enter__(self):
        self._tape._push()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._tape._pop()

    def jvp(self, primals, unconnected_gradients=UnconnectedGradients.NONE):
        """The JVP of each tensor in ``primals`` (any nesting), in the same structure. A tensor the watched
        primals do not reach gets None, or zeros with ``unconnected_gradients=tf.UnconnectedGradients.ZERO``."""
        unconnected = UnconnectedGradients(unconnected_gradients)
        targets = nest.flatten(primals)
        # The accumulator's own tape must not record the JVP computation: tangents are not primals.
        recording = self._tape._recording
        if recording:
            self._tape._tape.pause()
        try:
            jvps = [self._jvp_of(t, unconnected) for t in targets]
        finally:
            if recording:
                self._tape._tape.resume()
        return nest.pack_sequence_as(primals, jvps)

    def _jvp_of(self, target, unconnected):
        if _is_variable(target):
            target = target.read_value()
        target = convert_to_tensor(target)
        zeros = _zeros_like(target)
        if target.dtype.is_complex:
            raise errors.UnimplementedError(None, None, "ForwardAccumulator.jvp: complex targets are not "
                                            f"supported yet, got {target.dtype.name}")
        if not target.dtype.is_floating:
            return zeros if unconnected is UnconnectedGradients.ZERO else None
        cotangent = _zeros_like(target)
        with GradientTape() as outer:
            outer.watch(cotangent)
            vjps = self._tape._gradient_again([target], self._primals, [cotangent])
            terms = [_inner_product(vjp, tangent) for vjp, tangent in zip(vjps, self._tangents)
                     if vjp is not None]
            if not terms:
                return zeros if unconnected is UnconnectedGradients.ZERO else None
            total = terms[0]
            for term in terms[1:]:
                total = total + term
        jvp = outer.gradient(total, cotangent)
        # Connected but with a gradient that ignores the cotangent (a piecewise-constant op): J v is zero.
        return zeros if jvp is None else jvp


def _zeros_like(t):
    from ember.ops.array_ops import zeros_like

    return zeros_like(t)


def _inner_product(a, b):
    from ember.ops.math_ops import reduce_sum

    return reduce_sum(a * b)
