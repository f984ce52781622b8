"""The fleet table (:mod:`hod_dynamics.fleet`): its columns, the rows of an analysed bag and of
one that could not be analysed, and the table as a pandas DataFrame, a pyarrow Table and a
Parquet file.
"""

import os
import uuid

from ..errors import HodDynamicsError, InputError

TABLE = "fleet.parquet"
FRICTION_KEYS = ("coulomb", "viscous", "offset")

#: The table's columns: (name, pyarrow type name, meaning).
COLUMNS = (
    ("bag", "string", "the bag's name: its output folder out/<bag>/"),
    ("path", "string", "the bag as given (path or URL)"),
    ("robot", "string", "the robot: the model's name, or the name the --urdf mapping gives"),
    ("joint", "string", "the model joint (null in the row of a bag that could not be analysed)"),
    ("start", "timestamp[ns, UTC]", "time of the first sample (the recording's clock, as UTC)"),
    ("duration_s", "float64", "first to last sample, s"),
    ("samples", "int64", "samples analysed"),
    ("residual_rms", "float64", "RMS of model tau (with friction when used) - measured effort, N m or N"),
    ("rigid_residual_rms", "float64", "the same for the rigid-body model alone"),
    ("effort_rms", "float64", "RMS of the measured effort"),
    ("effort_range", "float64", "max - min of the measured effort"),
    ("coulomb", "float64", "friction: Coulomb level (fitted or given), N m or N"),
    ("coulomb_se", "float64", "its standard error (fitted friction only)"),
    ("viscous", "float64", "friction: viscous coefficient, N m s/rad or N s/m"),
    ("viscous_se", "float64", "its standard error"),
    ("offset", "float64", "friction: constant offset, N m or N"),
    ("offset_se", "float64", "its standard error"),
    ("status", "string", "ok, or the one-line error of the bag"),
    ("time_base", "string", "the sample times used: grid, header, receive or index"),
    ("notes", "string", "the analysis's notes, '; '-separated"),
)


def error_row(task, error):
    """The row of a bag that could not be analysed: ``status`` the one-line error."""
    row = {name: None for name, _, _ in COLUMNS}
    row.update(bag=task.name, path=str(task.path), robot=None if task.robot is None else task.robot.name,
               status=error if isinstance(error, str) else one_line(error))
    return row


def table_rows(report, task):
    """The rows of one analysed bag (:class:`~hod_dynamics.replay.bag_report.BagReport`), one per model
    joint: JSON-ready (``start`` in ns since the Unix epoch)."""
    a = report.analysis
    summary = a.summary()
    nan = float("nan")
    fit = a.friction_fit or {}
    base = summary.get("time_base", {}).get("source")
    notes = "; ".join(list(a.notes) + list(report.warnings)) or None
    rows = []
    for j, joint in enumerate(a.joint_names):
        e = summary["joints"][joint]
        row = dict(bag=task.name, path=str(task.path), robot=task.robot.name, joint=joint,
                   start=int(a.states.sample_stamps_ns[0]), duration_s=summary["duration"],
                   samples=summary["n_samples"], residual_rms=e.get("residual_rms", nan),
                   rigid_residual_rms=e.get("rigid_residual_rms", e.get("residual_rms", nan)),
                   effort_rms=e.get("measured_rms", nan), effort_range=e.get("measured_range", nan),
                   status="ok", time_base=base or task.settings["options"]["time_base"], notes=notes)
        for key in FRICTION_KEYS:
            row[key] = nan if a.friction is None else float(getattr(a.friction, key)[j])
            row[f"{key}_se"] = fit.get(joint, {}).get(f"{key}_se", nan)
        rows.append({name: row.get(name) for name, _, _ in COLUMNS})
    return rows


def one_line(exc):
    text = " ".join(str(exc).split())
    if isinstance(exc, HodDynamicsError):
        return text
    if isinstance(exc, MemoryError):
        return "out of memory while analysing this bag"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def require(serial=False):
    """Raise InputError naming what the fleet analysis lacks (pandas; Dask distributed unless
    ``serial``: the bags run in this process or on a client given), and how to install it."""
    import importlib.util

    needed = ["pandas"] + ([] if serial else ["distributed"])
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        names = " and ".join("Dask distributed" if m == "distributed" else m for m in missing)
        raise InputError(f"analysing many bags needs {names}: pip install 'dask[distributed]' pandas (the "
                         "fleet extra of hod_dynamics)")


def _pandas():
    try:
        import pandas
    except ImportError:
        raise InputError("the fleet table needs pandas: pip install pandas (with Dask distributed, the fleet "
                         "extra)") from None
    return pandas


def arrow_schema():
    """The pyarrow schema of the table (:data:`COLUMNS`)."""
    import pyarrow as pa

    types = {"string": pa.string(), "float64": pa.float64(), "int64": pa.int64(),
             "timestamp[ns, UTC]": pa.timestamp("ns", tz="UTC")}
    return pa.schema([pa.field(name, types[kind]) for name, kind, _ in COLUMNS])


def rows_to_frame(rows):
    """A pandas DataFrame of table rows (dicts; ``start`` in ns since the epoch)."""
    pd = _pandas()
    return _normalised(pd.DataFrame(rows, columns=[name for name, _, _ in COLUMNS]))


def _normalised(frame):
    """The table's dtypes, whatever made the frame: UTC datetimes, nullable integers, floats,
    strings as Python objects with None where missing."""
    pd = _pandas()
    if not isinstance(frame["start"].dtype, pd.DatetimeTZDtype):
        frame["start"] = pd.to_datetime(frame["start"].astype("Int64"), unit="ns", utc=True)
    frame["samples"] = frame["samples"].astype("Int64")
    for name, kind, _ in COLUMNS:
        if kind == "float64":
            frame[name] = frame[name].astype(float)
        elif kind == "string":
            frame[name] = frame[name].astype(object).where(frame[name].notna(), None)
    return frame


def table_to_arrow(frame):
    import pyarrow as pa

    return pa.Table.from_pandas(frame, schema=arrow_schema(), preserve_index=False)


def write_table(frame, path):
    """Write the table as Parquet (pyarrow), atomically: a reader sees the old table or the new."""
    import pyarrow.parquet as pq

    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    pq.write_table(table_to_arrow(frame), tmp)
    os.replace(tmp, path)
    return path


def read_table(path):
    """The fleet table of ``path`` (a fleet.parquet, or the folder holding it) as a DataFrame."""
    import pyarrow.parquet as pq

    if os.path.isdir(path):
        path = os.path.join(path, TABLE)
    _pandas()
    return _normalised(pq.read_table(path).to_pandas())

