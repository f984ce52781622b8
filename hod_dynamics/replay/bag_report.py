"""One recorded bag analysed and reported: read, fit, dynamics, notes and files, as
``hod-dynamics analyze-bag`` does (and each task of ``analyze-bags``)."""

import warnings
from dataclasses import dataclass, replace

from .analysis import BagAnalysis, analyze_joint_states
from .notes import warning_notes
from .report import plot_jobs, write_report, write_summary

@dataclass(frozen=True)
class BagReport:
    """One bag analysed by :func:`analyze_bag`: the :class:`BagAnalysis`, the paths written
    (empty without ``out``), ``warnings``: one line per kind of library warning met while
    reading, fitting and writing (see :func:`warning_notes`; with ``out`` also in
    ``summary.json`` ``notes``, after the analysis's notes), and ``seconds`` spent on the fit
    and the dynamics."""

    analysis: BagAnalysis
    paths: tuple
    warnings: tuple
    seconds: float


def analyze_bag(path, model, out=None, *, joint_states=None, time_base="auto", start=None, end=None,
                trajectory_topic=None, order=2, actuators=None, smoothing=None, friction=None, plots=True,
                derived_bag=True, samples=True, progress=None, check=None, title=None, plotter=None):
    """Read the bag at ``path``, analyse its joint states with ``model`` and, with ``out``, write
    the report there: what ``hod-dynamics analyze-bag`` does, as a function. The joint-state
    messages read are those that carry the model's joints (see
    :func:`~hod_dynamics.recordings.bag.read_joint_states`).

    ``joint_states``: the JointState topic (None: the only one); ``time_base``: see
    :func:`~hod_dynamics.recordings.bag.read_joint_states`; ``start``, ``end``: s after the first sample
    (None: unbounded); ``trajectory_topic``: the JointTrajectory topic of the plan or None;
    ``order``, ``actuators``, ``smoothing``, ``friction``: as for
    :func:`analyze_joint_states`; ``plots``, ``derived_bag``, ``samples``: as for
    :func:`write_report`; ``plotter``: as for :func:`write_report` (given, each plot is sent to it as
    soon as the analysis has its data: see ``ready`` of :func:`analyze_joint_states`);
    ``progress``: None or ``progress(stage)`` returning the ``callback(done, total)`` of the
    stage ``"reading"``, ``"analysing"`` or ``"writing"``; ``check(states)``: called with the
    :class:`~hod_dynamics.recordings.bag.JointStates` before the analysis (e.g. to refuse a job that would
    not fit in memory); the note lines it returns, if any, come first in the analysis's notes
    (the printed summary and ``summary.json``); ``title``: of the plots (default: model and bag name). Library
    warnings never reach the caller: each kind becomes a line of :attr:`BagReport.warnings`
    (and of ``summary.json`` ``notes``).
    Returns :class:`BagReport`. Raises what :func:`~hod_dynamics.recordings.bag.read_joint_states`,
    :func:`analyze_joint_states` and ``check`` raise.
    """
    import os
    import time

    from ..recordings.bag import read_joint_states, read_planned_positions

    stage = (lambda name: None) if progress is None else progress
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        states = read_joint_states(path, joint_states, joints=model.joint_names, time_base=time_base,
                                   progress=stage("reading"))
        states = states.select(start, end)
        checked = () if check is None else tuple(check(states) or ())
        planned = None if not trajectory_topic else read_planned_positions(path, trajectory_topic, states.t0_ns)
        if title is None:
            title = f"{model.name}: {os.path.basename(os.path.normpath(os.fspath(path)))}"
        drawn, ready, made = [], None, out is not None and not os.path.isdir(out)
        if out is not None and plots and plotter is not None and plotter.available:
            def ready(partial, part):
                # each plot goes to the plotting processes as soon as its data are final
                os.makedirs(out, exist_ok=True)
                jobs = plot_jobs(partial, out, title, part)
                plotter.submit(jobs)
                drawn.extend(kwargs["path"] for _, kwargs in jobs)
        clock = time.perf_counter()
        try:
            analysis = analyze_joint_states(model, states, order=order, actuators=actuators, smoothing=smoothing,
                                            planned=planned, progress=stage("analysing"), friction=friction,
                                            ready=ready)
        except BaseException:
            _remove_drawn(plotter, drawn, out if made else None)
            raise
        seconds = time.perf_counter() - clock
        if checked:
            analysis = replace(analysis, notes=checked + tuple(analysis.notes))
        paths = ()
        if out is not None:
            paths = tuple(write_report(analysis, out, plots=plots, derived_bag=derived_bag, samples=samples,
                                       progress=stage("writing"), plotter=plotter, title=title, drawn=drawn))
    warned = tuple(warning_notes(caught))
    if warned and out is not None:
        # the warnings of the writing come after summary.json was written: written again, it
        # holds them too (every note the summary prints)
        write_summary(analysis, os.path.join(out, "summary.json"), warned)
    return BagReport(analysis, paths, warned, seconds)


def _remove_drawn(plotter, drawn, made):
    """The analysis failed after some plots were sent: wait for them and remove their files,
    and the folder ``made`` for them (None: it was there before; a failed analysis leaves
    nothing written)."""
    import os

    if not drawn:
        return
    try:
        plotter.collect()
    except Exception:                     # noqa: BLE001  the analysis's error is the one to report
        pass
    for path in drawn:
        if os.path.exists(path):
            os.remove(path)
    if made is not None and os.path.isdir(made) and not os.listdir(made):
        os.rmdir(made)
