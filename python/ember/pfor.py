"""Vectorised backward passes for ``GradientTape.jacobian`` and ``batch_jacobian``.

A jacobian needs the tape's backward pass once per element of the target, each time seeded with a
one-hot output gradient. The backward pass is linear in its seed, and every pass runs the same ops, so
the passes can run as one: trace the backward pass once as a function of a symbolic seed, then evaluate
that graph with a *batch* of seeds, each op rewritten to carry a leading batch dimension of n (the
seeds' parallel-for, TensorFlow's pfor). See Note [Vectorising a backward graph].

``vectorized_gradients(tape, target, sources, seeds)`` returns, for each source, the gradients for all
seeds stacked on a new leading dimension (or None where the source is unconnected), or raises
``Unbatchable`` saying which node has no batching rule; the caller then runs its loop instead.

Note [Vectorising a backward graph]
Each value of the traced graph is either *invariant* (it does not depend on the seed: a capture of a
tensor the tape saved, a constant, or anything computed from those only) or *batched* (it depends on
the seed and so gets a leading dimension n). Invariant values are computed once, by one call of the
graph pruned to them; batched ones are computed node by node, eagerly, by the op's batching rule below,
from batched and invariant inputs. A rule receives per-example shapes (the traced graph's static
shapes) and must give an output of [n] + the traced shape; anything else (a node without a rule, a
rule's precondition not met, an unknown rank) raises ``Unbatchable``. Only the nodes that the results
need are evaluated. See Note [Batching with unknown dimensions] for graphs traced with None dimensions.

Broadcasting: a batched operand [n] + s of rank r among operands of rank up to R is reshaped to
[n] + [1] * (R - r) + s, so that trailing-aligned broadcasting against invariant operands (which keep
their own shapes) means what it meant per example.

Under another recording tape the vectorised path is not used: tracing folds eager computations into
constants of the graph, which would cut the outer tape's view of them (so nested jacobians for higher
derivatives take the loop, whose eager ops the outer tape records).

Note [Batching with unknown dimensions]
Inside an ember.function traced with None dimensions the backward graph has unknown dimensions too, its
shape operands (Reshape's shape, Sum's axis, Tile's multiples, ...) are computed from Shape ops of the
forward values, and a jacobian of a target of unknown size has an unknown number of seeds n. Then the
rules build their operands in the graph: a shape operand that is not known now (a symbolic tensor) gets
the batch dimension prepended by a concatenation, an axis is moved past the batch dimension by
floormod(axis, rank) + 1, and an unknown per-example shape is read by Shape of the value. Only the rank
must be known. Where every shape and operand is known (eager execution, static functions), the rules give
Python lists exactly as before, so a static program builds the same graph. Constants of the backward
graph are read from the node (its value attribute) instead of being fetched through the pruned graph, so
that an ember.function's constant shape operands stay readable while it traces.
"""
import numpy as np

from ember import _C, dtypes
from ember.framework.tensor import convert_to_tensor


class Unbatchable(Exception):
    """The backward graph has a node the vectoriser cannot batch (the caller falls back to its loop)."""


_ops = {}


def _op(name):
    fn = _ops.get(name)
    if fn is None:
        fn = _ops[name] = _C.op(name)
    return fn


# ---- tracing the backward pass


def _trace_backward(tape, target, sources):
    """The tape's gradient of target w.r.t. sources as a graph function of a seed shaped like target.
    Returns (graph function, for each source the index of its result or None)."""
    dims = tuple(target.shape.as_list())
    trace = _C.Trace("jacobian_backward", True)
    seed = trace.add_argument(target._dtype_enum, dims, "seed")
    trace.enter()
    try:
        grads = tape._gradient_again([target], sources, [seed])
    finally:
        trace.exit()
    results, where = [], []
    for g in grads:
        where.append(None if g is None else len(results))
        if g is not None:
            results.append(g)
    return trace.finish(results), where


# ---- attributes (read back from the graph's printed form)


