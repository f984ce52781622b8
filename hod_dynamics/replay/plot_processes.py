"""Plots drawn by processes of their own, started before the analysis they show.

A replay's plots cost as much as its analysis: matplotlib's import and the first figure of a
process (fonts, axes classes) take about 0.5 s, and each figure of seven panels about 0.3 s
more, all of it Python holding one core. :class:`PlotProcesses` forks a few processes (POSIX)
at the start of a command; each imports matplotlib and draws a throw-away figure while the
parent analyses (on the other core), then draws its share of the plots it is sent, while the
parent writes the other files. The parent sends the analysis once per process (pickled, a
few MB) and the plots as ``(function, arguments)`` pairs of module-level functions.

A process that fails sends its error back (re-raised in the parent as it was); a process
that dies (killed) makes :meth:`PlotProcesses.draw` raise RuntimeError. Ctrl-C ends them with
the parent (they take SIGINT's default action: no traceback of their own). Where fork is
missing (Windows) or a process cannot be started, the plots are drawn in the parent.
"""

import os
import signal
import sys


class PlotProcesses:
    """``count`` forked plotting processes (see the module docstring); ``draw(payload, jobs)``
    draws the ``jobs`` (list of ``(function, args)``, each returning the path written), shared
    among them, and returns the paths in the jobs' order; ``close()`` ends them (also as a
    context manager's exit). ``available`` is False when none could be started (``draw``
    then draws in this process)."""

    def __init__(self, count=2):
        self.children = []            # (pid of the first process, connection) per process
        if not hasattr(os, "fork") or count < 1:
            return
        from multiprocessing import Pipe

        sys.stdout.flush()
        sys.stderr.flush()
        pipes = [Pipe() for _ in range(count)]
        try:
            pid = os.fork()
        except OSError:
            return
        if pid == 0:
            # the first process warms up alone (one core for the analysis), then forks the others
            # from its warm state, which costs them nothing
            for parent_end, _ in pipes:
                parent_end.close()
            _serve([child_end for _, child_end in pipes])
        for parent_end, child_end in pipes:
            child_end.close()
            self.children.append((pid, parent_end))

    @property
    def available(self):
        return bool(self.children)

    def draw(self, payload, jobs):
        """Run ``jobs`` (``[(function, args)]``, ``function(payload, *args)`` -> path) in the
        processes, round robin; returns their paths in order."""
        self.submit(payload, jobs)
        return self.collect()

    def submit(self, payload, jobs):
        """Send ``jobs`` (see :meth:`draw`) and return at once (this process goes on meanwhile);
        :meth:`collect` waits for their paths. Without processes they run here, now."""
        self._jobs = list(jobs)
        if not self.children:
            self._done = [function(payload, *args) for function, args in self._jobs]
            return
        self._shares = [self._jobs[i::len(self.children)] for i in range(len(self.children))]
        for (_, conn), share in zip(self.children, self._shares):
            conn.send((payload, share))

    def collect(self):
        """The paths of the jobs :meth:`submit` sent, in their order."""
        if not self.children:
            return self._done
        results = []
        for (pid, conn), share in zip(self.children, self._shares):
            try:
                status, value = conn.recv()
            except (EOFError, OSError):
                raise RuntimeError(f"the plotting process {pid} died before it finished its plots") from None
            if status == "error":
                raise value
            results.append(value)
        count = len(self.children)
        return [results[i % count][i // count] for i in range(len(self._jobs))]

    def close(self, kill=False):
        """End the processes: told to stop, or (``kill``: the command failed) killed at once."""
        pid = self.children[0][0] if self.children else None
        for _, conn in self.children:
            try:
                if not kill:
                    conn.send(None)
                conn.close()              # a process whose pipe closes ends (EOF)
            except OSError:
                pass
        if pid is not None:
            if kill:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self.children = []

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        self.close(kill=kind is not None)


def _serve(conns):
    """The plotting processes: warm up, fork one process per further connection, then draw
    what is sent until told to stop (the first process reaps the others before it ends)."""
    code, others = 0, []
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        # the warm-up yields to the analysis (the critical path); the drawing, which the parent
        # waits for, runs at the parent's priority again where that is allowed
        before = os.nice(0)
        os.nice(5 - before)
        _warm_up()
        try:
            os.nice(before - 5)
        except OSError:
            pass
        conn = conns[0]
        for i in range(1, len(conns)):
            pid = os.fork()
            if pid == 0:
                others, conn = [], conns[i]
                for j, c in enumerate(conns):
                    if j != i:
                        c.close()
                break
            others.append(pid)
        else:
            for c in conns[1:]:
                c.close()
        while True:
            message = conn.recv()
            if message is None:
                break
            payload, jobs = message
            try:
                conn.send(("ok", [function(payload, *args) for function, args in jobs]))
            except Exception as exc:               # noqa: BLE001  handed to the parent as it is
                conn.send(("error", exc))
    except (EOFError, OSError, KeyboardInterrupt):
        code = 1
    finally:
        for pid in others:
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass
        os._exit(code)                             # never the parent's exit handlers or buffers


def _warm_up():
    """Draw a small figure of a replay's kind (panels, reference, band, marks, legend, a PNG):
    matplotlib's imports, fonts and first-use code, and import what unpickling an analysis and
    drawing its plots import (scipy, the replay's modules: half a second that would otherwise
    come after the analysis)."""
    import io
    import warnings

    import numpy as np

    from . import analysis, report  # noqa: F401
    from ..plots import joint_series_figure, save

    warnings.simplefilter("ignore")
    t = np.linspace(0.0, 1.0, 50)
    y = np.column_stack([np.sin(3 * t), np.cos(2 * t)])
    fig = joint_series_figure(t, y, ("a", "b"), ylabel="tau [N m]", title="warm-up", reference=y + 0.1,
                              band=np.full_like(y, 0.01), unsupported=["", "warm-up"], limits_from=t > 0.1)
    save(fig, io.BytesIO())          # at the plots' resolution: glyphs are cached per size in pixels
