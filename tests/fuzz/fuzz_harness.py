"""What the fuzzers of untrusted bytes share (GraphDef, checkpoint, SavedModel, TFRecord): the seeds, the
libFuzzer runs and the Python mutation loop whose cases run in a worker subprocess.

Every fuzzer runs with a fixed seed and a rotating one (the date's, printed so that a failure replays with
EMBER_FUZZ_SEED=<seed>), and prints one ``FUZZ-COUNTS`` line per run.
"""

import datetime
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
FUZZ_BUILD = os.path.join(ROOT, "build", "fuzz")
CASE_TIMEOUT = 20  # seconds one Python case may take before it counts as a hang
SANITIZER_ENV = {"UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1", "OMP_NUM_THREADS": "1"}


def rotating_seed():
    return int(os.environ.get("EMBER_FUZZ_SEED", datetime.date.today().strftime("%Y%m%d")))


SEEDS = [1, rotating_seed()]


def fuzz_seconds(default):
    return int(os.environ.get("EMBER_FUZZ_SECONDS", str(default)))


def libfuzzer_binary(target, env_var):
    """The libFuzzer target `target`, named by the environment variable `env_var` or built into build/fuzz
    (clang and libclang-rt-14-dev, from scripts/install_deps.sh)."""
    given = os.environ.get(env_var)
    if given:
        return given
    if not os.path.exists(os.path.join(FUZZ_BUILD, "build.ninja")):
        subprocess.run(["cmake", "-S", ROOT, "-B", FUZZ_BUILD, "-GNinja", "-DCMAKE_BUILD_TYPE=Release",
                        "-DCMAKE_CXX_COMPILER=clang++", "-DEMBER_BUILD_FUZZERS=ON", "-DEMBER_BUILD_PYTHON=OFF",
                        "-DEMBER_BUILD_EXAMPLES=OFF", "-DEMBER_BUILD_TESTS=OFF"], check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", FUZZ_BUILD, target], check=True, stdout=subprocess.DEVNULL)
    return os.path.join(FUZZ_BUILD, target)


def run_libfuzzer(binary, args, tmp_path, *, label, seed, limits, env=None, timeout=None, replay_hint=""):
    """Runs `binary` with `args` (seed, time, corpus...) and `limits` (its -timeout/-rss/-malloc/-max_len
    flags), artifacts in tmp_path; prints the counts and fails the test with the reproducers kept in the
    temporary folder when it crashed, hung, ran out of memory or leaked."""
    if env is None:
        env = dict(os.environ, ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=0", **SANITIZER_ENV)
    cmd = [binary, *limits, f"-artifact_prefix={tmp_path}{os.sep}", "-print_final_stats=1", *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, errors="replace", timeout=timeout)
    runs = 0
    for line in proc.stderr.splitlines():
        if line.startswith("stat::number_of_executed_units:"):
            runs = int(line.split(":")[-1])
    crashes = [n for n in os.listdir(tmp_path) if n.split("-")[0] in ("crash", "timeout", "oom", "leak", "slow")]
    print(f"FUZZ-COUNTS {label} seed={seed} cases={runs} crashes={len(crashes) or int(proc.returncode != 0)} "
          f"mismatches=0")
    if proc.returncode != 0 or crashes:
        kept = os.path.join(tempfile.gettempdir(), f"ember-fuzz-{label.replace(' ', '-')}-{seed}")
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(tmp_path, kept, ignore=shutil.ignore_patterns("corpus"))
        pytest.fail(f"{os.path.basename(binary)} ({label}, seed {seed}) failed; reproducers in {kept}, replay "
                    f"with {replay_hint}{binary} {kept}/<file>\n" + proc.stderr[-6000:])


def libfuzzer_corpus_run(target, env_var, corpus_name, seed, tmp_path, seconds, *, limits, label,
                         may_return_null=True):
    """A byte-level run of the libFuzzer target `target` for `seconds`, from a copy of the checked-in corpus
    tests/fuzz/cpp/corpus/<corpus_name>."""
    binary = libfuzzer_binary(target, env_var)
    copy = tmp_path / "corpus"
    shutil.copytree(os.path.join(ROOT, "tests", "fuzz", "cpp", "corpus", corpus_name), copy)
    env = dict(os.environ, ASAN_OPTIONS=f"allocator_may_return_null={int(may_return_null)}:detect_leaks=0",
               **SANITIZER_ENV)
    run_libfuzzer(binary, [f"-seed={seed}", f"-max_total_time={seconds}", str(copy)], tmp_path, label=label,
                  seed=seed, limits=limits, env=env, timeout=seconds + 120)


def run_worker(seed, first, deadline, env, here, on_line, worker):
    """Runs cases from `first` on until `deadline` in a subprocess running `worker` (a script that prints
    "CASE <n> <hex>" before each case and one result line after it); returns (the case in progress when the
    worker died or hung, or None; how it ended; stderr)."""
    # The worker imports the ember this process would: the same path, and -S if this process has no site.
    flags = ["-S"] if sys.flags.no_site else []
    proc = subprocess.Popen([sys.executable, *flags, "-c", worker, here, str(seed), str(first)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    current, buffer, last, ended, eof = None, b"", time.monotonic(), None, False
    while ended is None:
        chunk = b""
        if not eof and select.select([proc.stdout], [], [], 0.05)[0]:
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            eof = not chunk
            last = time.monotonic()
        *lines, buffer = (buffer + chunk).split(b"\n")
        for line in lines:
            line = line.decode(errors="replace")
            if line.startswith("CASE "):
                _, number, data = line.split(" ")
                current = (int(number), data)
            elif current is not None:
                on_line(current, line)
                current = None
        now = time.monotonic()
        if eof and proc.poll() is not None:
            ended = f"exit code {proc.returncode}"
        elif current is not None and now - last > CASE_TIMEOUT:
            ended = f"hang (no result in {CASE_TIMEOUT} s)"
        elif current is None and now > deadline:
            ended = "deadline"
        elif eof:
            time.sleep(0.01)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    return current, ended, proc.stderr.read().decode(errors="replace")


def mutation_fuzz(label, seed, worker, seconds, what, extra_paths=(), check=None):
    """The Python mutation fuzzer: runs `worker` from case 0 on for `seconds`, restarting it after a crash or
    a hang at the case after the one that failed. Each result line is "OK ...", "ERR <clear error>" or "BAD
    <unclear error>"; `check(case, line)` may turn a line into "MISMATCH ..." (a differential check). `what`
    names the case's hex in failure messages. Fails the test listing the reproducers."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, *extra_paths] + sys.path), OMP_NUM_THREADS="1")
    deadline = time.monotonic() + seconds
    counts = {"cases": 0, "clear_errors": 0, "crashes": 0, "mismatches": 0}
    failures = []
    done = [-1]

    def on_line(case, line):
        counts["cases"] += 1
        done[0] = case[0]
        if check is not None:
            line = check(case, line)
        if line.startswith("ERR"):
            counts["clear_errors"] += 1
        elif line.startswith("BAD"):
            counts["mismatches"] += 1
            failures.append(f"case {case[0]}: an unclear exception {line[4:]}; {what} {case[1]}")
        elif line.startswith("MISMATCH"):
            counts["mismatches"] += 1
            failures.append(f"case {case[0]}: {line}; {what} {case[1]}")

    first = 0
    while time.monotonic() < deadline:
        current, ended, stderr = run_worker(seed, first, deadline, env, HERE, on_line, worker)
        if current is not None:
            counts["crashes"] += 1
            failures.append(f"case {current[0]}: {ended}; {what} {current[1]}\n{stderr[-2000:]}")
            first = current[0] + 1
        elif ended != "deadline":
            pytest.fail(f"the fuzz worker stopped outside a case ({ended}):\n{stderr[-4000:]}")
        else:
            first = done[0] + 1
    print(f"FUZZ-COUNTS {label} seed={seed} " + " ".join(f"{k}={v}" for k, v in counts.items()))
    assert counts["cases"] > 0
    assert not failures, f"seed {seed} (replay: EMBER_FUZZ_SEED={seed}):\n" + "\n".join(failures[:10])