def _split_top(text):
    """'a=[1,2], b="x, y"' -> ['a=[1,2]', 'b="x, y"']: commas outside brackets and quotes."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, c in enumerate(text):
        if c == '"':
            quoted = not quoted
        elif not quoted and c in "[<":
            depth += 1
        elif not quoted and c in "]>":
            depth -= 1
        elif not quoted and depth == 0 and c == ",":
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def _attr_value(text):
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"'):
        return text[1:-1]
    if text.startswith("["):
        inner = text[1:-1].strip()
        return [int(v) for v in inner.split(",")] if inner else []
    if text.startswith("<"):
        return None  # a tensor: not readable here
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)  # printed with six significant digits: only exact for a few values, such as 0
    except ValueError:
        pass
    try:
        return dtypes.as_dtype(text)
    except (TypeError, ValueError):
        return text


def _from_graph_value(value):
    """An attribute value as the node dict gives it: dtypes arrive as enum numbers only for dtype attrs, so
    the rules that read one convert it themselves (see _dtype_attr)."""
    return value


def _parse_attrs(text):
    text = text.strip()[1:-1]
    attrs = {}
    for part in _split_top(text):
        name, _, value = part.partition("=")
        attrs[name] = _attr_value(value)
    return attrs


# ---- the vectoriser


class _Node:
    __slots__ = ("index", "type", "inputs", "out_shapes", "_attr_text", "_attrs", "_values")

    def __init__(self, index, info):
        self.index = index
        self.type = info["type"]
        self.inputs = [tuple(v) for v in info["inputs"]]
        self.out_shapes = [None if s is None else list(s) for _, s in info["outputs"]]
        self._attr_text = info["attrs"]
        self._attrs = None
        self._values = info.get("attr_values")

    @property
    def attrs(self):
        if self._attrs is None:
            if self._values is not None:
                self._attrs = {k: _from_graph_value(v) for k, v in self._values.items()}
            else:
                self._attrs = _parse_attrs(self._attr_text)
        return self._attrs


def _known_rank(shape, what):
    if shape is None:
        raise Unbatchable(f"{what}: the rank is not known")
    return shape


def _compatible(got, expected):
    return len(got) == len(expected) and all(a is None or b is None or a == b for a, b in zip(got, expected))


class _Vectorizer:
    """Batches gf over n examples. By default gf's first argument is the batched seed (seeds) and its other
    arguments are its lifted captures; a called function's vectorizer (call_args: one _In per argument the
    call passes, user arguments and lifted captures) takes its arguments from the call instead."""

    def __init__(self, gf, seeds, n, call_args=None):
        self.gf = gf
        self.n = n
        self.nodes = {}
        self.values = {}  # (node, output) -> tensor (batched: [n] + shape)
        self.batched = set()  # (node, output) that carry the leading n
        args = list(gf.args)
        self.batched_args, self.arg_values = {}, {}  # arg node -> value
        if call_args is None:
            self.batched_args[args[0]] = seeds
            for k, value in enumerate(gf.lifted_captures):
                self.arg_values[args[gf.num_user_args + k]] = value
        else:
            for arg, x in zip(args, call_args):
                (self.batched_args if x.batched else self.arg_values)[arg] = x.value
        captured = list(gf.captured_values)
        for k, value in enumerate(captured):
            self.arg_values[args[len(args) - len(captured) + k]] = value

    def node(self, i):
        node = self.nodes.get(i)
        if node is None:
            node = self.nodes[i] = _Node(i, self.gf.node(i))
        return node

    def shape_of(self, ref):
        return self.node(ref[0]).out_shapes[ref[1]]

    def run(self):
        gf = self.gf
        results = [tuple(r) for r in gf.results]
        needed = self._needed(results)
        self.batched_nodes = self._batched_nodes(needed)
        self._invariant_values(needed, results)
        for arg, value in self.batched_args.items():
            if arg in needed:
                self.values[(arg, 0)] = value
                self.batched.add((arg, 0))
        for i in sorted(needed):
            if i in self.batched_nodes and i not in self.batched_args:
                self._batch_node(self.node(i))
        out = []
        for ref in results:
            value = self.values[ref]
            if ref not in self.batched:
                value = _broadcast_batch(value, self.n, self.shape_of(ref))
            out.append(value)
        return out

    def _needed(self, results):
        needed, stack = set(), [r[0] for r in results]
        while stack:
            i = stack.pop()
            if i in needed:
                continue
            needed.add(i)
            stack.extend(src for src, _ in self.node(i).inputs)
        return needed

    def _batched_nodes(self, needed):
        batched = set(self.batched_args)
        for i in sorted(needed):
            if any(src in batched for src, _ in self.node(i).inputs):
                batched.add(i)
        return batched & needed

    def _invariant_values(self, needed, results):
        """Computes, in one call of the pruned graph, the invariant values that batched nodes or results use."""
        gf = self.gf
        arg_values = self.arg_values
        wanted = []
        for i in sorted(self.batched_nodes):
            wanted.extend(ref for ref in self.node(i).inputs if ref[0] not in self.batched_nodes)
        wanted.extend(ref for ref in results if ref[0] not in self.batched_nodes)
        computed = []
        for ref in dict.fromkeys(wanted):
            if ref[0] in arg_values:
                self.values[ref] = arg_values[ref[0]]
            elif self.node(ref[0]).type == "Const" and self.node(ref[0])._values:
                self.values[ref] = self.node(ref[0])._values["value"]  # Note [Batching with unknown dimensions]
            elif self.node(ref[0]).type == "Placeholder":
                raise Unbatchable("the graph has an argument that is neither batched, passed nor a capture")
            else:
                computed.append(ref)
        if not computed:
            return
        # The invariant part runs once instead of once per seed: fine for pure ops only.
        stateful = [self.node(i).type for i in needed - self.batched_nodes
                    if self.node(i).type not in ("Placeholder", "ReadVariableOp")
                    and _C.op_info(self.node(i).type)["stateful"]]
        if stateful:
            raise Unbatchable(f"the backward graph has stateful ops {sorted(set(stateful))}")
        feeds = [a for a in gf.args if a in arg_values]
        feed_names = [f"{gf.node(i)['name']}:0" for i in feeds]
        fetch_names = [f"{gf.node(i)['name']}:{k}" for i, k in computed]
        pruned = gf.prune(feed_names, fetch_names)
        inputs = [arg_values[a] for a in feeds]
        if _C.in_trace():
            out = _op("PartitionedCall")(inputs, pruned.library_name)
            out = list(out) if isinstance(out, (list, tuple)) else [out]
        else:
            out = pruned(inputs)
        self._keep_alive = pruned  # the graph library holds functions weakly
        for ref, value in zip(computed, out):
            self.values[ref] = value

    def _batch_node(self, node):
        ins = [_In(self.values[ref], ref in self.batched, self.shape_of(ref)) for ref in node.inputs]
        if not any(x.batched for x in ins):
            # Its inputs depend on the seed only through their shapes (a Shape rule's result), which every
            # example shares: the op runs once, as it is.
            self._run_once(node, ins)
            return
        rule = rule_for(node.type)
        try:
            outs = rule(node, ins, self.n)
        except Unbatchable as e:
            raise Unbatchable(f"{node.type}: {e}") from None
        except Exception as e:  # a rule that does not fit this node: the loop gives the answer (or the error)
            raise Unbatchable(f"{node.type}: the batching rule failed: {type(e).__name__}: {e}") from None
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        if len(outs) != len(node.out_shapes):
            raise Unbatchable(f"{node.type}: the rule gave {len(outs)} outputs, the node has "
                              f"{len(node.out_shapes)}")
        n = self.n if isinstance(self.n, int) else None
        for k, (value, shape) in enumerate(zip(outs, node.out_shapes)):
            batched = not isinstance(value, _Invariant)
            value = value if batched else value.value
            got = value.shape.as_list() if value.shape.rank is not None else None
            if shape is not None:  # an unknown rank in the traced graph: any result fits
                expected = ([n] if batched else []) + shape
                if got is None or not _compatible(got, expected):
                    raise Unbatchable(f"{node.type}: the rule gave {got}, expected {expected}")
            self.values[(node.index, k)] = value
            if batched:
                self.batched.add((node.index, k))

    def _run_once(self, node, ins):
        info = _C.op_info(node.type)
        if info["stateful"]:
            raise Unbatchable(f"{node.type} is stateful")
        attrs = node.attrs
        args = [x.value for x in ins]
        if len(info["inputs"]) == 1 and len(ins) != 1:  # one variadic input (AddN, Pack)
            args = [args]
        try:
            out = _op(node.type)(*args, *[attrs[a] for a in info["attrs"]])
        except Exception as e:
            raise Unbatchable(f"{node.type}: running it once failed: {type(e).__name__}: {e}") from None
        for k, value in enumerate(out if isinstance(out, (list, tuple)) else [out]):
            self.values[(node.index, k)] = value


class _In:
    """One input of a node being batched: its value, whether it is batched, its per-example shape (None where
    even the rank is unknown: only a rule that needs the rank then fails)."""

    __slots__ = ("value", "batched", "shape")

    def __init__(self, value, batched, shape):
        self.value = value
        self.batched = batched
        self.shape = shape

    @property
    def rank(self):
        return len(_known_rank(self.shape, "an input"))

    @property
    def static(self):
        return self.shape is not None and all(d is not None for d in self.shape)


class _Invariant:
    """A rule's output that every example shares (no leading n): the per-example shape of a batched value."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def vectorized_gradients(tape, target, sources, seeds):
    """The tape's gradients of target w.r.t. sources for each of the n seeds ([n] + target.shape), stacked:
    for each source [n] + source.shape, or None if unconnected. Raises Unbatchable where the backward graph
    cannot be batched."""
    if _C.recording_active():
        raise Unbatchable("another tape is recording (see Note [Vectorising a backward graph])")
    try:
        gf, where = _trace_backward(tape, target, sources)
    except Exception as e:  # e.g. a custom gradient that needs concrete values; the loop runs it eagerly
        raise Unbatchable(f"tracing the backward pass failed: {type(e).__name__}: {e}") from None
    if not gf.results:
        return [None] * len(sources)
    n = seeds.shape.as_list()[0]
    if n is None:  # a target of unknown size inside a function: Note [Batching with unknown dimensions]
        n = _shape_part(seeds, 0, 1, scalar=True)
    batched = _Vectorizer(gf, seeds, n).run()
    return [None if k is None else batched[k] for k in where]


