"""``Progbar``: the progress bar Keras 2 prints during fit/evaluate/predict, character for character.

verbose=1 redraws one line per update: "\\b" over the previous text (and "\\r"), then
``" 3/10 [========>.....................] - ETA: 1s - loss: 0.6931"`` while running and
``"10/10 [==============================] - 0s 3ms/step - loss: 0.6931"`` with a newline at the end.
verbose=2 prints only the final line: ``"10/10 - 0s - loss: 0.6931 - 35ms/epoch - 3ms/step"``.
Values of names in ``stateful_metrics`` are shown as given; others are averaged over the steps seen.
Like tf_keras, it redraws in place whenever Python runs on a POSIX system (tf_keras tests "posix" in
sys.modules), and at most every ``interval`` seconds except for the final update.
"""

import os
import sys
import time

import numpy as np


def _format_duration(seconds, unit):
    if seconds >= 1 or seconds == 0:
        return f" {seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f" {seconds * 1e3:.0f}ms/{unit}"
    return f" {seconds * 1e6:.0f}us/{unit}"


def _format_eta(eta):
    if eta > 3600:
        return "%d:%02d:%02d" % (eta // 3600, (eta % 3600) // 60, eta % 60)
    if eta > 60:
        return "%d:%02d" % (eta // 60, eta % 60)
    return "%ds" % eta


def _format_value(value, strict_positive=False):
    big = value > 1e-3 if strict_positive else abs(value) > 1e-3
    return f" {value:.4f}" if big else f" {value:.4e}"


class Progbar:
    def __init__(self, target, width=30, verbose=1, interval=0.05, stateful_metrics=None, unit_name="step"):
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self._dynamic_display = ((hasattr(sys.stdout, "isatty") and sys.stdout.isatty())
                                 or "ipykernel" in sys.modules or "posix" in sys.modules
                                 or "PYCHARM_HOSTED" in os.environ)
        self._total_width = 0
        self._seen_so_far = 0
        self._sums = {}  # name -> [weighted sum, weight] (averaged) or [value, 1] (stateful)
        self._order = []
        self._start = time.time()
        self._last_update = 0.0
        self._epoch_start = self._start
        self._epoch_end = None
        self._after_first_step = None

    def _update_stateful_metrics(self, names):
        self.stateful_metrics = self.stateful_metrics.union(names)

    def _record(self, current, values):
        for name, value in values or ():
            if name not in self._order:
                self._order.append(name)
            value = float(np.asarray(value)) if not isinstance(value, str) else value
            if name in self.stateful_metrics or isinstance(value, str):
                self._sums[name] = [value, 1]
            else:
                weight = max(current - self._seen_so_far, 1)
                total = self._sums.setdefault(name, [0.0, 0])
                total[0] += value * weight
                total[1] += weight
        self._seen_so_far = current

    def _average(self, name):
        total, weight = self._sums[name]
        return total if isinstance(total, str) else total / max(1, weight)

    def _step_duration(self, current, now):
        if not current:
            return 0
        if self._after_first_step is not None and current > 1:
            duration = (now - self._after_first_step) / (current - 1)
        else:
            duration = (now - self._start) / current
        if current == 1:
            self._after_first_step = now
        return duration

    def update(self, current, values=None, finalize=None):
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        self._record(current, values)
        now = time.time()
        if current == self.target:
            self._epoch_end = now
        if self.verbose == 1:
            self._draw(current, now, finalize)
        elif self.verbose == 2 and finalize:
            self._draw_summary(current, now)
        self._last_update = now

    def _draw(self, current, now, finalize):
        if now - self._last_update < self.interval and not finalize:
            return
        previous = self._total_width
        message = ("\b" * previous + "\r") if self._dynamic_display else "\n"
        if self.target is not None:
            digits = int(np.log10(self.target)) + 1
            bar = f"{current:{digits}d}/{self.target} ["
            done = int(self.width * float(current) / self.target)
            if done > 0:
                bar += "=" * (done - 1) + (">" if current < self.target else "=")
            bar += "." * (self.width - done) + "]"
        else:
            bar = "%7d/Unknown" % current
        self._total_width = len(bar)
        message += bar
        per_step = self._step_duration(current, now)
        if self.target is None or finalize:
            info = f" - {now - self._start:.0f}s" + _format_duration(per_step, self.unit_name)
        else:
            info = f" - ETA: {_format_eta(per_step * (self.target - current))}"
        for name in self._order:
            value = self._average(name)
            info += f" - {name}:" + (f" {value}" if isinstance(value, str) else _format_value(value))
        self._total_width += len(info)
        if previous > self._total_width:
            info += " " * (previous - self._total_width)
        if finalize:
            info += "\n"
        _print(message + info)

    def _draw_summary(self, current, now):
        digits = int(np.log10(self.target)) + 1
        info = f"{current:{digits}d}/{self.target}" + f" - {now - self._start:.0f}s"
        for name in self._order:
            value = self._average(name)
            info += f" - {name}:" + (f" {value}" if isinstance(value, str) else _format_value(value, True))
        if self._epoch_end:
            per_epoch = self._epoch_end - self._epoch_start
            info += " -" + _format_duration(per_epoch, "epoch")
            info += " -" + _format_duration(per_epoch / self.target, self.unit_name)
            self._epoch_start = now
            self._epoch_end = None
            info += "\n"
        _print(info)

    def add(self, n, values=None):
        self.update(self._seen_so_far + n, values)


def _print(text):
    sys.stdout.write(text)
    sys.stdout.flush()
