"""Reading and writing ROS bags with the ``rosbags`` library (no ROS installation needed).

Reads rosbag2 bags (a bag folder, or a single ``.db3`` / ``.mcap`` file) and ROS 1 ``.bag``
files: ``sensor_msgs/JointState`` (measured positions, velocities, efforts) and
``trajectory_msgs/JointTrajectory`` (e.g. the planned trajectory). Writes rosbag2 MCAP bags of
joint states (for tests and benchmarks) and of derived results (``feedforward`` and
``torque_derivatives``, the message layout of the ROS node, for PlotJuggler / Foxglove).

Times: a message's time is its header stamp, or the bag's receive time when the stamp is
zero; integers in ns (absolute) and floats in s relative to ``t0_ns`` (the first sample).
Every failure to read a bag raises :class:`~hod_dynamics.errors.InputError` (one line that
says what to do). Requires ``pip install rosbags``.

Longer than 500 lines: reading and writing share the rosbags types and the message layouts
(joint states decoded in bulk by their serialised layout; an MCAP writer of whole chunks;
derived rows patched into a serialised template).
"""

import os
import shutil
import sqlite3
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from .errors import InputError
from .msgfields import multiarray_dims, seconds_to_ns, split_ns, stamp_ns

JOINT_STATE = "sensor_msgs/msg/JointState"
JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
MULTIARRAY = "std_msgs/msg/Float64MultiArray"
FEEDFORWARD_TOPIC = "/feedforward"
DERIVATIVES_TOPIC = "/torque_derivatives"
_FIELDS = ("position", "velocity", "effort")


def check_rosbags():
    """Raise InputError naming the install command when the rosbags library is missing (a
    command checks it before it writes or prints anything)."""
    _rosbags()


def _rosbags():
    try:
        import rosbags  # noqa: F401
    except ImportError:
        raise InputError("bag analysis needs the rosbags library: pip install rosbags") from None
    from rosbags.typesys import Stores, get_typestore

    # Kilted is the ROS 2 distribution of the node; the message definitions used here are the
    # same in every ROS 2 distribution, so the bags read back everywhere.
    return get_typestore(Stores.ROS2_KILTED)


def _read_errors():
    from rosbags.highlevel import AnyReaderError
    from rosbags.rosbag1 import ReaderError as Reader1Error
    from rosbags.rosbag2 import ReaderError as Reader2Error
    from rosbags.serde import SerdeError

    # garbled or truncated files surface as any of these (sqlite, struct, decoding, and a
    # MemoryError when a garbled record length asks for exabytes)
    return (AnyReaderError, Reader1Error, Reader2Error, SerdeError, sqlite3.Error, EOFError,
            KeyError, IndexError, ValueError, UnicodeDecodeError, AssertionError, OSError,
            struct.error, MemoryError, OverflowError)


def _corrupt(path, exc):
    detail = "a garbled record length" if isinstance(exc, MemoryError) else (
        " ".join(str(exc).split()) or type(exc).__name__)
    return InputError(f"cannot read bag '{path}' ({detail}): the file is corrupt, truncated or not a "
                      "ROS bag; pass a rosbag2 folder, .db3 or .mcap file or a ROS 1 .bag (a "
                      "truncated rosbag2 may be repaired with 'ros2 bag reindex')")


