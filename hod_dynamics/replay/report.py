"""The files of a replay analysis: samples.csv, summary.json, friction.yaml, the plots and the
derived bag, all read from one :class:`~hod_dynamics.replay.analysis.BagAnalysis`."""

import numpy as np

from ..units import column

def samples_columns(analysis):
    """(header list, blocks) of everything per sample, model joint order: ``blocks`` is a list
    of (m,) / (m, n) arrays whose columns, side by side, match the header.

    Columns: t (s from the first sample), then per joint q (measured), qfit, qd, qdd (of the
    fit), tau0..tauK (model, with friction when a friction model is used), effort, residual
    (model - measured), friction (the friction torque, when used), qplan, theta, u (when
    available). Each name carries its unit after a space: ``tau1_<joint> [N m/s]`` (m and N for
    prismatic joints).
    """
    r, names = analysis.result, analysis.joint_names
    types = r.joint_types or ("revolute",) * len(names)
    # (label, array, quantity, derivative order): the unit after the name follows the joint type
    blocks = [("q", analysis.position, "position", 0), ("qfit", r.qjet[:, 0], "position", 0),
              ("qd", r.qjet[:, 1], "position", 1), ("qdd", r.qjet[:, 2], "position", 2)]
    blocks += [(f"tau{k}", r.taujet[:, k], "torque", k) for k in range(r.taujet.shape[1])]
    optional = [("effort", analysis.effort, "torque"), ("residual", analysis.residual, "torque"),
                ("friction", analysis.friction_torque, "torque"), ("qplan", analysis.planned, "position"),
                ("theta", None if r.thetajet is None else r.thetajet[:, 0], "position"), ("u", r.u, "torque")]
    blocks += [(label, v, quantity, 0) for label, v, quantity in optional if v is not None]
    header = ["t [s]"] + [column(f"{label}_{j}", typ, quantity, k)
                          for label, _, quantity, k in blocks for j, typ in zip(names, types)]
    return header, [analysis.t] + [v for _, v, _, _ in blocks]


def write_samples_csv(analysis, path, *, rows_per_write=65536):
    """Write :func:`samples_columns` as CSV with Apache Arrow's CSV writer (pyarrow): every
    number in the shortest text that reads back to the same double, ``nan``/``inf`` as such.
    Written in row blocks to bound memory; the writer releases the GIL, so it runs in a thread
    beside the plots. (A Python-level writer such as ``np.savetxt`` costs ~1 us a number: half a
    minute for a 10-minute 1 kHz recording.) Without pyarrow (a ROS installation: rosdep has no
    key for it) Python's float repr writes the same numbers, more slowly."""
    header, blocks = samples_columns(analysis)
    columns = [b[:, None] if b.ndim == 1 else b for b in (np.asarray(b, dtype=float) for b in blocks)]
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:
        pa = None
    with open(path, "wb") as fh:
        fh.write((",".join(header) + "\n").encode())
        if pa is None:
            for i in range(0, len(analysis.t), rows_per_write):
                block = np.concatenate([c[i:i + rows_per_write] for c in columns], axis=1)
                fh.write("".join(",".join(map(repr, row)) + "\n" for row in block.tolist()).encode())
            return path
        schema = pa.schema([(name, pa.float64()) for name in header])
        with pacsv.CSVWriter(fh, schema, write_options=pacsv.WriteOptions(include_header=False)) as writer:
            for i in range(0, len(analysis.t), rows_per_write):
                block = np.concatenate([c[i:i + rows_per_write] for c in columns], axis=1).T.copy()
                # arrays over the block's own buffers: pa.record_batch of numpy arrays imports
                # pandas (0.2-0.5 s of a command) to ask whether they are pandas objects
                arrays = [pa.Array.from_buffers(pa.float64(), block.shape[1], [None, pa.py_buffer(row)])
                          for row in block]
                writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema))
    return path

_QUANTITIES = [("tau", "tau", "N m"), ("tau_dot", "tau_dot", "N m/s"), ("tau_ddot", "tau_ddot", "N m/s^2")]


