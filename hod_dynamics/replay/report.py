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
                 timings=None, plotter=None, drawn=()):
    """Write ``samples.csv`` (unless ``samples`` is False), ``summary.json``, the PNG plots
    (``tau.png`` model vs measured, ``tau_dot.png``, ``tau_ddot.png`` up to the order,
    ``residual.png``, and with friction ``friction.png``, the friction curves),
    ``friction.yaml`` when the friction was fitted, and ``derived.mcap`` (see
    :func:`~hod_dynamics.recordings.bag_writer.write_derived_bag`) into the folder ``out``. ``timings``: a dict
    to receive the seconds spent on each kind of output; ``plotter``: a
    :class:`~hod_dynamics.replay.plot_processes.PlotProcesses` that draws the plots while this
    process writes the rest (None: drawn here); ``drawn``: the paths of plots ``plotter`` was
    given already (see :func:`plot_jobs`), collected with the others. Returns the list of
    paths written."""
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
        return _write_others(analysis, out, plots, derived_bag, progress, title, lap, plotter, drawn)
    # samples.csv (hundreds of MB for a long recording) is formatted (compiled code, without
    # the GIL) and written to disk in a thread while the plots and the bag are made
    pool = ThreadPoolExecutor(max_workers=1)
    csv_job = pool.submit(_timed, write_samples_csv, analysis, os.path.join(out, "samples.csv"))
    try:
        paths = _write_others(analysis, out, plots, derived_bag, progress, title, lap, plotter, drawn)
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


def _write_others(analysis, out, plots, derived_bag, progress, title, lap, plotter=None, drawn=()):
    """Everything of :func:`write_report` but samples.csv; returns the paths written."""
    import os

    paths = [write_summary(analysis, os.path.join(out, "summary.json"))]
    if analysis.friction_source == "fit":
        paths.append(write_friction_yaml(analysis, os.path.join(out, "friction.yaml")))
    lap("summary.json, friction.yaml")
    r = analysis.result
    jobs = plot_jobs(analysis, out, title) if plots else []
    order = [kwargs["path"] for _, kwargs in jobs]
    drawn = set(drawn)
    jobs = [(function, kwargs) for function, kwargs in jobs if kwargs["path"] not in drawn]
    elsewhere = plotter is not None and plotter.available and (jobs or drawn)
    if elsewhere:                  # drawn by the plotting processes while the bag is written here
        plotter.submit(jobs)
    elif jobs:
        paths += [function(**kwargs) for function, kwargs in jobs]
        lap("plots")
    bag = []
    if derived_bag:
        from ..recordings.bag_writer import write_derived_bag

        bag.append(str(write_derived_bag(os.path.join(out, "derived.mcap"), analysis.states.sample_stamps_ns,
                                         analysis.joint_names, r.qjet, r.taujet, progress=progress)))
        lap("derived.mcap")
    if elsewhere:
        # in the order of plot_jobs, whenever each was submitted
        paths += sorted(plotter.collect(), key=lambda p: order.index(p) if p in order else len(order))
        lap("plots (in other processes meanwhile)")
    return paths + bag


def plot_jobs(analysis, out, title, part=None):
    """The plots of a replay as ``(function, kwargs)`` pairs: ``function(**kwargs)`` (a
    function of :mod:`hod_dynamics.plots`) writes one into the folder ``out`` and returns its
    path, ``kwargs["path"]``; the kwargs are plain data (arrays, names, texts), cheap to send to
    a plotting process. ``part``: None for all of them (tau^(k) for each order, the residual,
    the friction curves); ``"dynamics"`` for those final once the dynamics is (the residual,
    the friction curves); k (int) for tau^(k)'s, final once its error estimate is."""
    import os

    jobs = []
    if part is None or isinstance(part, int):
        orders = range(analysis.result.taujet.shape[1]) if part is None else [part]
        jobs += [_order_job(analysis, k, os.path.join(out, f"{_QUANTITIES[k][0]}.png"), title) for k in orders]
    if part in (None, "dynamics") and analysis.residual is not None:
        jobs.append(_residual_job(analysis, os.path.join(out, "residual.png"), title))
    if part in (None, "dynamics") and analysis.friction is not None and analysis.effort is not None:
        jobs.append(_friction_job(analysis, os.path.join(out, "friction.png"), title))
    return jobs


def _residual_job(analysis, path, title):
    from ..plots import plot_joint_series

    return plot_joint_series, dict(t=analysis.t, series=analysis.residual, joint_names=analysis.joint_names,
                                   path=path, ylabel="model tau - measured effort [N m]", title=title,
                                   labels=("residual (model - measured)", None))


def _friction_job(analysis, path, title):
    from ..plots import plot_friction_curves

    return plot_friction_curves, dict(qd=analysis.result.qjet[:, 1], residual=analysis.effort - analysis.rigid_tau,
                                      friction=analysis.friction, joint_names=analysis.joint_names, path=path,
                                      title=title)


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


def _order_job(analysis, k, path, title):
    """The plot of tau^(k): with friction and k >= 1 the rigid-body part and the friction part in
    two columns (the smooth Coulomb term's derivatives spike where a joint reverses, by up to
    coulomb * qdd^k / v_s^k, and would flatten the rest); the estimated error as a band (wider
    within the end zones), panels the data do not support marked. Needs the error estimate of
    tau^(k) only (of the orders up to k, when given as they are made)."""
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
        bound, rms = analysis.errors.hidden, analysis.signal_rms
        unsupported = [("" if ok else f"motion under the noise floor: up to {bound[k, j]:.2g} {unit}"
                        if bound is not None and bound[k, j] > 0.5 * rms[k, j] else not ok)
                       for j, ok in enumerate(analysis.supported[k])]
    rigid = " of the rigid body" if side is not None else ""
    return plot_joint_series, dict(t=analysis.t, series=series, joint_names=analysis.joint_names, path=path,
                                   ylabel=f"{label}{rigid} [{unit}]", title=title,
                                   reference=analysis.effort if k == 0 else None, band=band,
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