# ---- helpers for the rules


def _ints(x, what):
    """The value of an invariant shape-like operand (an axis list, a shape, a permutation) as ints."""
    values = _int_operand(x, what)
    if not isinstance(values, list):
        raise Unbatchable(f"{what} is computed in the graph; this rule needs it known while tracing")
    return values


def _int_operand(x, what):
    """An invariant shape-like operand as ints where its value is known now, else its (symbolic) tensor."""
    if x.batched:
        raise Unbatchable(f"{what} differs between examples")
    if x.value._is_symbolic:
        return x.value
    return [int(v) for v in np.asarray(x.value.numpy()).reshape(-1)]


def _static(parts):
    return all(type(v) is int for p in parts for v in p)


def _vec(*parts):
    """An int vector from parts, each a list of ints and scalar int tensors or an int vector tensor: a Python
    list where every part is ints (the static path), else an int32 tensor computed in the graph."""
    if all(isinstance(p, list) for p in parts) and _static(parts):
        return [v for p in parts for v in p]
    from ember.ops import array_ops

    tensors = []
    for p in parts:
        if isinstance(p, list):
            if not p:
                continue
            p = array_ops._pack_ints(p, "pfor", "shape")
        if p.dtype != dtypes.int32:
            p = _op("Cast")(p, dtypes.int32)
        tensors.append(p)
    return array_ops.concat(tensors, 0) if len(tensors) > 1 else tensors[0]


