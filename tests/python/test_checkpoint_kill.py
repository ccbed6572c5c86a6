"""A process killed (SIGKILL) at any moment while saving leaves the last good checkpoint restorable: a child
saves in a loop through a CheckpointManager, the parent kills it at random points, and each time the
latest checkpoint must restore to one consistent step."""

import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import ember

CHILD = r"""
import sys
import numpy as np
import ember
directory = sys.argv[1]
w = ember.Variable(np.zeros((512, 1024), np.float32))   # 2 MiB: a save takes long enough to be hit
b = ember.Variable(np.zeros(7, np.int64))
ckpt = ember.train.Checkpoint(model=ember.Module(), step=b)
ckpt.model.w = w
manager = ember.train.CheckpointManager(ckpt, directory, max_to_keep=2)
if manager.latest_checkpoint:
    ckpt.restore(manager.latest_checkpoint).assert_consumed()
while True:
    step = int(ckpt.save_counter.numpy()) + 1
    w.assign(np.full((512, 1024), step, np.float32))
    b.assign(np.full(7, step, np.int64))
    manager.save()
    print(step, flush=True)
"""


def check_latest(directory):
    latest = ember.train.latest_checkpoint(directory)
    assert latest is not None, f"no restorable checkpoint in {os.listdir(directory)}"
    state = ember.train.get_checkpoint_state(directory)
    for path in state.all_model_checkpoint_paths:
        assert os.path.exists(path + ".index"), f"the state names {path}, which is gone"
    ckpt = ember.train.Checkpoint(model=ember.Module(), step=ember.Variable(np.zeros(7, np.int64)))
    ckpt.model.w = ember.Variable(np.zeros((512, 1024), np.float32))
    ckpt.restore(latest).assert_consumed()
    step = int(ckpt.save_counter.numpy())
    assert latest.endswith(f"ckpt-{step}")
    assert (ckpt.model.w.numpy() == step).all() and (ckpt.step.numpy() == step).all(), latest
    return step


def test_kill_during_save_leaves_the_last_checkpoint(tmp_path):
    seed = int(os.environ.get("EMBER_KILL_SEED", "1126"))
    rng = random.Random(seed)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    last = 0
    for round_ in range(12):
        child = subprocess.Popen([sys.executable, *(["-S"] if sys.flags.no_site else []), "-c", CHILD,
                                  str(tmp_path)], stdout=subprocess.PIPE, env=env)
        try:
            first = child.stdout.readline()  # one save done in this round
            assert first, f"round {round_} (seed {seed}): the child died before saving"
            time.sleep(rng.uniform(0.0, 0.25))
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        step = check_latest(str(tmp_path))
        assert step >= last, f"round {round_} (seed {seed}): went back from step {last} to {step}"
        last = step
    assert last >= 12


WRITE_CHILD = r"""
import sys
import numpy as np
import ember
prefix, generation, step, stop, links = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
ckpt = ember.train.Checkpoint(w=ember.Variable(np.full((64, 64), generation, np.float32)),
                              g=ember.Variable(np.int64(generation)))
ember._C._refuse_hard_links_for_testing(links == "refused")
if stop == "kill":
    ember._C._kill_at_checkpoint_step_for_testing(step)
elif stop == "pause":
    ember._C._pause_at_checkpoint_step_for_testing(step)
ckpt.write(prefix)
"""

OVERWRITE_STEPS = ["temporary files written", "previous generation kept", "data 0 in place", "index in place",
                   "previous generation removed"]


def write_child_args(prefix, generation, step="", stop="", links="linked"):
    return [sys.executable, *(["-S"] if sys.flags.no_site else []), "-c", WRITE_CHILD, prefix, str(generation),
            step, stop, links]


def write_in_child(prefix, generation, kill_at=""):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run(write_child_args(prefix, generation, kill_at, "kill" if kill_at else ""),
                          env=env).returncode


def generation_at(prefix, reader):
    """The generation the checkpoint at ``prefix`` holds, read by ember or by TensorFlow; every tensor agrees."""
    if reader == "tensorflow":
        import tensorflow as tf

        r = tf.train.load_checkpoint(prefix)
    else:
        r = ember.train.load_checkpoint(prefix)
    g = int(r.get_tensor("g/.ATTRIBUTES/VARIABLE_VALUE"))
    assert (r.get_tensor("w/.ATTRIBUTES/VARIABLE_VALUE") == g).all()
    return g


