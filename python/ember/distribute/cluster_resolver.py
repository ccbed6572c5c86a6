"""Where the workers of a multi-process job are: TensorFlow's ClusterSpec and cluster resolvers.

`TFConfigClusterResolver` reads the `TF_CONFIG` environment variable as TensorFlow does
(`{"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker", "index": 0}}`); when it is unset
and the process was started by `mpirun` (OpenMPI's `OMPI_COMM_WORLD_RANK`/`SIZE`, or PMI's `PMI_RANK`/
`PMI_SIZE`), the launcher's rank and size describe a cluster of that many workers on this host.
MultiWorkerMirroredStrategy turns the resolver into a rank and a group size (`worker_rank`), chief first,
then the workers in index order, as TensorFlow numbers its collective group.
"""

import json
import os

__all__ = ["ClusterSpec", "ClusterResolver", "SimpleClusterResolver", "TFConfigClusterResolver"]


class ClusterSpec:
    """The jobs of a cluster and their tasks' addresses: `ClusterSpec({"worker": ["a:1", "b:2"]})`."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        if not isinstance(cluster, dict):
            raise TypeError("`cluster` must be a dictionary mapping one or more job names to lists of network "
                            f"addresses, got {type(cluster).__name__}")
        self._spec = {}
        for job, tasks in cluster.items():
            if not isinstance(job, str):
                raise TypeError(f"ClusterSpec: job names must be strings, got {job!r}")
            if isinstance(tasks, dict):
                table = {}
                for index, address in tasks.items():
                    if not isinstance(index, int) or isinstance(index, bool):
                        raise TypeError(f"ClusterSpec: task indices of job {job!r} must be integers, got {index!r}")
                    table[index] = self._address(job, address)
            elif isinstance(tasks, (list, tuple)):
                table = {i: self._address(job, a) for i, a in enumerate(tasks)}
            else:
                raise TypeError(f"ClusterSpec: the tasks of job {job!r} must be a list of addresses or a dict "
                                f"from task index to address, got {type(tasks).__name__}")
            self._spec[job] = table

    @staticmethod
    def _address(job, address):
        if not isinstance(address, str):
            raise TypeError(f"ClusterSpec: addresses of job {job!r} must be strings, got {address!r}")
        return address

    def as_dict(self):
        """Jobs to address lists (to {index: address} dicts where the indices are not 0..n-1)."""
        out = {}
        for job, table in self._spec.items():
            indices = sorted(table)
            if indices == list(range(len(indices))):
                out[job] = [table[i] for i in indices]
            else:
                out[job] = dict(table)
        return out

    @property
    def jobs(self):
        return list(self._spec)

    def _job(self, job_name):
        try:
            return self._spec[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name):
        return len(self._job(job_name))

    def task_indices(self, job_name):
        return sorted(self._job(job_name))

    def task_address(self, job_name, task_index):
        job = self._job(job_name)
        try:
            return job[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index} in job {job_name!r}") from None

    def job_tasks(self, job_name):
        job = self._job(job_name)
        if not job:
            return []
        return [job.get(i) for i in range(max(job) + 1)]

    def __bool__(self):
        return bool(self._spec)

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self._spec == other._spec

    def __ne__(self, other):
        return not self == other

    def __repr__(self):
        return f"ClusterSpec({self.as_dict()!r})"


class ClusterResolver:
    """The base of the resolvers: a cluster spec and which task this process is."""

    task_type = None
    task_id = None
    rpc_layer = None

    def cluster_spec(self):
        raise NotImplementedError

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        raise NotImplementedError

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return {}

    @property
    def environment(self):
        return ""


def _master(spec, task_type, task_id, rpc_layer):
    if task_type is None or task_id is None or task_type not in spec.jobs:
        return ""
    address = spec.task_address(task_type, task_id)
    return f"{rpc_layer}://{address}" if rpc_layer else address


class SimpleClusterResolver(ClusterResolver):
    """A resolver holding the ClusterSpec and task it is given."""

    def __init__(self, cluster_spec, master="", task_type=None, task_id=None, environment="",
                 num_accelerators=None, rpc_layer=None):
        if not isinstance(cluster_spec, ClusterSpec):
            raise TypeError(f"SimpleClusterResolver: cluster_spec must be a ClusterSpec, got "
                            f"{type(cluster_spec).__name__}")
        self._cluster_spec = cluster_spec
        self._master = master
        self.task_type = task_type
        self.task_id = task_id
        self._environment = environment
        self._num_accelerators = num_accelerators or {}
        self.rpc_layer = rpc_layer

    def cluster_spec(self):
        return self._cluster_spec

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        if task_type is not None and task_id is not None:
            return _master(self._cluster_spec, task_type, task_id, rpc_layer or self.rpc_layer)
        return self._master

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return dict(self._num_accelerators)

    @property
    def environment(self):
        return self._environment


def _launcher_rank_size():
    """(rank, size) from mpirun's environment, or None."""
    for rank_name, size_name in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE")):
        if rank_name in os.environ and size_name in os.environ:
            try:
                return int(os.environ[rank_name]), int(os.environ[size_name])
            except ValueError:
                raise ValueError(f"{rank_name}={os.environ[rank_name]!r} and {size_name}="
                                 f"{os.environ[size_name]!r} must be integers") from None
    return None


