"""``strategy.run`` for several replicas in one process: each replica's ``fn`` runs in a thread of its own,
one thread at a time, in replica order, handing over at each ``merge_call``.

Note [Replica threads]
Each replica runs in a thread so that a ``merge_call`` (the optimizer's gradient all-reduce,
``all_reduce``, a SUM/MEAN write to a mirrored variable) can suspend it until every replica has reached
the same call: the calling thread then runs ``merge_fn`` once, in cross-replica context, with the
replicas' arguments grouped, and the replicas continue in order with their part of its result. Only one
thread runs at a time, so the order of the work, and of the graph a trace records, is fixed: replica 0
to its first merge_call, replica 1 to its first, ..., the merge, replica 0 to its next one...

Inside ember.function the trace being recorded belongs to the calling thread; it is handed to whichever
thread runs (``_C.pause_trace``/``resume_trace``), so every replica records into the same graph, each
under its own device scope: the multi-device executor then runs the replicas' partitions concurrently.
A thread gets the caller's variable-creation state too (a first trace that creates variables), while
GradientTapes stay per thread: a replica's tape records that replica's computation.
"""

import functools
import queue
import threading

from ember import _C, variable_creation
from ember.distribute import distribute_lib, values as values_lib
from ember.distribute.values import on_device


class _Aborted(BaseException):
    """Raised in a waiting replica thread when another replica failed: it unwinds without running on."""


def _serve(jobs):
    while True:
        job = jobs.get()
        if job is None:
            return
        job()
        del job  # a finished run (and its strategy) must not stay alive through this thread


class ReplicaThreads:
    """One long-lived thread per replica of a strategy, so that an eager ``run`` does not start threads
    (two thread starts and joins cost ~0.8 ms on a busy 2-core machine). A run takes them all while it
    lasts; a run that finds them taken (a ``run`` inside a ``merge_fn``) starts threads of its own."""

    def __init__(self, count):
        self._lock = threading.Lock()
        self._jobs = [queue.SimpleQueue() for _ in range(count)]
        self.threads = [threading.Thread(target=_serve, args=(jobs,), name=f"ember-replica-{i}", daemon=True)
                        for i, jobs in enumerate(self._jobs)]  # they hold the queues, not this object
        for thread in self.threads:
            thread.start()

    def try_acquire(self):
        return self._lock.acquire(blocking=False)

    def release(self):
        self._lock.release()

    def submit(self, index, job):
        self._jobs[index].put(job)

    def __del__(self):
        for jobs in self._jobs:
            jobs.put(None)


class _Replica:
    __slots__ = ("index", "finished", "done", "result", "error", "merge", "merge_result")

    def __init__(self, index):
        self.index = index
        self.finished = threading.Event()
        self.done = False
        self.result = None
        self.error = None
        self.merge = None  # (merge_fn, args, kwargs) while waiting in merge_call
        self.merge_result = None


