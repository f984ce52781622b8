"""The figures: every axis carries its quantity's unit, and the title, the legend and the
panels do not overlap (drawn with matplotlib's Agg renderer, extents measured)."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")

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
