"""trajectory_msgs/JointTrajectory in its serialised form (little-endian CDR, as DDS carries it,
rclpy's raw subscriptions hand it over and its publishers take it) <-> numpy arrays, without ROS.

A planner's trajectory of 60,000 points is 12 MB on the wire; rclpy turns it into 60,000 Python
point objects and back in seconds (about 1.3 s each way here, and as long again to read the
values out of them). Here the points are located in one pass over integers and the doubles are
copied in whole arrays. The layout (OMG CDR, XCDR1, the encoding of ROS 2's default RMWs): a
4-byte encapsulation header, then the fields in order, each aligned to its own size relative to
the end of that header; a sequence is its uint32 length followed by its elements (doubles aligned
to 8 when there is at least one); a string its uint32 length (NUL included) and bytes.
"""

import struct
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..errors import InputError
from .msgfields import NS_PER_S

FIELDS = ("positions", "velocities", "accelerations", "effort")
_HEADER = b"\x00\x01\x00\x00"  # CDR, little-endian


@dataclass(frozen=True)
class TrajectoryArrays:
    """A JointTrajectory as arrays: header ``stamp_ns`` and ``frame_id``, ``joint_names``,
    ``time_from_start_ns`` (N,) int64, and per field of :data:`FIELDS` an (N, n) float array
    (None when no point fills it); ``lengths`` (N, 4) int: every point's number of values in
    each field, for the checks that name a point."""

    stamp_ns: int
    frame_id: str
    joint_names: Tuple[str, ...]
    time_from_start_ns: np.ndarray
    positions: Optional[np.ndarray]
    velocities: Optional[np.ndarray]
    accelerations: Optional[np.ndarray]
    effort: Optional[np.ndarray]
    lengths: np.ndarray


def _align(p, size):
    return p + (-p % size)


def _string(body, p):
    """(text, next offset) of the CDR string at ``p``."""
    p = _align(p, 4)
    (length,) = struct.unpack_from("<I", body, p)
    if length == 0 or p + 4 + length > len(body):
        raise InputError(f"malformed JointTrajectory: a string of length {length} at byte {p}")
    return bytes(body[p + 4:p + 3 + length]).decode("utf-8", "replace"), p + 4 + length


def _point_layout(sizes, start):
    """Offsets (relative to the point's start, which lies at ``start`` mod 8) of each field's
    length and first double, of the Duration, and the point's byte size."""
    p, where = start, []
    for size in sizes:
        p = _align(p, 4)
        length_at = p
        p += 4
        if size:
            p = _align(p, 8)
        where.append((length_at - start, p - start))
        p += 8 * size
    p = _align(p, 4)
    return where, p - start, p + 8 - start


def decode_joint_trajectory(raw):
    """The :class:`TrajectoryArrays` of a serialised JointTrajectory (bytes). Raises InputError
    for bytes that are not one (truncated, big-endian, a count beyond the message's end)."""
    if len(raw) < 24 or bytes(raw[:2]) != _HEADER[:2]:
        raise InputError("not a little-endian CDR JointTrajectory message")
    body = memoryview(raw)[4:]
    try:
        sec, nanosec = struct.unpack_from("<iI", body, 0)
        frame_id, p = _string(body, 8)
        p = _align(p, 4)
        (count,) = struct.unpack_from("<I", body, p)
        p += 4
        names = []
        for _ in range(count):
            name, p = _string(body, p)
            names.append(name)
        p = _align(p, 4)
        (points,) = struct.unpack_from("<I", body, p)
        p += 4
        if points * 24 > len(body) - p:  # every point takes 24 bytes at least
            raise InputError(f"malformed JointTrajectory: {points} points in {len(body)} bytes")
        starts, lengths = _locate_points(body, p, points)
    except struct.error:
        raise InputError("malformed JointTrajectory: the message ends inside a field") from None
    n = len(names)
    data = np.frombuffer(body, dtype=np.uint8)
    fields = {}
    for f, field in enumerate(FIELDS):
        if not lengths[:, f].any():
            fields[field] = None
            continue
        full = lengths[:, f] == n
        values = np.full((points, n), np.nan)
        if full.any():
            values[full] = _gather(body, starts[full, f, 1], n)
        fields[field] = values
    at = starts[:, 4, 1] if points else np.zeros(0, int)
    seconds = data[at[:, None] + np.arange(4)].view("<i4")[:, 0].astype(np.int64) if points else np.zeros(0, np.int64)
    nanos = data[at[:, None] + np.arange(4, 8)].view("<u4")[:, 0].astype(np.int64) if points else np.zeros(0, np.int64)
    return TrajectoryArrays(sec * NS_PER_S + nanosec, frame_id, tuple(names), seconds * NS_PER_S + nanos,
                            fields["positions"], fields["velocities"], fields["accelerations"], fields["effort"],
                            lengths)


