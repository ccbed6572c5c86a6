"""Control flow: ``cond``, ``case``, ``switch_case`` and ``while_loop`` (TensorFlow 2's v2 control flow).

Eagerly they run as Python: the chosen branch is called, the loop body is called while the condition holds.
Inside ``ember.function`` each branch, condition and body is traced into a graph function of the library and
one functional op (``If``/``StatelessIf``, ``Case``/``StatelessCase``, ``While``/``StatelessWhile``, see
src/ember/ops/control_flow.cc) calls them; the stateless forms are chosen when no traced function holds a
stateful op. Tensors of the enclosing trace that a branch or body uses are lifted into arguments of every
branch (the same list, in the same order: Note [Lifted captures of control flow]).
"""

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_shape import TensorShape
from ember.util import nest

_If, _StatelessIf = _C.op("If"), _C.op("StatelessIf")
_While, _StatelessWhile = _C.op("While"), _C.op("StatelessWhile")
_Case, _StatelessCase = _C.op("Case"), _C.op("StatelessCase")
_PartitionedCall = _C.op("PartitionedCall")

# Note [Lifted captures of control flow]
# A branch traced inside another trace turns each tensor of the enclosing graphs it reads into an argument
# (TraceContext::value_of). The branches of one If must take the same arguments, and a loop's condition and
# body the same ones as the loop variables they receive, so after tracing all of them we put every function's
# lifted arguments in one order (the union, first use first), lifting the ones a function did not read
# (Trace.order_lifted). A loop passes its lifted tensors through the body unchanged, as extra loop variables:
# the While op's inputs are the loop variables followed by them.


class _Traced:
    """One traced branch, condition or body before it is sealed: its trace, its Python result and the
    result's tensors (None leaves are kept out)."""

    def __init__(self, trace, output, flat):
        self.trace = trace
        self.output = output
        self.flat = flat

    def finish(self, order, extra_results=()):
        self.trace.order_lifted(order)
        return self.trace.finish([t for t in self.flat if t is not None] + list(extra_results))


def _trace(fn, name, args=(), arg_names=()):
    """Traces ``fn`` called on placeholders shaped like ``args`` (dtype enum, shape tuple) into a new trace
    nested in the current one."""
    # Floating constants of the enclosing function become inputs of the op, so gradients see the edge
    # (Note [Folded values of concrete arguments] in src/ember/trace/trace_context.cc).
    trace = _C.Trace(name, True, lifts_enclosing_constants=True)
    placeholders = [trace.add_argument(dtype, shape, arg_name)
                    for (dtype, shape), arg_name in zip(args, arg_names)]
    trace.enter()
    try:
        output = fn(placeholders)
        # Python numbers and arrays become constants of the branch, as in TensorFlow.
        flat = [None if v is None else (v if isinstance(v, Tensor) else _as_output(v, name))
                for v in nest.flatten(output)]
        # A result that is a tensor of an enclosing trace (returned unchanged) is lifted now, with the
        # tensors the branch's ops read, so every function of the op takes it as the same argument.
        flat = [None if v is None else trace.lift(v) for v in flat]
    finally:
        trace.exit()
    return _Traced(trace, output, flat)


def _as_output(value, name):
    if getattr(value, "_ember_variable", False):
        return value.read_value()
    try:
        return convert_to_tensor(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name}: a branch must return tensors, Python numbers, NumPy arrays or None (in nested "
                        f"lists, tuples and dicts), got a value of type {type(value).__name__}: {e}") from None


def _union_of_lifted(traced):
    order, seen = [], set()
    for t in traced:
        for capture, identity in zip(t.trace.lifted_captures, t.trace.lifted_ids):
            if identity not in seen:
                seen.add(identity)
                order.append(capture)
    return order


def _has_state(graph_function):
    return len(graph_function.control_outputs) > 0


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _truth(pred, what):
    if isinstance(pred, Tensor):
        if pred.shape.rank not in (None, 0):
            raise ValueError(f"{what}: the predicate must be a scalar, got shape {pred.shape}")
        return bool(pred)
    return bool(pred)


def _describe(structure):
    return repr(nest.map_structure(lambda t: t, structure))


# ---- cond


