"""Matplotlib figures of torque jets (tau and its time derivatives)."""

import threading

import numpy as np

def _label(k):
    """Axis label of tau^(k) with its unit."""
    name = ["$\\tau$", "$\\dot\\tau$", "$\\ddot\\tau$"][k] if k < 3 else f"$\\tau^{{({k})}}$"
    unit = "N m" if k == 0 else "N m/s" if k == 1 else f"N m/s$^{{{k}}}$"
    return f"{name} [{unit}]"


def plot_torque_jets(t, taujet, joint_names, path, *, title="", measured=None, max_points=20000):
    """Write a PNG with one subplot per derivative order, all joints in each, the legend above
    the top panel.

    ``t`` (T,) s; ``taujet`` (T, K, n) rows tau^(0..K-1); ``measured`` optional (T, n) measured
    tau drawn dashed in the first subplot. Long records are thinned to about ``max_points``
    samples per curve (every k-th sample). Returns ``path``.
    """
    from matplotlib import colormaps

    step = max(1, len(t) // max_points)
    t, taujet = np.asarray(t)[::step], np.asarray(taujet)[::step]
    measured = None if measured is None else np.asarray(measured)[::step]
    K = taujet.shape[1]
    fig = figure((9, 2.4 * K + 0.6))
    axes = fig.subplots(K, 1, sharex=True, squeeze=False)
    colors = colormaps["tab10"](np.arange(len(joint_names)) % 10)
    for k, ax in enumerate(axes[:, 0]):
        for j, name in enumerate(joint_names):
            ax.plot(t, taujet[:, k, j], color=colors[j], lw=1.2, label=name if k == 0 else None)
            if measured is not None and k == 0:
                ax.plot(t, measured[:, j], color=colors[j], lw=0.8, ls="--")
        ax.set_ylabel(_label(k))
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("t [s]")
    # the legend sits above the top panel, outside the data (inside it hid the curves' peaks)
    axes[0, 0].legend(ncol=min(len(joint_names), 4), fontsize=7, loc="lower left",
                      bbox_to_anchor=(0.0, 1.02, 1.0, 0.2), mode="expand", borderaxespad=0.0)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def figure(figsize):
    """A matplotlib Figure on an Agg canvas (PNG), without pyplot: no GUI backend is looked for,
    nothing is kept by a global figure manager (no close needed), and pyplot's import is spared."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def _joint_axes(t, n, max_points, height, top=0.0, cols=1):
    """(None, figure, axes (n, cols), step, t[::step]): one row of subplots per joint sharing
    the time axis, ``height`` inches each (and ``top`` inches more above them); long records
    thinned to about ``max_points`` samples."""
    step = max(1, len(t) // max_points)
    fig = figure((9 if cols == 1 else 12, height * n + 1.0 + top))
    axes = fig.subplots(n, cols, sharex=True, squeeze=False)
    return None, fig, axes, step, np.asarray(t)[::step]


def envelope(t, y, bins):
    """(t', y') of the samples of y (T,) at times t (T,) that draw the same line at ``bins``
    pixel columns: in each of ``bins`` runs of samples its lowest and its highest, in time
    order (every sample when T <= 2 bins). A peak of one sample stays; every-k-th thinning
    would lose it."""
    T = len(t)
    if T <= 2 * bins:
        return t, y
    size = -(-T // bins)
    pad = size * bins - T
    yy = np.concatenate([y, np.full(pad, y[-1])]).reshape(bins, size)
    finite = np.where(np.isfinite(yy), yy, np.nan)
    with np.errstate(invalid="ignore"):
        lo = np.nanargmin(np.where(np.isnan(finite).all(axis=1, keepdims=True), 0.0, finite), axis=1)
        hi = np.nanargmax(np.where(np.isnan(finite).all(axis=1, keepdims=True), 0.0, finite), axis=1)
    base = np.arange(bins) * size
    idx = np.minimum(np.sort(np.concatenate([base + lo, base + hi])), T - 1)
    idx = np.unique(idx)
    return t[idx], y[idx]


def plot_joint_series(t, series, joint_names, path, *, ylabel, title="", reference=None,
                      labels=("model", "measured"), max_points=3000, **extras):
    """Write a PNG with one subplot per joint: ``series`` (T, n) solid, ``reference`` (T, n)
    (optional, e.g. the measured effort) thin behind it. ``t`` (T,) s; ``ylabel`` the quantity
    and its unit, ``"tau [N m]"``: each panel's y axis reads ``<joint> [N m]``, the title the
    quantity. The title and the legend have rows of their own above the panels. Lines are
    drawn at the resolution of the panel (:func:`envelope`: each pixel column's lowest and
    highest sample). ``extras``: the error band, marks and second column of
    :func:`joint_series_figure`. Returns ``path``."""
    n, cols = len(joint_names), 1 if extras.get("side") is None else 2
    fig, axes = _reused_figure(n, cols)
    _draw_joint_series(fig, axes, t, series, joint_names, ylabel=ylabel, title=title, reference=reference,
                       labels=labels, **extras)
    save(fig, path)
    return path


# per thread (a Dask worker runs its tasks in threads): (panels, columns) -> (figure, axes)
# that plot_joint_series draws into again
_REUSED = threading.local()


def _reused_figure(n, cols):
    """A figure of n rows of ``cols`` panels for :func:`plot_joint_series`, emptied: the one this
    thread drew last with that layout, when there is one. A process that draws many plots
    (analyze-bag's plotting processes) spares the creation of the axes and of their ticks,
    a third of a plot; what is drawn is the same, byte for byte, as on a new figure."""
    figures = _REUSED.__dict__.setdefault("figures", {})
    if (n, cols) not in figures:
        figures[(n, cols)] = _joint_series_axes(n, cols)
        return figures[(n, cols)]
    fig, axes = figures[(n, cols)]
    for legend in list(fig.legends):
        legend.remove()
    for ax in axes.flat:
        for artist in list(ax.lines) + list(ax.collections) + list(ax.texts):
            artist.remove()
        ax.set_title("")
        ax.relim()                   # the data limits of the artists left (none): the x range anew
    return fig, axes


def _joint_series_axes(n, cols):
    """(figure, axes (n, cols)) of a joint-series figure: n rows of panels sharing the time axis."""
    fig = figure((9 if cols == 1 else 12, 1.5 * n + 1.3))
    return fig, fig.subplots(n, cols, sharex=True, squeeze=False)


def save(fig, path, dpi=None):
    """Write ``fig`` as PNG at ``path``, compressed lightly (zlib level 1: a third of the time of
    the default level for files a fifth larger)."""
    fig.savefig(path, dpi=DPI if dpi is None else dpi, pil_kwargs={"compress_level": 1})


DPI = 100
BAND_COLOR = "C1"        # the error band: a colour of its own, over the line, not a tint of it
THIN_BAND = 0.01         # a band narrower than this share of the panel's height is also said in words


def joint_series_figure(t, series, joint_names, *, ylabel, title="", reference=None,
                        labels=("model", "measured"), max_points=3000, band=None, unsupported=None,
                        side=None, side_label="", limits_from=None):
    """The figure :func:`plot_joint_series` writes. Optional: ``band`` (T, n) the half width of
    an error band around ``series`` (shaded; where it is too thin to see at the panel's scale,
    its RMS is written in the panel); ``unsupported`` (n,) bool or text: the panels to mark
    "not supported by the data" (a text says why under it); ``side`` (T, n): a second quantity drawn in a right-hand column
    with its own scale (``side_label`` its title and unit), so that neither hides the other
    (the rigid-body part of a torque derivative and its friction part); ``limits_from`` (T,)
    bool: the samples that set the left column's y range (others may leave it, e.g. near the
    ends of a fit); the range holds ``series``, its band and ``reference`` there."""
    fig, axes = _joint_series_axes(len(joint_names), 1 if side is None else 2)
    _draw_joint_series(fig, axes, t, series, joint_names, ylabel=ylabel, title=title, reference=reference,
                       labels=labels, band=band, unsupported=unsupported, side=side, side_label=side_label,
                       limits_from=limits_from)
    return fig


def _draw_joint_series(fig, axes, t, series, joint_names, *, ylabel, title="", reference=None,
                       labels=("model", "measured"), band=None, unsupported=None, side=None, side_label="",
                       limits_from=None):
    """Draw :func:`joint_series_figure`'s content into ``fig``, whose panels ``axes`` (n, 1 or 2)
    are empty (lines at the panels' resolution: ``max_points`` of the callers is not needed)."""
    import re

    from matplotlib.ticker import MaxNLocator

    quantity, unit = ylabel, ""
    match = re.fullmatch(r"(.*?)\s*\[([^\]]*)\]\s*", ylabel)
    if match:
        quantity, unit = match.groups()
    n, cols = len(joint_names), 1 if side is None else 2
    bins = int(fig.get_figwidth() * DPI / cols)          # pixel columns of a panel, about
    t = np.asarray(t, dtype=float)
    line = (lambda y: envelope(t, np.asarray(y, dtype=float), bins))
    height = fig.get_figheight()
    for j, ax in enumerate(axes[:, 0]):
        y = np.asarray(series)[:, j]
        if reference is not None:
            ax.plot(*line(np.asarray(reference)[:, j]), color="0.55", lw=0.7, label=labels[1])
        ax.plot(*line(y), color="C0", lw=1.0, label=labels[0], zorder=4)
        if band is not None:
            width = np.asarray(band)[:, j]
            lo_t, lo = line(y - width)
            hi_t, hi = line(y + width)
            grid = np.union1d(lo_t, hi_t)
            ax.fill_between(grid, np.interp(grid, lo_t, lo), np.interp(grid, hi_t, hi), color=BAND_COLOR,
                            alpha=0.5, lw=0, label="estimated error (RMS)", zorder=3)
        keep = slice(None) if limits_from is None or not limits_from.any() else np.asarray(limits_from)
        shown = [y[keep]] + ([np.asarray(reference)[keep, j]] if reference is not None else [])
        ax.set_ylim(*_limits(np.concatenate(shown), None if band is None else np.asarray(band)[keep, j],
                             y[keep]))
        if band is not None:
            _say_thin_band(ax, np.asarray(band)[keep, j], unit)
        if unsupported is not None and unsupported[j]:
            why = unsupported[j] if isinstance(unsupported[j], str) else ""
            ax.text(0.5, 0.5, "not supported by the data" + (f"\n{why}" if why else ""), transform=ax.transAxes,
                    ha="center", va="center",
                    fontsize=11, color="C3", alpha=0.8, bbox=dict(facecolor="white", alpha=0.6, edgecolor="C3"))
        ax.set_ylabel(f"{joint_names[j]}\n[{unit}]" if unit else joint_names[j], fontsize=7)
        ax.yaxis.set_major_locator(MaxNLocator(4))    # each tick is a line and a text to draw
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if side is not None:
            axes[j, 1].plot(*line(np.asarray(side)[:, j]), color="C3", lw=1.0)
            axes[j, 1].yaxis.set_major_locator(MaxNLocator(4))
            axes[j, 1].tick_params(labelsize=7)
            axes[j, 1].grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("t [s]")
        ax.xaxis.set_major_locator(MaxNLocator(6))
    if side is not None:
        axes[0, 1].set_title(side_label, fontsize=8)
    # fixed rows in inches from the top: the title, then the legend, then the panels (the
    # legend drawn above the first panel ran into the title); fixed margins also spare
    # tight_layout's extra drawing passes, which cost more than the plot itself
    fig.suptitle(f"{title}: {quantity}" if title else quantity, fontsize=10, y=1 - 0.08 / height, va="top")
    handles, names = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles[::-1], names[::-1], fontsize=7, ncol=3, loc="upper center",
               bbox_to_anchor=(0.5, 1 - 0.34 / height), frameon=False)
    fig.subplots_adjust(left=0.12 if side is None else 0.09, right=0.98, top=1 - 0.7 / height, bottom=0.45 / height,
                        hspace=0.15, wspace=0.2)
    return fig


def _say_thin_band(ax, band, unit):
    """Write the band's RMS in the panel's corner when the band is too thin to see there."""
    lo, hi = ax.get_ylim()
    rms = float(np.sqrt(np.nanmean(band ** 2))) if np.isfinite(band).any() else float("nan")
    if np.isfinite(rms) and hi > lo and 2 * rms < THIN_BAND * (hi - lo):
        ax.text(0.995, 0.96, f"estimated error {rms:.2g} {unit} RMS (too thin to see)", transform=ax.transAxes,
                ha="right", va="top", fontsize=6, color=BAND_COLOR,
                bbox=dict(facecolor="white", alpha=0.7, edgecolor="none", pad=1))


def _limits(values, band=None, center=None):
    """y limits that show ``values`` (and ``center`` +- ``band``) with a margin of 8 %; NaNs
    and infinities left out."""
    values = np.asarray(values, dtype=float)
    parts = [values[np.isfinite(values)]]
    if band is not None:
        c = values if center is None else np.asarray(center, dtype=float)
        parts += [(c - band)[np.isfinite(c - band)], (c + band)[np.isfinite(c + band)]]
    allv = np.concatenate(parts)
    if not len(allv):
        return -1.0, 1.0
    lo, hi = float(allv.min()), float(allv.max())
    pad = 0.08 * (hi - lo) if hi > lo else max(abs(hi), 1.0) * 0.1
    return lo - pad, hi + pad


def plot_friction_curves(qd, residual, friction, joint_names, path, *, title="", max_points=3000):
    """Write a PNG with one subplot per joint: the measured effort minus the rigid-body model
    ``residual`` (T, n) against the joint velocity ``qd`` (T, n) (dots: the friction the
    robot showed) and the friction model's curve over it (``friction``: a
    :class:`~hod_dynamics.algorithms.friction.FrictionModel`, model joint order). Returns ``path``."""
    step = max(1, len(qd) // max_points)
    n = len(joint_names)
    cols = min(n, 4)
    rows = -(-n // cols)
    fig = figure((3.2 * cols, 2.6 * rows + 0.6))
    axes = fig.subplots(rows, cols, squeeze=False)
    for j, ax in enumerate(axes.ravel()):
        if j >= n:
            ax.axis("off")
            continue
        v = np.asarray(qd)[::step, j]
        ax.plot(v, np.asarray(residual)[::step, j], ".", ms=1.5, color="0.6", label="effort - rigid model",
                rasterized=True)
        grid = np.linspace(np.nanmin(v), np.nanmax(v), 400)
        full = np.zeros((len(grid), n))
        full[:, j] = grid
        ax.plot(grid, friction.torque(full)[:, j], color="C3", lw=1.5, label="friction model")
        ax.set_title(joint_names[j], fontsize=8)
        ax.set_xlabel("qd [rad/s]", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("torque [N m]", fontsize=7)
    axes[0, 0].legend(fontsize=6, loc="upper left")
    fig.suptitle(f"{title} -- friction curves" if title else "friction curves", fontsize=10)
    fig.subplots_adjust(left=0.07, right=0.98, top=1 - 0.5 / fig.get_figheight(), bottom=0.5 / fig.get_figheight(),
                        hspace=0.55, wspace=0.3)
    save(fig, path)
    return path


def plot_torque_comparison(t, measured, predictions, joint_names, path, *, title="", max_points=3000):
    """Write a PNG with one subplot per joint: the measured effort (T, n) in grey and each
    prediction of ``predictions`` ({label: (T, n)}, e.g. prior and identified model) over it,
    each with its residual RMS in the legend. ``t`` (T,) s. Returns ``path``."""
    _, fig, axes, step, tt = _joint_axes(t, len(joint_names), max_points, 1.6)
    for j, ax in enumerate(axes[:, 0]):
        ax.plot(tt, np.asarray(measured)[::step, j], color="0.6", lw=0.7, label="measured")
        for k, (label, values) in enumerate(predictions.items()):
            err = np.asarray(values)[:, j] - np.asarray(measured)[:, j]
            rms = float(np.sqrt(np.nanmean(err * err)))
            ax.plot(tt, np.asarray(values)[::step, j], color=f"C{k}", lw=0.9, label=f"{label} (rms {rms:.3g})")
        ax.set_ylabel(joint_names[j], fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="upper right", ncol=len(predictions) + 1)
    axes[-1, 0].set_xlabel("t [s]")
    fig.suptitle(f"{title} -- torque [N m], measured and predicted" if title else "torque [N m]", fontsize=10)
    fig.subplots_adjust(left=0.1, right=0.98, top=1 - 0.45 / fig.get_figheight(), bottom=0.45 / fig.get_figheight(),
                        hspace=0.15)
    fig.savefig(path, dpi=DPI)
    return path


def plot_bounding_volumes(links, ellipsoids, com, prior_com, origins, path, *, title=""):
    """Write a PNG with one 3-D panel per link (in its body's frame, m): its bounding ellipsoid
    (``ellipsoids``: objects with ``center`` (3,) and ``shape`` Q (3, 3), or None) as a wire
    frame, the joint origins ``origins`` (per link (k, 3): its frame origin and its children's
    joints), the prior's centre of mass ``prior_com`` (per link (3,)) and the identified one
    ``com``. Returns ``path``."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    count = len(links)
    cols = min(4, count)
    rows = -(-count // cols)
    fig = plt.figure(figsize=(3.2 * cols, 3.2 * rows + 0.5))
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 25), np.linspace(0, np.pi, 13))
    sphere = np.stack([np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v)], axis=-1)
    for b, link in enumerate(links):
        ax = fig.add_subplot(rows, cols, b + 1, projection="3d")
        points = [np.atleast_2d(origins[b]), np.atleast_2d(com[b]), np.atleast_2d(prior_com[b])]
        e = ellipsoids[b]
        if e is not None:
            w, V = np.linalg.eigh(e.shape)
            surface = sphere @ (V * np.sqrt(np.maximum(w, 0.0))).T + e.center
            ax.plot_wireframe(surface[..., 0], surface[..., 1], surface[..., 2], color="0.6", lw=0.4)
            points.append(surface.reshape(-1, 3))
        ax.scatter(*np.atleast_2d(origins[b]).T, color="k", marker="^", s=18, label="joint origins")
        ax.scatter(*prior_com[b], color="C0", marker="o", s=30, label="prior centre of mass")
        ax.scatter(*com[b], color="C3", marker="x", s=40, label="identified centre of mass")
        allp = np.vstack(points)
        mid, half = (allp.max(0) + allp.min(0)) / 2, max(np.ptp(allp, axis=0).max() / 2, 0.02)
        ax.set_xlim(mid[0] - half, mid[0] + half)
        ax.set_ylim(mid[1] - half, mid[1] + half)
        ax.set_zlim(mid[2] - half, mid[2] + half)
        ax.set_title(link, fontsize=8)
        ax.tick_params(labelsize=5)
        for label in ("x", "y", "z"):
            getattr(ax, f"set_{label}label")(f"{label} [m]", fontsize=6, labelpad=-2)
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7)
    fig.suptitle(title or "bounding volumes and centres of mass", fontsize=10)
    fig.subplots_adjust(left=0.02, right=0.98, top=1 - 0.45 / fig.get_figheight(), bottom=0.35 / fig.get_figheight(),
                        wspace=0.05, hspace=0.12)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
