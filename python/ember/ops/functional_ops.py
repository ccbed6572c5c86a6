"""``map_fn``, ``scan``, ``foldl``, ``foldr`` (a ``while_loop`` over ``TensorArray``s, as TensorFlow 2 builds
them) and ``vectorized_map`` (the function traced once and batched by pfor's rules, falling back to
``map_fn``). Eagerly the loop is Python and the arrays are lists; inside ember.function it is one While op
whose trip count may be known only when the function runs."""

from ember import _C, dtypes
from ember.framework.tensor import convert_to_tensor
from ember.framework.tensor_shape import TensorShape
from ember.framework.tensor_spec import TensorSpec
from ember.ops.control_flow_ops import while_loop
from ember.ops.tensor_array_ops import TensorArray
from ember.util import nest


def _flat_elems(elems, api):
    flat = [convert_to_tensor(e) for e in nest.flatten(elems)]
    if not flat:
        raise ValueError(f"{api}: elems must be a tensor or a (possibly nested) sequence of tensors, got "
                         f"{elems!r}")
    for e in flat:
        if e.shape.rank == 0:
            raise ValueError(f"{api}: elements in elems must be 1+ dimensional, got a scalar {e!r}")
    statics = {e.shape.as_list()[0] for e in flat if e.shape.rank is not None} - {None}
    if len(statics) > 1:
        raise ValueError(f"{api}: the elements of elems must have the same first dimension, got "
                         f"{sorted(statics)}")
    return flat


def _trip_count(flat):
    from ember.ops import array_ops

    first = flat[0]
    static = first.shape.as_list()[0] if first.shape.rank is not None else None
    return static, (static if static is not None else array_ops.shape(first)[0])


def _spec_of(sig):
    """(dtype, element shape) of one leaf of fn_output_signature."""
    if isinstance(sig, TensorSpec):
        return sig.dtype, TensorShape(sig.shape)
    return dtypes.as_dtype(sig), TensorShape(None)