def write_report(analysis, out, *, plots=True, derived_bag=True, samples=True, progress=None, title="",
                 timings=None, plotter=None):
    """Write ``samples.csv`` (unless ``samples`` is False), ``summary.json``, the PNG plots
    (``tau.png`` model vs measured, ``tau_dot.png``, ``tau_ddot.png`` up to the order,
    ``residual.png``, and with friction ``friction.png``, the friction curves),
    ``friction.yaml`` when the friction was fitted, and ``derived.mcap`` (see
    :func:`~hod_dynamics.recordings.bag_writer.write_derived_bag`) into the folder ``out``. ``timings``: a dict
    to receive the seconds spent on each kind of output; ``plotter``: a
    :class:`~hod_dynamics.replay.plot_processes.PlotProcesses` that draws the plots while this
    process writes the rest (None: drawn here). Returns the list of paths written."""
    import os
    import time

    clock = [time.perf_counter()]

    def lap(name):
        now = time.perf_counter()
        if timings is not None:
            timings[name] = now - clock[0]
        clock[0] = now

    from concurrent.futures import ThreadPoolExecutor

    os.makedirs(out, exist_ok=True)
    if not samples:
        return _write_others(analysis, out, plots, derived_bag, progress, title, lap, plotter)
    # samples.csv (hundreds of MB for a long recording) is formatted (compiled code, without
    # the GIL) and written to disk in a thread while the plots and the bag are made
    pool = ThreadPoolExecutor(max_workers=1)
    csv_job = pool.submit(_timed, write_samples_csv, analysis, os.path.join(out, "samples.csv"))
    try:
        paths = _write_others(analysis, out, plots, derived_bag, progress, title, lap, plotter)
    finally:
        csv_path, seconds = csv_job.result()
        pool.shutdown()
    if timings is not None:
        timings["samples.csv (in a thread meanwhile)"] = seconds
    return [csv_path] + paths


def _timed(func, *args):
    import time

    start = time.perf_counter()
    return func(*args), time.perf_counter() - start


def _write_others(analysis, out, plots, derived_bag, progress, title, lap, plotter=None):
    """Everything of :func:`write_report` but samples.csv; returns the paths written."""
    import os

    paths = [write_summary(analysis, os.path.join(out, "summary.json"))]
    if analysis.friction_source == "fit":
        paths.append(write_friction_yaml(analysis, os.path.join(out, "friction.yaml")))
    lap("summary.json, friction.yaml")
    r = analysis.result
    jobs = _plot_jobs(analysis, out, title) if plots else []
    elsewhere = jobs and plotter is not None and plotter.available
    if elsewhere:                  # drawn by the plotting processes while the bag is written here
        plotter.submit(analysis, jobs)
    elif jobs:
        paths += [function(analysis, *args) for function, args in jobs]
        lap("plots")
    bag = []
    if derived_bag:
        from ..recordings.bag_writer import write_derived_bag

        bag.append(str(write_derived_bag(os.path.join(out, "derived.mcap"), analysis.states.sample_stamps_ns,
                                         analysis.joint_names, r.qjet, r.taujet, progress=progress)))
        lap("derived.mcap")
    if elsewhere:
        paths += plotter.collect()
        lap("plots (in other processes meanwhile)")
    return paths + bag


def _plot_jobs(analysis, out, title):
    """The plots of a replay as ``(function, args)`` pairs (``function(analysis, *args)`` draws
    one and returns its path)."""
    import os

    jobs = [(_plot_order, (k, os.path.join(out, f"{_QUANTITIES[k][0]}.png"), title))
            for k in range(analysis.result.taujet.shape[1])]
    if analysis.residual is not None:
        jobs.append((_plot_residual, (os.path.join(out, "residual.png"), title)))
    if analysis.friction is not None and analysis.effort is not None:
        jobs.append((_plot_friction, (os.path.join(out, "friction.png"), title)))
    return jobs


def _plot_residual(analysis, path, title):
    from ..plots import plot_joint_series

    return plot_joint_series(analysis.t, analysis.residual, analysis.joint_names, path,
                             ylabel="model tau - measured effort [N m]", title=title,
                             labels=("residual (model - measured)", None))