class TFConfigClusterResolver(ClusterResolver):
    """The cluster of the `TF_CONFIG` environment variable (read on every call, as TensorFlow does), else of
    the MPI launcher's environment, else an empty cluster."""

    def __init__(self, task_type=None, task_id=None, rpc_layer=None, environment=None):
        self._task_type = task_type
        self._task_id = task_id
        self._rpc_layer = rpc_layer
        self._environment = environment

    @staticmethod
    def _config():
        text = os.environ.get("TF_CONFIG")
        if not text:
            return None
        config = json.loads(text)
        if not isinstance(config, dict):
            raise ValueError(f"TF_CONFIG must be a JSON object, got {text!r}")
        return config

    def _launcher(self):
        return None if self._config() is not None else _launcher_rank_size()

    @property
    def task_type(self):
        if self._task_type is not None:
            return self._task_type
        config = self._config()
        if config is not None:
            return config.get("task", {}).get("type")
        return "worker" if self._launcher() else None

    @task_type.setter
    def task_type(self, value):
        self._task_type = value

    @property
    def task_id(self):
        if self._task_id is not None:
            return self._task_id
        config = self._config()
        if config is not None:
            index = config.get("task", {}).get("index")
            return None if index is None else int(index)
        launcher = self._launcher()
        return launcher[0] if launcher else None

    @task_id.setter
    def task_id(self, value):
        self._task_id = value

    @property
    def rpc_layer(self):
        if self._rpc_layer is not None:
            return self._rpc_layer
        config = self._config()
        return None if config is None else config.get("rpc_layer")

    @rpc_layer.setter
    def rpc_layer(self, value):
        self._rpc_layer = value

    @property
    def environment(self):
        if self._environment is not None:
            return self._environment
        config = self._config()
        return None if config is None else config.get("environment")

    def cluster_spec(self):
        config = self._config()
        if config is not None:
            return ClusterSpec(config.get("cluster", {}))
        launcher = _launcher_rank_size()
        if launcher:  # one host (mpirun -np N): the addresses are only names; Gloo picks its own ports
            return ClusterSpec({"worker": [f"localhost:{i}" for i in range(launcher[1])]})
        return ClusterSpec({})

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        if task_type is None or task_id is None:
            task_type, task_id = self.task_type, self.task_id
        return _master(self.cluster_spec(), task_type, task_id, rpc_layer or self.rpc_layer)


def worker_rank(resolver):
    """(rank, size, host) of this process in the collective group of `resolver`'s cluster: the chief is
    rank 0, then the workers by index (evaluators and parameter servers take no part)."""
    spec = resolver.cluster_spec()
    members = []
    for job in ("chief", "worker"):
        if job in spec.jobs:
            members += [(job, i) for i in spec.task_indices(job)]
    if not members:
        return 0, 1, "127.0.0.1"
    me = (resolver.task_type, resolver.task_id)
    if me not in members:
        raise ValueError(f"this task ({me[0]!r}, index {me[1]!r}) is not a chief or worker of the cluster "
                         f"{spec.as_dict()!r}")
    address = spec.task_address(*me)
    host = address.rsplit(":", 1)[0].strip("[]") if ":" in address else address
    return members.index(me), len(members), host