def cond(pred, true_fn=None, false_fn=None, name=None):
    """``true_fn()`` if ``pred`` else ``false_fn()``: eagerly a Python branch, staged an If op."""
    if true_fn is None or false_fn is None:
        raise TypeError("cond: both true_fn and false_fn are required")
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    if not _C.in_trace():
        return true_fn() if _truth(pred, "cond") else false_fn()
    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool", pred)
    pred = convert_to_tensor(pred)
    if pred.shape.rank not in (None, 0):
        raise ValueError(f"cond: pred must be a scalar, got a tensor of shape {pred.shape}")
    base = name or "cond"
    branches = [_trace(lambda _: true_fn(), f"{base}_true"), _trace(lambda _: false_fn(), f"{base}_false")]
    _check_branch_outputs(branches, ("true_fn", "false_fn"), "tf.cond")
    order = _union_of_lifted(branches)
    functions = [b.finish(order) for b in branches]
    if not pred._is_symbolic:
        # A predicate known while tracing runs its branch only (both were traced, so both were checked).
        chosen = functions[0 if bool(pred) else 1]
        flat = _call(chosen, order)
    else:
        op = _If if any(_has_state(f) for f in functions) else _StatelessIf
        flat = _as_list(op(pred, order, functions[0].library_name, functions[1].library_name))
    return _repack(branches[0], flat)


def _call(function, inputs):
    return _as_list(_PartitionedCall(list(inputs), function.library_name))


def _repack(traced, flat):
    results = iter(flat)
    leaves = [None if t is None else next(results) for t in traced.flat]
    return nest.pack_sequence_as(traced.output, leaves)


def _check_branch_outputs(branches, names, api):
    first = branches[0]
    for other, other_name in zip(branches[1:], names[1:]):
        problem = None
        try:
            nest.assert_same_structure(first.output, other.output, check_types=True)
        except (ValueError, TypeError) as e:
            problem = str(e)
        if problem is None:
            for a, b in zip(first.flat, other.flat):
                if (a is None) != (b is None):
                    problem = f"{a!r} and {b!r} differ: one is None"
                elif a is not None and a.dtype != b.dtype:
                    problem = f"{a!r} and {b!r} have different types"
                if problem:
                    break
        if problem:
            if len(branches) == 2:
                header = (f"true_fn and false_fn arguments to {api} must have the same number, type, and overall "
                          f"structure of return values.")
            else:
                header = f"{api}: every branch must return the same structure and dtypes as {names[0]}."
            raise TypeError(f"{header}\n\n{names[0]} output: {first.output!r}\n{other_name} output: "
                            f"{other.output!r}\n\nError details:\n{problem}")


# ---- switch_case and case


def _branch_list(branch_fns, default):
    if isinstance(branch_fns, dict):
        pairs = sorted(branch_fns.items())
    elif isinstance(branch_fns, (list, tuple)) and branch_fns and all(
            isinstance(p, tuple) and len(p) == 2 for p in branch_fns):
        pairs = sorted(branch_fns)
    elif isinstance(branch_fns, (list, tuple)):
        pairs = list(enumerate(branch_fns))
    else:
        raise TypeError("branch_fns must be a list, tuple, or dict")
    if not pairs:
        raise ValueError("Must provide at least one item in branch_fns")
    keys = [k for k, _ in pairs]
    if any(not isinstance(k, int) for k in keys):
        raise TypeError("branch_fns: the branch indices (keys) must be Python ints")
    if keys != list(range(len(keys))):
        raise ValueError(f"branch indices (keys) must form contiguous range of [0 to {len(keys)}) but found "
                         f"{{{','.join(str(k) for k in keys)}}}")
    fns = [fn for _, fn in pairs]
    for fn in fns + ([default] if default is not None else []):
        if not callable(fn):
            raise TypeError(f"branch_fns: every branch must be callable, got {fn!r}")
    return fns


