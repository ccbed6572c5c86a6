"""Random-program fuzzer (issue 12, fuzzer a): random ember programs (program_gen.py) run eagerly, as
``ember.function`` with the default optimizer, with the passes off, on two inter-op threads, and under
first- and second-order gradient tapes, and must agree (program_runner.py).

Programs run in batches in child processes, so a segfault, an abort or a hang fails the test with the seed
and the program text instead of killing pytest. A fixed range of seeds runs every time; a rotating range,
derived from the date, follows for the rest of the time budget. Replay one program with
``python3 tests/fuzz/program_runner.py --show SEED``. Longer runs: ``EMBER_FUZZ_SECONDS=3600``
(and ``EMBER_FUZZ_SEED=N`` to choose the rotating start).
"""
import datetime
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import program_gen  # noqa: E402

import ember  # noqa: E402

FIXED_SEED = 1_000_000
FIXED_COUNT = 60
BUDGET_S = float(os.environ.get("EMBER_FUZZ_SECONDS", "40"))
BATCH = 20
PROGRAM_TIMEOUT_S = 30  # one program (most take well under a second); longer is a hang


def rotating_seed():
    if "EMBER_FUZZ_SEED" in os.environ:
        return int(os.environ["EMBER_FUZZ_SEED"])
    day = datetime.date.today().toordinal()
    return 10_000_000 + (day % 100_000) * 1_000