def _reader(flat, n, reverse=False):
    """read(i): the i-th slices of the elems (the (n-1-i)-th when reverse)."""
    arrays = [TensorArray(e.dtype, size=n, infer_shape=True, clear_after_read=False).unstack(e) for e in flat]

    def read(i):
        index = (n - 1 - i) if reverse else i
        return [ta.read(index) for ta in arrays]

    return read


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False, infer_shape=True,
           name=None, fn_output_signature=None):
    """fn applied to each slice of elems along its first dimension, the results stacked."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    if fn_output_signature is None:
        fn_output_signature = dtype
    flat = _flat_elems(elems, "map_fn")
    static_n, n = _trip_count(flat)
    signature = fn_output_signature if fn_output_signature is not None else \
        nest.pack_sequence_as(elems, [e.dtype for e in flat])
    specs = [_spec_of(s) for s in nest.flatten(signature)]
    read = _reader(flat, n)
    outputs = [TensorArray(dt, size=n, infer_shape=infer_shape, element_shape=shape if shape.rank is not None
                           else None) for dt, shape in specs]

    def body(i, arrays):
        value = fn(nest.pack_sequence_as(elems, read(i)))
        try:
            nest.assert_same_structure(signature, value, check_types=False)
        except (ValueError, TypeError) as e:
            raise ValueError(f"map_fn: the structure of fn's output does not match fn_output_signature (or, "
                             f"without it, the structure of elems): {e}") from None
        leaves = nest.flatten(value)
        return i + 1, [ta.write(i, _typed(v, dt, "map_fn")) for ta, v, (dt, _) in zip(arrays, leaves, specs)]

    _, outputs = while_loop(lambda i, _: i < n, body, (0, outputs),
                            parallel_iterations=parallel_iterations or 10, name=name or "map")
    results = [_with_first_dim(ta.stack(), static_n) for ta in outputs]
    return nest.pack_sequence_as(signature, results)


def _typed(value, dtype, api):
    from ember.framework.tensor import Tensor

    if isinstance(value, Tensor) and value.dtype != dtype:
        from ember import errors

        if api == "map_fn":  # TensorFlow's TensorArray write says so when the function runs
            raise errors.InvalidArgumentError(
                None, None, f"map_fn: fn returned a {value.dtype.name} tensor where the output signature says "
                f"{dtype.name}; give fn_output_signature=")
        raise TypeError(f"{api}: fn returned a {value.dtype.name} tensor where the output signature says "
                        f"{dtype.name}; give fn_output_signature=")
    return convert_to_tensor(value, dtype=dtype)


def _with_first_dim(t, n):
    if n is None or t.shape.rank is None or t.shape.as_list()[0] == n:
        return t
    from ember.ops import array_ops

    return array_ops.reshape(t, [n] + [-1 if d is None else d for d in t.shape.as_list()[1:]]) \
        if sum(d is None for d in t.shape.as_list()[1:]) <= 1 else t


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, infer_shape=True,
         reverse=False, name=None):
    """The running accumulations a = fn(a, x) over the slices x of elems (from the last when reverse)."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    flat = _flat_elems(elems, "scan")
    static_n, n = _trip_count(flat)
    read = _reader(flat, n, reverse)
    if initializer is None:
        accumulator = nest.pack_sequence_as(elems, read(0))
        structure = elems
        start = 1
    else:
        accumulator = nest.map_structure(convert_to_tensor, initializer)
        structure = initializer
        start = 0
    acc_flat = [convert_to_tensor(a) for a in nest.flatten(accumulator)]
    outputs = [TensorArray(a.dtype, size=n, infer_shape=infer_shape, element_shape=a.shape
                           if a.shape.is_fully_defined() else None) for a in acc_flat]
    if start:
        outputs = [ta.write(n - 1 if reverse else 0, a) for ta, a in zip(outputs, acc_flat)]

    def body(i, acc, arrays):
        value = fn(nest.pack_sequence_as(structure, acc), nest.pack_sequence_as(elems, read(i)))
        try:
            nest.assert_same_structure(structure, value, check_types=False)
        except (ValueError, TypeError) as e:
            raise ValueError(f"scan: fn must return the structure of the accumulator: {e}") from None
        leaves = [_typed(v, a.dtype, "scan") for v, a in zip(nest.flatten(value), acc_flat)]
        index = (n - 1 - i) if reverse else i
        return i + 1, leaves, [ta.write(index, v) for ta, v in zip(arrays, leaves)]

    invariants = None
    if _C.in_trace():
        invariants = (TensorShape([]), [_loose(a) for a in acc_flat], [None] * len(outputs))
    _, _, outputs = while_loop(lambda i, acc, arrays: i < n, body, (start, acc_flat, outputs),
                               parallel_iterations=parallel_iterations, name=name or "scan",
                               shape_invariants=invariants)
    results = [_with_first_dim(ta.stack(), static_n) for ta in outputs]
    return nest.pack_sequence_as(structure, results)


def _loose(t):
    """The shape invariant of an accumulator: its own shape, or every dimension free where one is unknown
    (fn may give a more specific shape than the first element had)."""
    if t.shape.rank is None or t.shape.is_fully_defined():
        return t.shape
    return TensorShape([None] * t.shape.rank)


