"""``ember.io.gfile``: TensorFlow's file API (``tf.io.gfile``) over the local file system.

TensorFlow routes these calls through its pluggable file systems (``gs://``, ``ram://``, HDFS ...); ember has
only the local one, so a path with another scheme raises UnimplementedError naming the scheme instead of
writing a file called ``gs:/...`` in the working directory. Errors are TensorFlow's: a missing path is a
NotFoundError, a copy or rename onto an existing file without ``overwrite`` an AlreadyExistsError, removing a
directory with ``remove`` a FailedPreconditionError.
"""

import errno
import glob as _glob
import os
import shutil

from ember import errors

_LOCAL_SCHEMES = ("", "file")


def _local_path(path, what):
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = path.decode("utf-8")
    scheme, sep, rest = path.partition("://")
    if not sep:
        return path
    if scheme in _LOCAL_SCHEMES:
        return rest
    raise errors.UnimplementedError(None, None, f"{what}: File system scheme '{scheme}' not implemented "
                                                f"(file: '{path}'); ember reads and writes local files only")


def _raise_os_error(error, path):
    message = f"{path}; {os.strerror(error.errno) if error.errno else error}"
    if error.errno == errno.ENOENT:
        raise errors.NotFoundError(None, None, message) from None
    if error.errno == errno.EEXIST:
        raise errors.AlreadyExistsError(None, None, message) from None
    if error.errno in (errno.EACCES, errno.EPERM):
        raise errors.PermissionDeniedError(None, None, message) from None
    if error.errno in (errno.EISDIR, errno.ENOTDIR, errno.ENOTEMPTY):
        raise errors.FailedPreconditionError(None, None, message) from None
    raise errors.UnknownError(None, None, message) from None


_MODES = ("r", "w", "a", "r+", "w+", "a+")


class GFile:
    """A file as TensorFlow's ``tf.io.gfile.GFile``: opened on first use (a missing file raises NotFoundError
    at the first read, not at construction), text unless the mode has ``b``, and writes accept str or bytes
    in either mode."""

    def __init__(self, name, mode="r"):
        self._name = _local_path(name, "GFile")
        self._binary = "b" in mode
        self._mode = mode.replace("b", "")
        if self._mode not in _MODES:
            raise errors.InvalidArgumentError(None, None, "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'")
        self._file = None

    @property
    def name(self):
        return self._name

    @property
    def mode(self):
        return self._mode

    def _opened(self, for_reading):
        if for_reading and self._mode in ("w", "a"):
            raise errors.PermissionDeniedError(None, None, "File isn't open for reading")
        if not for_reading and self._mode == "r":
            raise errors.PermissionDeniedError(None, None, "File isn't open for writing")
        if self._file is None:
            try:
                self._file = open(self._name, self._mode + "b")
            except OSError as e:
                _raise_os_error(e, self._name)
        return self._file

    def _decoded(self, data):
        return data if self._binary else data.decode("utf-8")

    def size(self):
        return stat(self._name).length

    def write(self, file_content):
        data = file_content.encode("utf-8") if isinstance(file_content, str) else bytes(file_content)
        self._opened(False).write(data)

    def read(self, n=-1):
        return self._decoded(self._opened(True).read(-1 if n is None else n))

    def readline(self):
        return self._decoded(self._opened(True).readline())

    def readlines(self):
        return [self._decoded(line) for line in self._opened(True).readlines()]

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def seek(self, offset=None, whence=0, position=None):
        if position is not None:
            offset = position
        self._opened(self._mode != "w" and self._mode != "a").seek(offset, whence)

    def tell(self):
        return self._opened(self._mode != "w" and self._mode != "a").tell()

    def seekable(self):
        return True

    def flush(self):
        if self._file is not None:
            self._file.flush()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FileStatistics:
    """What ``stat`` returns: ``length`` in bytes, ``mtime_nsec``, ``is_directory``."""

    def __init__(self, length, mtime_nsec, is_directory):
        self.length = length
        self.mtime_nsec = mtime_nsec
        self.is_directory = is_directory


def exists(path):
    return os.path.exists(_local_path(path, "exists"))


def isdir(path):
    return os.path.isdir(_local_path(path, "isdir"))


def join(path, *paths):
    return os.path.join(os.fspath(path), *[os.fspath(p) for p in paths])


def listdir(path):
    local = _local_path(path, "listdir")
    if not os.path.isdir(local):
        raise errors.NotFoundError(None, None, f"Could not find directory {path}")
    return os.listdir(local)


def glob(pattern):
    patterns = [pattern] if isinstance(pattern, (str, bytes, os.PathLike)) else list(pattern)
    found = []
    for p in patterns:
        found.extend(_glob.glob(_local_path(p, "glob")))
    return found


def makedirs(path):
    try:
        os.makedirs(_local_path(path, "makedirs"), exist_ok=True)
    except OSError as e:
        _raise_os_error(e, path)


def mkdir(path):
    local = _local_path(path, "mkdir")
    if os.path.isdir(local):
        return  # as TensorFlow's: an existing directory is not an error
    try:
        os.mkdir(local)
    except OSError as e:
        _raise_os_error(e, path)


def remove(path):
    local = _local_path(path, "remove")
    if os.path.isdir(local):
        _raise_os_error(OSError(errno.EISDIR, os.strerror(errno.EISDIR)), path)
    try:
        os.remove(local)
    except OSError as e:
        _raise_os_error(e, path)


def rmtree(path):
    local = _local_path(path, "rmtree")
    if not os.path.exists(local):
        raise errors.NotFoundError(None, None, f"{path} not found")
    shutil.rmtree(local)


def _refuse_existing(target, overwrite):
    if not overwrite and os.path.exists(target):
        raise errors.AlreadyExistsError(None, None, "file already exists")


def copy(src, dst, overwrite=False):
    source, target = _local_path(src, "copy"), _local_path(dst, "copy")
    _refuse_existing(target, overwrite)
    try:
        shutil.copyfile(source, target)
    except OSError as e:
        _raise_os_error(e, src if not os.path.exists(source) else dst)


def rename(src, dst, overwrite=False):
    source, target = _local_path(src, "rename"), _local_path(dst, "rename")
    _refuse_existing(target, overwrite)
    try:
        os.replace(source, target)
    except OSError as e:
        _raise_os_error(e, src)


def stat(path):
    try:
        result = os.stat(_local_path(path, "stat"))
    except OSError as e:
        _raise_os_error(e, path)
    return FileStatistics(result.st_size, result.st_mtime_ns, os.path.isdir(_local_path(path, "stat")))


def walk(top, topdown=True, onerror=None):
    """Yields ``(dirname, subdirs, files)`` as ``os.walk``; a missing ``top`` yields nothing, as TensorFlow's."""
    yield from os.walk(_local_path(top, "walk"), topdown=topdown, onerror=onerror)


def get_registered_schemes():
    return list(_LOCAL_SCHEMES)