def _shape_part(value, begin, end, scalar=False, out_type=dtypes.int32):
    """Shape(value)[begin:end] (end None: to the end), computed in the graph; with scalar, Shape(value)[begin]."""
    shape = _op("Shape")(value, out_type)
    end_mask = 1 if end is None else 0
    return _op("StridedSlice")(shape, [begin], [0 if end is None else end], [1], 0, end_mask, 0, 0,
                               1 if scalar else 0)


def _dims(x):
    """The per-example shape of an input: a list where known, else computed from the value."""
    if x.static:
        return list(x.shape)
    return _shape_part(x.value, 1 if x.batched else 0, None)


def _lead(n):
    """The batch dimension in a reshape whose other dimensions are known: n, or -1 where n is a tensor."""
    return n if isinstance(n, int) else -1


def _broadcast_batch(value, n, shape):
    """An invariant value repeated n times: [n] + shape."""
    if isinstance(n, int) and shape is not None and all(d is not None for d in shape):
        return _op("BroadcastTo")(_op("Reshape")(value, [1] + shape), [n] + shape)
    return _op("BroadcastTo")(_op("ExpandDims")(value, 0), _vec([n], _shape_part(value, 0, None)))


def _align(x, rank, n):
    """A batched input as [n] + [1] * (rank - x.rank) + shape: per-example broadcasting against rank."""
    if not x.batched or x.rank >= rank:
        return x.value
    if x.static:
        return _op("Reshape")(x.value, [_lead(n)] + [1] * (rank - x.rank) + x.shape)
    return _op("Reshape")(x.value, _vec(_shape_part(x.value, 0, 1), [1] * (rank - x.rank), _dims(x)))


def _full(x, n):
    """A value as batched, [n] + shape (invariant values repeated)."""
    return x.value if x.batched else _broadcast_batch(x.value, n, x.shape)


def _axes(x, rank, what):
    """Axes of the per-example value (an invariant operand) as axes of the batched one: ints where known,
    else floormod(axis, rank) + 1 computed in the graph. An axis out of range per example becomes rank + 1,
    out of range for the batched op too, so that it fails there as it would have rather than wrapping."""
    values = _int_operand(x, what)
    if isinstance(values, list):
        return [_axis(a, rank) for a in values]
    if rank == 0:
        raise Unbatchable(f"{what} of a scalar is computed in the graph")
    t = values

    def const(v):
        return convert_to_tensor(v, dtype=t.dtype)

    valid = _op("LogicalAnd")(_op("GreaterEqual")(t, const(-rank)), _op("Less")(t, const(rank)))
    shifted = _op("Add")(_op("FloorMod")(t, const(rank)), const(1))
    return _op("SelectV2")(valid, shifted, const(rank + 1))


def _scalar_axis(x, rank, what):
    axes = _axes(x, rank, what)
    return axes[0] if isinstance(axes, list) else _op("Reshape")(axes, [])


def _axis(axis, rank):
    """An axis of the per-example value (negative counts from the end) as an axis of the batched one."""
    if not -rank <= axis < max(rank, 1):
        raise Unbatchable(f"axis {axis} is out of range for rank {rank}")
    return (axis % rank if rank else 0) + 1


def _only_first_batched(ins):
    if not ins[0].batched or any(x.batched for x in ins[1:]):
        raise Unbatchable("only the first input may depend on the seed")


# ---- the batching rules: node, inputs (_In), n -> output value(s) with the leading n
#
# Each op's registry row declares how it batches (OpDef::batching, _C.op_info(op)["batching"]): the kinds
# below are rules shared by every op that declares them; "custom" ops have their own rule here, keyed by the
# op's name; "fallback" ops have none (the jacobian runs its loop). The registry test fails for a row that
# declares nothing.


