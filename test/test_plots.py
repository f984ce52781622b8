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


def _fail(payload, message):
    raise hd.InputError(message)


def test_plots_drawn_by_the_plotting_processes_are_the_files_drawn_here(tmp_path):
    """analyze-bag's plots come from forked processes: the same PNG files, byte for byte, as
    drawn in this process; a plot that fails raises its error here; the processes end."""
    import os

    from hod_dynamics.replay.analysis import analyze_joint_states
    from hod_dynamics.replay.plot_processes import PlotProcesses
    from hod_dynamics.replay.report import _plot_jobs

    from recordings import Recording

    rec = Recording(seed=5, duration=4.0, rate=100.0)
    analysis = analyze_joint_states(rec.model, rec.states(), friction="fit")
    for where in ("here", "forked"):
        os.makedirs(tmp_path / where)
    here = [f(analysis, *args) for f, args in _plot_jobs(analysis, str(tmp_path / "here"), "t")]
    with PlotProcesses(2) as plotter:
        assert plotter.available
        pids = {pid for pid, _ in plotter.children}
        forked = plotter.draw(analysis, _plot_jobs(analysis, str(tmp_path / "forked"), "t"))
        with pytest.raises(hd.InputError, match="^drawn badly$"):
            plotter.draw(analysis, [(_fail, ("drawn badly",))])
    assert [os.path.basename(p) for p in forked] == [os.path.basename(p) for p in here] == \
        ["tau.png", "tau_dot.png", "tau_ddot.png", "residual.png", "friction.png"]
    for a, b in zip(here, forked):
        assert open(a, "rb").read() == open(b, "rb").read(), b
    for pid in pids:                      # reaped: no such child any more
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
