"""Randomized stress test of ember.function's optimizer and executor (issue 5, item 4).

A seeded generator writes 1,000 random programs as Python source over a pool of values, then each program
runs eagerly (the reference) and as an ``ember.function`` (traced, optimized, run by the graph executor),
twice, with fresh variables of the same initial value; every result, the variable after each call, and the
first call's results after the second call (buffer reuse across runs) must agree, and no input may change
(in-place writes). The programs are built to exercise each optimizer pass and the parallel runtime:

- broadcasting inputs ([], [n], [m, n], [1, n], [m, 1]), float32 with some float64 and int32 programs;
- element-wise chains and DAGs (fusion) whose intermediate values are also returned (fused values escape);
- identities the arithmetic pass removes (x*1, x+0, 0+x, x-0, x/1, same-dtype and round-trip casts, double
  transposes, chained reshapes, tf.identity), including ones that broadcast (x * ones([m, n]) is not x) or
  are not identities at all (a float -> int32 -> float cast, two transposes that do not cancel);
- constant subexpressions (folded while tracing, or after inlining when constants are passed to a nested
  function), duplicated subexpressions (CSE, also through identities), nested ``ember.function`` calls
  (inlining), reductions, matmul, transpose, concat, expand_dims/squeeze, where with a comparison;
- a variable per program whose reads and writes interleave (a read before a write keeps the old value);
- values computed but never used (pruning), and wide DAGs with independent branches and hub values with many
  consumers (parallel inter-op scheduling).

A failure names the DAG, prints its source (exactly what ran: eager runs it as written, the function wraps
every ``def`` in ``ember.function``) and the traced graphs. Run one DAG alone with
``EMBER_STRESS_DAG=<index> python3 -m pytest -q tests/python/test_executor_stress.py -k single -s``.
"""
import os
import random

import numpy as np
import pytest

import ember as tf

NUM_DAGS = 1000
CHUNK = 100
SEED = 20240505
THREADED_DAGS = 300  # the inter-op parallel variant runs the first THREADED_DAGS programs again

DTYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32}
RTOL = {"float32": 1e-5, "float64": 1e-12}
LIMIT = {"float32": 1e4, "float64": 1e4, "int32": 3e4}  # no value may exceed this (no overflow, no inf)
MAX_ELEMENTS = 40_000  # per value (large DAGs span several tiles and parallel_for blocks)
MAX_WRITES = 10       # variable writes per call of the program, nested calls included
WRITE_BOUND = {"float32": 1.0, "float64": 1.0, "int32": 3}  # a write adds at most this much
VAR_INIT_BOUND = 2.0
VAR_BOUND = VAR_INIT_BOUND + 2 * MAX_WRITES * 3  # two calls of the program


class Value:
    """A value of a generated function as the generator sees it: its name in the source, static shape,
    dtype name, and a bound on its absolute value (kept under LIMIT so that nothing overflows)."""

    __slots__ = ("name", "shape", "dtype", "bound", "const")

    def __init__(self, name, shape, dtype, bound, const=False):
        self.name, self.shape, self.dtype, self.bound, self.const = name, tuple(shape), dtype, float(bound), const


class SubFunction:
    """A generated nested function: its name, parameters and results (as Values), writes per call."""

    def __init__(self, name, params, results, writes, depth):
        self.name, self.params, self.results, self.writes, self.depth = name, params, results, writes, depth


class Dag:
    """One generated program: source text, inputs (two sets, for the two calls), captured constants and the
    variable's initial value."""

    def __init__(self, index, dtype, source, inputs, inputs2, captured, var_init):
        self.index, self.dtype, self.source = index, dtype, source
        self.inputs, self.inputs2, self.captured, self.var_init = inputs, inputs2, captured, var_init