@dataclass(frozen=True)
class JointStates:
    """Joint states recorded on one topic, in time order, m samples, n joints.

    ``joint_names`` (n,) in the order of the recording; ``t`` (m,) s, strictly increasing,
    relative to ``t0_ns``: the sample times of the chosen time base (see
    :mod:`hod_dynamics.timebase`); ``stamps_ns`` (m,) the header stamps as recorded (the
    receive time where a stamp is zero); ``position`` (m, n) rad or m; ``velocity`` /
    ``effort`` (m, n) (rad/s, N m; m/s, N) or None when the messages have none (NaN rows for
    the messages that lack them); ``dropped``: messages dropped (exact duplicates, or
    repeated stamps with the header / receive time bases); ``receive_ns`` (m,) the bag's log
    times or None; ``time_base``: the :class:`~hod_dynamics.timebase.TimeBase` that chose
    ``t`` (None when the caller gave ``t``).
    """

    topic: str
    joint_names: Tuple[str, ...]
    t0_ns: int
    stamps_ns: np.ndarray
    t: np.ndarray
    position: np.ndarray
    velocity: Optional[np.ndarray]
    effort: Optional[np.ndarray]
    dropped: int = 0
    receive_ns: Optional[np.ndarray] = None
    time_base: Optional[object] = None

    def _pick(self, keep, **changes):
        pick = (lambda a: None if a is None else a[keep])
        fields = dict(self.__dict__, stamps_ns=self.stamps_ns[keep], t=self.t[keep], position=self.position[keep],
                      velocity=pick(self.velocity), effort=pick(self.effort), receive_ns=pick(self.receive_ns))
        fields.update(changes)
        return JointStates(**fields)

    def select(self, start=None, end=None):
        """The samples with ``start <= t <= end`` (s, relative; None: unbounded)."""
        keep = np.ones(len(self.t), dtype=bool)
        if start is not None:
            keep &= self.t >= start
        if end is not None:
            keep &= self.t <= end
        return self._pick(keep)

    @property
    def sample_stamps_ns(self):
        """(m,) absolute ns of the chosen sample times (t0_ns + t)."""
        return self.t0_ns + np.round(self.t * 1e9).astype(np.int64)

    def with_time_base(self, mode="auto"):
        """These samples on the time base ``mode`` (:data:`~hod_dynamics.timebase.MODES`),
        chosen again from ``stamps_ns``, ``receive_ns`` and the data."""
        from .timebase import resolve_time_base

        base = resolve_time_base(self.stamps_ns, self.receive_ns, self.position, _payload(self), mode)
        return self._pick(base.keep, t=base.t, t0_ns=base.t0_ns, time_base=base,
                          dropped=self.dropped + base.duplicates)


def _payload(states):
    return np.hstack([a for a in (states.position, states.velocity, states.effort) if a is not None])


def _stamp_ns(header, receive_ns):
    return stamp_ns(header.stamp) or receive_ns


def _topic_connections(reader, topic, msgtype, option):
    """The connections of ``topic`` (default: the only topic of ``msgtype``), checked."""
    topics = reader.topics
    listing = ", ".join(f"{name} ({info.msgtype})" for name, info in sorted(topics.items())) or "none"
    if topic is None:
        found = sorted(name for name, info in topics.items() if info.msgtype == msgtype)
        if len(found) != 1:
            raise InputError(f"{'no' if not found else 'several'} {msgtype} topics in the bag; choose "
                             f"one with {option} TOPIC (topics: {listing})")
        topic = found[0]
    if topic not in topics:
        raise InputError(f"topic '{topic}' is not in the bag; pass {option} with one of: {listing}")
    if topics[topic].msgtype != msgtype:
        raise InputError(f"topic '{topic}' has type {topics[topic].msgtype}, expected {msgtype}; "
                         f"pass {option} with one of: {listing}")
    return topic, topics[topic].connections, topics[topic].msgcount


def _open(path):
    from rosbags.highlevel import AnyReader

    path = Path(path)
    if not path.exists():
        raise InputError(f"bag not found: '{path}'")
    from rosbags.typesys import Stores, get_typestore

    # bags without embedded message definitions (old rosbag2 sqlite) need a default typestore
    return AnyReader([path], default_typestore=get_typestore(Stores.LATEST))


