"""Random ember programs for the program fuzzer (test_program_fuzz.py), one per seed.

A program is Python source: ``INPUTS`` and ``VARIABLES`` (dtype, shape) specs, nested functions f1, f2, ...
and the outer function f0(x0, x1, ...). The runner (program_runner.py) runs it eagerly, with every ``def``
wrapped in ``ember.function``, with the graph passes off, and under gradient tapes, and compares.

The generator aims at each graph pass's pattern, and at the places passes have broken before:
- operands shared at several depths: a left operand reused by narrow matmuls whose right operands depend
  on one another (x @ (x @ x); x @ w and x @ (w + mean(tanh(x @ w)))), through a variable
  (v.assign(x @ a) then x @ v), batched (rank-3 left operands) — sibling-MatMul merging;
- identities the arithmetic pass removes (x*1, x+0, double transpose, reshape round trips, same-dtype
  casts) with chains running through the rewritten nodes; chains of 2-3 random transposes it composes
  (some to the identity), their intermediates and source used elsewhere too;
- reshapes, transposes and tf.pad with shape operands computed from tf.shape (partly known while the
  runner's "dynamic" mode traces with unknown dims), paddings built as TensorFlow programs build them; constant subexpressions (folding); repeated
  subexpressions (CSE); values nobody uses, unused outputs of nested calls (pruning);
- element-wise chains with broadcasting (fusion) whose intermediates escape as results, and chains ending
  in reductions over trailing axes (absorbed by the fusion) with operands shared at different depths and
  the reduced result used element-wise again (softmax, layer norm);
- dense layers, MatMul -> bias add -> activation (MatMul fusion), their products and pre-activations read
  at other depths and a second layer on the first one's output or pre-activation;
- variables read and written (assign / assign_add, then read) inside the outer and nested functions;
- nested ``ember.function`` calls (inlining), float32 / float64 / int32 / float16 programs;
- gradients of first and second order through the calls (the runner takes them when the program is
  differentiable: float, and only smooth ops so that eager and graph agree exactly where they are defined).

Every value carries a bound on its magnitude so that no program overflows.
"""
import math
import random

import numpy as np

DTYPES = ["float32", "float32", "float32", "float64", "int32", "float16"]
LIMIT = {"float32": 1e3, "float64": 1e3, "int32": 2e4, "float16": 60.0}


class Value:
    __slots__ = ("name", "shape", "bound")

    def __init__(self, name, shape, bound):
        self.name, self.shape, self.bound = name, tuple(shape), float(bound)