def test_write_over_the_same_prefix_killed_at_each_step(tmp_path):
    # Checkpoint.write(prefix) over a checkpoint of the same shard count, killed after each step of moving
    # the files into place: the prefix restores to the whole old or the whole new checkpoint.
    for i, step in enumerate(OVERWRITE_STEPS):
        prefix = str(tmp_path / f"run{i}" / "ckpt")
        assert write_in_child(prefix, 1) == 0
        assert write_in_child(prefix, 2, kill_at=step) == -signal.SIGKILL
        landed = OVERWRITE_STEPS.index(step) >= OVERWRITE_STEPS.index("index in place")
        assert generation_at(prefix, "ember") == (2 if landed else 1), step
        w = ember.Variable(np.zeros((64, 64), np.float32))
        g = ember.Variable(np.int64(0))
        ember.train.Checkpoint(w=w, g=g).read(prefix).assert_consumed()
        assert int(g.numpy()) == (2 if landed else 1) and (w.numpy() == int(g.numpy())).all()
        if landed:  # the new files are all in place: TensorFlow reads them, the kept ones beside them or not
            assert generation_at(prefix, "tensorflow") == 2
        # The next write settles what the killed one left; TensorFlow reads the result.
        assert write_in_child(prefix, 3) == 0
        assert generation_at(prefix, "ember") == 3 and generation_at(prefix, "tensorflow") == 3
        left = sorted(n for n in os.listdir(os.path.dirname(prefix)) if ".tempstate" not in n)
        assert left == ["ckpt.data-00000-of-00001", "ckpt.index"], (step, left)


@pytest.mark.parametrize("links", ["linked", "refused"])
def test_write_paused_at_each_step_then_killed(tmp_path, links):
    # A write over the checkpoint a state file names pauses after a step of moving its files into place
    # (with hard links, or as on a file system that refuses them): while it lives, readers see one whole
    # generation and neither latest_checkpoint nor a new CheckpointManager touches its files. Killed there,
    # the prefix still reads as that generation; latest_checkpoint settles the kept generation, a
    # CheckpointManager the temporary files, and TensorFlow reads what is left.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for i, step in enumerate(OVERWRITE_STEPS):
        directory = str(tmp_path / f"run{i}")
        prefix = os.path.join(directory, "ckpt-1")
        ember.train.Checkpoint(w=ember.Variable(np.full((64, 64), 1, np.float32)),
                               g=ember.Variable(np.int64(1))).write(prefix)
        ember.train.update_checkpoint_state(directory, prefix)
        expected = 2 if OVERWRITE_STEPS.index(step) >= OVERWRITE_STEPS.index("index in place") else 1
        child = subprocess.Popen(write_child_args(prefix, 2, step, "pause", links), stdout=subprocess.PIPE,
                                 env=env)
        try:
            assert child.stdout.readline() == f"paused at {step}\n".encode(), step
            assert generation_at(prefix, "ember") == expected, step
            while_paused = sorted(os.listdir(directory))
            kept = step in ("previous generation kept", "data 0 in place", "index in place")
            assert any(n.endswith(".previous") for n in while_paused) == kept, (step, while_paused)
            assert ember.train.latest_checkpoint(directory) == prefix
            ember.train.CheckpointManager(ember.train.Checkpoint(), directory, max_to_keep=2)
            assert sorted(os.listdir(directory)) == while_paused, step
        finally:
            child.kill()
            child.wait()
        assert generation_at(prefix, "ember") == expected, step
        assert ember.train.latest_checkpoint(directory) == prefix
        bundle = ["checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index"]
        assert sorted(n for n in os.listdir(directory) if ".tempstate" not in n) == bundle, step
        ember.train.CheckpointManager(ember.train.Checkpoint(), directory, max_to_keep=2)
        assert sorted(os.listdir(directory)) == bundle, step
        w, g = ember.Variable(np.zeros((64, 64), np.float32)), ember.Variable(np.int64(0))
        ember.train.Checkpoint(w=w, g=g).restore(directory).assert_consumed()
        assert int(g.numpy()) == expected and (w.numpy() == expected).all(), step
        assert generation_at(prefix, "tensorflow") == expected, step
