"""TensorFlow's options for collectives: tf.distribute.experimental.CommunicationOptions."""

import enum

__all__ = ["CommunicationImplementation", "CommunicationOptions"]


class CommunicationImplementation(enum.Enum):
    """Which implementation to prefer. Across processes ember runs every collective on Gloo's ring (NCCL
    would serve GPUs, which ember's collectives do not reach yet), so each value is accepted."""

    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


class CommunicationOptions:
    """How collectives run: `timeout_seconds` bounds each collective (a peer that died or hangs makes it
    raise ember.errors.UnavailableError or DeadlineExceededError instead of waiting forever; None or 0 is
    the group's default, EMBER_COLLECTIVE_TIMEOUT or 300 s), `bytes_per_pack` sizes the gradient buckets of
    MultiWorkerMirroredStrategy (0: 4 MiB)."""

    def __init__(self, bytes_per_pack=0, timeout_seconds=None, implementation=CommunicationImplementation.AUTO):
        if bytes_per_pack < 0:
            raise ValueError(f"Argument `bytes_per_pack` must be >=0, Received {bytes_per_pack}.")
        if isinstance(implementation, str):
            try:
                implementation = CommunicationImplementation[implementation.upper()]
            except KeyError:
                raise ValueError(f"Argument `implementation` must be one of {[m.value for m in CommunicationImplementation]}, "
                                 f"got {implementation!r}") from None
        if not isinstance(implementation, CommunicationImplementation):
            raise ValueError("Argument `implementation` must be a CommunicationImplementation, got "
                             f"{implementation!r}")
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation

    def merge(self, options):
        """These options with those set in `options` (non-default values) taking over."""
        merged = CommunicationOptions(self.bytes_per_pack, self.timeout_seconds, self.implementation)
        if options is None:
            return merged
        if options.bytes_per_pack != 0:
            merged.bytes_per_pack = options.bytes_per_pack
        if options.timeout_seconds is not None:
            merged.timeout_seconds = options.timeout_seconds
        if options.implementation != CommunicationImplementation.AUTO:
            merged.implementation = options.implementation
        return merged

    def __repr__(self):
        return (f"CommunicationOptions(bytes_per_pack={self.bytes_per_pack}, timeout_seconds="
                f"{self.timeout_seconds}, implementation={self.implementation})")
