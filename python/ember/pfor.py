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
rule's precondition not met, an unknown shape) raises ``Unbatchable``. Only the nodes that the results
need are evaluated.

Broadcasting: a batched operand [n] + s of rank r among operands of rank up to R is reshaped to
[n] + [1] * (R - r) + s, so that trailing-aligned broadcasting against invariant operands (which keep
their own shapes) means what it meant per example.

Under another recording tape the vectorised path is not used: tracing folds eager computations into
constants of the graph, which would cut the outer tape's view of them (so nested jacobians for higher
derivatives take the loop, whose eager ops the outer tape records).
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


def _known(shape, what):
    if shape is None or any(d is None for d in shape):
        raise Unbatchable(f"{what}: the shape {shape} is not fully known")
    return shape


class _Vectorizer:
    def __init__(self, gf, seeds, n):
        self.gf = gf
        self.n = n
        self.nodes = {}
        self.values = {}  # (node, output) -> tensor (batched: [n] + shape)
        self.batched = set()  # (node, output) that carry the leading n
        self.seeds = seeds

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
        seed_node = gf.args[0]
        self.batched_nodes = self._batched_nodes(needed, seed_node)
        self._invariant_values(needed, results)
        if seed_node in needed:
            self.values[(seed_node, 0)] = self.seeds
            self.batched.add((seed_node, 0))
        for i in sorted(needed):
            if i in self.batched_nodes and i != seed_node:
                self._batch_node(self.node(i))
        out = []
        for ref in results:
            value = self.values[ref]
            if ref not in self.batched:
                value = _broadcast_batch(value, self.n, _known(self.shape_of(ref), "a result"))
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

    def _batched_nodes(self, needed, seed_node):
        batched = {seed_node}
        for i in sorted(needed):
            if any(src in batched for src, _ in self.node(i).inputs):
                batched.add(i)
        return batched & needed

    def _invariant_values(self, needed, results):
        """Computes, in one call of the pruned graph, the invariant values that batched nodes or results use."""
        gf = self.gf
        captured = list(gf.captured_values)
        lifted = list(gf.lifted_captures)
        args = list(gf.args)
        first_capture = len(args) - len(captured)
        arg_values = {}
        for k, value in enumerate(lifted):
            arg_values[args[gf.num_user_args + k]] = value
        for k, value in enumerate(captured):
            arg_values[args[first_capture + k]] = value
        wanted = []
        for i in sorted(self.batched_nodes):
            wanted.extend(ref for ref in self.node(i).inputs if ref[0] not in self.batched_nodes)
        wanted.extend(ref for ref in results if ref[0] not in self.batched_nodes)
        computed = []
        for ref in dict.fromkeys(wanted):
            if ref[0] in arg_values:
                self.values[ref] = arg_values[ref[0]]
            elif self.node(ref[0]).type == "Placeholder":
                raise Unbatchable("the backward graph has an argument that is neither the seed nor a capture")
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
        feeds = [args[k] for k in range(gf.num_user_args, len(args))]
        feed_names = [f"{gf.node(i)['name']}:0" for i in feeds]
        fetch_names = [f"{gf.node(i)['name']}:{k}" for i, k in computed]
        pruned = gf.prune(feed_names, fetch_names)
        inputs = lifted + captured
        if _C.in_trace():
            out = _op("PartitionedCall")(inputs, pruned.library_name)
            out = list(out) if isinstance(out, (list, tuple)) else [out]
        else:
            out = pruned(inputs)
        self._keep_alive = pruned  # the graph library holds functions weakly
        for ref, value in zip(computed, out):
            self.values[ref] = value

    def _batch_node(self, node):
        rule = rule_for(node.type)
        ins = [_In(self.values[ref], ref in self.batched, self.shape_of(ref)) for ref in node.inputs]
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
        for k, (value, shape) in enumerate(zip(outs, node.out_shapes)):
            expected = [self.n] + _known(shape, node.type)
            if value.shape.as_list() != expected:
                raise Unbatchable(f"{node.type}: the rule gave {value.shape.as_list()}, expected {expected}")
            self.values[(node.index, k)] = value
            self.batched.add((node.index, k))