def _fold(fn, elems, initializer, parallel_iterations, reverse, api, name):
    if not callable(fn):
        raise TypeError(f"{api}: fn must be callable, got {fn!r}")
    flat = _flat_elems(elems, api)
    _, n = _trip_count(flat)
    read = _reader(flat, n, reverse)
    if initializer is None:
        accumulator, structure, start = nest.pack_sequence_as(elems, read(0)), elems, 1
    else:
        accumulator = nest.map_structure(convert_to_tensor, initializer)
        structure, start = initializer, 0
    acc_flat = [convert_to_tensor(a) for a in nest.flatten(accumulator)]

    def body(i, acc):
        value = fn(nest.pack_sequence_as(structure, acc), nest.pack_sequence_as(elems, read(i)))
        try:
            nest.assert_same_structure(structure, value, check_types=False)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{api}: fn must return the structure of the accumulator: {e}") from None
        return i + 1, [_typed(v, a.dtype, api) for v, a in zip(nest.flatten(value), acc_flat)]

    invariants = None
    if _C.in_trace():
        invariants = (TensorShape([]), [_loose(a) for a in acc_flat])
    _, acc = while_loop(lambda i, acc: i < n, body, (start, acc_flat), parallel_iterations=parallel_iterations,
                        name=name or api, shape_invariants=invariants)
    return nest.pack_sequence_as(structure, list(acc))


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """fn(...fn(fn(initializer, elems[0]), elems[1])..., elems[n-1])."""
    return _fold(fn, elems, initializer, parallel_iterations, False, "foldl", name)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """fn(...fn(fn(initializer, elems[n-1]), elems[n-2])..., elems[0])."""
    return _fold(fn, elems, initializer, parallel_iterations, True, "foldr", name)


# ---- vectorized_map

last_fallback = None  # why the latest vectorized_map fell back to map_fn (pfor.Unbatchable's message)


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """map_fn(fn, elems) computed as one batched program: fn is traced once on a single slice and each op
    of the trace is rewritten by its batching rule (pfor.py); where an op has no rule, the map_fn loop."""
    global last_fallback
    from ember import pfor

    flat = _flat_elems(elems, "vectorized_map")
    static_n, n = _trip_count(flat)
    try:
        return _vectorize(fn, elems, flat, n)
    except pfor.Unbatchable as e:
        if not fallback_to_while_loop:
            raise ValueError(f"vectorized_map: cannot vectorize fn ({e}) and fallback_to_while_loop is "
                             f"False") from None
        last_fallback = str(e)
        if warn:
            import logging

            logging.getLogger("ember").warning("vectorized_map: using a while_loop for conversion: %s", e)
    return _map_any(fn, elems, flat)


def _map_any(fn, elems, flat):
    """map_fn with the output signature of one trace of fn (vectorized_map's outputs need not have elems'
    dtypes, as map_fn's default signature assumes)."""
    trace = _C.Trace("vectorized_map_signature", True)
    args = [trace.add_argument(e._dtype_enum, tuple(e.shape.as_list()[1:]) if e.shape.rank is not None else None,
                               f"elem_{k}") for k, e in enumerate(flat)]
    trace.enter()
    try:
        out = fn(nest.pack_sequence_as(elems, args))
        specs = [TensorSpec(v.shape, v.dtype) for v in (convert_to_tensor(x) for x in nest.flatten(out))]
    finally:
        trace.exit()
    return map_fn(fn, elems, fn_output_signature=nest.pack_sequence_as(out, specs))


def _vectorize(fn, elems, flat, n):
    from ember import pfor

    trace = _C.Trace("vectorized_map_fn", True)
    args = [trace.add_argument(e._dtype_enum, tuple(e.shape.as_list()[1:]) if e.shape.rank is not None else None,
                               f"elem_{k}") for k, e in enumerate(flat)]
    trace.enter()
    try:
        out = fn(nest.pack_sequence_as(elems, args))
        out_flat = [convert_to_tensor(v) for v in nest.flatten(out)]
    except Exception as e:  # noqa: BLE001 - the loop runs fn eagerly and gives its own answer
        trace.exit()
        raise pfor.Unbatchable(f"tracing fn failed: {type(e).__name__}: {e}") from None
    trace.exit()
    gf = trace.finish(out_flat)
    if len(gf.control_outputs) > 0:  # pfor evaluates only what the results need: a print or an assert would vanish
        raise pfor.Unbatchable("fn holds stateful ops, which run once per element")
    call_args = [pfor._In(e, True, e.shape.as_list()[1:] if e.shape.rank is not None else None) for e in flat]
    call_args += [pfor._In(c, False, c.shape.as_list() if c.shape.rank is not None else None)
                  for c in gf.lifted_captures]
    results = pfor._Vectorizer(gf, None, n, call_args=call_args).run()
    return nest.pack_sequence_as(out, list(results))
