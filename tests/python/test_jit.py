"""Native fused kernels (src/ember/jit, docs/fusion.md) seen from Python: every element-wise op of the fusion
table through ``ember.function`` against the interpreter (bit for bit), the tiered switch (interpreter first,
native once compiled), the modes, and the disk cache under concurrent processes and with corrupt files.
No timing is asserted; the run counters say which path ran."""
import glob
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember as tf
from ember import _C

cfg = tf.config.experimental



def test_this_build_has_the_jit():
    assert _C.jit_available(), "built without LLVM 15 (llvm-15-dev) or clang: fused kernels stay interpreted"

UNARY = ["negative", "abs", "sign", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "square", "reciprocal",
         "sin", "cos", "tanh", "sigmoid", "relu", "relu6", "elu", "softplus", "erf", "floor", "ceil", "round",
         "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh", "lgamma", "digamma", "erfinv",
         "erfc"]
BINARY = ["add", "subtract", "multiply", "realdiv", "floordiv", "floormod", "pow", "maximum", "minimum",
          "squared_difference", "atan2"]
FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int32", "int64", "int8", "int16", "uint8"]
INT_BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "squared_difference"]
INT_UNARY = ["negative", "abs", "sign", "square", "relu", "relu6"]
UNSIGNED_UNARY = ["square", "relu", "relu6"]
BINARY_CASES = [(name, dtype) for name in BINARY for dtype in FLOATS + INTS
                if dtype in FLOATS or name in INT_BINARY]  # FloorDiv/FloorMod/Pow of ints can fail: not fused


def _op(name):
    for module in (tf.math, tf.nn, tf):
        if hasattr(module, name):
            return getattr(module, name)
    return getattr(tf.raw_ops, name)


@pytest.fixture
def mode():
    saved = cfg.get_native_kernels()
    yield
    cfg.set_native_kernels(saved)


def _run_both(fn, *args):
    """fn traced twice as ember.function: with native kernels off, and compiled before the first call."""
    cfg.set_native_kernels("off")
    interpreted = tf.function(fn)(*args)
    cfg.set_native_kernels("sync")
    before = cfg.native_kernel_stats()["native_runs"]
    native = tf.function(fn)(*args)
    ran = cfg.native_kernel_stats()["native_runs"] - before
    return interpreted.numpy(), native.numpy(), ran


def _same_bits(a, b):
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        numbers = ~np.isnan(a64)  # a NaN's sign is free (docs/fusion.md)
        return np.array_equal(a64, b64, equal_nan=True) and np.array_equal(np.signbit(a64[numbers]),
                                                                            np.signbit(b64[numbers]))
    return np.array_equal(a, b)