def _plot_friction(analysis, path, title):
    from ..plots import plot_friction_curves

    return plot_friction_curves(analysis.result.qjet[:, 1], analysis.effort - analysis.rigid_tau, analysis.friction,
                                analysis.joint_names, path, title=title)


def write_summary(analysis, path, notes=()):
    """Write ``summary.json`` (:meth:`BagAnalysis.summary` and ``joint_names``) to ``path``, with
    the note lines ``notes`` after the analysis's own. Returns ``path``."""
    import json

    summary = analysis.summary()
    summary["joint_names"] = list(analysis.joint_names)
    summary["notes"] = list(summary["notes"]) + list(notes)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=2)
    return path


def _plot_order(analysis, k, path, title):
    """The plot of tau^(k): with friction and k >= 1 the rigid-body part and the friction part in
    two columns (the smooth Coulomb term's derivatives spike where a joint reverses, by up to
    coulomb * qdd^k / v_s^k, and would flatten the rest); the estimated error as a band (wider
    within the end zones), panels the data do not support marked."""
    from ..plots import plot_joint_series

    r, errors = analysis.result, analysis.errors
    name, label, unit = _QUANTITIES[k]
    band = side = limits = None
    if errors is not None:
        near = _end_zone_mask(analysis.t, analysis.segments, errors.end_zone[k])
        limits = ~near
        friction_split = analysis.friction is not None and k > 0
        rows = (errors.rigid, errors.rigid_ends) if friction_split else (errors.total, errors.total_ends)
        band = np.where(near[:, None], rows[1][k], rows[0][k])
    series = r.taujet[:, k]
    if analysis.friction is not None and k > 0:
        series = analysis.rigid_taujet[:, k]
        side = r.taujet[:, k] - series
    unsupported = None
    if analysis.supported is not None:
        bound = analysis.errors.hidden
        unsupported = [("" if ok else f"motion under the noise floor: up to {bound[k, j]:.2g} {unit}"
                        if bound is not None and bound[k, j] > 0.5 * analysis.signal_rms[k, j] else not ok)
                       for j, ok in enumerate(analysis.supported[k])]
    rigid = " of the rigid body" if side is not None else ""
    return plot_joint_series(analysis.t, series, analysis.joint_names, path, ylabel=f"{label}{rigid} [{unit}]",
                             title=title, reference=analysis.effort if k == 0 else None, band=band,
                             unsupported=unsupported, side=side, side_label=f"friction part [{unit}]",
                             limits_from=limits)


def _end_zone_mask(t, segments, zone):
    """(m,) bool: the samples within ``zone`` s of the ends of their segment."""
    near = np.zeros(len(t), dtype=bool)
    for lo, hi in segments:
        near[lo:hi] = (t[lo:hi] - t[lo] < zone) | (t[hi - 1] - t[lo:hi] < zone)
    return near


def write_friction_yaml(analysis, path):
    """The fitted friction as YAML (loadable by ``--friction FILE``, ``feedforward`` and the
    node), with the standard errors and residuals as comments."""
    from ..algorithms.friction import save_friction

    lines = [f"fitted by hod-dynamics analyze-bag on {analysis.states.topic} ({len(analysis.t)} samples)",
             "per joint: coulomb +- se, viscous +- se, offset +- se; residual rms rigid body -> with friction"]
    for nm, st in (analysis.friction_fit or {}).items():
        j = analysis.joint_names.index(nm)
        f = analysis.friction
        lines.append(f"  {nm}: {f.coulomb[j]:.4g} +- {st['coulomb_se']:.2g} N m, {f.viscous[j]:.4g} +- "
                     f"{st['viscous_se']:.2g} N m s/rad, {f.offset[j]:.4g} +- {st['offset_se']:.2g} N m; "
                     f"{st['residual_rms_before']:.4g} -> {st['residual_rms_after']:.4g} N m")
    return save_friction(analysis.friction, path, comments=lines)
