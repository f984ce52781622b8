"""Writing ROS 2 bags with the ``rosbags`` library (no ROS installation needed): rosbag2 MCAP
bags of joint states (for tests and benchmarks) and of derived results (``feedforward`` and
``torque_derivatives``, the message layout of the ROS node, for PlotJuggler / Foxglove), and
reading a derived bag back.

An MCAP writer of whole chunks, and derived rows patched into a serialised template: a
Python-level writer of one message at a time costs more than the analysis itself on a long
recording. Requires ``pip install rosbags``.
"""

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from .bag import JOINT_STATE, JOINT_TRAJECTORY, read_topic, rosbags_module
from .msgfields import multiarray_dims, seconds_to_ns, split_ns


MULTIARRAY = "std_msgs/msg/Float64MultiArray"

FEEDFORWARD_TOPIC = "/feedforward"

DERIVATIVES_TOPIC = "/torque_derivatives"


class _McapBag:
    """A rosbag2 MCAP writer that leaves one self-contained ``.mcap`` file at ``path``."""

    def __init__(self, path):
        from rosbags.rosbag2 import StoragePlugin, Writer

        self.path = Path(path)
        self.typestore = rosbags_module()
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


@dataclass(frozen=True)
class JointStream:
    """The JointState messages of one publisher, to be written by
    :func:`write_joint_state_streams`: ``joint_names`` (n,); ``stamps_ns`` (m,) header stamps;
    ``position`` (m, n); ``velocity`` / ``effort`` (m, n) or None (empty arrays in the
    messages); ``receive_ns`` (m,) the bag's log times (None: the stamps)."""

    joint_names: Tuple[str, ...]
    stamps_ns: np.ndarray
    position: np.ndarray
    velocity: Optional[np.ndarray] = None
    effort: Optional[np.ndarray] = None
    receive_ns: Optional[np.ndarray] = None


def write_joint_state_streams(path, streams, *, topic="/joint_states", storage="mcap", planned=None):
    """Record the messages of several publishers on one JointState ``topic`` as a rosbag2 bag
    (storage ``"mcap"`` or ``"sqlite3"``) at ``path`` (a folder to create), in the order of
    their receive times, as a recorder stores them. ``streams``: :class:`JointStream` s.
    ``planned`` optionally ``(topic, stamp_ns, times (N,) s, positions (N, n))``: one
    JointTrajectory message with the joints of the first stream."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    types = rosbags_module()
    plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
    JS = types.types[JOINT_STATE]
    empty = np.zeros(0)
    rows, logged = [], []
    for s, stream in enumerate(streams):
        names, m = list(stream.joint_names), len(stream.stamps_ns)
        # one message serialised with marker values, then each message's stamp and numbers put
        # at the markers' byte offsets (a serialisation per message is slow for long recordings)
        marks = [1.0 + np.arange(len(names)) + 100.0 * r for r in range(3)]
        given = [stream.position, stream.velocity, stream.effort]
        template = bytes(types.serialize_cdr(JS(header=_header(types.types, 0), name=names, position=marks[0],
                                                velocity=empty if given[1] is None else marks[1],
                                                effort=empty if given[2] is None else marks[2]), JOINT_STATE))
        rows.append(_patched(template, np.asarray(stream.stamps_ns, dtype=np.int64),
                             [(marks[r], np.asarray(v, dtype=float)) for r, v in enumerate(given) if v is not None]))
        receive = stream.stamps_ns if stream.receive_ns is None else stream.receive_ns
        logged.append(np.column_stack([np.asarray(receive, dtype=np.int64), np.full(m, s), np.arange(m)]))
    order = np.concatenate(logged)
    order = order[np.lexsort((order[:, 2], order[:, 1], order[:, 0]))]     # receive time, stream, index
    with Writer(Path(path), version=9, storage_plugin=plugin) as writer:
        conn = writer.add_connection(topic, JOINT_STATE, typestore=types)
        for receive, s, i in order:
            writer.write(conn, int(receive), rows[s][i].tobytes())
        if planned is not None:
            ptopic, stamp, times, q = planned
            conn = writer.add_connection(ptopic, JOINT_TRAJECTORY, typestore=types)
            writer.write(conn, int(stamp), types.serialize_cdr(
                _trajectory(types.types, stamp, list(streams[0].joint_names), times, q), JOINT_TRAJECTORY))
    return path


def write_joint_states(path, stamps_ns, joint_names, position, velocity=None, effort=None, *,
                       topic="/joint_states", storage="mcap", planned=None, receive_ns=None):
    """Record joint states as a rosbag2 bag (storage ``"mcap"`` or ``"sqlite3"``).

    ``path``: the bag folder to create; ``stamps_ns`` (m,) header stamps; ``receive_ns``
    (m,) the bag's log times (default: the stamps; the messages are stored in their order);
    ``position`` / ``velocity`` / ``effort`` (m, n). ``planned`` optionally
    ``(topic, stamp_ns, times (N,) s, positions (N, n))``: one JointTrajectory message.
    """
    stream = JointStream(tuple(joint_names), np.asarray(stamps_ns, dtype=np.int64), np.asarray(position, dtype=float),
                         velocity, effort, receive_ns)
    return write_joint_state_streams(path, [stream], topic=topic, storage=storage, planned=planned)


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

    read_topic(path, FEEDFORWARD_TOPIC, JOINT_TRAJECTORY, "topic", feedforward)
    read_topic(path, DERIVATIVES_TOPIC, MULTIARRAY, "topic", derivatives)
    q, qd, qdd, eff = (np.array(a) for a in zip(*rows))
    return tuple(names), np.array(stamps), q, qd, qdd, eff, np.array(jets)