def _read_topic(path, topic, msgtype, option, visit, progress=None, raw_hook=None):
    """Call ``visit(k, total, receive_ns, msg)`` for the k-th of ``total`` messages of ``topic`` (checked to be of
    ``msgtype``; None: the only topic of that type, ``option`` names the CLI option that picks
    it); ``raw_hook(k, total, receive_ns, raw)``, when given, sees the serialized message first
    and returns True when it took it (no ``visit`` then). Returns ``(topic, message count)``;
    bag failures raise :class:`InputError`."""
    _rosbags()
    try:
        reader = _open(path)
        with reader:
            topic, conns, total = _topic_connections(reader, topic, msgtype, option)
            for k, (conn, receive_ns, raw) in enumerate(reader.messages(connections=conns)):
                if raw_hook is None or not raw_hook(k, total, receive_ns, raw):
                    visit(k, total, receive_ns, reader.deserialize(raw, conn.msgtype))
                if progress is not None and k % 4096 == 0:
                    progress(k, total)
    except InputError:
        raise
    except FileNotFoundError as exc:
        raise InputError(f"cannot read bag '{path}' ({exc}): pass a rosbag2 folder with its "
                         "metadata.yaml, or the .db3 / .mcap file itself") from None
    except _read_errors() as exc:
        raise _corrupt(path, exc) from None
    if progress is not None:
        progress(total, total)
    return topic, total


def read_joint_states(path, topic=None, *, time_base="auto", progress=None):
    """All ``sensor_msgs/JointState`` messages of ``topic`` in the bag at ``path``.

    ``topic`` None picks the only JointState topic. The joint order is that of the first
    message; later messages are mapped by name. ``time_base``: how the sample times are
    chosen, one of ``"auto"``, ``"header"``, ``"receive"``, ``"index"`` (see
    :func:`~hod_dynamics.timebase.resolve_time_base`). ``progress`` is called as
    ``progress(done, total)`` while reading. Returns :class:`JointStates`. Raises
    :class:`InputError` for a missing, corrupt or truncated bag, a missing topic (naming the
    topics present), a message lacking a joint of the first one, messages without
    positions, or an unknown time base.
    """
    from .timebase import MODES

    if time_base not in MODES:
        raise InputError(f"time base must be one of {list(MODES)}, got {time_base!r}")
    names, data = [], {}   # data: preallocated stamps (total,) and position/velocity/effort (total, n)

    def visit(k, total, receive_ns, msg):
        if not msg.name:
            raise InputError(f"{topic or 'joint states'}: message {k} names no joints; JointState "
                             "messages must fill 'name' to be mapped onto the model")
        if not names:
            names.extend(msg.name)
            data.update(stamp=np.zeros(total, dtype=np.int64), receive=np.zeros(total, dtype=np.int64),
                        **{f: np.full((total, len(names)), np.nan) for f in _FIELDS})
        if k >= len(data["stamp"]):   # more messages than the bag's index announced
            for key, a in data.items():
                data[key] = np.concatenate([a, np.full_like(a, a[0] if key in ("stamp", "receive") else np.nan)])
        order = None
        if list(msg.name) != names:
            missing = [nm for nm in names if nm not in msg.name]
            if missing:
                raise InputError(f"{topic or 'joint states'}: message {k} lacks joints {missing} of the "
                                 "first message; record all joints on one topic")
            where = {nm: i for i, nm in enumerate(msg.name)}
            order = [where[nm] for nm in names]
        data["stamp"][k] = _stamp_ns(msg.header, receive_ns)
        data["receive"][k] = receive_ns
        for field in _FIELDS:
            values = getattr(msg, field)
            if len(values) == len(msg.name):   # else: not recorded, stays NaN
                data[field][k] = values if order is None else values[order]
        data["count"] = k + 1

    fast = {"layout": None, "k": [], "raw": []}

    def raw_hook(k, total, receive_ns, raw):
        # messages laid out byte for byte like the first one (same names, same array sizes)
        # are decoded together at the end: rosbags' per-message decoding is most of the time
        # of reading a long recording
        if k == 0:
            fast["first"] = bytes(raw)
            return False
        if fast["layout"] is None:
            fast["layout"] = _CdrLayout.of_joint_state(fast["first"]) or False
        layout = fast["layout"]
        if not layout or not layout.accepts(raw) or k >= len(data["stamp"]):
            return False
        fast["k"].append(k)
        fast["raw"].append(raw)
        data["receive"][k] = receive_ns
        data["count"] = k + 1
        return True

    topic, _ = _read_topic(path, topic, JOINT_STATE, "--joint-states", visit, progress, raw_hook)
    if fast["k"]:
        ks = np.array(fast["k"])
        stamp, values = fast["layout"].decode(fast["raw"])
        data["stamp"][ks] = np.where(stamp != 0, stamp, data["receive"][ks])
        for field, v in values.items():
            data[field][ks] = v
    if not names:
        raise InputError(f"topic '{topic}' holds no messages; record joint states or pick another topic")
    count = data.pop("count")
    stamps, receive, position, velocity, effort = (data[key][:count] for key in ("stamp", "receive") + _FIELDS)
    if np.isnan(position).any():
        raise InputError(f"{topic}: messages without a position for every joint {names}; "
                         "position is needed to fit the trajectory")
    # velocities / efforts that no message carries are None rather than all-NaN
    states = JointStates(topic, tuple(names), int(stamps[0]), stamps, (stamps - stamps[0]) * 1e-9, position,
                         None if np.isnan(velocity).all() else velocity,
                         None if np.isnan(effort).all() else effort, 0, receive)
    return states.with_time_base(time_base)


