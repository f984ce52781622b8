"""The figures: every axis carries its quantity's unit, and the title, the legend and the
panels do not overlap (drawn with matplotlib's Agg renderer, extents measured)."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import hod_dynamics as hd  # noqa: E402
from hod_dynamics.plots import joint_series_figure  # noqa: E402

NAMES = [f"iiwa_joint_{i}" for i in range(1, 8)]


def _overlap(a, b):
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("n", [1, 2, 7, 12])
def test_joint_series_legend_title_and_panels_do_not_overlap(n):
    import matplotlib.pyplot as plt

    t = np.linspace(0.0, 5.0, 400)
    series = np.sin(t[:, None] + np.arange(n))
    fig = joint_series_figure(t, series, NAMES[:n] if n <= 7 else [f"joint_{i}" for i in range(n)],
                              ylabel="model tau - measured effort [N m]", reference=np.cos(series),
                              title="a_robot_with_a_long_name: recording_2024-05-01-10-22-31.mcap")
    try:
        renderer = fig.canvas.get_renderer()
        title = fig._suptitle.get_window_extent(renderer)
        legend = fig.legends[0].get_window_extent(renderer)
        top_panel = fig.axes[0].get_tightbbox(renderer)
        assert not _overlap(title, legend), (title, legend)
        assert not _overlap(legend, top_panel), (legend, top_panel)
        assert fig._suptitle.get_text().endswith(": model tau - measured effort")  # no unit in the title
        for ax in fig.axes:  # the unit on every y axis, seconds on the x axis
            assert ax.get_ylabel().endswith("\n[N m]"), ax.get_ylabel()
        assert fig.axes[-1].get_xlabel() == "t [s]"
        assert fig.get_window_extent(renderer).contains(title.x0, title.y1)
    finally:
        plt.close(fig)


def _fail(message):
    raise hd.InputError(message)


def test_plots_drawn_by_the_plotting_processes_are_the_files_drawn_here(tmp_path):
    """analyze-bag's plots come from forked processes: the same PNG files, byte for byte, as
    drawn in this process; a plot that fails raises its error here; the processes end."""
    import os

    from hod_dynamics.replay.analysis import analyze_joint_states
    from hod_dynamics.replay.plot_processes import PlotProcesses
    from hod_dynamics.replay.report import plot_jobs

    from recordings import Recording

    rec = Recording(seed=5, duration=4.0, rate=100.0)
    analysis = analyze_joint_states(rec.model, rec.states(), friction="fit")
    for where in ("here", "forked"):
        os.makedirs(tmp_path / where)
    here = [f(**kwargs) for f, kwargs in plot_jobs(analysis, str(tmp_path / "here"), "t")]
    with PlotProcesses(2) as plotter:
        assert plotter.available
        pids = {pid for pid, _ in plotter.children}
        forked = plotter.draw(plot_jobs(analysis, str(tmp_path / "forked"), "t"))
        with pytest.raises(hd.InputError, match="^drawn badly$"):
            plotter.draw([(_fail, {"message": "drawn badly"})])
    assert [os.path.basename(p) for p in forked] == [os.path.basename(p) for p in here] == \
        ["tau.png", "tau_dot.png", "tau_ddot.png", "residual.png", "friction.png"]
    for a, b in zip(here, forked):
        assert open(a, "rb").read() == open(b, "rb").read(), b
    for pid in pids:                      # reaped: no such child any more
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_a_figure_drawn_again_gives_the_png_of_a_new_one(tmp_path, monkeypatch):
    """plot_joint_series draws each layout into the figure it drew last: whatever the plot
    before left (a band, marks, a second column, other limits and labels), the file is the
    one a new figure gives, byte for byte. Each thread has its own figures (a Dask worker
    draws its tasks' plots in threads at once)."""
    import threading

    from hod_dynamics import plots

    t, later = np.linspace(0.0, 3.0, 900), np.linspace(1.0, 2.0, 400)      # other times: other x limits
    first = np.sin(3 * t[:, None] + np.arange(3)) * [1.0, 50.0, 0.01]
    second = np.cos(later[:, None] + np.arange(3)) * 2.0
    kinds = [dict(t=t, series=first, ylabel="tau [N m]", reference=first + 0.3, band=np.full_like(first, 0.2),
                  unsupported=["", "too noisy", True], limits_from=t > 0.5),
             dict(t=later, series=second, ylabel="tau_dot [N m/s]", title="other", labels=("residual", None))]
    monkeypatch.setattr(plots, "_REUSED", threading.local())
    for i, kind in enumerate(kinds):
        plots.plot_joint_series(joint_names=NAMES[:3], path=str(tmp_path / f"again{i}.png"), **kind)
    monkeypatch.setattr(plots, "_REUSED", threading.local())
    plots.plot_joint_series(joint_names=NAMES[:3], path=str(tmp_path / "new.png"), **kinds[1])
    assert len(plots._REUSED.figures) == 1
    assert (tmp_path / "again1.png").read_bytes() == (tmp_path / "new.png").read_bytes()
    mine, other = plots._reused_figure(3, 1)[0], []
    elsewhere = threading.Thread(target=lambda: other.append(plots._reused_figure(3, 1)[0]))
    elsewhere.start()
    elsewhere.join()
    assert plots._reused_figure(3, 1)[0] is mine and other[0] is not mine


def _wait_for(path):
    import os
    import time

    while not os.path.exists(path):
        time.sleep(0.01)
    return path


def _echo(path, data):
    return path


def test_a_plot_is_handed_over_while_the_processes_are_busy_and_waits_for_an_idle_one(tmp_path):
    """submit returns while every plotting process is drawing, even for data far larger than a
    pipe holds (64 MB): the job goes to the first process that is idle."""
    import threading

    from hod_dynamics.replay.plot_processes import PlotProcesses

    flag = str(tmp_path / "go")
    with PlotProcesses(1) as plotter:
        plotter.submit([(_wait_for, {"path": flag})])
        handing = threading.Thread(target=plotter.submit, args=([(_echo, {"path": "big", "data": np.zeros(8_000_000)})],))
        handing.start()
        handing.join(30)
        assert not handing.is_alive(), "submit waited for the busy plotting process"
        open(flag, "w").close()
        assert plotter.collect() == [flag, "big"]


def test_plots_sent_before_the_analysis_failed_are_removed(tmp_path, monkeypatch):
    """analyze_bag sends each plot as its data are final; an analysis that fails after that
    leaves no plot behind (nor anything else)."""
    from hod_dynamics.replay import analysis, bag_report
    from hod_dynamics.replay.plot_processes import PlotProcesses

    from recordings import Recording

    rec = Recording(seed=3, duration=3.0, rate=100.0)
    bag = rec.write(str(tmp_path / "run"))
    real = analysis.torque_errors

    def fails_after_tau(model, fit, order, friction=None, *, done=None, **kw):
        real(model, fit, 0, friction, done=done, **kw)          # tau's plot is sent
        raise hd.InputError("failed in the error estimate of tau'")

    monkeypatch.setattr(analysis, "torque_errors", fails_after_tau)
    out = tmp_path / "out"
    with PlotProcesses(2, panels=rec.model.n_dof) as plotter:
        with pytest.raises(hd.InputError, match="error estimate of tau'"):
            bag_report.analyze_bag(bag, rec.model, str(out), plotter=plotter)
    assert not out.exists()


def test_the_plotting_processes_draw_under_a_niced_parent_without_the_right_to_raise_priority(tmp_path):
    """A command run with ``nice -n 10`` by a user (no CAP_SYS_NICE): the plotting processes
    lower their own priority by 5 for their warm-up and cannot raise it back; they still draw.
    (They once asked for the parent's priority + 5 in absolute terms, which a niced parent's
    user may not: they died and the command failed.)"""
    import os
    import subprocess
    import sys

    code = ("import os, sys\n"
            "from hod_dynamics.replay.plot_processes import PlotProcesses\n"
            "from test_plots import _echo\n"
            "with PlotProcesses(2) as plotter:\n"
            "    assert plotter.draw([(_echo, {'path': 'a', 'data': None}), (_echo, {'path': 'b', 'data': None})]) == ['a', 'b']\n"
            "print('drawn at nice', os.nice(0))\n")
    prefix = ["nice", "-n", "10"]
    if os.geteuid() == 0:
        if not os.access("/usr/bin/setpriv", os.X_OK):
            pytest.skip("needs setpriv to run without CAP_SYS_NICE as root")
        prefix += ["/usr/bin/setpriv", "--bounding-set=-sys_nice", "--inh-caps=-sys_nice"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(prefix + [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "drawn at nice 10"


def test_plots_sent_as_the_analysis_goes_are_the_plots_of_the_whole_analysis(tmp_path):
    """analyze_bag with plotting processes draws each plot from the analysis as it stands when
    that plot's data are final (the residual after the dynamics, tau^(k) after its error
    estimate): the files are those drawn here from the finished analysis, byte for byte."""
    from hod_dynamics.replay import bag_report
    from hod_dynamics.replay.plot_processes import PlotProcesses

    from recordings import Recording

    rec = Recording(seed=5, duration=4.0, rate=100.0)
    bag = rec.write(str(tmp_path / "run"))
    with PlotProcesses(2, panels=rec.model.n_dof) as plotter:
        early = bag_report.analyze_bag(bag, rec.model, str(tmp_path / "early"), friction="fit", plotter=plotter,
                                       samples=False, derived_bag=False)
    late = bag_report.analyze_bag(bag, rec.model, str(tmp_path / "late"), friction="fit", samples=False,
                                  derived_bag=False)
    pngs = [[p for p in report.paths if p.endswith(".png")] for report in (early, late)]
    assert [p.split("/")[-1] for p in pngs[0]] == [p.split("/")[-1] for p in pngs[1]] == \
        ["tau.png", "tau_dot.png", "tau_ddot.png", "residual.png", "friction.png"]
    for a, b in zip(*pngs):
        assert open(a, "rb").read() == open(b, "rb").read(), a
