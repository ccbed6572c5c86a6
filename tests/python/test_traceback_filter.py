"""Uncaught ember errors show the user's frames, not ember's (EMBER_TRACEBACK_FILTERING=off: all)."""
import os
import subprocess
import sys

PROGRAM = """
import ember as tf

def user_code():
    return tf.matmul(tf.ones([2, 3]), tf.ones([4, 5]))

user_code()
"""


def run(env_value):
    env = dict(os.environ)
    if env_value is not None:
        env["EMBER_TRACEBACK_FILTERING"] = env_value
    # with this interpreter's flags: -S only where the parent has it (then PYTHONPATH finds this ember)
    proc = subprocess.run([sys.executable, *(["-S"] if sys.flags.no_site else []), "-c", PROGRAM],
                          capture_output=True, text=True, env=env)
    assert proc.returncode != 0
    return proc.stderr


def test_ember_frames_are_hidden_by_default():
    err = run(None)
    assert "user_code" in err and "InvalidArgumentError" in err and "MatMul" in err
    assert "math_ops.py" not in err


def test_filtering_can_be_turned_off():
    err = run("off")
    assert "math_ops.py" in err
