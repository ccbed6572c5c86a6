"""The ``checkpoint`` state file of a checkpoint directory, ``latest_checkpoint`` and ``CheckpointManager``.

The state file is TensorFlow's: a text-format CheckpointState naming the latest checkpoint and those
kept, relative to the directory. It is replaced atomically (temporary file, fsync, rename, fsync of the
directory), and a CheckpointManager records a new checkpoint in it before deleting old ones, so a process
killed at any moment leaves the state naming a checkpoint whose files exist.

What a killed save leaves (docs/checkpoint.md, "Writing atomically") is settled here once no live save
holds it: ``latest_checkpoint`` settles the kept ``.previous`` generation of the checkpoint it returns, and
a CheckpointManager, when it starts and after each save, also removes the temporary files of killed saves
of its own checkpoints and of the state file.
"""

import collections
import fcntl
import glob
import os
import re
import time

from google.protobuf import text_format

from ember import _C, errors
from ember.framework import protos

CheckpointState = protos.message_class("CheckpointState")


def _atomic_write(path, data):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # a live write's temporary file is not a leftover (_remove_if_abandoned)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _state_path(checkpoint_dir, latest_filename=None):
    return os.path.join(checkpoint_dir, latest_filename or "checkpoint")


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The directory's CheckpointState with absolute paths, or None when it has no readable state file."""
    path = _state_path(os.fspath(checkpoint_dir), latest_filename)
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
    state = CheckpointState()
    try:
        text_format.Parse(text, state)
    except (text_format.ParseError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not a valid checkpoint state file ({e})") from None
    if not state.model_checkpoint_path:
        raise ValueError(f"Invalid checkpoint state loaded from {checkpoint_dir}")

    def absolute(p):
        return p if os.path.isabs(p) else os.path.join(os.fspath(checkpoint_dir), p)

    state.model_checkpoint_path = absolute(state.model_checkpoint_path)
    for i, p in enumerate(state.all_model_checkpoint_paths):
        state.all_model_checkpoint_paths[i] = absolute(p)
    return state


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                            latest_filename=None, all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None, save_relative_paths=True):
    """Writes the state file (paths inside ``save_dir`` relative to it), atomically."""
    save_dir = os.fspath(save_dir)
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)

    def relative(p):
        if save_relative_paths and os.path.isabs(p) == os.path.isabs(save_dir):
            rel = os.path.relpath(p, save_dir)
            if not rel.startswith(".."):
                return rel
        return p

    state = CheckpointState(model_checkpoint_path=relative(model_checkpoint_path),
                            all_model_checkpoint_paths=[relative(p) for p in paths])
    if all_model_checkpoint_timestamps:
        state.all_model_checkpoint_timestamps.extend(all_model_checkpoint_timestamps)
    if last_preserved_timestamp is not None:
        state.last_preserved_timestamp = last_preserved_timestamp
    _atomic_write(_state_path(save_dir, latest_filename), text_format.MessageToString(state).encode("utf-8"))


def checkpoint_exists(prefix):
    """Whether ``prefix`` holds a checkpoint: its index, or the index an interrupted overwrite kept."""
    return os.path.exists(prefix + ".index") or os.path.exists(prefix + ".index.previous")


def _settle(prefix, temporary_files):
    """Settles what a killed save at ``prefix`` left; a reader may lack the right to, and needs none."""
    try:
        _C.settle_abandoned_save(os.fspath(prefix), temporary_files)
    except errors.OpError:
        pass


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the directory's latest checkpoint, or None (no state file, or its checkpoint is gone).
    A kept generation a killed overwrite left at that prefix is settled (put back, or removed)."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is not None and checkpoint_exists(state.model_checkpoint_path):
        _settle(state.model_checkpoint_path, temporary_files=False)
        return state.model_checkpoint_path
    return None


def wait_for_new_checkpoint(checkpoint_dir, last_checkpoint=None, seconds_to_sleep=1, timeout=None):
    """Polls ``checkpoint_dir`` every ``seconds_to_sleep`` until its latest checkpoint is not
    ``last_checkpoint``; returns that checkpoint's prefix, or None once ``timeout`` seconds have passed."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        path = latest_checkpoint(checkpoint_dir)
        if path is not None and path != last_checkpoint:
            return path
        if deadline is not None and time.monotonic() + seconds_to_sleep > deadline:
            return None
        time.sleep(seconds_to_sleep)


def checkpoints_iterator(checkpoint_dir, min_interval_secs=0, timeout=None, timeout_fn=None):
    """Yields each new latest checkpoint of ``checkpoint_dir`` as it appears (an evaluation job following a
    training job), at most one per ``min_interval_secs``. After ``timeout`` seconds with no new checkpoint
    it stops, unless ``timeout_fn`` is given and returns False (then it keeps waiting)."""
    last = None
    while True:
        path = wait_for_new_checkpoint(checkpoint_dir, last, timeout=timeout)
        if path is None:
            if timeout_fn is None or timeout_fn():
                return
            continue
        started = time.monotonic()
        last = path
        yield path
        remaining = started + min_interval_secs - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)


def remove_checkpoint(prefix):
    """Deletes a checkpoint's index and data files, and those an interrupted overwrite kept beside them
    (``.previous``, docs/checkpoint.md)."""
    data = glob.glob(glob.escape(prefix) + ".data-?????-of-?????")
    kept = glob.glob(glob.escape(prefix) + ".data-?????-of-?????.previous") + [prefix + ".index.previous"]
    for path in [prefix + ".index"] + data + kept:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def _remove_if_abandoned(path):
    """Removes a state file's temporary file unless a live ``_atomic_write`` holds its lock."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.path.samestat(os.fstat(fd), os.lstat(path)):
            os.remove(path)
    except OSError:
        pass
    finally:
        os.close(fd)


