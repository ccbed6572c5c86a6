"""Where Keras' dataset files are cached, and the error when one is not there.

tf_keras' ``get_file`` downloads into ``<cache_dir or ~/.keras>/<cache_subdir>/<name>`` and checks the file's
hash; ember cannot download, so it only looks there (``$KERAS_HOME`` taking the place of ``~/.keras``, as
Keras 3 does) and does not check the hash, so a file written by hand in the same format is read as well.
"""

import os
import tarfile

KERAS_DATASETS_URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def cache_root(cache_dir=None):
    if cache_dir:
        return os.path.expanduser(cache_dir)
    return os.path.expanduser(os.environ.get("KERAS_HOME") or os.path.join("~", ".keras"))


def cached_path(fname, origin, cache_dir=None, cache_subdir="datasets", untar=False):
    """The path of the cached ``fname``; an ``untar`` name is the folder that ``<fname>.tar.gz`` unpacks to
    (unpacked here when only the archive is cached)."""
    datadir = os.path.join(cache_root(cache_dir), cache_subdir)
    path = os.path.join(datadir, fname)
    if untar:
        archive = path + ".tar.gz"
        if not os.path.isdir(path) and os.path.isfile(archive):
            with tarfile.open(archive, "r:gz") as tar:
                tar.extractall(datadir, filter="data")
        if os.path.isdir(path):
            return path
        looked_for = f"{path} (or the archive {archive})"
    elif os.path.isfile(path):
        return path
    else:
        looked_for = path
    raise FileNotFoundError(
        f"The dataset file {fname!r} is not cached and ember cannot download it: fetch {origin} and place it at "
        f"{looked_for} (the cache root is cache_dir, else $KERAS_HOME, else ~/.keras)")