class _In:
    """One input of a node being batched: its value, whether it is batched, its per-example shape."""

    __slots__ = ("value", "batched", "shape")

    def __init__(self, value, batched, shape):
        self.value = value
        self.batched = batched
        self.shape = _known(shape, "an input")

    @property
    def rank(self):
        return len(self.shape)


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
    batched = _Vectorizer(gf, seeds, n).run()
    return [None if k is None else batched[k] for k in where]


# ---- helpers for the rules


def _ints(x, what):
    """The value of an invariant shape-like operand (an axis list, a shape, a permutation) as ints."""
    if x.batched:
        raise Unbatchable(f"{what} differs between examples")
    return [int(v) for v in np.asarray(x.value.numpy()).reshape(-1)]


def _broadcast_batch(value, n, shape):
    """An invariant value repeated n times: [n] + shape."""
    return _op("BroadcastTo")(_op("Reshape")(value, [1] + shape), [n] + shape)


def _align(x, rank, n):
    """A batched input as [n] + [1] * (rank - x.rank) + shape: per-example broadcasting against rank."""
    if not x.batched or x.rank >= rank:
        return x.value
    return _op("Reshape")(x.value, [n] + [1] * (rank - x.rank) + x.shape)


def _full(x, n):
    """A value as batched, [n] + shape (invariant values repeated)."""
    return x.value if x.batched else _broadcast_batch(x.value, n, x.shape)


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


@_rule("Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ReduceLogSumExp")
def _reduce(node, ins, n):
    x = ins[0]
    axes = [_axis(a, x.rank) for a in _ints(ins[1], "axis")]
    return _op(node.type)(x.value, axes, node.attrs["keep_dims"])


@_rule("ArgMax", "ArgMin")
def _arg_reduce(node, ins, n):
    return _op(node.type)(ins[0].value, _axis(_ints(ins[1], "dimension")[0], ins[0].rank), node.attrs["output_type"])


@_rule("L2Loss")
def _l2_loss(node, ins, n):
    x = ins[0]
    total = _op("Sum")(_op("Square")(x.value), list(range(1, x.rank + 1)), False)
    return _op("Mul")(total, convert_to_tensor(0.5, dtype=x.value.dtype))


@_rule("Softmax", "LogSoftmax")
def _softmax(node, ins, n):
    return _op(node.type)(ins[0].value, _axis(node.attrs["axis"], ins[0].rank))


@_rule("Cumsum", "Cumprod")
def _cumulative(node, ins, n):
    a = node.attrs
    return _op(node.type)(ins[0].value, _axis(_ints(ins[1], "axis")[0], ins[0].rank), a["exclusive"], a["reverse"])


@_rule("MatMul")
def _matmul(node, ins, n):
    a, b = ins
    ta, tb = node.attrs["transpose_a"], node.attrs["transpose_b"]
    out_shape = node.out_shapes[0]
    if a.batched and not b.batched and b.rank == 2 and not ta:
        # Every example's rows at once: one [n * rows, k] x [k, m] product.
        rows = _op("Reshape")(a.value, [-1, a.shape[-1]])
        return _op("Reshape")(_op("MatMul")(rows, b.value, False, tb), [n] + out_shape)
    if b.batched and not a.batched and a.rank == 2 and b.rank == 2:
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


@_rule("Reshape")
def _reshape(node, ins, n):
    _only_first_batched(ins)
    if ins[1].batched:
        raise Unbatchable("the shape differs between examples")
    return _op("Reshape")(ins[0].value, [n] + _ints(ins[1], "shape"))


@_rule("Transpose")
def _transpose(node, ins, n):
    rank = ins[0].rank
    return _op("Transpose")(ins[0].value, [0] + [_axis(p, rank) for p in _ints(ins[1], "perm")])