class MirroredRun:
    """One ``strategy.run`` call over the strategy's replicas (see Note [Replica threads])."""

    def __init__(self, strategy, fn, args, kwargs):
        self._strategy = strategy
        self._fn = fn
        self._args = args
        self._kwargs = kwargs
        self._devices = strategy.extended.worker_devices
        self._replicas = [_Replica(i) for i in range(len(self._devices))]
        self._cond = threading.Condition()
        self._turn = None  # the index of the replica that may run, or None for the calling thread
        self._abort = False
        self._trace = 0
        self._creation_state = variable_creation.state_for_thread()
        self.created = []  # distributed variables made by replica 0, in order, for the other replicas to take
        self._taken = [0] * len(self._devices)
        self._started = []  # the replicas handed to a thread (the ones to wait for)

    # ---- the calling thread
    def execute(self, threads=None):
        """Runs the replicas on ``threads`` (a ReplicaThreads) when it is free, else on new threads."""
        pooled = threads is not None and threads.try_acquire()
        self._trace = _C.pause_trace()  # handed to whichever thread runs
        try:
            for replica in self._replicas:
                self._started.append(replica)
                if pooled:
                    threads.submit(replica.index, functools.partial(self._replica_main, replica))
                else:
                    threading.Thread(target=self._replica_main, args=(replica,), name=f"ember-replica-{replica.index}",
                                     daemon=True).start()
            while True:
                for replica in self._replicas:
                    if not replica.done:
                        self._run_until_yield(replica)
                    if replica.error is not None:
                        raise replica.error
                if all(r.done for r in self._replicas):
                    break
                self._merge()
        finally:
            self._finish()
            if pooled:
                threads.release()
            _C.resume_trace(self._trace)
        return values_lib.regroup([r.result for r in self._replicas])

    def _run_until_yield(self, replica):
        with self._cond:
            self._turn = replica.index
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._turn is None)

    def _merge(self):
        waiting = [r for r in self._replicas if r.merge is not None]
        if len(waiting) != len(self._replicas):
            finished = [r.index for r in self._replicas if r.done]
            raise RuntimeError(f"tf.distribute: replicas {finished} returned while the others wait in merge_call "
                               "(an all_reduce, an optimizer step or a synchronized variable write): every "
                               "replica must make the same cross-replica calls in the same order")
        merge_fn = waiting[0].merge[0]
        args = values_lib.regroup([r.merge[1] for r in waiting])
        kwargs = values_lib.regroup([r.merge[2] for r in waiting])
        if len(waiting) == 1:
            args, kwargs = waiting[0].merge[1], waiting[0].merge[2]
        _C.resume_trace(self._trace)
        try:
            with distribute_lib._pushed(distribute_lib._Context(self._strategy, None)):
                result = merge_fn(self._strategy, *args, **kwargs)
        finally:
            self._trace = _C.pause_trace()
        for r in waiting:
            r.merge = None
            r.merge_result = values_lib.select_replica(r.index, result)

    def _finish(self):
        with self._cond:
            if not all(r.done for r in self._replicas):
                self._abort = True
                self._turn = -1  # wakes every waiting thread, which sees the abort and unwinds
                self._cond.notify_all()
        for r in self._started:
            r.finished.wait()

    # ---- a replica thread
    def _wait_for_turn(self, replica):
        with self._cond:
            self._cond.wait_for(lambda: self._turn == replica.index or self._abort)
            if self._abort:
                raise _Aborted()
        _C.resume_trace(self._trace)

    def _yield(self):
        token = _C.pause_trace()
        if token:  # only a thread that resumed the trace holds it (an aborted one never did)
            self._trace = token
        with self._cond:
            self._turn = None
            self._cond.notify_all()

    def _replica_main(self, replica):
        try:
            self._replica_body(replica)
        finally:
            variable_creation.adopt_state({"stack": [], "creators": []})  # the caller's, borrowed for the run
            replica.finished.set()

    def _replica_body(self, replica):
        try:
            self._wait_for_turn(replica)
        except _Aborted:
            replica.done = True
            return
        try:
            variable_creation.adopt_state(self._creation_state)
            context = distribute_lib.ReplicaContext(self._strategy, replica.index, run=self)
            with distribute_lib._pushed(distribute_lib._Context(self._strategy, context)), \
                    variable_creation.variable_creator_scope(self._strategy.extended._scope_creator()), \
                    on_device(self._devices[replica.index]):
                args = values_lib.select_replica(replica.index, self._args)
                kwargs = values_lib.select_replica(replica.index, self._kwargs)
                replica.result = self._fn(*args, **kwargs)
        except _Aborted:
            pass
        except BaseException as e:  # noqa: BLE001 - re-raised in the calling thread
            replica.error = e
        replica.done = True
        self._yield()

    def merge_call(self, index, merge_fn, args, kwargs):
        replica = self._replicas[index]
        replica.merge = (merge_fn, args, kwargs)
        self._yield()
        self._wait_for_turn(replica)
        result, replica.merge_result = replica.merge_result, None
        return result

    # ---- variables created inside the replicas
    def take_created(self, index):
        """The next distributed variable replica 0 created, for replica ``index`` to use as its own."""
        position = self._taken[index]
        if position >= len(self.created):
            raise RuntimeError(f"tf.distribute: replica {index} creates more variables than replica 0 did: every "
                               "replica must create the same variables in the same order")
        self._taken[index] += 1
        return self.created[position]