def _gather(body, offsets, n):
    """(len(offsets), n) float64: the n little-endian doubles at each byte offset of ``body``.
    Points laid out alike (one layout, or two alternating with the alignment) sit at a fixed
    stride among the even and among the odd ones: read as two strided views of the message,
    where indexing every byte (60,000 points of 7 joints: 27 MB of indices) took a tenth of a
    second."""
    out = np.empty((len(offsets), n))
    for parity in (0, 1):
        at = offsets[parity::2]
        if not len(at):
            continue
        stride = int(at[1] - at[0]) if len(at) > 1 else 8 * n
        if stride >= 8 * n and np.all(np.diff(at) == stride):
            out[parity::2] = np.ndarray((len(at), n), dtype="<f8", buffer=body, offset=int(at[0]),
                                        strides=(stride, 8))
        else:
            data = np.frombuffer(body, dtype=np.uint8)
            out[parity::2] = data[at[:, None] + np.arange(8 * n)].view("<f8")
    return out


def _offsets(first, points, layouts):
    """(start offsets (points,), end) of points of the same field lengths from ``first`` (a
    multiple of 4): a point's size depends only on its start modulo 8 (0 or 4), so the sizes
    repeat with a period of one or two points after the first."""
    step = {s: _align(s + layouts[s][2], 4) - s for s in (0, 4)}
    states = [first % 8]
    for _ in range(2):
        states.append((states[-1] + step[states[-1]]) % 8)
    cycle = states[1:] if states[1] != states[2] else states[1:2]
    steps = np.empty(points, dtype=np.int64)
    if points:
        steps[0] = step[states[0]]
        steps[1:] = np.resize([step[c] for c in cycle], points - 1)
    ends = first + np.cumsum(steps)
    return np.r_[first, ends[:-1]].astype(np.int64)[:points], int(ends[-1]) if points else first


def point_count(raw):
    """The number of points of a serialised JointTrajectory (bytes), read from its header only;
    InputError for bytes that are not one."""
    if len(raw) < 24 or bytes(raw[:2]) != _HEADER[:2]:
        raise InputError("not a little-endian CDR JointTrajectory message")
    body = memoryview(raw)[4:]
    try:
        _, p = _string(body, 8)
        p = _align(p, 4)
        (count,) = struct.unpack_from("<I", body, p)
        p += 4
        for _ in range(count):
            _, p = _string(body, p)
        return struct.unpack_from("<I", body, _align(p, 4))[0]
    except struct.error:
        raise InputError("malformed JointTrajectory: the message ends inside a field") from None


def _locate_points(body, p, points):
    """(starts (N, 5, 2): per point, per field and the Duration, the offsets of its length and
    data, lengths (N, 4)). The points usually share their field lengths: then only their start
    offsets are walked (their layout depends on the start's alignment alone) and every length
    is checked at once; otherwise each point is read in turn."""
    starts = np.zeros((points, 5, 2), dtype=np.int64)
    lengths = np.zeros((points, 4), dtype=np.int64)
    if not points:
        return starts, lengths
    first = []
    q = p
    for _ in FIELDS:
        q = _align(q, 4)
        (size,) = struct.unpack_from("<I", body, q)
        first.append(size)
        q = q + 4 + (_align(q + 4, 8) - (q + 4) if size else 0) + 8 * size
    layouts = {s: _point_layout(first, s) for s in (0, 4)}
    offsets, end = _offsets(_align(p, 4), points, layouts)
    if end > len(body):
        return _read_points(body, p, points)
    data = np.frombuffer(body, dtype=np.uint8)
    for state, (where, duration_at, _) in layouts.items():
        mine = offsets % 8 == state
        for f, (length_at, value_at) in enumerate(where):
            starts[mine, f] = offsets[mine, None] + [length_at, value_at]
        starts[mine, 4] = offsets[mine, None] + duration_at
    sizes = data[starts[:, :4, 0, None] + np.arange(4)].view("<u4")[..., 0]
    if not np.array_equal(sizes, np.broadcast_to(first, sizes.shape)):
        return _read_points(body, p, points)
    lengths[:] = first
    return starts, lengths