def _elementwise(node, ins, n):
    """A map over elements: the batch dimension is one more dimension to map over."""
    return _op(node.type)(ins[0].value)


def _broadcasting(node, ins, n):
    """Operands aligned to one rank behind the batch dimension, so that broadcasting means what it meant per
    example."""
    rank = max(x.rank for x in ins)
    return _op(node.type)(*[_align(x, rank, n) for x in ins])


_KIND_RULES = {"elementwise": _elementwise, "broadcasting": _broadcasting}
_CUSTOM = {}
_kinds = {}


def batching_kind(op_type):
    kind = _kinds.get(op_type)
    if kind is None:
        kind = _kinds[op_type] = _C.op_info(op_type)["batching"]
    return kind


def rule_for(op_type):
    """The batching rule for an op type; raises Unbatchable where there is none."""
    kind = batching_kind(op_type)
    rule = _KIND_RULES.get(kind)
    if rule is None and kind == "custom":
        rule = _CUSTOM.get(op_type)
    if rule is None:
        raise Unbatchable(f"no batching rule for {op_type} (its registry row declares {kind!r})")
    return rule


def _rule(*names):
    def register(fn):
        for name in names:
            _CUSTOM[name] = fn
        return fn

    return register




@_rule("Shape")
def _shape(node, ins, n):
    return _Invariant(_shape_part(ins[0].value, 1, None, out_type=node.attrs["out_type"]))


@_rule("Size")
def _size(node, ins, n):
    per_example = _op("Prod")(_shape_part(ins[0].value, 1, None, out_type=node.attrs["out_type"]), [0], False)
    return _Invariant(per_example)


@_rule("PartitionedCall")
def _call(node, ins, n):
    """The callee vectorised with the call's arguments, node by node as the caller is."""
    callee = _C.library_function(node.attrs["f"])
    if callee is None:
        raise Unbatchable(f"the function {node.attrs['f']} is no longer in the library")
    if len(ins) != len(callee.args) - len(callee.captured_values):
        raise Unbatchable(f"the call passes {len(ins)} arguments, {node.attrs['f']} takes "
                          f"{len(callee.args) - len(callee.captured_values)}")
    inner = _Vectorizer(callee, None, n, call_args=ins)
    try:
        return inner.run()
    except Unbatchable as e:
        raise Unbatchable(f"in {node.attrs['f']}: {e}") from None


@_rule("Cast")
def _cast(node, ins, n):
    return _op("Cast")(ins[0].value, node.attrs["DstT"])


@_rule("ClipByValue")
def _clip(node, ins, n):
    t = ins[0]
    if not t.batched:
        # The bounds depend on the seed but the clipped value does not: broadcast it first.
        t = _In(_full(t, n), True, t.shape)
    return _op("ClipByValue")(t.value, *[_align(x, t.rank, n) for x in ins[1:]])


@_rule("AddN")
def _add_n(node, ins, n):
    return _op("AddN")([_full(x, n) for x in ins])


@_rule("BiasAdd")
def _bias_add(node, ins, n):
    value, bias = ins
    if node.attrs.get("data_format", "NHWC") not in ("NHWC", "NDHWC", "N...C"):
        raise Unbatchable(f"data_format {node.attrs['data_format']}")
    if not bias.batched:
        return _op("BiasAdd")(value.value, bias.value, node.attrs["data_format"])
    return _op("Add")(_align(value, value.rank, n), _align(bias, value.rank, n))


@_rule("BiasAddGrad")
def _bias_add_grad(node, ins, n):
    # Each iteration's out_backprop summed over all its dimensions but the channel one: the batch axis 0
    # stays, and the channel is 1 + (1 for NCHW, else the last).
    dy = ins[0]
    rank = dy.rank  # the per-iteration rank
    channel = 1 if node.attrs.get("data_format", "NHWC") == "NCHW" else rank - 1
    axes = [1 + d for d in range(rank) if d != channel]
    return _op("Sum")(dy.value, axes, False)


@_rule("Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ReduceLogSumExp")
def _reduce(node, ins, n):
    x = ins[0]
    return _op(node.type)(x.value, _axes(ins[1], x.rank, "axis"), node.attrs["keep_dims"])


@_rule("ArgMax", "ArgMin")
def _arg_reduce(node, ins, n):
    return _op(node.type)(ins[0].value, _scalar_axis(ins[1], ins[0].rank, "dimension"), node.attrs["output_type"])


@_rule("L2Loss")
def _l2_loss(node, ins, n):
    x = ins[0]
    total = _op("Sum")(_op("Square")(x.value), list(range(1, x.rank + 1)), False)
    return _op("Mul")(total, convert_to_tensor(0.5, dtype=x.value.dtype))


def _op_attrs(node):
    return [node.attrs[a] for a in _C.op_info(node.type)["attrs"]]


def _fold(x):
    """A batched [n, N, ...] value as [n * N, ...]."""
    return _op("Reshape")(x.value, _vec([-1], _shape_part(x.value, 2, None)))