def switch_case(branch_index, branch_fns, default=None, name=None):
    """``branch_fns[branch_index]()``; an index out of range runs ``default`` (the last branch when None)."""
    # TensorFlow takes a tensor only (a Python or NumPy int is a TypeError), of an integer dtype.
    if not isinstance(branch_index, Tensor):
        raise TypeError(f"'branch_index' must be a Tensor, got {type(branch_index)}")
    if not branch_index.dtype.is_integer:
        raise TypeError(f"'branch_index' must be an integer Tensor, got {branch_index.dtype!r}")
    fns = _branch_list(branch_fns, default)
    if default is not None:
        fns = fns + [default]
    if not _C.in_trace():
        index = int(branch_index)
        if not 0 <= index < len(fns) - (default is not None):
            index = len(fns) - 1
        return fns[index]()
    if branch_index.dtype != dtypes.int32:  # the Case op takes int32, as TensorFlow's
        branch_index = _C.op("Cast")(branch_index, dtypes.int32)
    if branch_index.shape.rank not in (None, 0):
        raise ValueError(f"switch_case: branch_index must be a scalar, got shape {branch_index.shape}")
    base = name or "switch_case"
    branches = [_trace(lambda _, f=f: f(), f"{base}_branch{i}") for i, f in enumerate(fns)]
    _check_branch_outputs(branches, [f"branch {i}" for i in range(len(fns))], "tf.switch_case")
    order = _union_of_lifted(branches)
    functions = [b.finish(order) for b in branches]
    if not branch_index._is_symbolic:
        index = int(branch_index)
        flat = _call(functions[index if 0 <= index < len(functions) else -1], order)
    else:
        op = _Case if any(_has_state(f) for f in functions) else _StatelessCase
        flat = _as_list(op(branch_index, order, ",".join(f.library_name for f in functions)))
    return _repack(branches[0], flat)


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The function of the first pair whose predicate is true, else ``default`` (when None, the last pair's
    function runs when no earlier predicate holds), as ``tf.case``."""
    if isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    if not isinstance(pred_fn_pairs, (list, tuple)):
        raise TypeError("pred_fn_pairs must be a list or a tuple")
    if not pred_fn_pairs:
        raise ValueError("case: pred_fn_pairs must not be empty")
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("Each entry in pred_fn_pairs must be a 2-tuple")
        if not callable(pair[1]):
            raise TypeError("fn for pred %s must be callable." % pair[0])
    pairs = list(pred_fn_pairs)
    if default is None:
        # TensorFlow runs the last pair's function when no earlier predicate holds, after checking its own.
        last_pred, last_fn = pairs[-1]
        pairs = pairs[:-1]

        all_preds = [p for p, _ in pred_fn_pairs]

        def default():
            if not _C.in_trace() and not _truth(last_pred, "case"):
                from ember import errors

                raise errors.InvalidArgumentError(None, None, "case: none of the conditions evaluated as True")
            if _C.in_trace():  # staged, TensorFlow checks the last predicate with an Assert
                from ember import debugging
                from ember.ops import array_ops

                debugging.Assert(convert_to_tensor(last_pred), [
                    "Input error: None of conditions evaluated as True:",
                    array_ops.stack([convert_to_tensor(p) for p in all_preds])])
            return last_fn()
    if exclusive and len(pairs) > 1:
        from ember.ops import math_ops

        preds = [convert_to_tensor(p) for p, _ in pairs]
        count = math_ops.add_n([math_ops.cast(p, dtypes.int32) for p in preds])
        if not _C.in_trace() and int(count) > 1:
            from ember import errors

            raise errors.InvalidArgumentError(
                None, None, f"case: more than one condition evaluated as True but exclusive=True "
                f"({int(count)} of {len(preds)})")
        if _C.in_trace():
            from ember import debugging
            from ember.ops import array_ops

            debugging.Assert(math_ops.less_equal(count, 1), [
                "Input error: exclusive=True: more than 1 conditions evaluated as True:", array_ops.stack(preds)])
    if not _C.in_trace():
        for pred, fn in pairs:
            if _truth(pred, "case"):
                return fn()
        return default()

    def chain(k):
        if k == len(pairs):
            return default()
        pred, fn = pairs[k]
        return cond(pred, fn, lambda: chain(k + 1), name=f"{name}_{k}")

    return chain(0)


# ---- while_loop


def _invariant_shape(invariant, what):
    if invariant is None:
        return None
    shape = invariant if isinstance(invariant, TensorShape) else TensorShape(invariant)
    return None if shape.rank is None else tuple(shape.as_list())


def _no_less_specific(out_shape, invariant):
    """Whether a body result of ``out_shape`` fits the loop variable's invariant (no dimension the invariant
    fixes may vary or be unknown)."""
    if invariant is None:
        return True
    if out_shape is None or len(out_shape) != len(invariant):
        return False
    return all(i is None or o == i for o, i in zip(out_shape, invariant))


def _shape_str(shape):
    if shape is None:
        return "<unknown>"
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,
               swap_memory=False, maximum_iterations=None, name=None):
    """Repeats ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``; returns the final loop variables
    in the structure of ``loop_vars``."""
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if not isinstance(parallel_iterations, int) or parallel_iterations < 1:
        raise TypeError("'parallel_iterations' must be a positive integer.")
    if loop_vars is None or (isinstance(loop_vars, (list, tuple)) and not loop_vars):
        raise ValueError("'loop_vars' must be provided.")
    if any(getattr(v, "_ember_composite", False) for v in nest.flatten(loop_vars)):
        # A TensorArray loop variable travels as its tensors: Note [TensorArray loop variables].
        from ember.ops import tensor_array_ops

        return tensor_array_ops.composite_while_loop(while_loop, cond, body, loop_vars, shape_invariants,
                                                     parallel_iterations, maximum_iterations, name)
    single = not isinstance(loop_vars, (list, tuple, dict))
    structure = [loop_vars] if single else loop_vars
    flat_in = [convert_to_tensor(v) for v in nest.flatten(structure)]
    packed = nest.pack_sequence_as(structure, flat_in)

    def call_body(values):
        out = body(*values) if not isinstance(values, dict) else body(**values)
        # A loop over one variable may return it bare (TensorFlow wraps it).
        if isinstance(values, (list, tuple)) and len(values) == 1 and not isinstance(out, (list, tuple)):
            out = type(values)([out]) if not hasattr(type(values), "_fields") else type(values)(out)
        return out

    def call_cond(values):
        return cond(*values) if not isinstance(values, dict) else cond(**values)

    if not _C.in_trace():
        values = packed
        iteration = 0
        while maximum_iterations is None or iteration < int(maximum_iterations):
            if not _truth(call_cond(values), "while_loop"):
                break
            out = call_body(values)
            _check_loop_structure(structure, out)
            # Eagerly the loop variables take the body's containers, as in TensorFlow.
            values = nest.pack_sequence_as(out, [convert_to_tensor(v) for v in nest.flatten(out)])
            iteration += 1
        return values[0] if single else values

    if shape_invariants is not None:
        invariants_in = [shape_invariants] if single else shape_invariants
        try:
            nest.assert_same_structure(structure, invariants_in, check_types=False)
            invariants = [_invariant_shape(s, "shape_invariants") for s in nest.flatten(invariants_in)]
        except (ValueError, TypeError):
            if not single and len(flat_in) == 1 and not isinstance(shape_invariants, (list, tuple)):
                invariants = [_invariant_shape(shape_invariants, "shape_invariants")]
            else:
                raise ValueError(f"while_loop: shape_invariants must have the structure of loop_vars "
                                 f"{_describe(structure)}, got {shape_invariants!r}") from None
    else:
        invariants = [t._shape_tuple for t in flat_in]
    for t, invariant in zip(flat_in, invariants):
        if invariant is not None and not TensorShape(invariant).is_compatible_with(t.shape):
            raise ValueError(f"The shape invariant specified for {_C.symbolic_name(t) or 'a loop variable'} is not "
                             f"compatible with the initial shape of the loop variable. It enters the loop with "
                             f"shape {t.shape}, but the specified shape invariant is {TensorShape(invariant)}.")

    counted = maximum_iterations is not None
    if counted:
        limit = convert_to_tensor(maximum_iterations)
        if limit.dtype not in (dtypes.int32, dtypes.int64) or limit.shape.rank not in (None, 0):
            raise ValueError(f"while_loop: maximum_iterations must be an int32 or int64 scalar, got "
                             f"{limit.dtype.name} of shape {limit.shape}")
        from ember.ops import math_ops

        counter = convert_to_tensor(0, dtype=limit.dtype)
    arg_specs = ([(counter._dtype_enum, ())] if counted else []) + \
        [(t._dtype_enum, inv) for t, inv in zip(flat_in, invariants)]
    arg_names = (["iteration"] if counted else []) + [f"loop_var_{i}" for i in range(len(flat_in))]
    base = name or "while"

    def cond_fn(placeholders):
        values = nest.pack_sequence_as(structure, placeholders[1:] if counted else placeholders)
        result = convert_to_tensor(call_cond(values))
        if result.dtype != dtypes.bool or result.shape.rank not in (None, 0):
            from ember import errors

            raise errors.InvalidArgumentError(None, None, f"while_loop: cond must return a boolean scalar, got {result.dtype.name} of shape "
                            f"{result.shape}")
        if counted:
            result = math_ops.logical_and(math_ops.less(placeholders[0], limit), result)
        return result

    def body_fn(placeholders):
        values = nest.pack_sequence_as(structure, placeholders[1:] if counted else placeholders)
        out = call_body(values)
        _check_loop_structure(structure, out)
        flat_out = [convert_to_tensor(v, dtype_hint=t.dtype) for v, t in zip(nest.flatten(out), flat_in)]
        for t, o, invariant in zip(flat_in, flat_out, invariants):
            if o.dtype != t.dtype:
                raise TypeError(f"Loop var {_C.symbolic_name(t) or 'loop variable'} enters the loop with type "
                                f"{t.dtype!r} but has type {o.dtype!r} after 1 iteration. The type should "
                                f"remain constant.")
            if not _no_less_specific(o._shape_tuple, invariant):
                raise ValueError(f"Input tensor `{_C.symbolic_name(t) or 'loop variable'}` enters the loop with "
                                 f"shape {_shape_str(invariant)}, but has shape {_shape_str(o._shape_tuple)} after "
                                 f"one iteration. To allow the shape to vary across iterations, use the "
                                 f"`shape_invariants` argument of tf.while_loop to specify a less-specific "
                                 f"shape.")
        if counted:
            flat_out = [math_ops.add(placeholders[0], convert_to_tensor(1, dtype=limit.dtype))] + flat_out
        return flat_out

    cond_traced = _trace(cond_fn, f"{base}_cond", arg_specs, arg_names)
    body_traced = _trace(body_fn, f"{base}_body", arg_specs, arg_names)
    order = _union_of_lifted([cond_traced, body_traced])
    cond_function = cond_traced.finish(order)
    passed_through = [body_traced.trace.lift(t) for t in order]
    body_function = body_traced.finish(order, passed_through)
    op = _While if _has_state(cond_function) or _has_state(body_function) else _StatelessWhile
    inputs = ([counter] if counted else []) + flat_in + order
    outs = _as_list(op(inputs, cond_function.library_name, body_function.library_name, parallel_iterations))
    flat = outs[1:1 + len(flat_in)] if counted else outs[:len(flat_in)]
    result = nest.pack_sequence_as(structure, flat)
    return result[0] if single else result


def _check_loop_structure(structure, out):
    try:
        nest.assert_same_structure(structure, out, check_types=False)
    except ValueError as e:
        raise ValueError(f"while_loop: the body must return the structure of loop_vars. {e}") from None


# ---- grouping: tf.group, tf.no_op, tf.tuple ------------------------------------------------------------
# TensorFlow returns an Operation from group/no_op in a graph (None eagerly) so that a Session could run it
# or later ops could wait on it. In ember's functions every stateful op already runs, in program order
# (automatic control dependencies), and nothing runs an Operation by hand, so these return None in both
# modes, as TF 2 code eagerly receives them. Their arguments are still checked.


def no_op(name=None):
    return None


def group(*inputs, **kwargs):
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"group: unknown keyword arguments {sorted(kwargs)}")
    del name
    nest.flatten(inputs)
    return None


def tuple_(tensors, name=None, control_inputs=None):
    """``tf.tuple`` (named so here to leave this module the builtin ``tuple``): the tensors, each through an Identity, once all of them (and control_inputs) are computed: in ember
    that is every identity's own data dependency, since stateful control inputs run in program order."""
    if control_inputs is not None:
        nest.flatten(control_inputs)
    from ember.ops.array_ops import identity

    return [None if t is None else identity(t) for t in tensors]
