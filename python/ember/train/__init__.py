"""``ember.train``: object-based checkpoints in TensorFlow's format (``tf.train``'s names).

    ckpt = ember.train.Checkpoint(model=model, optimizer=optimizer)
    path = ckpt.save("/tmp/run/ckpt")             # "/tmp/run/ckpt-1", and /tmp/run/checkpoint names it
    ckpt.restore(ember.train.latest_checkpoint("/tmp/run")).assert_consumed()

TensorFlow 2 restores what ember saves into the same model written with tf.Module / tf.Variable /
tf.keras optimizers, and the other way round. See docs/checkpoint.md.
"""

from ember.train.checkpoint import (Checkpoint, CheckpointLoadStatus, InitializationOnlyStatus)
from ember.train.checkpoint_management import (CheckpointManager, checkpoint_exists, checkpoints_iterator,
                                               get_checkpoint_state, latest_checkpoint, update_checkpoint_state)
from ember.train.checkpoint_reader import CheckpointReader, list_variables, load_checkpoint
from ember.io.parsing import (BytesList, Example, Feature, FeatureList, FeatureLists, Features,  # noqa: F401
                              FloatList, Int64List, SequenceExample)


class CheckpointOptions:
    """Accepted for TensorFlow's API; ember's checkpoints need none of its options (devices, async)."""

    def __init__(self, experimental_io_device=None, experimental_enable_async_checkpoint=False,
                 experimental_write_callbacks=None, enable_async=False, experimental_sharding_callback=None,
                 experimental_skip_slot_variables=False):
        self.experimental_io_device = experimental_io_device
        self.enable_async = enable_async or experimental_enable_async_checkpoint


# tf.train's names (checkpoint_exists and update_checkpoint_state are tf.compat.v1.train's, kept importable).
__all__ = ["BytesList", "Checkpoint", "CheckpointManager", "CheckpointOptions", "Example", "Feature", "FeatureList",
           "FeatureLists", "Features", "FloatList", "Int64List", "SequenceExample", "checkpoints_iterator",
           "get_checkpoint_state", "latest_checkpoint", "list_variables", "load_checkpoint"]