def _unfold(out, x):
    """[n * N, ...] back to [n, N, ...], n and N taken from the batched input x."""
    return _op("Reshape")(out, _vec(_shape_part(x.value, 0, 2), _shape_part(out, 1, None)))


@_rule("Conv2D", "Conv3D", "DepthwiseConv2dNative", "MaxPool", "AvgPool", "MaxPool3D", "AvgPool3D", "LRN")
def _fold_into_batch(node, ins, n):
    """The examples folded into the op's own batch dimension (N): one call over n * N images. A filter that
    depends on the seed would be n different convolutions: no rule."""
    x = ins[0]
    if not x.batched or any(i.batched for i in ins[1:]):
        raise Unbatchable(f"{node.type}: only the input (not the filter) may depend on the seed")
    return _unfold(_op(node.type)(_fold(x), *[i.value for i in ins[1:]], *_op_attrs(node)), x)


@_rule("Conv2DBackpropInput", "Conv3DBackpropInputV2", "DepthwiseConv2dNativeBackpropInput", "AvgPoolGrad",
       "AvgPool3DGrad")
def _fold_backprop_input(node, ins, n):
    """The incoming gradient (the seed's path in a jacobian) folded into N, the input size's N scaled to n * N."""
    sizes, *middle, dy = ins
    if sizes.batched or any(m.batched for m in middle) or not dy.batched:
        raise Unbatchable(f"{node.type}: only the incoming gradient may depend on the seed")
    count = _op("Cast")(_shape_part(dy.value, 0, 1), sizes.value.dtype)
    folded_sizes = _op("ConcatV2")([_op("Mul")(_op("Slice")(sizes.value, [0], [1]), count),
                                    _op("Slice")(sizes.value, [1], [-1])], 0)
    return _unfold(_op(node.type)(folded_sizes, *[m.value for m in middle], _fold(dy), *_op_attrs(node)), dy)


@_rule("MaxPoolGrad", "MaxPool3DGrad", "MaxPoolGradGrad", "MaxPool3DGradGrad", "LRNGrad")
def _fold_all(node, ins, n):
    """Image-wise ops of several same-batch operands: the invariant ones repeated n times, then all folded."""
    batched = next((x for x in ins if x.batched), None)
    if batched is None:
        raise Unbatchable(f"{node.type}: no batched operand")
    full = [_In(_full(x, n), True, x.shape) for x in ins]
    return _unfold(_op(node.type)(*[_fold(x) for x in full], *_op_attrs(node)), batched)


@_rule("Softmax", "LogSoftmax")
def _softmax(node, ins, n):
    return _op(node.type)(ins[0].value, _axis(node.attrs["axis"], ins[0].rank))


@_rule("Cumsum", "Cumprod", "CumulativeLogsumexp")
def _cumulative(node, ins, n):
    a = node.attrs
    return _op(node.type)(ins[0].value, _scalar_axis(ins[1], ins[0].rank, "axis"), a["exclusive"], a["reverse"])


@_rule("MatMul")
def _matmul(node, ins, n):
    a, b = ins
    ta, tb = node.attrs["transpose_a"], node.attrs["transpose_b"]
    out_shape = node.out_shapes[0]
    if a.batched and not b.batched and b.rank == 2 and not ta:
        # Every example's rows at once: one [n * rows, k] x [k, m] product.
        if a.shape[-1] is None:
            rows = _op("Reshape")(a.value, _vec([-1], _shape_part(a.value, -1, None)))
        else:
            rows = _op("Reshape")(a.value, [-1, a.shape[-1]])
        product = _op("MatMul")(rows, b.value, False, tb)
        if isinstance(n, int) and all(d is not None for d in out_shape):
            return _op("Reshape")(product, [n] + out_shape)
        return _op("Reshape")(product, _vec(_shape_part(a.value, 0, -1), _shape_part(product, 1, None)))
    static = a.static and b.static and all(d is not None for d in out_shape) and isinstance(n, int)
    if b.batched and not a.batched and a.rank == 2 and b.rank == 2 and static:
        # Every example's columns at once: [m, k] x [k, n * cols].
        if tb:
            cols = _op("Reshape")(b.value, [-1, b.shape[-1]])  # [n * cols, k]
        else:
            cols = _op("Reshape")(_op("Transpose")(b.value, [1, 0, 2]), [b.shape[0], -1])  # [k, n * cols]
        product = _op("MatMul")(a.value, cols, ta, tb)  # [m, n * cols]
        product = _op("Reshape")(product, [out_shape[0], n, out_shape[1]])
        return _op("Transpose")(product, [1, 0, 2])
    if min(a.rank, b.rank) < 2:
        raise Unbatchable("operands of rank below 2")
    rank = max(a.rank, b.rank)
    return _op("MatMul")(_align(a, rank, n), _align(b, rank, n), ta, tb)


