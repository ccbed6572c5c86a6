"""What the side-by-side benchmarks share: one subprocess per framework, and a check that the machine was
quiet while each ran.

    results, notes = run_workers(__file__, ("ember", "tensorflow", "jax", "torch"), ["--quick"])

Each worker is this script run again with ``--worker NAME`` (plus ``extra_args``); it prints one JSON object
as its last line, which becomes ``results[NAME]``. A worker that fails is left out of ``results`` with a
note ("not installed" when its import failed). ``EMBER_BENCH_PATH_<NAME>`` puts a directory of packages on
that worker's path alone, for peers whose pins clash with TensorFlow's.
"""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIET_CORES = 0.1  # other processes busier than this (cores, on average) disturb the timings


def cpu_seconds():
    """(busy CPU seconds of the whole machine, CPU seconds of this process's finished children), or None
    off Linux."""
    import resource

    try:
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:9]]
    except OSError:
        return None
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy = (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait
    return busy, children.ru_utime + children.ru_stime


def others_cores_during(fn):
    """Calls fn, which does its work in child processes; returns its result and the cores other processes
    kept busy meanwhile, on average (None off Linux)."""
    before, start = cpu_seconds(), time.perf_counter()
    result = fn()
    after, wall = cpu_seconds(), time.perf_counter() - start
    if not (before and after):
        return result, None
    return result, max(0.0, ((after[0] - before[0]) - (after[1] - before[1])) / wall)


def worker_env(framework=None):
    """The environment a worker runs in: ember from this checkout, TensorFlow quiet, and the framework's
    own package directory first when EMBER_BENCH_PATH_<FRAMEWORK> names one."""
    path = os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", "")
    extra = os.environ.get(f"EMBER_BENCH_PATH_{framework.upper()}") if framework else None
    if extra:
        path = extra + os.pathsep + path
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=path)


def run_workers(script, frameworks, extra_args=(), disturbed="its timings are disturbed"):
    """Runs ``script --worker NAME`` for each framework in turn; returns ({name: its JSON result}, notes),
    the notes saying which workers were skipped and which ran while other processes were busy."""
    results, notes = {}, []
    for fw in frameworks:
        # The worker imports what this process would: run with -S when this one was (an editable install's
        # import hook would otherwise win over PYTHONPATH).
        flags = ["-S"] if sys.flags.no_site else []
        cmd = [sys.executable, *flags, script, "--worker", fw, *extra_args]
        env = worker_env(fw)
        proc, others = others_cores_during(lambda: subprocess.run(cmd, capture_output=True, text=True, env=env))
        if proc.returncode != 0:
            missing = "ModuleNotFoundError" in proc.stderr
            why = "not installed" if missing else (proc.stderr.strip().splitlines() or ["?"])[-1]
            notes.append(f"  {fw}: skipped ({why})")
            continue
        results[fw] = json.loads(proc.stdout.strip().splitlines()[-1])
        if others is not None and others > QUIET_CORES:
            notes.append(f"  WARNING: other processes kept {others:.2f} of {os.cpu_count()} cores busy during "
                         f"the {fw} worker; {disturbed}")
    return results, notes