def _broadcast(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def _shape(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


class Body:
    """The lines of one function over a pool of values."""

    def __init__(self, program, params, depth):
        self.p = program
        self.rng = program.rng
        self.depth = depth
        self.pool = list(params)
        self.lines = []
        self.used = set()
        self.count = 0

    def fresh(self):
        self.count += 1
        return f"t{self.count}"

    def emit(self, template, args, shape, bound):
        if shape is None or bound > LIMIT[self.p.dtype] or len(shape) > 3 or int(np.prod(shape)) > 40_000:
            return None
        out = Value(self.fresh(), shape, bound)
        self.lines.append(f"{out.name} = " + template.format(*[a.name for a in args]))
        self.used.update(a.name for a in args)
        self.pool.append(out)
        return out

    def pick(self, pred=lambda v: True, recent=0.5):
        cands = [v for v in self.pool if pred(v)]
        if not cands:
            return None
        # Recent values make chains; old ones make operands shared at several depths.
        if self.rng.random() < recent:
            return self.rng.choice(cands[-3:])
        return self.rng.choice(cands)

    # ---- element-wise
    def unary(self):
        x = self.pick()
        fl = self.p.is_float
        ops = [("tf.negative({0})", x.bound), ("{0} * 0.5" if fl else "{0} * 2", x.bound * (0.5 if fl else 2))]
        if fl:
            ops += [("tf.tanh({0})", 1.0), ("tf.sin({0})", 1.0), ("tf.sigmoid({0})", 1.0),
                    ("tf.exp(tf.clip_by_value({0}, -2.0, 2.0))", 7.4), ("tf.square({0})", x.bound ** 2),
                    ("tf.cos({0})", 1.0)]
            if not self.p.smooth:
                ops += [("tf.abs({0})", x.bound), ("tf.nn.relu({0})", x.bound),
                        ("tf.sqrt(tf.abs({0}) + 1.0)", np.sqrt(x.bound + 1))]
            other = "float32" if self.p.dtype == "float64" else "float64"
            ops += [(f"tf.cast(tf.sin(tf.cast({{0}}, tf.{other})), tf.{self.p.dtype})", 1.0)]  # a mixed-dtype step
        else:
            ops += [("tf.abs({0})", x.bound), ("tf.square({0})", x.bound ** 2), ("tf.nn.relu({0})", x.bound),
                    ("tf.cast(tf.cast({0}, tf.float32) * 0.5, tf.int32)", x.bound)]
        t, b = self.rng.choice(ops)
        return self.emit(t, [x], x.shape, b)

    def binary(self):
        x = self.pick()
        y = self.pick(lambda v: _broadcast(v.shape, x.shape) is not None, recent=0.3)
        ops = [("{0} + {1}", x.bound + y.bound), ("{0} - {1}", x.bound + y.bound),
               ("{0} * {1}", x.bound * y.bound), ("tf.add({0}, {1})", x.bound + y.bound)]
        if self.p.is_float:
            ops += [("{0} / (tf.square({1}) + 1.0)", x.bound)]
            # The no-NaN family, fused like the other element-wise ops; denominators and log arguments kept
            # away from zero here (smooth), and reaching it exactly below.
            ops += [("tf.math.multiply_no_nan({0}, {1})", x.bound * y.bound),
                    ("tf.math.divide_no_nan({0}, tf.square({1}) + 1.0)", x.bound),
                    ("tf.math.xdivy({0}, tf.square({1}) + 1.0)", x.bound),
                    ("tf.math.xlogy({0}, tf.square({1}) + 1.0)", x.bound * math.log(y.bound ** 2 + 1.0)),
                    ("tf.math.xlog1py({0}, tf.square({1}))", x.bound * math.log1p(y.bound ** 2))]
        if not self.p.smooth:
            ops += [("tf.maximum({0}, {1})", max(x.bound, y.bound)), ("tf.minimum({0}, {1})", max(x.bound, y.bound))]
            if self.p.is_float:  # exact zeros: 0 / 0 and 0 * log(0) take the no-NaN branch
                ops += [("tf.math.divide_no_nan({0}, tf.floor(tf.abs({1})))", x.bound),
                        ("tf.math.xlogy(tf.nn.relu({0}), tf.nn.relu({0}) * (tf.square({1}) + 1.0))",
                         max(x.bound * math.log(max(x.bound * (y.bound ** 2 + 1.0), 1.0)), 1.0)),
                        ("tf.math.xdivy(tf.nn.relu({0}), tf.floor(tf.abs({1})) + tf.nn.relu({0}))", 1.0)]
        t, b = self.rng.choice(ops)
        return self.emit(t, [x, y], _broadcast(x.shape, y.shape), b)

    def identity(self):
        """A node the arithmetic pass removes; the chain goes on through it."""
        x = self.pick(recent=0.7)
        dt = self.p.dtype
        one, zero = ("1.0", "0.0") if self.p.is_float else ("1", "0")
        ops = [f"{{0}} * {one}", f"{one} * {{0}}", f"{{0}} + {zero}", f"{zero} + {{0}}", f"{{0}} - {zero}",
               "tf.identity({0})", f"tf.cast({{0}}, tf.{dt})", f"tf.multiply({{0}}, tf.ones([], tf.{dt}))"]
        if len(x.shape) == 2:
            ops += ["tf.transpose(tf.transpose({0}))"]
        if len(x.shape) == 3:
            p = self.rng.sample(range(3), 3)
            ops += [f"tf.transpose(tf.transpose({{0}}, {p}), {[int(i) for i in np.argsort(p)]})"]
        if len(x.shape) >= 1:
            ops += [f"tf.reshape(tf.reshape({{0}}, [-1]), {_shape(x.shape)})"]
        if dt in ("float32", "float16"):
            ops += [f"tf.cast(tf.cast({{0}}, tf.float64), tf.{dt})"]  # exact both ways
        if not self.p.smooth:
            ops += ["tf.stop_gradient({0})"]
            if self.p.is_float:  # looks like an identity but truncates
                ops += [f"tf.cast(tf.cast({{0}}, tf.int32), tf.{dt})"]
        out = self.emit(self.rng.choice(ops), [x], x.shape, x.bound)
        if out is not None and self.rng.random() < 0.6:  # the chain goes on through the rewritten node
            self.unary_of(out)
        return out

    def unary_of(self, x):
        t = "tf.tanh({0})" if self.p.is_float else "tf.negative({0})"
        return self.emit(t, [x], x.shape, 1.0 if self.p.is_float else x.bound)

    def constant(self):
        """A constant subexpression (folded), combined with a value."""
        x = self.pick()
        shape = self.rng.choice([(), x.shape[-1:]]) if x.shape else ()
        vals = self.p.np_rng.randint(-3, 4, size=shape)
        lit = np.array2string(vals, separator=", ") if shape else str(int(vals))
        dt = self.p.dtype
        c = f"(tf.constant({lit}, tf.{dt}) * tf.constant(2, tf.{dt}) + tf.ones({_shape(shape)}, tf.{dt}))"
        return self.emit(f"{{0}} * {c}" if self.rng.random() < 0.5 else f"{c} - {{0}}", [x], x.shape,
                         x.bound * 7 + 7)

    def duplicate(self):
        """The same expression twice (CSE), combined."""
        x = self.pick()
        t = "tf.tanh({0})" if self.p.is_float else "tf.abs({0})"
        a = self.emit(t, [x], x.shape, 1.0 if self.p.is_float else x.bound)
        b = self.emit(t, [x], x.shape, 1.0 if self.p.is_float else x.bound)
        if a is None or b is None:
            return None
        return self.emit("{0} + {1}", [a, b], x.shape, a.bound * 2)

    def reduction(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return None
        names = ["reduce_sum"] + (["reduce_mean"] if self.p.is_float else [])
        if not self.p.smooth:
            names += ["reduce_max"]
        name = self.rng.choice(names)
        rank = len(x.shape)
        axis = self.rng.randrange(rank)
        keep = self.rng.random() < 0.4
        shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape)) if keep else \
            tuple(d for i, d in enumerate(x.shape) if i != axis)
        bound = x.bound * x.shape[axis] if name == "reduce_sum" else x.bound
        return self.emit(f"tf.{name}({{0}}, axis={axis}{', keepdims=True' if keep else ''})", [x], shape, bound)

    def reduction_chain(self):
        """An element-wise chain ending in a reduction over trailing axes (the fusion absorbs it: Note [Absorbed
        reductions]): operands shared at different depths (the chain's start, older values, a link read
        twice), the reduced value sometimes read again elsewhere, and the reduction's result sometimes used
        element-wise against the chain (the softmax / layer-norm shape, x - reduce(x) and on)."""
        x = self.pick(lambda v: len(v.shape) >= 1, recent=0.3)
        if x is None:
            return None
        v = x
        for _ in range(self.rng.randint(1, 3)):
            if self.rng.random() < 0.4:
                nxt = self.unary_of(v) if self.rng.random() < 0.5 else \
                    self.emit("{0} * {0}" if self.p.is_float else "{0} + {0}", [v], v.shape,
                              v.bound ** 2 if self.p.is_float else v.bound * 2)
            else:
                y = self.pick(lambda u: _broadcast(u.shape, v.shape) == v.shape, recent=0.2)
                ops = [("{0} + {1}", v.bound + y.bound), ("{0} * {1}", v.bound * y.bound),
                       ("{0} - {1}", v.bound + y.bound)]
                if not self.p.smooth:
                    ops += [("tf.maximum({0}, {1})", max(v.bound, y.bound))]
                t, b = self.rng.choice(ops)
                nxt = self.emit(t, [v, y], v.shape, b)
            if nxt is None:
                return None
            v = nxt
        names = ["reduce_sum"] + (["reduce_mean"] if self.p.is_float else [])
        if not self.p.smooth:
            names += ["reduce_max", "reduce_min"]
        name = self.rng.choice(names)
        rank = len(v.shape)
        k = self.rng.randint(1, rank)
        forms = [(None, rank)] if k == rank else []
        forms += [(-1, 1), (rank - 1, 1)] if k == 1 else [(list(range(rank - k, rank)), k),
                                                          (list(range(-k, 0)), k)]
        axis, k = self.rng.choice(forms)
        keep = self.rng.random() < 0.5
        reduced = v.shape[rank - k:]
        shape = (v.shape[:rank - k] + (1,) * k) if keep else v.shape[:rank - k]
        bound = v.bound * max(1, int(np.prod(reduced))) if name == "reduce_sum" else v.bound
        args = "" if axis is None else f", axis={axis}"
        r = self.emit(f"tf.{name}({{0}}{args}{', keepdims=True' if keep else ''})", [v], shape, bound)
        if r is None or self.rng.random() < 0.5:
            return r
        # The result used element-wise against the chain (x - max(x), d * rsqrt(mean(d * d)), ...).
        if keep:
            return self.emit("{0} - {1}", [v, r], v.shape, v.bound + r.bound)
        return r

    def transpose(self):
        x = self.pick(lambda v: len(v.shape) >= 2)
        if x is None:
            return None
        perm = self.rng.sample(range(len(x.shape)), len(x.shape))
        return self.emit(f"tf.transpose({{0}}, {perm})", [x], tuple(x.shape[i] for i in perm), x.bound)

    def concat(self):
        a = self.pick(lambda v: len(v.shape) >= 1)
        if a is None:
            return None
        axis = self.rng.randrange(len(a.shape))
        b = self.pick(lambda v: len(v.shape) == len(a.shape) and all(
            v.shape[i] == a.shape[i] for i in range(len(a.shape)) if i != axis), recent=0.2)
        shape = list(a.shape)
        shape[axis] += b.shape[axis]
        return self.emit(f"tf.concat([{{0}}, {{1}}], axis={axis})", [a, b], shape, max(a.bound, b.bound))

    # ---- transposes (the arithmetic pass composes chains of them)
    def transpose_chain(self):
        """2-3 transposes in a row with random perms (negative entries too), a third of the chains composing
        to the identity; intermediates and the source are also used elsewhere (shared at several depths)."""
        x = self.pick(lambda v: len(v.shape) >= 2, recent=0.3)
        if x is None:
            return None
        rank = len(x.shape)
        to_identity = self.rng.random() < 0.35
        steps = self.rng.randint(2, 3)
        axes, cur = list(range(rank)), x
        for i in range(steps):
            if i == steps - 1 and to_identity:
                perm = [int(j) for j in np.argsort(axes)]  # undoes the chain so far
            else:
                perm = self.rng.sample(range(rank), rank)
            axes = [axes[j] for j in perm]
            text = [j - rank if self.rng.random() < 0.2 else j for j in perm]
            nxt = self.emit(f"tf.transpose({{0}}, {text})", [cur], tuple(cur.shape[j] for j in perm), cur.bound)
            if nxt is None:
                return None
            cur = nxt
            if i < steps - 1 and self.rng.random() < 0.3:
                self.unary_of(cur)  # an intermediate with another consumer
        if self.rng.random() < 0.4 and _broadcast(cur.shape, x.shape) is not None:
            return self.emit("{0} + {1}", [cur, x], _broadcast(cur.shape, x.shape), cur.bound + x.bound)
        return cur

    # ---- shape operands computed in the graph (from tf.shape; unknown dims in the "dynamic" mode)
    def computed_shape(self):
        x = self.pick(lambda v: 1 <= len(v.shape) <= 3)
        if x is None:
            return None
        s, d = x.shape, "tf.shape({0})"
        if len(s) == 1:
            ops = [(f"tf.reshape({{0}}, tf.stack([1, {d}[0]]))", (1, s[0])),
                   (f"tf.reshape({{0}}, tf.stack([{d}[0], 1]))", (s[0], 1))]
        elif len(s) == 2:
            ops = [(f"tf.reshape({{0}}, tf.stack([{d}[1], {d}[0]]))", (s[1], s[0])),
                   (f"tf.reshape({{0}}, [{d}[0] * {d}[1]])", (s[0] * s[1],)),
                   (f"tf.reshape({{0}}, tf.concat([{d}, [1]], 0))", (s[0], s[1], 1)),
                   (f"tf.transpose(tf.reshape({{0}}, tf.stack([{d}[1], {d}[0]])), [1, 0])", (s[0], s[1])),
                   (f"tf.transpose(tf.reshape({{0}}, {d}[::-1]))", (s[0], s[1])),
                   (f"tf.broadcast_to({{0}}, tf.stack([2, {d}[0], {d}[1]]))", (2, s[0], s[1]))]
        else:
            ops = [(f"tf.reshape({{0}}, tf.stack([{d}[0] * {d}[1], {d}[2]]))", (s[0] * s[1], s[2])),
                   (f"tf.transpose(tf.reshape({{0}}, tf.stack([{d}[0], {d}[2], {d}[1]])), [0, 2, 1])", s),
                   (f"tf.reshape(tf.transpose({{0}}, [2, 0, 1]), tf.stack([{d}[2], -1]))"
                    if s[0] * s[1] > 0 else f"tf.reshape({{0}}, {d})", (s[2], s[0] * s[1]) if s[0] * s[1] > 0 else s)]
        t, shape = self.rng.choice(ops)
        return self.emit(t, [x], shape, x.bound)

    def pad(self):
        """tf.pad with paddings computed in the graph (tf.stack of rows, nested lists, a reshaped vector, a
        concat of rows) from tf.shape, in each mode, within what the mode allows."""
        x = self.pick(lambda v: 1 <= len(v.shape) <= 3)
        if x is None:
            return None
        mode = self.rng.choice(["CONSTANT", "CONSTANT", "SYMMETRIC", "REFLECT"])
        if mode == "REFLECT" and min(x.shape) == 0:
            mode = "CONSTANT"
        items, shape = [], []
        for i, dim in enumerate(x.shape):
            row = []
            for _ in range(2):
                choices = [("0", 0), (f"tf.shape({{0}})[{i}] // 2", dim // 2)]
                if mode != "REFLECT" or dim > 1:
                    choices += [("1", 1)]
                if mode != "REFLECT":
                    choices += [(f"tf.shape({{0}})[{i}]", dim)]
                if mode == "REFLECT":
                    choices += [(f"tf.maximum(tf.shape({{0}})[{i}] - 1, 0)", dim - 1)]
                if mode == "SYMMETRIC" and dim == 0:
                    choices = [c for c in choices if c[1] == 0]
                row.append(self.rng.choice(choices))
            items.append(row)
            shape.append(dim + row[0][1] + row[1][1])
        rows = [f"[{a[0]}, {b[0]}]" for a, b in items]
        form = self.rng.randrange(4)
        if form == 0:
            paddings = f"tf.stack([{', '.join(rows)}])"
        elif form == 1:
            paddings = f"[{', '.join(rows)}]"
        elif form == 2:
            flat = ", ".join(e[0] for row in items for e in row)
            paddings = f"tf.reshape(tf.stack([{flat}]), [{len(items)}, 2])"
        else:
            paddings = f"tf.concat([{', '.join('[' + r + ']' for r in rows)}], 0)"
        return self.emit(f"tf.pad({{0}}, {paddings}, mode={mode!r})", [x], tuple(shape), x.bound)

    # ---- products (sibling merging)
    def squash(self, v):
        """A bounded copy of v for use as a product operand."""
        if self.p.is_float:
            return self.emit("tf.tanh({0})", [v], v.shape, 1.0)
        return self.emit("tf.clip_by_value({0}, -2, 2)", [v], v.shape, 2.0) if v.bound > 2 else v

    def matmul(self):
        a = self.pick(lambda v: len(v.shape) in (2, 3))
        if a is None:
            return None
        a = self.squash(a) or a
        k = a.shape[-1]
        b = self.pick(lambda v: len(v.shape) == 2 and v.shape[0] == k)
        if b is None:
            b = self.make_right(k)
        b = self.squash(b) or b
        return self.emit("{0} @ {1}" if self.rng.random() < 0.5 else "tf.matmul({0}, {1})", [a, b],
                         a.shape[:-1] + b.shape[1:], a.bound * b.bound * k)

    def make_right(self, k):
        """A [k, n] operand from the pool's values (sliced, tiled or reduced), or a constant."""
        n = self.rng.choice([1, 2, 3, 5])
        x = self.pick(lambda v: len(v.shape) == 2)
        if x is not None and self.rng.random() < 0.7:
            # tf.ones([k, 1]) @ row-reduction of x broadcasts to [k, n]: depends on x.
            t = f"tf.ones([{k}, 1], tf.{self.p.dtype}) * tf.reduce_sum({{0}}[:1, :1]) + tf.zeros([{k}, {n}], " \
                f"tf.{self.p.dtype})"
            return self.emit(t, [x], (k, n), x.bound)
        vals = self.p.np_rng.randint(-2, 3, size=(k, n))
        flat = f"tf.constant({vals.ravel().tolist()}, tf.{self.p.dtype})"
        return self.emit(f"tf.reshape({flat}, [{k}, {n}])", [], (k, n), 2)

    def siblings(self):
        """A left operand shared by narrow products, some independent, some dependent on an earlier one."""
        left = self.pick(lambda v: len(v.shape) in (2, 3), recent=0.3)
        if left is None:
            return None
        left = self.squash(left) or left
        # transpose_a siblings share the transposed operand (k = its second-to-last dim).
        ta = self.rng.random() < 0.25
        k = left.shape[-2] if ta else left.shape[-1]
        rows = left.shape[-1] if ta else left.shape[-2]
        product = "tf.matmul({0}, {1}, transpose_a=True)" if ta else "{0} @ {1}"
        products = []
        for _ in range(self.rng.randint(2, 4)):
            r = self.rng.random()
            if products and r < 0.35 and self.p.is_float:
                # x @ w and x @ (w + mean(tanh(x @ w)))
                prev_w, prev = self.rng.choice(products)
                w = self.emit("{0} + tf.reduce_mean(tf.tanh({1}))", [prev_w, prev], prev_w.shape,
                              prev_w.bound + 1)
            elif products and r < 0.5 and len(left.shape) == 2 and rows == k:
                # x @ (x @ w): the right operand is a sibling
                prev_w, prev = self.rng.choice(products)
                w = self.squash(prev) or prev
            elif r < 0.7 and self.p.variables_ok:
                w = self.variable_product_operand(left, products, k, rows)
            else:
                w = self.pick(lambda v: len(v.shape) == 2 and v.shape[0] == k and v.shape[1] <= 8, recent=0.2)
                if w is None or self.rng.random() < 0.4:
                    w = self.make_right(k)
                w = self.squash(w) or w
            if w is None:
                continue
            out = self.emit(product, [left, w], left.shape[:-2] + (rows,) + w.shape[1:], left.bound * w.bound * k)
            if out is not None:
                products.append((w, out))
        return products[-1][1] if products else None

    def variable_product_operand(self, left, products, k, rows):
        """v.assign(f(x @ a)) then x @ v: the write orders the second product after the first."""
        candidates = [i for i, (shape, _) in enumerate(self.p.variables) if len(shape) == 2 and shape[0] == k]
        if not candidates:
            return None
        i = self.rng.choice(candidates)
        shape = self.p.variables[i][0]
        prev = [(w, o) for w, o in products if o.shape == shape]
        if prev:
            _, o = self.rng.choice(prev)
            src = self.emit("{0}", [o], o.shape, o.bound)
        else:
            src = self.pick(lambda v: v.shape == shape or _broadcast(v.shape, shape) == shape)
        if src is None:
            return None
        self.write_var(i, src)
        return self.emit(f"v{i}.read_value()", [], shape, self.p.var_bound)

    # ---- variables
    def write_var(self, i, src):
        shape = self.p.variables[i][0]
        if self.p.is_float:
            expr = "tf.tanh({0})" if self.rng.random() < 0.5 else "0.5 * tf.sin({0})"
        else:
            expr = "tf.clip_by_value({0}, -2, 2)"
        if src.shape != shape:
            expr = f"tf.broadcast_to({expr}, {_shape(shape)})"
        method = "assign" if self.rng.random() < 0.6 else "assign_add"
        if method == "assign_add":
            expr = f"{expr} * 0" if not self.p.is_float else f"0.01 * {expr}"
        self.lines.append(f"v{i}.{method}({expr.format(src.name)})")
        self.used.add(src.name)

    def read(self):
        if not self.p.variables_ok:
            return None
        i = self.rng.randrange(len(self.p.variables))
        t = self.rng.choice(["v{i}.read_value()", "tf.identity(v{i})", "v{i} * 1"]).format(i=i)
        if t.endswith("* 1") and self.p.is_float:
            t += ".0"
        return self.emit(t, [], self.p.variables[i][0], self.p.var_bound)

    def var_write(self):
        if not self.p.variables_ok:
            return None
        i = self.rng.randrange(len(self.p.variables))
        shape = self.p.variables[i][0]
        src = self.pick(lambda v: _broadcast(v.shape, shape) == shape)
        if src is None:
            return None
        self.write_var(i, src)
        if self.rng.random() < 0.5:  # read at once: the read must see the write
            return self.emit(f"v{i}.read_value()", [], shape, self.p.var_bound)
        return src

    # ---- nested calls
    def call(self):
        if self.depth >= 2 or self.p.num_functions >= 5:
            return None
        args = [self.pick(recent=0.4) for _ in range(self.rng.randint(1, 3))]
        if self.rng.random() < 0.2:  # one value passed twice
            args.append(args[0])
        fn = self.p.write_function(args, self.depth + 1)
        outs = [self.fresh() for _ in fn["results"]]
        self.lines.append(f"{', '.join(outs)}, = {fn['name']}({', '.join(a.name for a in args)})")
        self.used.update(a.name for a in args)
        values = [Value(name, r.shape, r.bound) for name, r in zip(outs, fn["results"])]
        # Often only some outputs are used: the others are unused outputs of the call.
        keep = [v for v in values if self.rng.random() < 0.6] or values[:1]
        self.pool += keep
        return keep[0]

    # ---- convolution chains (conv fusion, passes/fuse_conv.cc)
    def _conv_line(self, x4, shape4, bound, side_reads=None):
        """conv2d (or, sometimes, a depthwise convolution) of a 4-D value by a constant filter, then a bias add
        and an activation, each in its own line; returns (convolution, pre-activation and output names, output
        shape, output bound) or None. Inner values that other ops should read too (so that the fusion must leave
        them) are appended to `side_reads`."""
        side_reads = [] if side_reads is None else side_reads
        _, h, w, cin = shape4
        k, stride = self.rng.choice([1, 2, 3]), self.rng.choice([1, 1, 2])
        pad = "VALID" if self.rng.random() < 0.3 and min(h, w) >= k else "SAME"
        oh, ow = ((h - k) // stride + 1, (w - k) // stride + 1) if pad == "VALID" else (-(-h // stride), -(-w // stride))
        depthwise = self.rng.random() < 0.3
        multiplier = self.rng.choice([1, 2])
        cout = cin * multiplier if depthwise else self.rng.choice([1, 2, 3, 5])
        if oh * ow * cout * shape4[0] > 40_000:
            return None
        dt = self.p.dtype
        filter_size = k * k * cin * (multiplier if depthwise else cout)
        filt = (self.p.np_rng.randint(-2, 3, size=filter_size) / 4).tolist()
        bias = (self.p.np_rng.randint(-4, 5, size=cout) / 4).tolist()
        conv, pre, out = self.fresh(), self.fresh(), self.fresh()
        if depthwise:
            self.lines.append(f"{conv} = tf.nn.depthwise_conv2d({x4}, tf.reshape(tf.constant({filt}, tf.{dt}), "
                              f"[{k}, {k}, {cin}, {multiplier}]), [1, {stride}, {stride}, 1], {pad!r})")
        else:
            self.lines.append(f"{conv} = tf.nn.conv2d({x4}, tf.reshape(tf.constant({filt}, tf.{dt}), "
                              f"[{k}, {k}, {cin}, {cout}]), {stride}, {pad!r})")
        b = f"tf.constant({bias}, tf.{dt})"
        self.lines.append(f"{pre} = " + self.rng.choice([f"tf.nn.bias_add({conv}, {b})", f"{conv} + {b}",
                                                         f"{b} + {conv}"]))
        bound_out = 0.5 * k * k * cin * bound + 1.0 + 1.0
        out_shape = (shape4[0], oh, ow, cout)
        if self.rng.random() < 0.3:
            # A residual add (the ResNet shortcut): the chain's own input where the shapes agree (so a second
            # chain's shortcut is the first one's fused output), else a bounded tensor of the sum's shape.
            residual = pre
            pre = self.fresh()
            if out_shape == tuple(shape4) and self.rng.random() < 0.7:
                shortcut, shortcut_bound = x4, bound
            else:
                size = int(np.prod(out_shape))
                shortcut = f"tf.sin(tf.reshape(tf.range({size}, dtype=tf.{dt}), {list(out_shape)}))"
                shortcut_bound = 1.0
            self.lines.append(f"{pre} = " + self.rng.choice([f"{residual} + {shortcut}", f"{shortcut} + {residual}"]))
            bound_out += shortcut_bound
            if self.rng.random() < 0.2:  # the sum before the shortcut read elsewhere: the add must stay
                side_reads.append((residual, out_shape, bound_out))
        # Smooth programs take gradients, which a kink would make disagree between nearly equal values.
        acts = [("tf.nn.elu({0})", 1.0), ("{0}", 0.0), ("tf.tanh({0})", 0.0), ("tf.sigmoid({0})", 0.0),
                ("tf.nn.silu({0})", 0.0), ("tf.nn.gelu({0})", 0.0), ("tf.nn.gelu({0}, approximate=True)", 0.0)]
        if not self.p.smooth:
            acts += [("tf.nn.relu({0})", 0.0), ("tf.nn.relu({0})", 0.0), ("tf.nn.relu6({0})", 0.0),
                     ("tf.nn.leaky_relu({0}, alpha=0.3)", 0.0)]
        act, _ = self.rng.choice(acts)
        if act == "tf.nn.silu({0})" and self.rng.random() < 0.3:
            # swish written out, its sigmoid read elsewhere: the expression must stay apart.
            sigmoid = self.fresh()
            self.lines.append(f"{sigmoid} = tf.sigmoid({pre})")
            act = "{0} * " + sigmoid
            side_reads.append((sigmoid, out_shape, 1.0))
        self.lines.append(f"{out} = " + act.format(pre))
        return conv, pre, out, out_shape, bound_out

    def _view4(self):
        """A 4-D [1, h, w, c <= 8] view (tanh, so bounded by 1) of a 2-D or 3-D pool value: (name, shape) or
        None."""
        x = self.pick(lambda v: len(v.shape) in (2, 3))
        if x is None:
            return None
        shape4 = (1, *x.shape, 1) if len(x.shape) == 2 else (1, *x.shape)
        if shape4[3] > 8:
            shape4 = (1, *x.shape[:2], 1) if len(x.shape) == 3 else shape4
            if shape4[3] > 8:
                return None
        x4 = self.fresh()
        if len(x.shape) == 3 and shape4[3] == 1:
            self.lines.append(f"{x4} = tf.reshape(tf.tanh({x.name})[:, :, :1], {list(shape4)})")
        else:
            self.lines.append(f"{x4} = tf.reshape(tf.tanh({x.name}), {list(shape4)})")
        self.used.add(x.name)
        return x4, shape4

    def conv_chain(self):
        """Conv2D or depthwise convolution -> bias add [-> residual add] -> activation chains (every activation
        the fusion takes, swish and the Gelus as tf.nn writes them) on 4-D views of pool values, their
        pre-activations and outputs read at other depths (another chain, whose shortcut may be the first
        chain's output, a reduction, a result), so that the fusion's matching meets every reader it must
        respect."""
        if self.p.dtype not in ("float32", "float64"):
            return None
        view = self._view4()
        if view is None:
            return None
        x4, shape4 = view
        side_reads = []  # inner values of the chains that other ops read too
        first = self._conv_line(x4, shape4, 1.0, side_reads)
        if first is None:
            return None
        conv, pre, out, shape, bound = first
        made = []
        if self.rng.random() < 0.4 and bound * 5 < LIMIT[self.p.dtype]:
            # A second chain on the first one's output (or, sometimes, its pre-activation): consumers at
            # two depths.
            second = self._conv_line(out if self.rng.random() < 0.8 else pre, shape, bound, side_reads)
            if second is not None:
                _, _, out2, shape2, bound2 = second
                if bound2 <= LIMIT[self.p.dtype]:
                    made.append((out2, shape2, bound2))
        made.append((out, shape, bound))
        if self.rng.random() < 0.3:  # the pre-activation read elsewhere too
            made.append((pre, shape, bound))
        if self.rng.random() < 0.15:  # the convolution read twice: nothing may fuse
            made.append((conv, shape, bound))
        made += side_reads
        result = None
        for name, (n, h, w, c), b in made:
            if self.rng.random() < 0.5:
                v = self.emit(f"tf.reshape({{0}}, [{h}, {w}, {c}])", [Value(name, (n, h, w, c), b)], (h, w, c), b)
            else:
                v = self.emit("tf.reduce_sum({0}, axis=[0, 3])", [Value(name, (n, h, w, c), b)], (h, w), b * c)
            result = result or v
        return result

    # ---- MatMul chains (MatMul fusion, passes/fuse_matmul.cc)
    def _dense_line(self, x, shape, bound):
        """x @ a constant weight, then a bias add and an activation, each in its own line; returns (product,
        pre-activation and output names, output shape, output bound) or None."""
        k, n = shape[-1], self.rng.choice([1, 3, 5, 8, 40])  # 40 columns: the register tiles
        rows = int(np.prod(shape[:-1]))
        if rows * n > 40_000 or rows * max(n, k) > 40_000:
            return None
        dt = self.p.dtype
        weights = (self.p.np_rng.randint(-2, 3, size=k * n) / 4).tolist()
        bias = (self.p.np_rng.randint(-4, 5, size=n) / 4).tolist()
        product, pre, out = self.fresh(), self.fresh(), self.fresh()
        if self.rng.random() < 0.3:  # a transposed right operand
            self.lines.append(f"{product} = tf.matmul({x}, tf.reshape(tf.constant({weights}, tf.{dt}), [{n}, {k}]), "
                              "transpose_b=True)")
        else:
            self.lines.append(f"{product} = tf.matmul({x}, tf.reshape(tf.constant({weights}, tf.{dt}), [{k}, {n}]))")
        b = f"tf.constant({bias}, tf.{dt})"
        self.lines.append(f"{pre} = " + self.rng.choice([f"tf.nn.bias_add({product}, {b})", f"{product} + {b}",
                                                         f"{b} + {product}"]))
        bound_pre = 0.5 * k * bound + 1.0
        # Smooth programs take gradients, which a kink would make disagree between nearly equal values.
        acts = [("tf.tanh({0})", 1.0), ("tf.sigmoid({0})", 1.0), ("tf.nn.elu({0})", bound_pre), ("{0}", bound_pre),
                ("tf.nn.softplus({0})", bound_pre + 1.0)]  # softplus: no epilogue, the element-wise fusion's
        if not self.p.smooth:
            acts += [("tf.nn.relu({0})", bound_pre), ("tf.nn.relu6({0})", 6.0),
                     ("tf.nn.leaky_relu({0}, alpha=0.3)", bound_pre)]
        act, bound_out = self.rng.choice(acts)
        self.lines.append(f"{out} = " + act.format(pre))
        return product, pre, out, (*shape[:-1], n), bound_out, bound_pre

    def matmul_chain(self):
        """MatMul -> bias add -> activation chains (dense layers), their products and pre-activations read at
        other depths (a result, another value's operand) and a second layer reading the first one's output
        (the node the fusion writes) or its pre-activation, so that the fusion's matching meets every reader
        it must respect."""
        if self.p.dtype not in ("float32", "float64"):
            return None
        x = self.pick(lambda v: len(v.shape) in (2, 3) and v.shape[-1] <= 64)
        if x is None:
            return None
        x = self.squash(x) or x
        first = self._dense_line(x.name, x.shape, x.bound)
        if first is None:
            return None
        self.used.add(x.name)
        product, pre, out, shape, bound, bound_pre = first
        made = []
        if self.rng.random() < 0.4:  # a second layer on the first one's output, sometimes its pre-activation
            on_output = self.rng.random() < 0.8
            second = self._dense_line(out if on_output else pre, shape, bound if on_output else bound_pre)
            if second is not None and max(second[4], second[5]) <= LIMIT[self.p.dtype]:
                made.append((second[2], second[3], second[4]))
        made.append((out, shape, bound))
        if self.rng.random() < 0.3:  # the pre-activation read elsewhere too: the activation stays apart
            made.append((pre, shape, bound_pre))
        if self.rng.random() < 0.15:  # the product read twice: nothing may fuse
            made.append((product, shape, 0.5 * shape[-1] * x.bound))
        result = None
        for name, shape_, b in made:
            if b > LIMIT[self.p.dtype]:
                continue
            v = Value(name, shape_, b)
            self.pool.append(v)
            result = result or v
        return result

    # ---- batch norm -> Relu (batch-norm fusion, passes/fuse_batch_norm.cc)
    def bn_chain(self):
        """fused_batch_norm (training or inference) of a 4-D view, sometimes of a convolution chain, then a
        Relu; the batch norm's output also read elsewhere (a reduction, a result) or not, its statistics used
        or not, so the fusion's matching meets every reader it must respect. Not in smooth programs: their
        gradients would meet the Relu's kink (ReluGrad through the fused op is in test_fuse_batch_norm.py)."""
        if self.p.dtype not in ("float32", "float64") or self.p.smooth:
            return None
        view = self._view4()
        if view is None:
            return None
        h, shape, bound = *view, 1.0
        if self.rng.random() < 0.5:
            line = self._conv_line(h, shape, 1.0)
            if line is None:
                return None
            _, _, h, shape, bound = line
        n, hh, ww, c = shape
        dt = self.p.dtype
        scale = (self.p.np_rng.randint(1, 5, size=c) / 4).tolist()
        offset = (self.p.np_rng.randint(-4, 5, size=c) / 4).tolist()
        y, mean, var, out = self.fresh(), self.fresh(), self.fresh(), self.fresh()
        args = f"{h}, tf.constant({scale}, tf.{dt}), tf.constant({offset}, tf.{dt}), epsilon=0.1"
        if self.rng.random() < 0.7:  # training: |y| <= scale * sqrt(count) + |offset|
            y_bound = max(scale) * math.sqrt(n * hh * ww) + 1.0
        else:  # inference with given statistics (variance >= 0.25)
            m = (self.p.np_rng.randint(-4, 5, size=c) / 4).tolist()
            v = (self.p.np_rng.randint(1, 9, size=c) / 4).tolist()
            args += f", mean=tf.constant({m}, tf.{dt}), variance=tf.constant({v}, tf.{dt}), is_training=False"
            y_bound = max(scale) * (bound + 1.0) / math.sqrt(0.35) + 1.0
        if y_bound > LIMIT[dt]:
            return None
        self.lines.append(f"{y}, {mean}, {var} = tf.nn.fused_batch_norm({args})")
        self.lines.append(f"{out} = tf.nn.relu({y})")
        made = [(out, shape, y_bound)]
        if self.rng.random() < 0.25:  # the pre-activation read elsewhere: the forward may not fuse
            made.append((y, shape, y_bound))
        if self.rng.random() < 0.3:
            made.append((f"{mean} + {var}", (c,), y_bound))
        result = None
        for name, vshape, b in made:
            if len(vshape) == 1:
                v = self.emit(f"tf.tanh({name})", [], (c,), 1.0)
            elif self.rng.random() < 0.5:
                v = self.emit(f"tf.reshape({{0}}, [{hh}, {ww}, {c}])", [Value(name, vshape, b)], (hh, ww, c), b)
            else:
                v = self.emit("tf.reduce_sum({0}, axis=[0, 3])", [Value(name, vshape, b)], (hh, ww), b * c)
            result = result or v
        return result

    # ---- control flow (If/Case/While; the passes fold constant predicates and hoist loop invariants)
    def _predicate(self, x):
        """A scalar bool: data-dependent, known only once shapes are (static, unknown in "dynamic" mode), or
        constant only after inlining (a nested function returning a constant)."""
        r = self.rng.random()
        if r < 0.45:
            return f"tf.reduce_sum({x.name}) > 0"
        if r < 0.7 and x.shape:
            return f"tf.shape({x.name})[0] > 1"
        fn = self.p.constant_function("tf.constant(True)" if self.rng.random() < 0.5 else "tf.constant(False)")
        return f"{fn}()[0]"

    def _branch(self, x, y):
        """A branch over x (and a captured y broadcasting into x's shape), bounded by x.bound + 1."""
        if self.p.is_float:
            return self.rng.choice([f"tf.tanh({x.name}) * 0.5", f"{x.name} * 0.5 + tf.sin({y.name}) * 0.5",
                                    f"tf.negative({x.name})", f"{x.name} - tf.tanh({y.name}) * 0.5"])
        return self.rng.choice([f"tf.negative({x.name})", f"{x.name} + tf.clip_by_value({y.name}, -1, 1)",
                                f"tf.abs({x.name})"])

    def cond(self):
        if self.p.smooth:  # gradients through control flow are not there yet
            return None
        x = self.pick()
        y = self.pick(lambda v: _broadcast(v.shape, x.shape) == x.shape, recent=0.3) or x
        pred = self._predicate(x)
        if self.rng.random() < 0.7:
            t = f"tf.cond({pred}, lambda: {self._branch(x, y)}, lambda: {self._branch(x, y)})"
        else:
            index = self.rng.choice([f"tf.cast({pred}, tf.int32)", "tf.constant(1)",
                                     f"{self.p.constant_function('tf.constant(7)')}()[0]"])
            branches = ", ".join(f"lambda: {self._branch(x, y)}" for _ in range(self.rng.randint(2, 3)))
            t = f"tf.switch_case({index}, [{branches}])"
        self.used.update((x.name, y.name))
        return self.emit(t.replace("{", "{{").replace("}", "}}"), [], x.shape, x.bound + 1)

    def loop(self):
        """A while loop whose body computes invariant subexpressions (of a captured value, at the body's
        depth and, in a nested loop, of the outer loop's variable), with constant or data-dependent trips."""
        if self.p.smooth:
            return None
        x = self.pick()
        y = self.pick(lambda v: _broadcast(v.shape, x.shape) == x.shape, recent=0.3) or x
        if self.p.is_float and x.shape and self.rng.random() < 0.25:
            # A map_fn: independent iterations over x's rows, which run up to parallel_iterations at once
            # (Note [Parallel iterations] in runtime/parallel_loop.cc), with a captured invariant.
            c = f"tf.reduce_mean({x.name})"
            per_row = self.rng.choice(["tf.tanh(r * 0.5)", "tf.sin(r) * tf.cos(r * 0.5)", "tf.tanh(r) * tf.sin(r)"])
            n = self.rng.choice([1, 2, 10])
            self.used.add(x.name)
            # The signature keeps the row shape when x has no rows (map_fn would give [0] otherwise).
            t = (f"tf.map_fn(lambda r: {per_row} + tf.sin({c}) * 0.25, {x.name}, parallel_iterations={n}, "
                 f"fn_output_signature=tf.TensorSpec({x.name}.shape[1:], {x.name}.dtype))")
            return self.emit(t.replace("{", "{{").replace("}", "}}"), [], x.shape, 2)
        w, k = self.fresh(), "k"
        trips = self.rng.choice(["3", "2", f"tf.shape({x.name})[0]" if x.shape else "1", "0"])
        summed = False
        if self.p.is_float:
            inv = self.rng.choice([f"tf.tanh({y.name}) * 0.25", f"tf.sin({y.name} * 0.5) * tf.cos({y.name}) * 0.25"])
            if y is not x:  # a loop variable keeps its static shape: broadcasting an unknown dim would not
                inv = f"tf.reduce_mean({inv})"
            step = f"acc * 0.5 + {inv}"
            if len(x.shape) == 2 and self.rng.random() < 0.4:
                # A product with an invariant operand read transposed (the loop pass transposes it once,
                # outside the loop): m is [n, n] for acc's [_, n], built from the captured x.
                m = f"(tf.tanh(tf.matmul({x.name}, {x.name}, transpose_a=True)) * 0.1)"
                step += f" + tf.tanh(tf.matmul(acc, {m}, transpose_b=True)) * 0.25"
            if len(x.shape) == 2 and self.rng.random() < 0.4:
                # A row of an invariant sequence times an invariant matrix (the loop pass multiplies every
                # row at once, outside the loop: Note [Products of a loop-invariant sequence]), and a
                # product summed over the iterations (stacked and multiplied once after it: Note [Products
                # summed over a loop]). seq is [3, a, b], m is [b, b]; the sum is [b, b], acc is [a, b].
                seq = f"tf.stack([{x.name}, tf.tanh({x.name}), {x.name} * 0.5])"
                m = f"(tf.tanh(tf.matmul({x.name}, {x.name}, transpose_a=True)) * 0.1)"
                step += f" + tf.tanh(tf.matmul({seq}[{k} % 3], {m})) * 0.25"
                summed = True
            nested_step = f"a * 0.5 + {inv} + tf.sin(acc) * 0.1"
        else:
            y = x
            step = f"tf.negative(acc) + tf.clip_by_value({y.name}, -1, 1)"
            nested_step = f"tf.negative(a) + tf.clip_by_value({y.name}, -1, 1)"
        if not summed and self.rng.random() < 0.3:
            return self._scalar_loop(x, y, w, k, trips)
        lines = [f"def body_{w}({k}, acc{', g' if summed else ''}):"]
        if not summed and self.rng.random() < 0.35:  # a nested loop: its invariants are invariant in the outer one
            lines += [f"    def inner_{w}(j, a):",
                      f"        return j + 1, {nested_step}",
                      f"    return {k} + 1, tf.while_loop(lambda j, a: j < 2, inner_{w}, [0, acc])[1]"]
        elif summed:
            lines += [f"    new = {step}",
                      f"    return {k} + 1, new, g + tf.matmul(tf.tanh({x.name}), new * 0.1, transpose_a=True)"]
        else:
            lines += [f"    return {k} + 1, {step}"]
        self.lines += lines
        self.used.update((x.name, y.name))
        bound = x.bound + 2 if self.p.is_float else x.bound + 140  # at most ~130 trips
        if summed:  # acc plus the squashed mean of the sum
            zeros = f"tf.zeros_like(tf.matmul({x.name}, {x.name}, transpose_a=True))"  # [b, b], unknown dims too
            loop = f"tf.while_loop(lambda {k}, acc, g: {k} < {trips}, body_{w}, [0, {x.name}, {zeros}])"
            return self.emit(f"(lambda r: r[1] + tf.tanh(tf.reduce_mean(r[2])) * 0.5)({loop})"
                             .replace("{", "{{").replace("}", "}}"), [], x.shape, bound + 1)
        return self.emit(f"tf.while_loop(lambda {k}, acc: {k} < {trips}, body_{w}, [0, {x.name}])[1]"
                         .replace("{", "{{").replace("}", "}}"), [], x.shape, bound)

    def _scalar_loop(self, x, y, w, k, trips):
        """A loop over scalars whose step is element-wise work only, which runs on the fast path (Note [Fast
        loops] in runtime/fast_loop.cc), or one that just misses it: a matmul in the step."""
        c = f"c_{w}"  # a captured scalar
        self.lines.append(f"{c} = tf.reduce_mean({y.name})")
        if self.p.is_float:
            step = self.rng.choice([f"acc * 0.5 + {c} * 0.25", f"tf.tanh(acc) * 0.5 + tf.sin({c}) * 0.25",
                                    f"tf.maximum(acc, {c}) * 0.5 - 0.125"])
        else:
            step = f"tf.negative(acc) + tf.clip_by_value({c}, -1, 1)"
        if self.rng.random() < 0.3:  # a matmul by one: the same value, not by an element-wise op
            step = f"tf.reshape(tf.reshape({step}, [1, 1]) @ tf.ones([1, 1], acc.dtype), [])"
        self.lines += [f"def body_{w}({k}, acc):", f"    return {k} + 1, {step}"]
        self.used.update((x.name, y.name))
        bound = x.bound + 2 if self.p.is_float else x.bound + 140
        loop = f"tf.while_loop(lambda {k}, acc: {k} < {trips}, body_{w}, [0, tf.reduce_mean({x.name})])[1]"
        return self.emit(loop.replace("{", "{{").replace("}", "}}"), [], (), bound)

    STEPS = [("unary", 10), ("binary", 12), ("identity", 8), ("constant", 3), ("duplicate", 3),
             ("reduction", 4), ("reduction_chain", 5), ("transpose", 3), ("transpose_chain", 4), ("computed_shape", 3), ("pad", 3),
             ("concat", 2), ("matmul", 4), ("siblings", 6), ("read", 3), ("var_write", 3), ("call", 4),
             ("cond", 3), ("loop", 3), ("conv_chain", 2), ("bn_chain", 2), ("matmul_chain", 3)]

    def results(self, max_results):
        leaves = [v for v in self.pool if v.name not in self.used and v.name[0] == "t"]
        inner = [v for v in self.pool if v.name in self.used and v.name[0] == "t" and self.rng.random() < 0.15]
        out = leaves + inner
        self.rng.shuffle(out)
        out = out[:max_results] or [self.pool[-1]]
        if self.rng.random() < 0.1:  # a parameter returned as is, or one value twice (aliased results)
            out.append(self.rng.choice(self.pool[:3] + out))
        return out


def _write_body(body, steps):
    names = [s for s, _ in Body.STEPS]
    weights = [w for _, w in Body.STEPS]
    done = attempts = 0
    while done < steps and attempts < steps * 8:
        attempts += 1
        step = body.rng.choices(names, weights)[0]
        if getattr(body, step)() is not None:
            done += 1


class Program:
    def __init__(self, seed):
        self.seed = seed
        self.rng = random.Random(seed)
        self.np_rng = np.random.RandomState(seed % 2 ** 32)
        self.dtype = self.rng.choice(DTYPES)
        self.is_float = self.dtype != "int32"
        # Smooth programs (only differentiable ops, away from kinks) take gradients.
        self.smooth = self.dtype in ("float32", "float64") and self.rng.random() < 0.6
        m, n = self.rng.randint(1, 5), self.rng.randint(1, 5)
        if self.rng.random() < 0.08:  # several fusion tiles and parallel_for blocks
            m, n = self.rng.choice([17, 64, 130]), self.rng.choice([9, 33, 65])
        if self.rng.random() < 0.4:
            n = m
        if self.rng.random() < 0.05:  # empty values: every pass and kernel must do nothing, correctly
            m = 0
            # The mean of nothing is NaN, and a function's gradient multiplies the zero gradients of the
            # outputs it does not use by it (TensorFlow too), where the eager tape has no path: no gradients.
            self.smooth = False
        self.dims = (m, n)
        self.variables = []
        if self.rng.random() < 0.7:
            for _ in range(self.rng.randint(1, 2)):
                self.variables.append(((n, self.rng.choice([1, 2, n])), self.dtype))
        self.variables_ok = bool(self.variables)
        self.var_bound = 2.0
        self.num_functions = 0
        self.sources = []
        self.constants = {}  # expression -> the name of a function returning it

    def constant_function(self, expr):
        """The name of a function returning [expr]: a call's result is constant only after inlining."""
        if expr not in self.constants:
            self.num_functions += 1  # named f<k>: the runner makes it an ember.function
            name = f"f{self.num_functions}"
            self.constants[expr] = name
            self.sources.append(f"def {name}():\n    return [{expr}]\n")
        return self.constants[expr]

    def write_function(self, args, depth):
        self.num_functions += 1
        name = f"f{self.num_functions}"
        params = [Value(f"a{i}", a.shape, a.bound) for i, a in enumerate(args)]
        body = Body(self, params, depth)
        _write_body(body, self.rng.randint(2, 7))
        results = body.results(3)
        self.sources.append(self._source(name, params, body.lines, results))
        return {"name": name, "results": results}

    def _source(self, name, params, lines, results):
        text = f"def {name}({', '.join(p.name for p in params)}):\n"
        text += "".join(f"    {line}\n" for line in lines)
        return text + f"    return [{', '.join(r.name for r in results)}]\n"

    def write(self):
        m, n = self.dims
        shapes = [(m, n)]
        for _ in range(self.rng.randint(1, 3)):
            shapes.append(self.rng.choice([(), (n,), (m, n), (1, n), (m, 1), (n, n), (2, m, n), (n, 2)]))
        inputs = [Value(f"x{i}", s, 2.0) for i, s in enumerate(shapes)]
        body = Body(self, inputs, 0)
        _write_body(body, self.rng.randint(8, 30))
        results = body.results(8)
        header = (f"# seed {self.seed}\nDTYPE = {self.dtype!r}\nINPUTS = {[s for s in shapes]!r}\n"
                  f"VARIABLES = {[s for s, _ in self.variables]!r}\nSMOOTH = {self.smooth!r}\n")
        return header + "\n" + "\n".join(self.sources + [self._source("f0", inputs, body.lines, results)])


def generate(seed):
    """The source text of program `seed`."""
    return Program(seed).write()