def _run_child(seeds):
    """Runs one child over `seeds`; returns (its stdout lines, stderr text, exit status or 'hung'). A program
    running longer than PROGRAM_TIMEOUT_S is a hang: the child is killed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    # The child imports the ember this process imported (same interpreter flags, same path).
    command = [sys.executable] + (["-S"] if sys.flags.no_site else []) + [os.path.join(HERE, "program_runner.py")]
    with tempfile.TemporaryFile(mode="w+") as err:  # a file, so that a chatty child never blocks on a pipe
        proc = subprocess.Popen(command + [str(s) for s in seeds], stdout=subprocess.PIPE, stderr=err, env=env)
        data, status = b"", None
        fd = proc.stdout.fileno()  # read unbuffered, so that select sees every byte not yet read
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            last = time.time()
            while True:
                if not sel.select(timeout=1.0):
                    if time.time() - last > PROGRAM_TIMEOUT_S:
                        proc.kill()
                        status = "hung"
                        break
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                data += chunk
                last = time.time()
        proc.wait()
        proc.stdout.close()
        err.seek(0)
        return data.decode(errors="replace").splitlines(), err.read(), status or proc.returncode


def run_batch(seeds, deadline):
    """Runs `seeds` in child processes; returns {seed: (status, message)} for those that ran. A child that
    dies or hangs marks its current seed 'crash' and the rest run in a fresh child."""
    out = {}
    pending = list(seeds)
    while pending and time.time() < deadline:
        lines, stderr, status = _run_child(pending)
        current = None
        for line in lines:
            if line.startswith("EMBER "):
                assert line[6:] == ember.__file__, f"the child imported {line[6:]}, not {ember.__file__}"
            elif line.startswith("BEGIN "):
                current = int(line.split()[1])
            elif line.startswith("END "):
                _, seed, payload = line.split(" ", 2)
                result = json.loads(payload)
                out[int(seed)] = (result["status"], result["message"])
                current = None
        if current is not None:
            why = "hung" if status == "hung" else f"died with exit status {status}"
            out[current] = ("crash", f"the child {why}; stderr:\n{stderr[-3000:]}")
        elif status != 0:
            pytest.fail(f"the fuzz runner failed outside any program ({status}):\n{stderr[-3000:]}")
        pending = [s for s in pending if s not in out]
    return out


def describe(seed, status, message):
    return (f"\n=== seed {seed}: {status}\n{message}\nReplay: python3 tests/fuzz/program_runner.py --show {seed}\n"
            f"--- program\n{program_gen.generate(seed)}")


def test_generator_covers_every_pass_pattern():
    text = "\n".join(program_gen.generate(s) for s in range(200))
    for needle in ["@", ".assign(", ".assign_add(", ".read_value()", "= f1(", "= f2(", "* 1", "+ 0",
                   "tf.transpose(tf.transpose(", "tf.reshape(tf.reshape(", "tf.constant(", "tf.reduce_mean(tf.tanh(",
                   "tf.concat(", "SMOOTH = True", "DTYPE = 'float64'", "DTYPE = 'int32'", "DTYPE = 'float16'",
                   "(2, ", "tf.pad(", "mode='REFLECT'", "mode='SYMMETRIC'", "tf.shape(", "[::-1]",
                   "tf.transpose(tf.reshape(", "tf.cond(", "tf.switch_case(", "tf.while_loop(", "def inner_",
                   "()[0]", "> 1, lambda", "k < 0,", "transpose_b=True)) * 0.25", "tf.nn.conv2d(", "= tf.nn.bias_add(t",
                   "tf.nn.relu6(", "tf.nn.leaky_relu(", "tf.nn.elu(", "'VALID')", "tf.nn.depthwise_conv2d(",
                   "tf.nn.silu(", "tf.nn.gelu(", "approximate=True)", "tf.sin(tf.reshape(tf.range(", "= tf.sigmoid(t",
                   "[k % 3], (tf.tanh(",
                   "new * 0.1, transpose_a=True)", "= tf.nn.fused_batch_norm(", "is_training=False)",
                   "tf.math.multiply_no_nan(", "tf.math.divide_no_nan(", "tf.math.xdivy(", "tf.math.xlogy(",
                   "tf.math.xlog1py(", "tf.floor(tf.abs(", "[0, tf.reduce_mean(",
                   "[1, 1]) @ tf.ones([1, 1], acc.dtype)"]:
        assert needle in text, needle
    assert program_gen.generate(5) == program_gen.generate(5)


def test_generator_makes_transpose_chains_the_pass_composes():
    """Chains of 2-3 transposes with non-identity perms, some composing to the identity and some not."""
    import re
    chains = {"identity": 0, "other": 0, "unmoved": 0}
    for seed in range(300):
        program = program_gen.Program(seed)
        body = program_gen.Body(program, [program_gen.Value("x", (2, 3, 4), 1.0)], 0)
        before = len(body.lines)
        if body.transpose_chain() is None:
            continue
        perms = [eval(m) for m in re.findall(r"tf.transpose\(t?\w+, (\[[^\]]*\])\)", "\n".join(body.lines[before:]))]
        axes = list(range(3))
        for perm in perms:
            axes = [axes[p % 3] for p in perm]
        assert len(perms) >= 2
        moved = any(sorted(p) != p for p in perms)
        chains["identity" if axes == [0, 1, 2] and moved else "other" if moved else "unmoved"] += 1
    assert chains["identity"] >= 20 and chains["other"] >= 20 and chains["unmoved"] <= 20, chains


def test_random_programs_match_eager():
    start = time.time()
    deadline = start + BUDGET_S
    results = {}
    fixed = list(range(FIXED_SEED, FIXED_SEED + FIXED_COUNT))
    for i in range(0, len(fixed), BATCH):
        results.update(run_batch(fixed[i:i + BATCH], float("inf")))  # the fixed range always runs in full
    base = rotating_seed()
    next_seed = base
    while time.time() < deadline:
        batch = list(range(next_seed, next_seed + BATCH))
        next_seed += BATCH
        results.update(run_batch(batch, deadline))
    counts = {k: 0 for k in ("ok", "mismatch", "crash", "eager_error")}
    for status, _ in results.values():
        counts[status] += 1
    print(f"\nFUZZ-COUNTS program_fuzz programs={len(results)} ok={counts['ok']} crashes={counts['crash']} "
          f"mismatches={counts['mismatch']} invalid={counts['eager_error']} fixed_seed={FIXED_SEED} "
          f"rotating_seed={base} seconds={time.time() - start:.0f}")
    bad = sorted((s, r) for s, r in results.items() if r[0] != "ok")
    if bad:
        shown = "".join(describe(s, status, msg) for s, (status, msg) in bad[:3])
        pytest.fail(f"{len(bad)} of {len(results)} programs failed (rotating seed {base}): "
                    f"{[s for s, _ in bad][:50]}{shown}", pytrace=False)