@_rule("Einsum")
def _einsum(node, ins, n):
    # A label the equation does not use names the examples: batched operands and the output gain it first
    # (a batch label when both operands have it, a free one otherwise).
    equation = node.attrs["equation"]
    label = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba" if c not in equation)
    terms, output = equation.split("->")
    terms = [label + t if x.batched else t for t, x in zip(terms.split(","), ins)]
    return _op("Einsum")([x.value for x in ins], ",".join(terms) + "->" + label + output)


@_rule("MatrixDiagPartV3", "MatrixDiagV3")
def _matrix_diag(node, ins, n):
    # The diagonals (or matrices) are the innermost dims: the example dim is one more batch dim.
    _only_first_batched(ins)
    return _op(node.type)(*[x.value for x in ins], node.attrs["align"])


@_rule("Reshape")
def _reshape(node, ins, n):
    _only_first_batched(ins)
    if ins[1].batched:
        raise Unbatchable("the shape differs between examples")
    return _op("Reshape")(ins[0].value, _vec([n], _int_operand(ins[1], "shape")))


@_rule("Transpose")
def _transpose(node, ins, n):
    return _op("Transpose")(ins[0].value, _vec([0], _axes(ins[1], ins[0].rank, "perm")))


@_rule("ExpandDims")
def _expand_dims(node, ins, n):
    return _op("ExpandDims")(ins[0].value, _scalar_axis(ins[1], ins[0].rank + 1, "axis"))


@_rule("Squeeze")
def _squeeze(node, ins, n):
    x = ins[0]
    if not node.attrs["squeeze_dims"] and not x.static:
        raise Unbatchable("which dimensions to squeeze depends on unknown dimensions")
    dims = node.attrs["squeeze_dims"] or [i for i, d in enumerate(x.shape) if d == 1]
    return _op("Squeeze")(x.value, [_axis(d, x.rank) for d in dims])


@_rule("BroadcastTo")
def _broadcast_to(node, ins, n):
    shape = _int_operand(ins[1], "shape")
    rank = len(shape) if isinstance(shape, list) else ins[1].shape[0]
    if rank is None:
        raise Unbatchable("the length of the shape is not known")
    return _op("BroadcastTo")(_align(ins[0], rank, n), _vec([n], shape))


@_rule("Tile")
def _tile(node, ins, n):
    return _op("Tile")(ins[0].value, _vec([1], _int_operand(ins[1], "multiples")))


@_rule("Fill")
def _fill(node, ins, n):
    dims = _int_operand(ins[0], "dims")
    rank = len(dims) if isinstance(dims, list) else ins[0].shape[0]
    if rank is None:
        raise Unbatchable("the length of dims is not known")
    return _op("BroadcastTo")(_op("Reshape")(ins[1].value, [_lead(n)] + [1] * rank), _vec([n], dims))


@_rule("Slice")
def _slice(node, ins, n):
    return _op("Slice")(ins[0].value, _vec([0], _int_operand(ins[1], "begin")), _vec([-1], _int_operand(ins[2], "size")))


def _strided_spec(a, begin, end, strides):
    """StridedSlice's spec with a whole first dimension prepended (the masks shift by one bit)."""
    return (_vec([0], _int_operand(begin, "begin")), _vec([0], _int_operand(end, "end")),
            _vec([1], _int_operand(strides, "strides")),
            (a["begin_mask"] << 1) | 1, (a["end_mask"] << 1) | 1, a["ellipsis_mask"] << 1,
            a["new_axis_mask"] << 1, a["shrink_axis_mask"] << 1)


@_rule("StridedSlice")
def _strided_slice(node, ins, n):
    return _op("StridedSlice")(ins[0].value, *_strided_spec(node.attrs, *ins[1:4]))


@_rule("StridedSliceGrad")
def _strided_slice_grad(node, ins, n):
    begin, end, strides, *masks = _strided_spec(node.attrs, *ins[1:4])
    return _op("StridedSliceGrad")(_vec([n], _int_operand(ins[0], "shape")), begin, end, strides, ins[4].value, *masks)


@_rule("Pad")
def _pad(node, ins, n):
    # Float attributes print with six significant digits; zero (a gradient's padding) is the one value that
    # reads back exactly and is recognisable as such.
    if node.attrs["constant_value"] != 0:
        raise Unbatchable("a padding value other than 0 cannot be read back exactly")
    return _op("Pad")(ins[0].value, _paddings(ins[1]), 0.0, node.attrs["mode"])


@_rule("MirrorPadGrad")
def _mirror_pad_grad(node, ins, n):
    return _op("MirrorPadGrad")(ins[0].value, _paddings(ins[1]), node.attrs["mode"])


def _paddings(x):
    """The paddings with a row of zeros for the batch dimension prepended."""
    values = _int_operand(x, "paddings")
    if isinstance(values, list):
        return [[0, 0]] + [values[i:i + 2] for i in range(0, len(values), 2)]
    from ember.ops import array_ops

    rows = values if values.dtype == dtypes.int32 else _op("Cast")(values, dtypes.int32)
    return array_ops.concat([convert_to_tensor([[0, 0]], dtype=dtypes.int32), rows], 0)


