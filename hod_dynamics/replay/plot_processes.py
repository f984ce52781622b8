"""Plots drawn by processes of their own, started before the analysis they show.

A replay's plots cost as much as its analysis: matplotlib's import and the first figure of a
process (fonts, axes classes, ticks) take about 0.6 s, and each further figure of seven
panels about 0.2 s, all of it Python holding one core. :class:`PlotProcesses` forks a few
processes (POSIX) at the start of a command; the first imports matplotlib and draws a plot of
the model's joints while the parent reads and analyses (on the other core), then forks the
others from its warm state (they have that figure too, which
:func:`~hod_dynamics.plots.plot_joint_series` draws into again). They draw the plots they are
sent as soon as the parent knows them (analyze-bag sends the residual's once the dynamics is
done, each tau^(k)'s once its error estimate is), each to the first idle process, while the
parent goes on. A plot is sent as a ``(function, kwargs)`` pair: a module-level function of
:mod:`hod_dynamics.plots` and its plain data (arrays, names), so that a plotting process
imports matplotlib and nothing of the analysis.

A process that fails sends its error back (re-raised in the parent as it was); a process
that dies (killed) makes :meth:`PlotProcesses.collect` raise RuntimeError. Ctrl-C ends them with
the parent (they take SIGINT's default action: no traceback of their own). Where fork is
missing (Windows) or a process cannot be started, the plots are drawn in the parent.
"""

import gc
import os
import signal
import sys


class PlotProcesses:
    """``count`` forked plotting processes (see the module docstring), warmed up on plots of
    ``panels`` panels (the model's joints) when given. :meth:`submit` hands
    them jobs as they become known (``(function, kwargs)`` pairs: ``function(**kwargs)`` draws
    one plot and returns the path written); a job waits until a process is idle, and goes to
    the first that is; :meth:`collect` waits for every job submitted since the last collect and
    returns their paths in submission order; :meth:`draw` is both. ``close()`` ends them (also
    as a context manager's exit). ``available`` is False when none could be started (the jobs
    then run in this process, when submitted)."""

    def __init__(self, count=2, panels=None):
        self.children = []            # (pid of the first process, connection) per process
        # per job submitted and not collected: [function, kwargs, the process drawing it (None:
        # waiting), its result once received]
        self._jobs = []
        self._done = []               # the jobs' results, without processes
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
            _serve([child_end for _, child_end in pipes], panels)
        for parent_end, child_end in pipes:
            child_end.close()
            self.children.append((pid, parent_end))

    @property
    def available(self):
        return bool(self.children)

    def draw(self, jobs):
        """Run ``jobs`` (``[(function, kwargs)]``, ``function(**kwargs)`` -> path) in the
        processes; returns their paths in order (with those of jobs submitted before)."""
        self.submit(jobs)
        return self.collect()

    def submit(self, jobs):
        """Hand over ``jobs`` (see :meth:`draw`) and return at once (this process goes on
        meanwhile): sent now to the idle processes, the others when :meth:`submit` or
        :meth:`collect` find one idle. Without processes they run here, now."""
        for function, kwargs in jobs:
            if not self.children:
                self._done.append(("ok", function(**kwargs)))
            else:
                self._jobs.append([function, kwargs, None, None])
        self._dispatch()

    def _busy(self):
        """The processes drawing a job whose result is not received yet."""
        return {job[2] for job in self._jobs if job[2] is not None and job[3] is None}

    def _receive(self, i):
        """Take in the result of the job process i is drawing."""
        pid, conn = self.children[i]
        job = next(job for job in self._jobs if job[2] == i and job[3] is None)
        try:
            job[3] = conn.recv()
        except (EOFError, OSError):
            raise RuntimeError(f"the plotting process {pid} died before it finished its plots") from None

    def _dispatch(self):
        """Take in the results that have come, then send each idle process the next waiting
        job. A process is sent a job only when idle, reading: its data (MBs, more than a pipe
        holds) go over at once, and this process never waits for another plot to be done."""
        for i in sorted(self._busy()):
            if self.children[i][1].poll():
                self._receive(i)
        busy = self._busy()
        waiting = (job for job in self._jobs if job[2] is None)
        for i, (_, conn) in enumerate(self.children):
            if i in busy:
                continue
            job = next(waiting, None)
            if job is None:
                break
            conn.send([(job[0], job[1])])
            job[2] = i

    def collect(self):
        """The paths of the jobs submitted since the last collect, in their order. A job that
        failed raises its error here (once all the others are done)."""
        from multiprocessing.connection import wait

        while True:
            self._dispatch()
            busy = self._busy()
            if not busy:
                break
            for conn in wait([self.children[i][1] for i in busy]):
                self._receive([c for _, c in self.children].index(conn))
        results = self._done + [job[3] for job in self._jobs]
        self._done, self._jobs = [], []
        for status, value in results:
            if status == "error":
                raise value
        return [value for _, value in results]

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


def _serve(conns, panels=None):
    """The plotting processes: warm up, fork one process per further connection, then draw
    what is sent until told to stop (the first process reaps the others before it ends)."""
    code, others = 0, []
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        # the warm-up yields to the analysis (the critical path); the drawing, which the parent
        # waits for, runs at the parent's priority again where that is allowed
        os.nice(5)                 # relative to the parent's: always allowed
        _warm_up(panels)
        try:
            os.nice(-5)
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
            # the objects alive now (the modules, the warm-up's caches, the job's data) are
            # never garbage: frozen, a collection no longer walks them (a plot makes tens of
            # thousands of objects, and their collections walked the whole heap: a third of a plot)
            gc.freeze()
            for function, kwargs in message:
                try:
                    conn.send(("ok", function(**kwargs)))
                except Exception as exc:           # noqa: BLE001  handed to the parent as it is
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


def _warm_up(panels=None):
    """Draw a plot of a replay's kind (panels, reference, band, marks, legend, a PNG) with
    ``panels`` panels (the model's joints; default 2): matplotlib's imports, fonts and
    first-use code, half a second that would otherwise come after the analysis, and the
    figure that :func:`~hod_dynamics.plots.plot_joint_series` draws into again (its axes and
    ticks made; the other processes, forked after this, have it too). The jobs' data are plain
    arrays: nothing else is imported."""
    import io
    import warnings

    import numpy as np

    from ..plots import plot_joint_series

    warnings.simplefilter("ignore")
    n = panels or 2
    t = np.linspace(0.0, 1.0, 50)
    y = np.sin(3 * t[:, None] + np.arange(n))
    # at the plots' resolution: glyphs are cached per size in pixels
    plot_joint_series(t, y, [f"joint_{j}" for j in range(n)], io.BytesIO(), ylabel="tau [N m]", title="warm-up",
                      reference=y + 0.1, band=np.full_like(y, 0.01), unsupported=[""] * (n - 1) + ["warm-up"],
                      limits_from=t > 0.1)