def _settle_directory(directory, checkpoint_name):
    """Settles what killed saves left in ``directory``: of the checkpoints ``<checkpoint_name>-<number>``
    (kept generations, temporary files) and of the state file."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    leftover = re.compile(re.escape(checkpoint_name) + r"-\d+(?=\.(?:index|data-))")
    prefixes = set()
    for name in names:
        if name.startswith("checkpoint.tmp"):
            _remove_if_abandoned(os.path.join(directory, name))
        elif ".tempstate" in name or name.endswith(".previous"):
            match = leftover.match(name)
            if match:
                prefixes.add(match.group(0))
    for prefix in sorted(prefixes):
        _settle(os.path.join(directory, prefix), temporary_files=True)


class CheckpointManager:
    """Numbered saves of one ``ember.train.Checkpoint`` into ``directory``, keeping the newest
    ``max_to_keep`` (None keeps all) plus one every ``keep_checkpoint_every_n_hours``."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None, init_fn=None):
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"Expected a positive integer or `None` for `max_to_keep`, got {max_to_keep}.")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("`step_counter` should be passed if `checkpoint_interval` is not None.")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._checkpoint_prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._checkpoint_interval = checkpoint_interval
        self._init_fn = init_fn
        self._last_checkpoint_step = None
        self._maybe_delete = collections.OrderedDict()
        self._latest_checkpoint = None
        self._last_preserved_timestamp = time.time()
        state = get_checkpoint_state(self._directory)
        if state is not None:
            paths = list(state.all_model_checkpoint_paths)
            stamps = list(state.all_model_checkpoint_timestamps)
            if len(stamps) != len(paths):
                stamps = [time.time()] * len(paths)
            for path, stamp in zip(paths, stamps):
                self._maybe_delete[path] = stamp
            self._latest_checkpoint = state.model_checkpoint_path
            if state.last_preserved_timestamp:
                self._last_preserved_timestamp = state.last_preserved_timestamp
        _settle_directory(self._directory, checkpoint_name)
        self._checkpoint_name = checkpoint_name

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def latest_checkpoint(self):
        return self._latest_checkpoint

    @property
    def checkpoints(self):
        """The kept checkpoints' prefixes, oldest first."""
        return list(self._maybe_delete)

    @property
    def checkpoint_interval(self):
        return self._checkpoint_interval

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Writes a checkpoint numbered ``checkpoint_number`` (or the next save_counter value), records it
        and deletes those no longer kept; returns its prefix (None when the interval says not yet)."""
        if self._checkpoint_interval is not None:
            step = int(self._step_counter.numpy() if hasattr(self._step_counter, "numpy") else self._step_counter)
            if check_interval and self._last_checkpoint_step is not None and \
                    step < self._last_checkpoint_step + self._checkpoint_interval:
                return None
            self._last_checkpoint_step = step
        save_counter = self._checkpoint._ensure_save_counter()
        if checkpoint_number is None:
            save_counter.assign_add(1)
            checkpoint_number = int(save_counter.numpy())
        elif hasattr(checkpoint_number, "numpy"):
            checkpoint_number = int(checkpoint_number.numpy())
        path = self._checkpoint.write(f"{self._checkpoint_prefix}-{checkpoint_number}", options)
        self._maybe_delete.pop(path, None)
        self._maybe_delete[path] = time.time()
        self._latest_checkpoint = path
        deleted = self._sweep()
        self._record_state()
        for prefix in deleted:  # only once the state no longer names them
            remove_checkpoint(prefix)
        _settle_directory(self._directory, self._checkpoint_name)
        return path

    def restore_or_initialize(self):
        if self._latest_checkpoint is not None:
            self._checkpoint.restore(self._latest_checkpoint)
            if self._checkpoint_interval is not None:
                self._last_checkpoint_step = int(self._step_counter.numpy())
            return self._latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None

    def _sweep(self):
        deleted = []
        if self._max_to_keep is None:
            return deleted
        while len(self._maybe_delete) > self._max_to_keep:
            path, stamp = self._maybe_delete.popitem(last=False)
            if self._latest_checkpoint == path:
                self._maybe_delete[path] = stamp
                continue
            hours = self._keep_checkpoint_every_n_hours
            if hours and stamp - hours * 3600.0 >= self._last_preserved_timestamp:
                self._last_preserved_timestamp = stamp
                continue
            deleted.append(path)
        return deleted

    def _record_state(self):
        update_checkpoint_state(self._directory, self._latest_checkpoint, list(self._maybe_delete),
                                all_model_checkpoint_timestamps=list(self._maybe_delete.values()),
                                last_preserved_timestamp=self._last_preserved_timestamp)