@_rule("ConcatV2")
def _concat(node, ins, n):
    *values, axis = ins  # values..., axis: TensorFlow's signature
    return _op("ConcatV2")([_full(x, n) for x in values], _axis(_ints(axis, "axis")[0], values[0].rank))


@_rule("Pack")
def _pack(node, ins, n):
    return _op("Pack")([_full(x, n) for x in ins], _axis(node.attrs["axis"], ins[0].rank + 1))


@_rule("Unpack")
def _unpack(node, ins, n):
    out = _op("Unpack")(ins[0].value, node.attrs["num"], _axis(node.attrs["axis"], ins[0].rank))
    return list(out) if isinstance(out, tuple) else [out]


@_rule("SplitV")
def _split(node, ins, n):
    out = _op("SplitV")(ins[0].value, _ints(ins[1], "size_splits"), _axis(_ints(ins[2], "axis")[0], ins[0].rank))
    return list(out) if isinstance(out, tuple) else [out]


@_rule("GatherV2")
def _gather(node, ins, n):
    _only_first_batched(ins[:2])
    if node.attrs["batch_dims"] != 0:
        raise Unbatchable("batch_dims is not 0")
    return _op("GatherV2")(ins[0].value, ins[1].value, _scalar_axis(ins[2], ins[0].rank, "axis"), 0)


@_rule("TopKV2")
def _top_k(node, ins, n):
    # The op works on the last axis, which the batch dimension in front leaves where it was.
    _only_first_batched(ins)
    k = _int_operand(ins[1], "k")
    out = _op("TopKV2")(ins[0].value, k[0] if isinstance(k, list) else k, node.attrs["sorted"],
                        node.attrs["index_type"])
    return list(out)


@_rule("GatherNd")
def _gather_nd(node, ins, n):
    # Batched params, shared indices: the batch dimension moves behind the indexed ones, the gather leaves it
    # behind the tuples' leading dims, and it moves back to the front.
    _only_first_batched(ins)
    params, indices = ins
    depth = indices.shape[-1] if indices.shape is not None else None
    if depth is None or params.rank is None:
        raise Unbatchable("GatherNd: the index depth and the rank of params must be known")
    perm = list(range(1, depth + 1)) + [0] + list(range(depth + 1, params.rank + 1))
    out = _op("GatherNd")(_op("Transpose")(params.value, perm), indices.value)
    lead = indices.rank - 1
    return _op("Transpose")(out, [lead] + list(range(lead)) + list(range(lead + 1, lead + 1 + params.rank - depth)))


@_rule("ReverseV2")
def _reverse(node, ins, n):
    _only_first_batched(ins)
    return _op("ReverseV2")(ins[0].value, _axes(ins[1], ins[0].rank, "axis"))


@_rule("Roll")
def _roll(node, ins, n):
    _only_first_batched(ins)
    return _op("Roll")(ins[0].value, ins[1].value, _axes(ins[2], ins[0].rank, "axis"))


@_rule("TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub", "TensorScatterMin", "TensorScatterMax")
def _tensor_scatter(node, ins, n):
    # Shared indices: the batch dimension moves behind the indexed dims of tensor (a slice of each example
    # becomes a slice of n), and updates get it behind the tuples' leading dims, repeated where they are shared.
    tensor, indices, updates = ins
    if indices.batched or not tensor.batched and not updates.batched:
        raise Unbatchable(f"{node.type}: the indices differ between examples")
    depth = indices.shape[-1] if indices.shape is not None else None
    if depth is None or tensor.shape is None or updates.shape is None:
        raise Unbatchable(f"{node.type}: the index depth and the ranks must be known")
    rank, lead = tensor.rank, indices.rank - 1
    move = list(range(1, depth + 1)) + [0] + list(range(depth + 1, rank + 1))
    value = _op("Transpose")(_full(tensor, n), move)
    u = _full(updates, n)
    u = _op("Transpose")(u, list(range(1, lead + 1)) + [0] + list(range(lead + 1, updates.rank + 1)))
    out = _op(node.type)(value, indices.value, u)
    back = [depth] + list(range(depth)) + list(range(depth + 1, rank + 1))
    return _op("Transpose")(out, back)


@_rule("UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd")
def _unsorted_segment_sum(node, ins, n):
    _only_first_batched(ins)
    data, ids = ins[:2]
    k = ids.rank
    # Move the batch dimension behind the segmented ones: [s0..sk-1, n, rest] -> [segments, n, rest].
    perm = list(range(1, k + 1)) + [0] + list(range(k + 1, data.rank + 1))
    segments = _int_operand(ins[2], "num_segments")
    segments = segments[0] if isinstance(segments, list) else segments
    summed = _op(node.type)(_op("Transpose")(data.value, perm), ids.value, segments)
    rest = data.rank - k
    return _op("Transpose")(summed, [1, 0] + list(range(2, rest + 2)))