def _values(dtype, shape, seed, lo=-3.0, hi=3.0):
    rng = np.random.default_rng(seed)
    if dtype in INTS:
        info = np.iinfo(dtype)
        return tf.constant(rng.integers(max(info.min, -1000), min(info.max, 1000), shape).astype(dtype))
    return tf.cast(tf.constant(rng.uniform(lo, hi, shape).astype(np.float32)), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_ops_native_equals_interpreter(mode, name, dtype):
    op = _op(name)
    x = _values(dtype, [3, 700], 1)

    def f(x):  # the op between two others, so that it is fused into a chain
        return op(x * tf.cast(0.75, dtype)) + tf.cast(0.5, dtype)

    a, b, ran = _run_both(f, x)
    assert ran >= 1, "the native kernel did not run"
    assert _same_bits(a, b), f"{name} {dtype}: native differs from the interpreter"


@pytest.mark.parametrize("name,dtype", BINARY_CASES)
def test_binary_ops_native_equals_interpreter_with_broadcasting(mode, name, dtype):
    op = _op(name)
    x = _values(dtype, [5, 300], 2, 0.5, 3.0)
    row = _values(dtype, [300], 3, 0.5, 3.0)
    col = _values(dtype, [5, 1], 4, 0.5, 3.0)

    def f(x, row, col):
        return op(op(x, row), col) - x

    a, b, ran = _run_both(f, x, row, col)
    assert ran >= 1
    assert _same_bits(a, b), f"{name} {dtype}"


@pytest.mark.parametrize("dtype", INTS)
def test_integer_unary_chain(mode, dtype):
    x = _values(dtype, [2000], 5)

    def f(x):
        v = x
        for name in UNSIGNED_UNARY if dtype == "uint8" else INT_UNARY:
            v = _op(name)(v) * x + v
        return v

    a, b, ran = _run_both(f, x)
    assert ran >= 1 and _same_bits(a, b)


def test_bool_programs(mode):
    x = tf.constant(np.random.default_rng(6).integers(0, 2, 1000).astype(bool))
    y = tf.constant(np.random.default_rng(7).integers(0, 2, 1000).astype(bool))

    def f(x, y):
        return tf.logical_or(tf.logical_and(x, tf.logical_not(y)), tf.equal(x, y))

    a, b, ran = _run_both(f, x, y)
    assert ran >= 1 and np.array_equal(a, b)


def test_several_outputs_and_a_dag(mode):
    x = _values("float32", [64, 129], 8)
    y = _values("float32", [129], 9)

    def f(x, y):
        s = tf.sin(x * y)
        t = tf.exp(-tf.abs(s)) + x
        return tf.stack([s + t, t * s, tf.tanh(t) - y])

    a, b, ran = _run_both(f, x, y)
    assert ran >= 1 and _same_bits(a, b)


def test_unknown_dims_bind_per_shape(mode):
    def f(x):
        return tf.tanh(x * 2.0) + tf.exp(x) * x

    spec = [tf.TensorSpec([None, 7], tf.float32)]
    for n in (1, 5, 300):
        x = _values("float32", [n, 7], n)
        cfg.set_native_kernels("off")
        a = tf.function(f, input_signature=spec)(x).numpy()
        cfg.set_native_kernels("sync")
        before = cfg.native_kernel_stats()["native_runs"]
        b = tf.function(f, input_signature=spec)(x).numpy()
        assert cfg.native_kernel_stats()["native_runs"] > before
        assert _same_bits(a, b)


def test_tiered_switch_between_calls(mode):
    """In the default mode the first calls run on the interpreter; once the background compile is done, the
    next call runs native code, with the same values."""
    cfg.set_native_kernels("async")

    def f(x, y):
        v = x
        for i in range(20):
            v = tf.maximum(v * (0.9 + 0.001 * i) + y, -y)
        return v

    x, y = _values("float32", [100_000], 10), _values("float32", [100_000], 11)
    g = tf.function(f)
    first = g(x, y).numpy()
    cfg.wait_for_native_kernels()
    before = cfg.native_kernel_stats()["native_runs"]
    later = g(x, y).numpy()
    assert cfg.native_kernel_stats()["native_runs"] == before + 1
    assert _same_bits(first, later)


def test_loops_run_in_turn_keep_their_native_kernels(mode):
    """A forward loop and its gradient's loop run in turn on every call: once their kernels are compiled,
    later calls build no new bindings (no new requests) and run no fused group on the interpreter. (Each
    loop's step plan is cached; a cache that evicted live steps rebuilt both on every call.)"""
    cfg.set_native_kernels("async")
    w = tf.Variable(_values("float32", [16, 16], 12))

    @tf.function
    def step(xs):
        with tf.GradientTape() as tape:
            h = tf.zeros([4, 16])
            for t in tf.range(tf.shape(xs)[0]):
                h = tf.tanh(tf.matmul(h, w) * 0.5 + xs[t]) * tf.sigmoid(xs[t])
            loss = tf.reduce_sum(h)
        return tape.gradient(loss, w)

    xs = _values("float32", [5, 4, 16], 13)
    first = step(xs).numpy()
    cfg.wait_for_native_kernels()
    step(xs)
    before = cfg.native_kernel_stats()
    for _ in range(3):
        later = step(xs).numpy()
    after = cfg.native_kernel_stats()
    assert after["requested"] == before["requested"]
    assert after["interpreted_runs"] == before["interpreted_runs"]
    assert after["native_runs"] > before["native_runs"]
    np.testing.assert_allclose(first, later, rtol=1e-6)


def test_hundreds_of_equal_groups_all_get_native_code(mode):
    """An unrolled loop makes hundreds of fused groups that are one program: each binding gets the kernel
    (requests for a queued program join its job, so the queue's bound of 256 programs turns none away)."""
    cfg.set_native_kernels("async")

    @tf.function
    def f(xs):
        return tf.add_n([tf.tanh(xs[i] * 1.5 + 0.25) * 0.5 for i in range(300)])

    xs = _values("float32", [300, 64], 14)
    first = f(xs).numpy()
    cfg.wait_for_native_kernels()
    before = cfg.native_kernel_stats()
    later = f(xs).numpy()
    after = cfg.native_kernel_stats()
    assert after["interpreted_runs"] == before["interpreted_runs"]
    assert after["native_runs"] - before["native_runs"] >= 300
    assert _same_bits(first, later)


def test_special_values_abs_maximum_minimum(mode):
    """abs, maximum and minimum take shorter exact forms in native code (Note [Shorter exact sequences]):
    signed zeros, infinities, NaNs and subnormals give the interpreter's bits (the products by 2 flush the
    subnormal ties where maxps and the interpreter differ under DAZ: docs/subnormals.md)."""
    special = np.array([0.0, -0.0, 1.5, -1.5, np.inf, -np.inf, np.nan, -np.nan, 1e-40, -1e-40], np.float32)
    for dtype in ("float32", "float64"):
        x = tf.constant(np.repeat(special, len(special)).astype(dtype))
        y = tf.constant(np.tile(special, len(special)).astype(dtype))

        def f(x, y):
            return tf.stack([tf.abs(x) * 2.0, tf.maximum(x, y) * 2.0, tf.minimum(x, y) * 2.0])  # x * 1 folds away

        a, b, ran = _run_both(f, x, y)
        bits = np.uint32 if dtype == "float32" else np.uint64
        assert ran >= 1 and np.array_equal(a.view(bits), b.view(bits))


def test_off_never_compiles(mode):
    cfg.set_native_kernels("off")
    before = cfg.native_kernel_stats()
    tf.function(lambda x: tf.exp(x) * x + 1.0)(_values("float32", [1000], 12))
    after = cfg.native_kernel_stats()
    assert after["requested"] == before["requested"] and after["native_runs"] == before["native_runs"]
    with pytest.raises(ValueError, match="set_native_kernels"):
        cfg.set_native_kernels("fast")
    with pytest.raises(TypeError):
        cfg.set_native_kernels(1)


# ---- processes: environment switches and the disk cache

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import ember as tf
    def f(x, y):
        v = x
        for i in range(12):
            v = tf.tanh(v * (1.0 - 0.01 * i) + y) * tf.sin(y) - tf.exp(-tf.abs(v))
        return v
    rng = np.random.default_rng(0)
    x = tf.constant(rng.uniform(-2, 2, [64, 100]).astype(np.float32))
    y = tf.constant(rng.uniform(-2, 2, [100]).astype(np.float32))
    out = tf.function(f)(x, y).numpy()
    tf.config.experimental.wait_for_native_kernels()
    print(json.dumps({"sum": out.astype(np.float64).tobytes().hex(), "mode": tf.config.experimental.get_native_kernels(),
                      "dir": tf._C.jit_cache_directory(), **tf.config.experimental.native_kernel_stats()}))
""")


def _child(env_extra, *, count=1):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.update(env_extra)
    command = [sys.executable] + (["-S"] if sys.flags.no_site else []) + ["-c", CHILD]
    procs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(count)]
    results = []
    import json
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def test_environment_switches_it_off(tmp_path):
    (r,) = _child({"EMBER_JIT": "0", "EMBER_JIT_CACHE_DIR": str(tmp_path)})
    assert r["mode"] == "off" and r["requested"] == 0 and r["native_runs"] == 0
    assert not glob.glob(str(tmp_path / "*"))


def test_xdg_cache_home_is_honoured(tmp_path):
    env = {"EMBER_JIT": "sync", "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("EMBER_JIT_CACHE_DIR", None)
    os.environ.pop("EMBER_JIT_CACHE_DIR", None)
    (r,) = _child(env)
    assert r["dir"] == str(tmp_path / "ember" / "jit")
    assert r["native_runs"] >= 1 and r["compiled"] >= 1
    assert glob.glob(str(tmp_path / "ember" / "jit" / "*.ejit"))


def test_disk_cache_under_concurrent_processes_and_corrupt_files(tmp_path):
    env = {"EMBER_JIT": "sync", "EMBER_JIT_CACHE_DIR": str(tmp_path)}
    # Four processes compile and store the same kernels at the same time.
    first = _child(env, count=4)
    assert len({r["sum"] for r in first}) == 1
    assert all(r["native_runs"] >= 1 and r["failures"] == 0 for r in first)
    files = sorted(glob.glob(str(tmp_path / "*.ejit")))
    assert files and not glob.glob(str(tmp_path / "*.tmp.*")), "a temporary file was left behind"
    # A warm cache: loaded, not compiled.
    (warm,) = _child(env)
    assert warm["compiled"] == 0 and warm["disk_hits"] >= 1 and warm["sum"] == first[0]["sum"]
    # Truncate one file, flip a byte in the middle of another, garbage a third: each is detected and
    # compiled again, never loaded, and the rewritten files are good again.
    damaged = files[:3]
    with open(damaged[0], "r+b") as fh:
        fh.truncate(os.path.getsize(damaged[0]) // 2)
    if len(damaged) > 1:
        with open(damaged[1], "r+b") as fh:
            fh.seek(os.path.getsize(damaged[1]) // 2)
            byte = fh.read(1)
            fh.seek(-1, 1)
            fh.write(bytes([byte[0] ^ 0x40]))
    if len(damaged) > 2:
        with open(damaged[2], "wb") as fh:
            fh.write(b"\x7fELF not a kernel")
    (again,) = _child(env)
    assert again["disk_rejects"] == len(damaged)
    assert again["compiled"] == len(damaged) and again["sum"] == first[0]["sum"]
    (healed,) = _child(env)
    assert healed["disk_rejects"] == 0 and healed["compiled"] == 0


def test_disk_cache_is_bounded(tmp_path):
    env = {"EMBER_JIT": "sync", "EMBER_JIT_CACHE_DIR": str(tmp_path), "EMBER_JIT_CACHE_MAX_BYTES": "1"}
    _child(env)
    # Every write evicts down to the budget (here: nothing may stay but what the last write left).
    assert len(glob.glob(str(tmp_path / "*.ejit"))) <= 1


def test_exit_during_the_first_compile(tmp_path):
    # A process that exits while its compile thread runs its first compile: LLVM's bitcode reader made
    # function-local statics during that compile, which C++ exit handlers destroyed before the thread was
    # stopped ("LLVM ERROR: out of memory", abort). Python now stops the thread from an atexit hook.
    script = textwrap.dedent("""
        import ember as tf
        x = tf.constant([float(i) for i in range(4096)])
        def chain(a):
            v = a
            for i in range(12):
                v = tf.tanh(v * 0.5 + 0.25) + tf.sin(v)
            return v
        tf.function(chain)(x)
    """)
    env = dict(os.environ, EMBER_JIT="async")
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    for attempt in range(3):
        env["EMBER_JIT_CACHE_DIR"] = str(tmp_path / f"cache{attempt}")  # empty: the first compile is real
        proc = subprocess.run([sys.executable, *(["-S"] if sys.flags.no_site else []), "-c", script], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "LLVM ERROR" not in proc.stderr