class _CdrLayout:
    """Byte layout of a little-endian CDR sensor_msgs/JointState: where the stamp and the
    position / velocity / effort doubles sit. Messages of the same length whose other bytes
    (frame id, names, array sizes) equal the first message's share it."""

    def __init__(self, raw, fixed, arrays):
        self.length, self.template, self.fixed, self.arrays = len(raw), raw, fixed, arrays

    @classmethod
    def of_joint_state(cls, raw):
        """The layout of ``raw`` (bytes), or None for a layout this reader does not handle."""
        if len(raw) < 16 or raw[1] != 1:        # not little-endian plain CDR
            return None
        body = memoryview(raw)[4:]

        def u32(p):
            return struct.unpack_from("<I", body, p)[0]

        try:
            p = 8 + 4 + u32(8)                  # stamp, then frame_id (length with the NUL)
            p += -p % 4
            count, p = u32(p), p + 4
            for _ in range(count):
                p += -p % 4
                p += 4 + u32(p)
            fixed, arrays, start = [], {}, 8
            for field in _FIELDS:
                p += -p % 4
                size, p = u32(p), p + 4
                if size:
                    p += -p % 8
                    fixed.append((4 + start, 4 + p))
                    arrays[field] = (4 + p, size)
                    start = p = p + 8 * size
            if p != len(body):
                return None
            fixed.append((4 + start, len(raw)))
        except struct.error:
            return None
        return cls(raw, [(a, b) for a, b in fixed if b > a], arrays)

    def accepts(self, raw):
        return len(raw) == self.length and all(raw[a:b] == self.template[a:b] for a, b in self.fixed)

    def decode(self, raws):
        """(stamps ns (M,), {field: (M, size) values}) of messages with this layout."""
        buf = np.frombuffer(b"".join(raws), dtype=np.uint8).reshape(len(raws), self.length)
        sec = np.ascontiguousarray(buf[:, 4:8]).view("<i4")[:, 0].astype(np.int64)
        nsec = np.ascontiguousarray(buf[:, 8:12]).view("<u4")[:, 0].astype(np.int64)
        values = {field: np.ascontiguousarray(buf[:, p:p + 8 * size]).view("<f8")
                  for field, (p, size) in self.arrays.items()}
        return sec * 1_000_000_000 + nsec, values