def _broadcast(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def _shape_str(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


class FunctionWriter:
    """Writes the body of one function: each step appends a line over the pool of values made so far."""

    def __init__(self, program, rng, params, depth):
        self.program = program  # the ProgramWriter: dtype, dims, sub-functions, counters
        self.rng = rng
        self.dtype = program.dtype
        self.depth = depth
        self.pool = list(params)
        self.lines = []
        self.writes = 0
        self.hubs = [v for v in params if rng.random() < 0.3]
        self.consumed = set()
        self.equal = {}  # value name -> names known to hold the same value (for duplicates through identities)
        self.pure = []  # (template, arg Values, shape, bound, equal_to_arg) of lines a duplicate may repeat
        self.next_id = 0

    # ---- values
    def new_name(self):
        self.next_id += 1
        return f"v{self.next_id}"

    def add_line(self, template, args, shape, bound, equal_to=None, const=False, pure=True):
        """`out = template.format(*arg names)`; returns the new Value (None when the op would overflow)."""
        if bound > LIMIT[self.dtype] or shape is None or len(shape) > 3 or np.prod(shape) > MAX_ELEMENTS:
            return None
        out = Value(self.new_name(), shape, self.dtype, bound, const)
        self.lines.append(f"{out.name} = " + template.format(*[a.name for a in args]))
        self.pool.append(out)
        self.consumed.update(a.name for a in args)
        if pure:
            self.pure.append((template, args, shape, bound, equal_to or out))
        if equal_to is not None:
            group = self.equal.setdefault(equal_to.name, [equal_to])
            group.append(out)
            self.equal[out.name] = group
        return out

    def pick(self, pred=lambda v: True):
        """A value satisfying pred: most often a recent one (chains) or a hub (many consumers), else any
        (independent branches)."""
        cands = [v for v in self.pool if pred(v)]
        if not cands:
            return None
        r = self.rng.random()
        hubs = [v for v in self.hubs if pred(v)]
        if r < 0.25 and hubs:
            return self.rng.choice(hubs)
        if r < 0.6:
            return self.rng.choice(cands[-3:])
        return self.rng.choice(cands)

    def is_float(self):
        return self.dtype != "int32"

    # ---- ops
    def unary(self, x=None):
        x = x or self.pick()
        ops = [("tf.negative({0})", x.bound), ("tf.abs({0})", x.bound), ("tf.square({0})", x.bound ** 2),
               ("tf.nn.relu({0})", x.bound)]
        if self.is_float():
            ops += [("tf.exp(tf.clip_by_value({0}, -3.0, 3.0))", 20.1), ("tf.tanh({0})", 1),
                    ("tf.sigmoid({0})", 1), ("tf.sin({0})", 1), ("tf.sqrt(tf.abs({0}))", np.sqrt(x.bound))]
        template, bound = ops[self.rng.randrange(len(ops))]
        return self.add_line(template, [x], x.shape, bound)

    def binary(self, x=None):
        x = x or self.pick()
        y = self.pick(lambda v: _broadcast(v.shape, x.shape) is not None)
        shape = _broadcast(x.shape, y.shape)
        ops = [("tf.add({0}, {1})", x.bound + y.bound), ("{0} + {1}", x.bound + y.bound),
               ("tf.subtract({0}, {1})", x.bound + y.bound), ("{0} - {1}", x.bound + y.bound),
               ("tf.multiply({0}, {1})", x.bound * y.bound), ("{0} * {1}", x.bound * y.bound),
               ("tf.maximum({0}, {1})", max(x.bound, y.bound)), ("tf.minimum({0}, {1})", max(x.bound, y.bound))]
        if self.is_float():
            ops += [("tf.divide({0}, tf.abs({1}) + 1)", x.bound)]
        template, bound = ops[self.rng.randrange(len(ops))]
        return self.add_line(template, [x, y], shape, bound)

    def identity(self, x=None):
        """An op the arithmetic pass should remove (x*1, x+0, ..., tf.identity); sometimes a lookalike."""
        x = x or self.pick()
        if self.rng.random() < 0.3:
            return self.lookalike(x)
        rank, dt = len(x.shape), self.dtype
        one, zero = ("1.0", "0.0") if self.is_float() else ("1", "0")
        ops = [f"{{0}} * {one}", f"{one} * {{0}}", f"{{0}} + {zero}", f"{zero} + {{0}}", f"{{0}} - {zero}",
               f"tf.multiply({{0}}, tf.constant({one}, tf.{dt}))", f"tf.cast({{0}}, tf.{dt})", "tf.identity({0})",
               "tf.stop_gradient({0})"]
        if self.is_float():
            ops += ["{0} / 1.0", f"tf.cast(tf.cast({{0}}, tf.float64), tf.{dt})"]
        else:
            ops += ["tf.cast(tf.cast({0}, tf.float32), tf.int32)"]
        if rank == 2:
            ops += ["tf.transpose(tf.transpose({0}))", "tf.transpose(tf.transpose({0}, [1, 0]), [1, 0])"]
        if rank == 3:
            p = self.rng.sample(range(3), 3)
            ops += [f"tf.transpose(tf.transpose({{0}}, {p}), {[int(i) for i in np.argsort(p)]})"]
        if rank >= 1:
            ops += [f"tf.reshape(tf.reshape({{0}}, [-1]), {_shape_str(x.shape)})",
                    f"tf.reshape(tf.reshape({{0}}, [1, -1]), {_shape_str(x.shape)})"]
        return self.add_line(self.rng.choice(ops), [x], x.shape, x.bound, equal_to=x)

    def lookalike(self, x):
        """Looks like an identity but is not one: it broadcasts, truncates, permutes or reshapes."""
        rank, dt = len(x.shape), self.dtype
        r = self.rng.random()
        if r < 0.5:
            other = self.pick(lambda v: _broadcast(v.shape, x.shape) is not None)
            big = _broadcast(x.shape, other.shape)
            template = self.rng.choice([f"{{0}} * tf.ones({_shape_str(big)}, tf.{dt})",
                                        f"tf.zeros({_shape_str(big)}, tf.{dt}) + {{0}}"])
            return self.add_line(template, [x], big, x.bound)
        if r < 0.7 and self.is_float():
            return self.add_line(f"tf.cast(tf.cast({{0}}, tf.int32), tf.{dt})", [x], x.shape, x.bound)
        if rank >= 2:
            p = self.rng.sample(range(rank), rank)
            q = self.rng.sample(range(rank), rank)
            shape = tuple(x.shape[p[i]] for i in q)
            same = [p[i] for i in q] == list(range(rank))
            return self.add_line(f"tf.transpose(tf.transpose({{0}}, {p}), {q})", [x], shape, x.bound,
                                 equal_to=x if same else None)
        shape = (1,) + x.shape if self.rng.random() < 0.5 else x.shape + (1,)
        return self.add_line(f"tf.reshape(tf.reshape({{0}}, [-1]), {_shape_str(shape)})", [x], shape, x.bound)

    def reduction(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return None
        names = ["reduce_sum", "reduce_max", "reduce_min"] + (["reduce_mean"] if self.is_float() else [])
        name = self.rng.choice(names)
        rank = len(x.shape)
        r = self.rng.random()
        if r < 0.2:
            axes = list(range(rank))
            axis_text = ""
        elif r < 0.7 or rank == 1:
            axes = [self.rng.randrange(rank)]
            axis_text = f", axis={axes[0] - rank if self.rng.random() < 0.3 else axes[0]}"
        else:
            axes = sorted(self.rng.sample(range(rank), 2))
            axis_text = f", axis={axes}"
        keep = self.rng.random() < 0.3
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keep else \
            tuple(d for i, d in enumerate(x.shape) if i not in axes)
        count = int(np.prod([x.shape[i] for i in axes]))
        bound = x.bound * count if name == "reduce_sum" else x.bound
        return self.add_line(f"tf.{name}({{0}}{axis_text}{', keepdims=True' if keep else ''})", [x], shape, bound)

    def matmul(self):
        a = self.pick(lambda v: len(v.shape) == 2)
        if a is None:
            return None
        ta = self.rng.random() < 0.3
        k = a.shape[0] if ta else a.shape[1]
        b = self.pick(lambda v: len(v.shape) == 2 and k in v.shape)
        if b is None:
            return None
        tb = b.shape[0] != k or (b.shape[1] == k and self.rng.random() < 0.5)
        shape = (a.shape[1] if ta else a.shape[0], b.shape[0] if tb else b.shape[1])
        flags = (", transpose_a=True" if ta else "") + (", transpose_b=True" if tb else "")
        template = f"tf.matmul({{0}}, {{1}}{flags})" if flags or self.rng.random() < 0.5 else "{0} @ {1}"
        return self.add_line(template, [a, b], shape, a.bound * b.bound * k)

    def transpose(self):
        x = self.pick(lambda v: len(v.shape) >= 2)
        if x is None:
            return None
        perm = self.rng.sample(range(len(x.shape)), len(x.shape))
        shape = tuple(x.shape[i] for i in perm)
        return self.add_line(f"tf.transpose({{0}}, {perm})", [x], shape, x.bound)

    def concat(self):
        a = self.pick(lambda v: len(v.shape) >= 1)
        if a is None:
            return None
        rank = len(a.shape)
        axis = self.rng.randrange(rank)

        def fits(v):
            return len(v.shape) == rank and all(v.shape[i] == a.shape[i] for i in range(rank) if i != axis)

        parts = [a] + [self.pick(fits) for _ in range(self.rng.choice([1, 1, 2]))]
        shape = list(a.shape)
        shape[axis] = sum(p.shape[axis] for p in parts)
        names = ", ".join("{%d}" % i for i in range(len(parts)))
        axis_text = axis - rank if self.rng.random() < 0.3 else axis
        return self.add_line(f"tf.concat([{names}], axis={axis_text})", parts, tuple(shape),
                             max(p.bound for p in parts))

    def expand_or_squeeze(self):
        x = self.pick()
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        if ones and self.rng.random() < 0.5:
            axis = self.rng.choice(ones)
            shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
            return self.add_line(f"tf.squeeze({{0}}, [{axis}])", [x], shape, x.bound)
        if len(x.shape) >= 3:
            return None
        axis = self.rng.randrange(len(x.shape) + 1)
        shape = x.shape[:axis] + (1,) + x.shape[axis:]
        out = self.add_line(f"tf.expand_dims({{0}}, {axis})", [x], shape, x.bound)
        if out is not None and self.rng.random() < 0.4:  # and straight back
            return self.add_line(f"tf.squeeze({{0}}, [{axis}])", [out], x.shape, x.bound, equal_to=x)
        return out

    def where(self):
        a = self.pick()
        b = self.pick(lambda v: _broadcast(v.shape, a.shape) is not None)
        x = self.pick(lambda v: _broadcast(v.shape, a.shape, b.shape) is not None)
        y = self.pick(lambda v: _broadcast(v.shape, a.shape, b.shape, x.shape) is not None)
        cmp = self.rng.choice(["greater", "less", "greater_equal", "less_equal"])
        shape = _broadcast(a.shape, b.shape, x.shape, y.shape)
        return self.add_line(f"tf.where(tf.{cmp}({{0}}, {{1}}), {{2}}, {{3}})", [a, b, x, y], shape,
                             max(x.bound, y.bound))

    def add_n(self):
        x = self.pick()
        parts = [x] + [self.pick(lambda v: v.shape == x.shape) for _ in range(self.rng.randrange(1, 4))]
        names = ", ".join("{%d}" % i for i in range(len(parts)))
        return self.add_line(f"tf.add_n([{names}])", parts, x.shape, sum(p.bound for p in parts))

    def constant(self):
        """A constant subexpression: all of it is known while tracing."""
        m, n = self.program.dims
        dt = self.dtype
        shape = self.rng.choice([(), (n,), (m, n), (1, n), (m, 1)])
        size = int(np.prod(shape))
        r = self.rng.random()
        if r < 0.4:
            value = self.rng.choice([-2, -1, 2, 3])
            template = (f"tf.fill({_shape_str(shape)}, tf.constant({value}, tf.{dt})) * 2 - "
                        f"tf.ones({_shape_str(shape)}, tf.{dt})")
            bound = abs(2 * value) + 1
        elif r < 0.8:
            template = (f"tf.reshape(tf.cast(tf.range({size}), tf.{dt}), {_shape_str(shape)}) - "
                        f"tf.constant({size // 2}, tf.{dt})")
            bound = size
        else:
            x = self.pick()  # its shape is static: tf.size folds while tracing
            template = f"tf.cast(tf.size({{0}}), tf.{dt}) - tf.constant(2, tf.{dt})"
            return self.add_line(template, [x], (), 2 + int(np.prod(x.shape)), const=True)
        return self.add_line(template, [], shape, bound, const=True)

    def duplicate(self):
        """The same op on the same inputs again (CSE), its inputs sometimes replaced by equal values."""
        if not self.pure:
            return None
        template, args, shape, bound, equal_to = self.rng.choice(self.pure)
        args = [self.rng.choice(self.equal.get(a.name, [a])) for a in args]
        return self.add_line(template, args, shape, bound, equal_to=equal_to)

    def branches(self):
        """Two to four independent chains from different values, interleaved line by line, then joined:
        work the scheduler may run in parallel."""
        tips = [self.pick() for _ in range(self.rng.randint(2, 4))]
        for _ in range(self.rng.randint(2, 5)):
            for i, tip in enumerate(tips):
                step = self.rng.choice([self.unary, self.unary, self.identity, self.binary])
                tips[i] = step(tip) or tip
        joined = [t for t in tips if _broadcast(t.shape, tips[0].shape) is not None]
        if len(joined) < 2:
            return tips[0]
        names = " + ".join("{%d}" % i for i in range(len(joined)))
        return self.add_line(names, joined, _broadcast(*[t.shape for t in joined]), sum(t.bound for t in joined))

    # ---- state
    def read(self):
        m, n = self.program.dims
        r = self.rng.random()
        if r < 0.5:
            template = "var.read_value()"
        elif r < 0.7:
            template = "tf.identity(var)"
        else:  # the variable used directly as an operand
            x = self.pick(lambda v: _broadcast(v.shape, (m, n)) is not None)
            if x is None:
                return None
            return self.add_line("{0} + var", [x], _broadcast(x.shape, (m, n)), x.bound + VAR_BOUND, pure=False)
        return self.add_line(template, [], (m, n), VAR_BOUND, pure=False)

    def write(self):
        if not self.program.can_write(1):
            return None
        m, n = self.program.dims
        x = self.pick(lambda v: _broadcast(v.shape, (m, n)) == (m, n))
        if x is None:
            return None
        delta = "{0}"
        if x.bound > WRITE_BOUND[self.dtype]:
            delta = "tf.tanh({0})" if self.is_float() else "tf.clip_by_value({0}, -3, 3)"
        if x.shape != (m, n):
            delta = f"tf.broadcast_to({delta}, [{m}, {n}])"
        method = self.rng.choice(["assign_add", "assign_add", "assign_sub", "assign"])
        self.writes += 1
        self.consumed.add(x.name)
        if self.rng.random() < 0.3:  # the write's result read at once
            out = Value(self.new_name(), (m, n), self.dtype, VAR_BOUND)
            self.lines.append(f"{out.name} = var.{method}({delta.format(x.name)}).read_value()")
            self.pool.append(out)
            return out
        self.lines.append(f"var.{method}({delta.format(x.name)})")
        return True

    # ---- nested functions
    def call(self):
        if self.depth >= 2:
            return None
        fn = None
        subs = [s for s in self.program.subs if s.depth > self.depth]
        if subs and self.rng.random() < 0.5:  # call an existing function again, perhaps on the same values
            fn = self.rng.choice(subs)
            args = []
            for p in fn.params:
                a = self.pick(lambda v: v.shape == p.shape and v.bound <= p.bound)
                if a is None:
                    fn = None
                    break
                args.append(a)
        if fn is None:  # a new function; constant arguments become foldable once it is inlined
            consts = [v for v in self.pool if v.const]
            args = []
            for _ in range(self.rng.randrange(1, 4)):
                use_const = consts and self.rng.random() < 0.3
                args.append(self.rng.choice(consts) if use_const else self.pick())
            fn = self.program.write_function(args, self.depth + 1)  # within the write budget
        elif not self.program.can_write(fn.writes):
            return None
        self.writes += fn.writes
        outs = [Value(self.new_name(), r.shape, self.dtype, r.bound) for r in fn.results]
        self.consumed.update(a.name for a in args)
        self.lines.append(f"[{', '.join(o.name for o in outs)}] = {fn.name}({', '.join(a.name for a in args)})")
        self.pool += outs
        return outs

    # ---- the function
    STEPS = [("unary", 14), ("binary", 18), ("identity", 12), ("reduction", 5), ("matmul", 4),
             ("transpose", 3), ("concat", 3), ("expand_or_squeeze", 3), ("where", 4), ("add_n", 2),
             ("constant", 4), ("duplicate", 8), ("branches", 3), ("read", 5), ("write", 6), ("call", 4)]

    def write_body(self, num_steps):
        names = [s for s, _ in self.STEPS]
        weights = [w for _, w in self.STEPS]
        done = 0
        attempts = 0
        while done < num_steps and attempts < num_steps * 10:
            attempts += 1
            step = self.rng.choices(names, weights)[0]
            if getattr(self, step)() is not None:
                done += 1
            if self.rng.random() < 0.08 and len(self.pool) > 3:  # a new hub
                self.hubs.append(self.rng.choice(self.pool))

    def results(self, max_results):
        """Returns the unconsumed values (mostly), consumed ones (escaping intermediates), sometimes a
        parameter as is, or one value twice; values left out are dead code."""
        out = []
        for v in self.pool:
            leaf = v.name not in self.consumed
            if self.rng.random() < (0.6 if leaf else 0.12):
                out.append(v)
        if self.rng.random() < 0.1 and out:
            out.append(self.rng.choice(out))
        self.rng.shuffle(out)
        out = out[:max_results]
        return out or [self.pool[-1]]


class ProgramWriter:
    """Writes one DAG: the outer function f0 and its nested functions f1, f2, ..."""

    def __init__(self, index):
        self.rng = random.Random(SEED * 7919 + index)
        self.np_rng = np.random.RandomState((SEED + index) % 2 ** 32)
        r = self.rng.random()
        self.dtype = "float32" if r < 0.8 else "float64" if r < 0.9 else "int32"
        self.dims = (self.rng.randint(1, 6), self.rng.randint(1, 6))
        if self.rng.random() < 0.06:
            self.dims = (self.rng.choice([17, 64, 130]), self.rng.choice([33, 65, 129]))
        if self.rng.random() < 0.25:
            self.dims = (self.dims[0], self.dims[0])
        self.subs = []
        self.num_functions = 0
        self.sources = []
        self.active = []  # the functions being written, outermost first

    def can_write(self, count):
        """Whether `count` more writes keep a call of f0 within MAX_WRITES (the functions being written
        call each other: f0 calls the one being written now, which may call another)."""
        return sum(w.writes for w in self.active) + count <= MAX_WRITES

    def write_function(self, args, depth):
        self.num_functions += 1
        name = f"f{self.num_functions}"  # taken before the body, which may write functions of its own
        params = [Value(f"a{i}", a.shape, a.dtype, a.bound) for i, a in enumerate(args)]
        w = FunctionWriter(self, self.rng, params, depth)
        w.hubs = list(params)
        self.active.append(w)
        w.write_body(self.rng.randint(2, 8))
        self.active.pop()
        results = w.results(3)
        fn = SubFunction(name, params, results, w.writes, depth)
        self.subs.append(fn)
        self.sources.append(self._source(name, params, w.lines, results))
        return fn

    def _source(self, name, params, lines, results):
        body = "\n".join("    " + line for line in lines)
        ret = f"    return [{', '.join(r.name for r in results)}]"
        return f"def {name}({', '.join(p.name for p in params)}):\n" + (body + "\n" if lines else "") + ret

    def _array(self, shape):
        if self.dtype == "int32":
            return self.np_rng.randint(-4, 5, size=shape).astype(np.int32)
        return self.np_rng.uniform(-2, 2, size=shape).astype(DTYPES[self.dtype])

    def write(self, index):
        m, n = self.dims
        shapes = [(m, n)] + [self.rng.choice([(), (n,), (m, n), (1, n), (m, 1)])
                             for _ in range(self.rng.randint(1, 4))]
        inputs = [Value(f"x{i}", s, self.dtype, 4) for i, s in enumerate(shapes)]
        captured = [Value("c0", self.rng.choice(shapes), self.dtype, 4)] if self.rng.random() < 0.3 else []
        outer = FunctionWriter(self, self.rng, inputs + captured, depth=0)
        outer.hubs = [v for v in inputs if self.rng.random() < 0.5]
        self.active.append(outer)
        outer.write_body(self.rng.randint(15, 45))
        results = outer.results(12)
        source = "\n\n".join(self.sources + [self._source("f0", inputs, outer.lines, results)])
        return Dag(index, self.dtype, source, [self._array(v.shape) for v in inputs],
                   [self._array(v.shape) for v in inputs], {v.name: self._array(v.shape) for v in captured},
                   self.np_rng.uniform(-VAR_INIT_BOUND, VAR_INIT_BOUND, size=self.dims).astype(DTYPES[self.dtype])
                   if self.dtype != "int32" else self.np_rng.randint(-2, 3, size=self.dims).astype(np.int32))


def generate(index):
    return ProgramWriter(index).write(index)


# ---- running and comparing

def _namespace(dag, graph):
    """The functions of `dag` over a fresh variable: as written (eager) or each wrapped in ember.function."""
    ns = {"tf": tf, "np": np, "var": tf.Variable(dag.var_init)}
    ns.update({k: tf.constant(v) for k, v in dag.captured.items()})
    exec(compile(dag.source, f"<dag {dag.index}>", "exec"), ns)
    if graph:
        for name in [k for k in ns if k[0] == "f" and k[1:].isdigit()]:
            ns[name] = tf.function(ns[name])
    return ns


def _numpy(results):
    return [np.array(r.numpy(), copy=True) for r in results]


def run_eager(dag):
    ns = _namespace(dag, graph=False)
    calls = []
    for inputs in (dag.inputs, dag.inputs2):
        results = _numpy(ns["f0"](*[tf.constant(a) for a in inputs]))
        calls.append((results, np.array(ns["var"].numpy(), copy=True)))
    return calls


def _graphs(ns):
    """The traced graphs of every function of the namespace, as text."""
    texts = []
    for name in sorted((k for k in ns if k[0] == "f" and k[1:].isdigit()), key=lambda k: int(k[1:])):
        for concrete in list(getattr(ns[name], "_cache", {}).values()):
            try:
                texts.append(f"--- {name}: {concrete.pretty_printed_signature()}\n{concrete.graph.as_text()}")
            except Exception as e:  # noqa: BLE001 - the report must not hide the failure it reports
                texts.append(f"--- {name}: (graph unavailable: {e})")
    return "\n".join(texts)


def _assert_same(expected, actual, dtype, what):
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, expected {expected.dtype}"
    if dtype == "int32":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        # atol scales with the output: ulp-level differences of a fused kernel can be amplified by a later
        # cancellation (a - b of nearly equal values) without any bug.
        rtol = RTOL[dtype]
        scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale, err_msg=what)


def check_dag(dag, diagnose=True):
    """Runs `dag` eagerly and as ember.function, twice each; raises AssertionError with a report."""
    try:
        expected = run_eager(dag)
    except Exception as e:  # noqa: BLE001 - a generator bug (or an eager one): show the program
        raise AssertionError(report(dag, {}, f"the eager reference: {type(e).__name__}: {e}")) from e
    ns = _namespace(dag, graph=True)
    stage = "tracing and the first call"
    try:
        tensors = [[tf.constant(a) for a in inputs] for inputs in (dag.inputs, dag.inputs2)]
        originals = [[np.array(a, copy=True) for a in inputs] for inputs in (dag.inputs, dag.inputs2)]
        first = None
        for call, (inputs, (want, want_var)) in enumerate(zip(tensors, expected)):
            stage = f"call {call + 1}"
            results = ns["f0"](*inputs)
            got = _numpy(results)
            assert len(got) == len(want), f"{len(got)} results, expected {len(want)}"
            for i, (w, g) in enumerate(zip(want, got)):
                _assert_same(w, g, dag.dtype, f"call {call + 1}, result {i}")
            _assert_same(want_var, ns["var"].numpy(), dag.dtype, f"call {call + 1}, the variable afterwards")
            if first is None:
                first = results
        stage = "after both calls"
        for i, (w, r) in enumerate(zip(expected[0][0], first)):
            _assert_same(w, r.numpy(), dag.dtype, f"call 1's result {i}, read after call 2 (reused buffer?)")
        for i, (arrays, ts) in enumerate(zip(originals, tensors)):
            for j, (a, t) in enumerate(zip(arrays, ts)):
                _assert_same(a, t.numpy(), dag.dtype, f"input x{j} of call {i + 1} changed (written in place?)")
        for name, a in dag.captured.items():
            _assert_same(a, ns[name].numpy(), dag.dtype, f"captured {name} changed (written in place?)")
    except Exception as e:  # noqa: BLE001 - any failure of the function is reported with the program
        message = f"{stage}: {type(e).__name__}: {e}"
        if diagnose:
            message += _diagnose(dag)
        raise AssertionError(report(dag, ns, message)) from e


# When a DAG fails, it runs again with one optimizer pass off at a time (ember.config.optimizer, with
# TensorFlow's option names), so that the report names the pass at fault.
PASS_OPTIONS = {"all passes": ("disable_meta_optimizer", True), "pruning": ("disable_model_pruning", True),
                "CSE": ("common_subgraph_elimination", False), "constant folding": ("constant_folding", False),
                "arithmetic": ("arithmetic_optimization", False), "inlining": ("function_optimization", False),
                "fusion": ("elementwise_fusion", False), "matmul merging": ("sibling_matmul_merging", False),
                "memory": ("memory_optimization", False)}


def _diagnose(dag):
    optimizer = tf.config.optimizer
    saved = optimizer.get_experimental_options()
    lines = []
    for label, (key, value) in PASS_OPTIONS.items():
        optimizer.set_experimental_options({key: value})  # a renamed option fails here, loudly
        try:
            check_dag(dag, diagnose=False)
            lines.append(f"passes with {label} off")
        except AssertionError:
            lines.append(f"fails with {label} off")
        finally:
            optimizer.set_experimental_options(saved)
    return "\nRe-run with one pass off at a time: " + "; ".join(lines)


def report(dag, ns, message):
    inputs = ", ".join(f"x{i}: {a.dtype}{list(a.shape)}" for i, a in enumerate(dag.inputs))
    return (f"\nDAG {dag.index} ({dag.dtype}; inputs {inputs}; variable {list(dag.var_init.shape)}) failed at "
            f"{message}\n"
            f"Reproduce: EMBER_STRESS_DAG={dag.index} python3 -m pytest -q tests/python/test_executor_stress.py "
            f"-k single -s\n"
            f"--- program (eager runs it as written; the function wraps each def in ember.function)\n"
            f"{dag.source}\n{_graphs(ns)}\n")


def check_range(indices, max_reports=3):
    failures = []
    for index in indices:
        dag = generate(index)
        try:
            check_dag(dag)
        except AssertionError as e:
            failures.append((index, str(e)))
    if failures:
        shown = "\n".join(text for _, text in failures[:max_reports])
        pytest.fail(f"{len(failures)} of {len(indices)} DAGs differ: {[i for i, _ in failures]}\n{shown}",
                    pytrace=False)


# ---- the tests

def test_generator_is_deterministic_and_varied():
    a, b = generate(7), generate(7)
    assert a.source == b.source and all(np.array_equal(x, y) for x, y in zip(a.inputs, b.inputs))
    sources = [generate(i).source for i in range(50)]
    assert len(set(sources)) == 50
    text = "\n".join(sources)
    for needle in ["tf.matmul", "var.assign", "var.read_value()", "= f1(", "tf.where", "tf.concat", "* 1.0",
                   "tf.transpose(tf.transpose(", "tf.reshape(tf.reshape(", "tf.reduce_", "tf.range"]:
        assert needle in text, needle


@pytest.mark.parametrize("chunk", range(NUM_DAGS // CHUNK))
def test_random_dags_match_eager(chunk):
    check_range(range(chunk * CHUNK, (chunk + 1) * CHUNK))


@pytest.fixture
def two_inter_op_threads():
    threading = tf.config.threading
    saved = threading.get_inter_op_parallelism_threads()
    threading.set_inter_op_parallelism_threads(2)
    # Parallel runs even when the machine running the tests is busy (ember would otherwise leave the
    # other processes their cores and run plans in order: docs/threads.md).
    tf._C.force_other_processes_load(0.0)
    yield
    tf._C.force_other_processes_load(-1.0)
    threading.set_inter_op_parallelism_threads(saved)


@pytest.mark.parametrize("chunk", range(THREADED_DAGS // CHUNK))
def test_random_dags_match_eager_with_two_inter_op_threads(chunk, two_inter_op_threads):
    check_range(range(chunk * CHUNK, (chunk + 1) * CHUNK))


def test_single():
    """One DAG, chosen by EMBER_STRESS_DAG (DAG 0 by default), with its program printed (for debugging)."""
    dag = generate(int(os.environ.get("EMBER_STRESS_DAG", "0")))
    print(f"\nDAG {dag.index} ({dag.dtype})\n{dag.source}")
    check_dag(dag)


def test_diagnosis_names_every_pass_option():
    """Every option the diagnosis switches exists (a renamed option must fail here, not be skipped)."""
    options = tf.config.optimizer.get_experimental_options()
    for key, _ in PASS_OPTIONS.values():
        assert key in options, key
