"""``tf.gradients`` and ``tf.hessians``: symbolic gradients of values an ``ember.function`` has already
traced, with no tape recording while they were computed. The C++ side (``autodiff/graph_gradients.cc``)
replays the traced nodes between xs and ys under a private tape and adds the gradient nodes to the trace."""
from ember import _C
from ember.backprop import UnconnectedGradients, _source_keys, _zeros_for
from ember.framework.tensor import convert_to_tensor


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def gradients(ys, xs, grad_ys=None, name="gradients", gate_gradients=False, aggregation_method=None,
              stop_gradients=None, unconnected_gradients=UnconnectedGradients.NONE):
    """The symbolic derivatives of sum(ys) with respect to each x in xs, a list as long as xs.

    Only inside an ``ember.function``. ``grad_ys`` weight the ys (ones by default); gradients do not flow
    through ``stop_gradients``. ``gate_gradients`` and ``aggregation_method`` only tune TensorFlow's graph
    scheduling and are accepted for compatibility."""
    if not _C.in_trace():
        raise RuntimeError("tf.gradients is not supported when eager execution is enabled. Use "
                           "tf.GradientTape instead.")
    unconnected = UnconnectedGradients(unconnected_gradients)
    flat_ys = [convert_to_tensor(y) for y in _as_list(ys)]
    flat_xs = _as_list(xs)
    flat_grad_ys = []
    if grad_ys is not None:
        given = _as_list(grad_ys)
        if len(given) != len(flat_ys):
            raise ValueError(f"Length mismatch. Passed {len(given)} grad_ys for {len(flat_ys)} ys")
        flat_grad_ys = [None if g is None else convert_to_tensor(g, dtype=y.dtype) for g, y in zip(given, flat_ys)]
    keys = _source_keys(flat_xs, TypeError, "tf.gradients: each of xs")
    stops = [convert_to_tensor(s) for s in _as_list(stop_gradients)] if stop_gradients is not None else []
    # Gradients flow only through floating-point ys (an integer y is piecewise constant).
    differentiable = [k for k, y in enumerate(flat_ys) if y.dtype.is_floating or y.dtype.is_complex]
    if differentiable:
        grads = _C.graph_gradients([flat_ys[k] for k in differentiable],
                                   [flat_grad_ys[k] for k in differentiable] if flat_grad_ys else [], keys, stops)
    else:
        grads = [None] * len(flat_xs)
    grads = [None if g is None or not (x.dtype.is_floating or x.dtype.is_complex) else g
             for g, x in zip(grads, flat_xs)]
    if unconnected is UnconnectedGradients.ZERO:
        grads = [_zeros_for(x) if g is None else g for g, x in zip(grads, flat_xs)]
    return grads


def hessians(ys, xs, gate_gradients=False, aggregation_method=None, name="hessians"):
    """For each x in xs, the second derivatives of sum(ys): a tensor of shape x.shape + x.shape.

    Only inside an ``ember.function``; each x needs a fully known shape (one backward pass per element)."""
    from ember.ops.array_ops import reshape, stack, zeros

    result = []
    for x in _as_list(xs):
        (grad,) = gradients(ys, [x])
        if grad is None:
            raise ValueError("None values not supported. tf.hessians: ys does not depend on one of xs, so its "
                             "gradient is None; the "
                             "second derivative of an unconnected x is not defined")
        if not x.shape.is_fully_defined():
            raise ValueError(f"tf.hessians: x must have a fully known shape, got {x.shape}")
        size = x.shape.num_elements()
        flat = reshape(grad, [size])
        rows = []
        for i in range(size):
            (row,) = gradients(flat[i], [x])
            rows.append(zeros(x.shape, x.dtype) if row is None else row)
        dims = x.shape.as_list()
        result.append(reshape(stack(rows), dims + dims) if rows else zeros(dims + dims, x.dtype))
    return result