@_rule("ExpandDims")
def _expand_dims(node, ins, n):
    return _op("ExpandDims")(ins[0].value, _axis(_ints(ins[1], "axis")[0], ins[0].rank + 1))


@_rule("Squeeze")
def _squeeze(node, ins, n):
    x = ins[0]
    dims = node.attrs["squeeze_dims"] or [i for i, d in enumerate(x.shape) if d == 1]
    return _op("Squeeze")(x.value, [_axis(d, x.rank) for d in dims])


@_rule("BroadcastTo")
def _broadcast_to(node, ins, n):
    shape = _ints(ins[1], "shape")
    return _op("BroadcastTo")(_align(ins[0], len(shape), n), [n] + shape)


@_rule("Tile")
def _tile(node, ins, n):
    return _op("Tile")(ins[0].value, [1] + _ints(ins[1], "multiples"))


@_rule("Fill")
def _fill(node, ins, n):
    dims = _ints(ins[0], "dims")
    return _op("BroadcastTo")(_op("Reshape")(ins[1].value, [n] + [1] * len(dims)), [n] + dims)


@_rule("Slice")
def _slice(node, ins, n):
    return _op("Slice")(ins[0].value, [0] + _ints(ins[1], "begin"), [-1] + _ints(ins[2], "size"))


def _strided_spec(a, begin, end, strides):
    """StridedSlice's spec with a whole first dimension prepended (the masks shift by one bit)."""
    return ([0] + _ints(begin, "begin"), [0] + _ints(end, "end"), [1] + _ints(strides, "strides"),
            (a["begin_mask"] << 1) | 1, (a["end_mask"] << 1) | 1, a["ellipsis_mask"] << 1,
            a["new_axis_mask"] << 1, a["shrink_axis_mask"] << 1)


@_rule("StridedSlice")
def _strided_slice(node, ins, n):
    return _op("StridedSlice")(ins[0].value, *_strided_spec(node.attrs, *ins[1:4]))


@_rule("StridedSliceGrad")
def _strided_slice_grad(node, ins, n):
    begin, end, strides, *masks = _strided_spec(node.attrs, *ins[1:4])
    return _op("StridedSliceGrad")([n] + _ints(ins[0], "shape"), begin, end, strides, ins[4].value, *masks)


@_rule("Pad")
def _pad(node, ins, n):
    # Float attributes print with six significant digits; zero (a gradient's padding) is the one value that
    # reads back exactly and is recognisable as such.
    if node.attrs["constant_value"] != 0:
        raise Unbatchable("a padding value other than 0 cannot be read back exactly")
    return _op("Pad")(ins[0].value, [[0, 0]] + _paddings(ins[1]), 0.0, node.attrs["mode"])


@_rule("MirrorPadGrad")
def _mirror_pad_grad(node, ins, n):
    return _op("MirrorPadGrad")(ins[0].value, [[0, 0]] + _paddings(ins[1]), node.attrs["mode"])


def _paddings(x):
    values = _ints(x, "paddings")
    return [values[i:i + 2] for i in range(0, len(values), 2)]


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
    return _op("GatherV2")(ins[0].value, ins[1].value, _axis(_ints(ins[2], "axis")[0], ins[0].rank), 0)


@_rule("UnsortedSegmentSum")
def _unsorted_segment_sum(node, ins, n):
    _only_first_batched(ins)
    data, ids = ins[:2]
    k = ids.rank
    # Move the batch dimension behind the segmented ones: [s0..sk-1, n, rest] -> [segments, n, rest].
    perm = list(range(1, k + 1)) + [0] + list(range(k + 1, data.rank + 1))
    summed = _op("UnsortedSegmentSum")(_op("Transpose")(data.value, perm), ids.value, _ints(ins[2], "num_segments")[0])
    rest = data.rank - k
    return _op("Transpose")(summed, [1, 0] + list(range(2, rest + 2)))