def read_planned_positions(path, topic, t0_ns):
    """The planned trajectory recorded on ``topic`` (trajectory_msgs/JointTrajectory).

    Each message's points start at its header stamp (or receive time) and hold until the
    next message starts (a new trajectory replaces the old one, as a controller does).
    Returns ``(joint_names, t (N,) s relative to t0_ns, positions (N, n))``, the points of
    all messages in time order (joints of the first message, later ones mapped by name).
    """
    segments, names = [], []

    def visit(k, total, receive_ns, msg):
        if not msg.points:
            return
        if not names:
            names.extend(msg.joint_names)
        missing = [nm for nm in names if nm not in msg.joint_names]
        if missing:
            raise InputError(f"{topic}: trajectory message {k} lacks joints {missing}; record all joints")
        cols = [list(msg.joint_names).index(nm) for nm in names]
        start = _stamp_ns(msg.header, receive_ns)
        t = np.array([stamp_ns(p.time_from_start) for p in msg.points])
        q = np.array([np.asarray(p.positions, dtype=float)[cols] for p in msg.points])
        segments.append((start, start + t, q))

    _read_topic(path, topic, JOINT_TRAJECTORY, "--trajectory-topic", visit)
    if not segments:
        raise InputError(f"topic '{topic}' holds no trajectory points; drop --trajectory-topic")
    segments.sort(key=lambda s: s[0])
    times, rows = [], []
    for i, (_, t, q) in enumerate(segments):
        until = segments[i + 1][0] if i + 1 < len(segments) else np.inf
        keep = t < until
        times.append(t[keep])
        rows.append(q[keep])
    return tuple(names), (np.concatenate(times) - t0_ns) * 1e-9, np.concatenate(rows)