def _read_points(body, p, points):
    """:func:`_locate_points` one point at a time (points whose field lengths differ)."""
    starts = np.zeros((points, 5, 2), dtype=np.int64)
    lengths = np.zeros((points, 4), dtype=np.int64)
    for k in range(points):
        for f in range(4):
            p = _align(p, 4)
            (size,) = struct.unpack_from("<I", body, p)
            starts[k, f, 0] = p
            p += 4
            if size:
                p = _align(p, 8)
            starts[k, f, 1] = p
            lengths[k, f] = size
            p += 8 * size
        p = _align(p, 4)
        struct.unpack_from("<iI", body, p)  # raises at the end of the message
        starts[k, 4] = p
        p += 8
    return starts, lengths


def encode_joint_trajectory(joint_names, time_from_start_ns, positions, velocities=None, accelerations=None,
                            effort=None, *, stamp_ns=0, frame_id=""):
    """A serialised JointTrajectory (bytes, as ``Publisher.publish`` takes it): header stamp
    ``stamp_ns`` (int ns) and ``frame_id``, ``joint_names`` (n,), one point per row of
    ``positions`` (N, n) with ``time_from_start_ns`` (N,) int ns and the optional
    ``velocities``, ``accelerations``, ``effort`` (N, n) (empty fields when None). InputError
    for an array of another shape."""
    names = [str(nm).encode() for nm in joint_names]
    arrays = [None if a is None else np.ascontiguousarray(a, dtype="<f8") for a in
              (positions, velocities, accelerations, effort)]
    N, n = len(time_from_start_ns), len(names)
    for a in arrays:
        if a is not None and a.shape != (N, n):
            raise InputError(f"a field of shape {a.shape} for {N} points of {n} joints")
    head = bytearray(struct.pack("<iI", *divmod(int(stamp_ns), NS_PER_S)))
    for text in [frame_id.encode()]:
        head += struct.pack("<I", len(text) + 1) + text + b"\0"
    head += b"\0" * (-len(head) % 4) + struct.pack("<I", len(names))
    for text in names:
        head += b"\0" * (-len(head) % 4) + struct.pack("<I", len(text) + 1) + text + b"\0"
    head += b"\0" * (-len(head) % 4) + struct.pack("<I", N)
    sizes = [0 if a is None else n for a in arrays]
    layouts = {s: _point_layout(sizes, s) for s in (0, 4)}
    offsets, end = _offsets(len(head), N, layouts)
    out = np.zeros(end, dtype=np.uint8)
    out[:len(head)] = np.frombuffer(bytes(head), dtype=np.uint8)
    ns = np.asarray(time_from_start_ns, dtype=np.int64)
    duration = np.empty((N, 2), dtype="<u4")
    duration[:, 0] = (ns // NS_PER_S).astype("<i4").view("<u4")
    duration[:, 1] = ns % NS_PER_S
    for state, (where, duration_at, _) in layouts.items():
        mine = np.flatnonzero(offsets % 8 == state)
        base = offsets[mine]
        for (length_at, value_at), a, size in zip(where, arrays, sizes):
            out[(base + length_at)[:, None] + np.arange(4)] = np.frombuffer(struct.pack("<I", size), np.uint8)
            if size:
                out[(base + value_at)[:, None] + np.arange(8 * size)] = a[mine].view(np.uint8)
        out[(base + duration_at)[:, None] + np.arange(8)] = duration[mine].view(np.uint8)
    return _HEADER + out.tobytes()
