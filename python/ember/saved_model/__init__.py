"""``ember.saved_model``: SavedModels, TensorFlow's format, both ways.

``save(obj, export_dir, signatures=None)`` writes a Module (or function) with its traced functions, its
variables and its signatures; ``load(export_dir)`` gives back an object whose attributes, variables,
functions and ``.signatures`` work from Python. TensorFlow 2.21 loads what ember saves, and ember loads
what TensorFlow saves (for the ops ember has). The seed's spelling ``export(path, obj)`` / ``import(path)``
maps onto them (``import`` is a keyword: ``getattr(ember.saved_model, "import")``). See
docs/saved_model.md.
"""

from ember.saved_model.asset import Asset
from ember.saved_model.loader import LoadOptions, load
from ember.saved_model.saver import (DEFAULT_SIGNATURE_KEY, PREDICT_METHOD_NAME, SERVE_TAG, SaveOptions, save)

# TensorFlow's constants of tf.saved_model.
SERVING = SERVE_TAG
TRAINING = "train"
GPU = "gpu"
TPU = "tpu"
DEFAULT_SERVING_SIGNATURE_DEF_KEY = DEFAULT_SIGNATURE_KEY
PREDICT_INPUTS = "inputs"
PREDICT_OUTPUTS = "outputs"
CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
CLASSIFY_INPUTS = "inputs"
CLASSIFY_OUTPUT_CLASSES = "classes"
CLASSIFY_OUTPUT_SCORES = "scores"
REGRESS_METHOD_NAME = "tensorflow/serving/regress"
REGRESS_INPUTS = "inputs"
REGRESS_OUTPUTS = "outputs"
ASSETS_DIRECTORY = "assets"
ASSETS_KEY = "saved_model_assets"
DEBUG_DIRECTORY = "debug"
DEBUG_INFO_FILENAME_PB = "saved_model_debug_info.pb"
SAVED_MODEL_FILENAME_PB = "saved_model.pb"
SAVED_MODEL_FILENAME_PBTXT = "saved_model.pbtxt"
SAVED_MODEL_SCHEMA_VERSION = 1
VARIABLES_DIRECTORY = "variables"
VARIABLES_FILENAME = "variables"


def export(export_dir, obj, signatures=None, options=None):
    """The seed's ``tf.saved_model.export("/tmp/model", m)``: ``save(m, "/tmp/model")``."""
    save(obj, export_dir, signatures=signatures, options=options)


def _import(export_dir, tags=None, options=None):
    """The seed's ``tf.saved_model.import("/tmp/model")``: ``load``."""
    return load(export_dir, tags=tags, options=options)


globals()["import"] = _import


def contains_saved_model(export_dir):
    """Whether ``export_dir`` holds a saved_model.pb (or .pbtxt)."""
    import os

    export_dir = os.fspath(export_dir)
    return any(os.path.isfile(os.path.join(export_dir, f)) for f in ("saved_model.pb", "saved_model.pbtxt"))


__all__ = ["Asset", "save", "load", "export", "contains_saved_model", "SaveOptions", "LoadOptions",
           "DEFAULT_SERVING_SIGNATURE_DEF_KEY", "PREDICT_METHOD_NAME", "SERVING", "TRAINING", "GPU", "TPU",
           "PREDICT_INPUTS", "PREDICT_OUTPUTS", "ASSETS_DIRECTORY", "ASSETS_KEY", "DEBUG_DIRECTORY",
           "DEBUG_INFO_FILENAME_PB", "SAVED_MODEL_FILENAME_PB", "SAVED_MODEL_FILENAME_PBTXT",
           "SAVED_MODEL_SCHEMA_VERSION", "VARIABLES_DIRECTORY", "VARIABLES_FILENAME", "CLASSIFY_METHOD_NAME",
           "CLASSIFY_INPUTS", "CLASSIFY_OUTPUT_CLASSES", "CLASSIFY_OUTPUT_SCORES", "REGRESS_METHOD_NAME",
           "REGRESS_INPUTS", "REGRESS_OUTPUTS"]
