"""``tf.DeviceSpec``: a device name ("/job:worker/replica:0/task:1/device:GPU:0") as a value with fields.

Pure Python, as TensorFlow's: it only parses, prints, replaces and merges names; ``ember.device`` takes the
string form. The parsing rules are TensorFlow 2.21's as observed by running it: empty parts are skipped, a
later job/replica/task wins, a bare "gpu:0" or "CPU" names a device type of TensorFlow's known set
(upper-cased), "device:TYPE:INDEX" any type, and a second device type is an error."""

_KNOWN_DEVICE_TYPES = frozenset({"CPU", "GPU", "TPU", "CUSTOM", "EPU"})


def _as_int(value):
    return None if value is None else int(value)


def _as_device_type(value):
    if value is None:
        return None
    return value.upper() if value.upper() in _KNOWN_DEVICE_TYPES else value


def _as_index(text):
    return None if text == "*" else int(text)


def _parse(spec):
    """(job, replica, task, device_type, device_index) of a string; fields it does not name are None."""
    if not isinstance(spec, str):
        raise TypeError(f"DeviceSpec.from_string expects a string, got {type(spec).__name__}: {spec!r}")
    job = replica = task = device_type = device_index = None
    type_seen = False
    for part in spec.split("/"):
        if not part:
            continue
        fields = part.split(":")
        head = fields[0]
        if len(fields) == 2 and head in ("job", "replica", "task"):
            if head == "job":
                job = fields[1]
            elif head == "replica":
                replica = int(fields[1])
            else:
                task = int(fields[1])
            continue
        if len(fields) in (1, 2) and head.upper() in _KNOWN_DEVICE_TYPES:
            kind, index = head.upper(), (_as_index(fields[1]) if len(fields) == 2 else None)
        elif len(fields) == 3 and head == "device":
            kind, index = _as_device_type(fields[1]), _as_index(fields[2])
        else:
            raise ValueError(f"Unknown attribute '{head}' is encountered while parsing the device spec: '{spec}'.")
        if type_seen:
            raise ValueError(f"Multiple device types are not allowed while parsing the device spec: {spec}.")
        type_seen = True
        device_type, device_index = kind, index
    return job, replica, task, device_type, device_index


class DeviceSpec:
    """An immutable device name: ``DeviceSpec(job="ps", device_type="CPU", device_index=0)``."""

    __slots__ = ("_job", "_replica", "_task", "_device_type", "_device_index", "_as_string")

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        self._job = None if job is None else str(job)
        self._replica = _as_int(replica)
        self._task = _as_int(task)
        self._device_type = _as_device_type(device_type)
        self._device_index = _as_int(device_index)
        self._as_string = self._render()

    def _render(self):
        out = ""
        if self._job is not None:
            out += "/job:" + self._job
        if self._replica is not None:
            out += f"/replica:{self._replica}"
        if self._task is not None:
            out += f"/task:{self._task}"
        if self._device_type is not None:
            index = "*" if self._device_index is None else str(self._device_index)
            out += f"/device:{self._device_type}:{index}"
        return out

    @classmethod
    def from_string(cls, spec):
        return cls(*_parse(spec))

    def parse_from_string(self, spec):
        """A new spec parsed from ``spec`` alone (TensorFlow 2's DeviceSpec is immutable, so this no longer
        merges into ``self`` as TF1's did)."""
        return DeviceSpec.from_string(spec)

    def _fields(self):
        return dict(job=self._job, replica=self._replica, task=self._task, device_type=self._device_type,
                    device_index=self._device_index)

    def make_merged_spec(self, dev):
        """This spec with every field ``dev`` sets taken from ``dev``."""
        if not isinstance(dev, DeviceSpec):
            raise TypeError(f"make_merged_spec expects a DeviceSpec, got {type(dev).__name__}")
        fields = self._fields()
        fields.update({k: v for k, v in dev._fields().items() if v is not None})
        return DeviceSpec(**fields)

    def replace(self, **kwargs):
        fields = self._fields()
        for key in kwargs:
            if key not in fields:
                raise TypeError(f"DeviceSpec.replace() got an unexpected keyword argument '{key}'")
        fields.update(kwargs)
        return DeviceSpec(**fields)

    def to_string(self):
        return self._as_string

    job = property(lambda self: self._job)
    replica = property(lambda self: self._replica)
    task = property(lambda self: self._task)
    device_type = property(lambda self: self._device_type)
    device_index = property(lambda self: self._device_index)

    def __eq__(self, other):
        return isinstance(other, DeviceSpec) and self._as_string == other._as_string

    def __hash__(self):
        return hash(self._as_string)

    def __repr__(self):
        return (f"<DeviceSpec(job={self._job}, replica={self._replica}, task={self._task}, "
                f"device_type={self._device_type}, device_index={self._device_index})>")