# -- writing -----------------------------------------------------------------------------------
class _McapBag:
    """A rosbag2 MCAP writer that leaves one self-contained ``.mcap`` file at ``path``."""

    def __init__(self, path):
        from rosbags.rosbag2 import StoragePlugin, Writer

        self.path = Path(path)
        self.typestore = _rosbags()
        self.tmp = Path(tempfile.mkdtemp(prefix=".bag-", dir=self.path.parent))
        self.folder = self.tmp / self.path.stem
        self.writer = Writer(self.folder, version=9, storage_plugin=StoragePlugin.MCAP)

    def __enter__(self):
        self.writer.open()
        return self

    def topic(self, name, msgtype):
        return self.writer.add_connection(name, msgtype, typestore=self.typestore)

    def write(self, conn, stamp_ns, msg):
        self.writer.write(conn, int(stamp_ns), self.typestore.serialize_cdr(msg, conn.msgtype))

    def serialize(self, conn, msg):
        return bytes(self.typestore.serialize_cdr(msg, conn.msgtype))

    def write_raw(self, conn, stamp_ns, data):
        self.writer.write(conn, int(stamp_ns), data.tobytes())

    def write_rows(self, conns, stamps_ns, rows, progress=None):
        """Write, for each sample i, the serialised message ``rows[c][i]`` ((m, L_c) uint8) on
        ``conns[c]`` at log time ``stamps_ns[i]``.

        rosbags' MCAP writer costs a few microseconds per message (its ``write`` and the
        message index of ``close_chunk``); a long recording has millions. When the writer is
        the MCAP one this writes whole chunks of message records (the MCAP record layout:
        opcode, length, channel, sequence, log and publish time, data) built as arrays, with
        the chunk index, statistics and counts its own ``write`` / ``close_chunk`` keep;
        otherwise (another storage, or a rosbags without these internals) message by message."""
        storage, m = self.writer.storage, len(stamps_ns)
        fast = all(hasattr(storage, a) for a in ("chunk", "chunks", "bio", "compressor", "compression",
                                                   "channel_stats", "close_chunk", "message_start_time",
                                                   "message_end_time")) and hasattr(self.writer, "counts") \
            and getattr(self.writer.compression_mode, "name", "") != "MESSAGE"
        try:
            from rosbags.rosbag2.storage_mcap import write_record, write_string  # noqa: F401  the helpers used
        except ImportError:
            fast = False
        if not fast:
            for i in range(m):
                for conn, r in zip(conns, rows):
                    self.write_raw(conn, stamps_ns[i], r[i])
                if progress is not None and i % 4096 == 0:
                    progress(i, m)
            return
        stamps = np.asarray(stamps_ns, dtype="<u8")
        parts = []
        for conn, r in zip(conns, rows):
            rec = np.empty((m, 31 + r.shape[1]), dtype=np.uint8)
            rec[:, 0] = 0x05
            rec[:, 1:9] = np.array([22 + r.shape[1]], dtype="<u8").view(np.uint8)
            rec[:, 9:11] = np.array([conn.id], dtype="<u2").view(np.uint8)
            rec[:, 11:15] = 0
            rec[:, 15:23] = stamps.view(np.uint8).reshape(m, 8)
            rec[:, 23:31] = rec[:, 15:23]
            rec[:, 31:] = r
            parts.append(rec)
        sample = np.concatenate(parts, axis=1)
        width = sample.shape[1]
        block = max(1, 2**20 // width)
        if storage.chunk.bio.tell():
            storage.close_chunk()          # what rosbags wrote so far (schemas, channels) in its own chunk
        for a in range(0, m, block):
            b = min(a + block, m)
            first, last = int(stamps[a:b].min()), int(stamps[a:b].max())
            index, offset = {}, 0
            for conn, rec in zip(conns, parts):
                index[conn.id] = (stamps[a:b], offset + width * np.arange(b - a, dtype="<u8"))
                storage.channel_stats[conn.id] += b - a
                self.writer.counts[conn.id] += b - a
                offset += rec.shape[1]
            _close_mcap_chunk(storage, sample[a:b].tobytes(), first, last, index)
            storage.message_start_time = min(storage.message_start_time, first)
            storage.message_end_time = max(storage.message_end_time, last)
            self.writer.min_timestamp = min(self.writer.min_timestamp, first)
            self.writer.max_timestamp = max(self.writer.max_timestamp, last)
            if progress is not None:
                progress(b, m)

    def __exit__(self, exc_type, *_):
        try:
            self.writer.close()
            if exc_type is None:
                os.replace(self.folder / f"{self.path.stem}.mcap", self.path)
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


def _close_mcap_chunk(storage, data, start, end, index):
    """Append one MCAP chunk holding the message records ``data`` (log times ``start`` ..
    ``end``) to rosbags' MCAP ``storage``, with its message indexes (``index``: channel id ->
    (log times, offsets in ``data``)) and its entry in the summary: what
    ``McapWriter.close_chunk`` writes, with the index built as arrays instead of per message."""
    from io import BytesIO

    from rosbags.rosbag2.storage_mcap import write_record, write_string, write_uint16, write_uint32, write_uint64

    compressed = storage.compressor(data)
    rec = BytesIO()
    write_uint64(rec, start)
    write_uint64(rec, end)
    write_uint64(rec, len(data))
    write_uint32(rec, 0)
    write_string(rec, storage.compression)
    write_uint64(rec, len(compressed))
    rec.write(compressed)
    chunk_start = storage.bio.tell()
    write_record(storage.bio, 0x06, rec)
    chunk_end = storage.bio.tell()
    offsets = []
    for cid, (times, where) in index.items():
        offsets.append((cid, storage.bio.tell()))
        rec = BytesIO()
        write_uint16(rec, cid)
        write_uint32(rec, len(times) * 16)
        rec.write(np.column_stack([times, where]).astype("<u8").tobytes())
        write_record(storage.bio, 0x07, rec)
    rec = BytesIO()
    write_uint64(rec, start)
    write_uint64(rec, end)
    write_uint64(rec, chunk_start)
    write_uint64(rec, chunk_end - chunk_start)
    write_uint32(rec, len(offsets) * 10)
    for cid, offset in offsets:
        write_uint16(rec, cid)
        write_uint64(rec, offset)
    write_uint64(rec, storage.bio.tell() - chunk_end)
    write_string(rec, storage.compression)
    write_uint64(rec, len(compressed))
    write_uint64(rec, len(data))
    storage.chunks.append(rec)


def _header(types, ns):
    sec, nanosec = split_ns(ns)
    return types["std_msgs/msg/Header"](stamp=types["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec),
                                        frame_id="")


def write_joint_states(path, stamps_ns, joint_names, position, velocity=None, effort=None, *,
                       topic="/joint_states", storage="mcap", planned=None, receive_ns=None):
    """Record joint states as a rosbag2 bag (storage ``"mcap"`` or ``"sqlite3"``).

    ``path``: the bag folder to create; ``stamps_ns`` (m,) header stamps; ``receive_ns``
    (m,) the bag's log times (default: the stamps); ``position`` / ``velocity`` / ``effort``
    (m, n). ``planned`` optionally
    ``(topic, stamp_ns, times (N,) s, positions (N, n))``: one JointTrajectory message.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer

    types = _rosbags()
    plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
    JS = types.types[JOINT_STATE]
    empty = np.zeros(0)
    with Writer(Path(path), version=9, storage_plugin=plugin) as writer:
        conn = writer.add_connection(topic, JOINT_STATE, typestore=types)
        names = list(joint_names)
        stamps_ns = np.asarray(stamps_ns, dtype=np.int64)
        logged = stamps_ns if receive_ns is None else np.asarray(receive_ns, dtype=np.int64)
        for i, stamp in enumerate(stamps_ns):
            msg = JS(header=_header(types.types, stamp), name=names, position=position[i],
                     velocity=empty if velocity is None else velocity[i],
                     effort=empty if effort is None else effort[i])
            writer.write(conn, int(logged[i]), types.serialize_cdr(msg, JOINT_STATE))
        if planned is not None:
            ptopic, stamp, times, q = planned
            conn = writer.add_connection(ptopic, JOINT_TRAJECTORY, typestore=types)
            writer.write(conn, int(stamp), types.serialize_cdr(
                _trajectory(types.types, stamp, names, times, q), JOINT_TRAJECTORY))


def _duration(types, seconds):
    sec, nanosec = split_ns(seconds_to_ns(seconds))
    return types["builtin_interfaces/msg/Duration"](sec=sec, nanosec=nanosec)


def _trajectory(types, stamp_ns, names, times, positions, velocities=None, accelerations=None,
                efforts=None):
    point, empty = types["trajectory_msgs/msg/JointTrajectoryPoint"], np.zeros(0)
    pick = (lambda a, i: empty if a is None else a[i])
    points = [point(positions=positions[i], velocities=pick(velocities, i),
                    accelerations=pick(accelerations, i), effort=pick(efforts, i),
                    time_from_start=_duration(types, times[i])) for i in range(len(times))]
    return types[JOINT_TRAJECTORY](header=_header(types, stamp_ns), joint_names=list(names), points=points)


def multiarray_layout(types, shape, labels):
    """MultiArrayLayout of a row-major array of ``shape``, one labelled dimension per axis
    (the layout of the ROS node's ``hod_dynamics.ros.conversions.multiarray``)."""
    dim = types["std_msgs/msg/MultiArrayDimension"]
    return types["std_msgs/msg/MultiArrayLayout"](
        dim=[dim(label=lab, size=size, stride=stride) for lab, size, stride in multiarray_dims(shape, labels)],
        data_offset=0)


def write_derived_bag(path, stamps_ns, joint_names, qjet, taujet, *, progress=None):
    """Write the model results as a single-file MCAP bag for PlotJuggler / Foxglove.

    ``stamps_ns`` (m,) absolute ns (header stamps and log times); ``qjet`` (m, >=3, n) q, qd,
    qdd; ``taujet`` (m, K, n) tau^(0..K-1). Topics: ``/feedforward``
    (trajectory_msgs/JointTrajectory, one point per sample: positions, velocities,
    accelerations, effort = tau) and ``/torque_derivatives`` (std_msgs/Float64MultiArray
    (K, n), dims ``order``, ``joint``, row-major), as published by the feedforward node.
    ``progress(done, total)`` is called while writing. Returns ``path``.
    """
    path = Path(path)
    if path.exists():
        path.unlink()
    m, K, n = taujet.shape
    stamps = np.asarray(stamps_ns, dtype=np.int64)
    with _McapBag(path) as bag:
        types = bag.typestore.types
        ff = bag.topic(FEEDFORWARD_TOPIC, JOINT_TRAJECTORY)
        dd = bag.topic(DERIVATIVES_TOPIC, MULTIARRAY)
        layout = multiarray_layout(types, (K, n), ("order", "joint"))
        # every message of a topic has the same layout: serialise one with marker values, then
        # put each sample's stamp and numbers at the markers' byte offsets (a per-message
        # serialisation took most of the time of writing a long recording)
        marks = [1.0 + np.arange(n) + 100.0 * r for r in range(4)]
        ff_raw = bag.serialize(ff, _trajectory(types, 0, joint_names, np.zeros(1), *(a[None] for a in marks)))
        dd_raw = bag.serialize(dd, types[MULTIARRAY](layout=layout, data=1.0 + np.arange(K * n)))
        for a in range(0, m, 20000):      # blocks: a few MB of rows at a time
            b = min(a + 20000, m)
            ff_rows = _patched(ff_raw, stamps[a:b], [(marks[r], qjet[a:b, r] if r < 3 else taujet[a:b, 0])
                                                     for r in range(4)])
            dd_rows = _patched(dd_raw, None, [(1.0 + np.arange(K * n), taujet[a:b].reshape(b - a, K * n))])
            bag.write_rows([ff, dd], stamps[a:b], [ff_rows, dd_rows])
            if progress is not None:
                progress(b, m)
    if progress is not None:
        progress(m, m)
    return path


def _patched(template, stamps_ns, arrays):
    """(m, len(template)) uint8 rows: ``template`` (a serialised CDR message) with the header
    stamp (when ``stamps_ns`` is given) and, for each (marker values, (m, k) values) of
    ``arrays``, the doubles found as the marker replaced by each row's values."""
    m = len(arrays[0][1])
    rows = np.tile(np.frombuffer(template, dtype=np.uint8), (m, 1))
    if stamps_ns is not None:
        sec, nanosec = np.divmod(stamps_ns, 1_000_000_000)
        rows[:, 4:8] = sec.astype("<i4").view(np.uint8).reshape(m, 4)
        rows[:, 8:12] = nanosec.astype("<u4").view(np.uint8).reshape(m, 4)
    for marker, values in arrays:
        at = template.find(np.asarray(marker, dtype="<f8").tobytes())
        if at < 0:
            raise RuntimeError("CDR template without its marker values")   # cannot happen: a bug
        rows[:, at:at + 8 * len(marker)] = np.ascontiguousarray(values, dtype="<f8").view(np.uint8)
    return rows


def read_derived_bag(path):
    """Read back a bag of :func:`write_derived_bag`.

    Returns ``(joint_names, stamps_ns (m,), positions, velocities, accelerations, efforts
    (m, n each), derivatives (m, K, n))``.
    """
    stamps, rows, jets, names = [], [], [], []

    def feedforward(k, total, stamp, msg):
        p = msg.points[0]
        names[:] = msg.joint_names
        stamps.append(stamp)
        rows.append((p.positions, p.velocities, p.accelerations, p.effort))

    def derivatives(k, total, stamp, msg):
        jets.append(msg.data.reshape([d.size for d in msg.layout.dim]))

    _read_topic(path, FEEDFORWARD_TOPIC, JOINT_TRAJECTORY, "topic", feedforward)
    _read_topic(path, DERIVATIVES_TOPIC, MULTIARRAY, "topic", derivatives)
    q, qd, qdd, eff = (np.array(a) for a in zip(*rows))
    return tuple(names), np.array(stamps), q, qd, qdd, eff, np.array(jets)
