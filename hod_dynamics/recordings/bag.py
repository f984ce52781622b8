"""Reading ROS bags with the ``rosbags`` library (no ROS installation needed).

Reads rosbag2 bags (a bag folder, or a single ``.db3`` / ``.mcap`` file) and ROS 1 ``.bag``
files: ``sensor_msgs/JointState`` (measured positions, velocities, efforts) and
``trajectory_msgs/JointTrajectory`` (e.g. the planned trajectory). Writing is
:mod:`hod_dynamics.recordings.bag_writer`.

Times: a message's time is its header stamp, or the bag's receive time when the stamp is
zero; integers in ns (absolute) and floats in s relative to ``t0_ns`` (the first sample).
Every failure to read a bag raises :class:`~hod_dynamics.errors.InputError` (one line that
says what to do). Requires ``pip install rosbags``.

Joint states are decoded in bulk by their serialised layout (:class:`_CdrLayout`): a message
at a time through the rosbags deserialiser costs more than the analysis of a long recording.
"""

import sqlite3
import struct
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from ..errors import InputError
from .msgfields import stamp_ns

JOINT_STATE = "sensor_msgs/msg/JointState"
JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
_FIELDS = ("position", "velocity", "effort")


def check_rosbags():
    """Raise InputError naming the install command when the rosbags library is missing (a
    command checks it before it writes or prints anything)."""
    rosbags_module()


def rosbags_module():
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
class IgnoredGroup:
    """Messages of a joint-state topic left out of the analysis: their ``joint_names``, how many
    ``messages`` and why (``reason``)."""

    joint_names: Tuple[str, ...]
    messages: int
    reason: str

    def __str__(self):
        return f"ignored {self.messages:,} messages with joints {', '.join(self.joint_names)}: {self.reason}"


@dataclass(frozen=True)
class JointStates:
    """Joint states recorded on one topic, in time order, m samples, n joints.

    ``joint_names`` (n,) in the order of the recording; ``t`` (m,) s, strictly increasing,
    relative to ``t0_ns``: the sample times of the chosen time base (see
    :mod:`hod_dynamics.recordings.timebase`); ``stamps_ns`` (m,) the header stamps as recorded (the
    receive time where a stamp is zero); ``position`` (m, n) rad or m; ``velocity`` /
    ``effort`` (m, n) (rad/s, N m; m/s, N) or None when the messages have none (NaN rows for
    the messages that lack them); ``dropped``: messages dropped (exact duplicates, or
    repeated stamps with the header / receive time bases); ``receive_ns`` (m,) the bag's log
    times or None; ``time_base``: the :class:`~hod_dynamics.recordings.timebase.TimeBase` that chose
    ``t`` (None when the caller gave ``t``).

    A topic on which several publishers send different joints (an arm's controller and a
    gripper driver, say) holds several *groups* of messages, one per joint-name set.
    ``groups``: every group of the topic, each a one-group JointStates on its own time base
    (empty when the topic has one group). The samples here are then those of the groups that
    carry the ``wanted`` joints (:meth:`for_joints`): ``sources``, the first of which gives
    the sample times (empty when one group carries every wanted joint, these samples being
    that group's); the joints of the others are interpolated linearly at those times (a fit
    uses their own times instead: :meth:`source_times`), and ``alignment`` says how (one
    dict per further source). ``ignored``: the :class:`IgnoredGroup` of the groups not used.
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
    groups: tuple = ()
    wanted: Optional[Tuple[str, ...]] = None
    sources: tuple = ()
    ignored: tuple = ()
    alignment: tuple = ()
    wanted_by: str = "the model"

    def _pick(self, keep, **changes):
        pick = (lambda a: None if a is None else a[keep])
        fields = dict(self.__dict__, stamps_ns=self.stamps_ns[keep], t=self.t[keep], position=self.position[keep],
                      velocity=pick(self.velocity), effort=pick(self.effort), receive_ns=pick(self.receive_ns))
        fields.update(changes)
        return JointStates(**fields)

    def select(self, start=None, end=None):
        """The samples with ``start <= t <= end`` (s, relative; None: unbounded)."""
        if self.groups:
            shift = (lambda g: (self.t0_ns - g.t0_ns) * 1e-9)
            return self._regrouped([g.select(None if start is None else start + shift(g),
                                              None if end is None else end + shift(g)) for g in self.groups])
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

    @property
    def messages(self):
        """Messages read for these samples (kept samples plus dropped duplicates)."""
        return len(self.t) + self.dropped

    def with_time_base(self, mode="auto"):
        """These samples on the time base ``mode`` (:data:`~hod_dynamics.recordings.timebase.MODES`),
        chosen again from ``stamps_ns``, ``receive_ns`` and the data (every group on its own)."""
        from .timebase import resolve_time_base

        if self.groups:
            return self._regrouped([g.with_time_base(mode) for g in self.groups])
        base = resolve_time_base(self.stamps_ns, self.receive_ns, self.position, _payload(self), mode)
        return self._pick(base.keep, t=base.t, t0_ns=base.t0_ns, time_base=base,
                          dropped=self.dropped + base.duplicates)

    def for_joints(self, names, what="the model"):
        """The samples of the groups that carry the joints ``names`` (see the class docstring):
        the fewest groups that carry them all (the one with the most of them first, then the
        one with the most messages), the others ignored, with a reason that names ``what``
        asked for the joints. Raises :class:`InputError` naming the joints that no message
        carries."""
        return _combine(list(self.groups) or [self], tuple(names), what, self.topic)

    def _regrouped(self, groups):
        return _combine(groups, self.wanted, self.wanted_by, self.topic)

    def source_times(self, source):
        """(m_g,) s: the sample times of ``source`` (one of :attr:`sources`) relative to ``t0_ns``."""
        return (source.t0_ns - self.t0_ns) * 1e-9 + source.t


def _payload(states):
    return np.hstack([a for a in (states.position, states.velocity, states.effort) if a is not None])


def _combine(groups, wanted, what, topic):
    """JointStates of the ``wanted`` joints (None: every joint of ``groups``) from the one-group
    JointStates ``groups`` (see :meth:`JointStates.for_joints`)."""
    from .timebase import GAP_SPLIT

    everything = tuple(dict.fromkeys(nm for g in groups for nm in g.joint_names))
    if wanted is None:       # the joints of the group with the most joints (then messages)
        wanted = max(groups, key=lambda g: (len(g.joint_names), g.messages)).joint_names
    wanted = tuple(wanted)
    missing = [nm for nm in wanted if nm not in everything]
    if missing:
        carried = "; ".join(f"{list(g.joint_names)} ({g.messages:,} messages)" for g in groups)
        raise InputError(f"joints {missing} of {what} are in no message on {topic} (its messages carry: "
                         f"{carried}); pass the description of the recorded robot or lock those joints "
                         "with --lock JOINT=VALUE")
    left, used = set(wanted), []
    while left:
        best = max(range(len(groups)), key=lambda i: (len(left & set(groups[i].joint_names)), groups[i].messages, -i))
        used.append(best)
        left -= set(groups[best].joint_names)
    ignored = []
    for i, g in enumerate(groups):
        if i in used:
            continue
        mine = [nm for nm in g.joint_names if nm in wanted]
        reason = (f"not in {what}" if not mine else
                  f"{', '.join(mine)} come in the messages with joints "
                  f"{', '.join(next(groups[u].joint_names for u in used if set(mine) & set(groups[u].joint_names)))}")
        ignored.append(IgnoredGroup(g.joint_names, g.messages, reason))
    extra = dict(groups=tuple(groups) if len(groups) > 1 else (), wanted=wanted, ignored=tuple(ignored),
                 wanted_by=what)
    primary = groups[used[0]]
    if len(used) == 1:
        return replace(primary, sources=(), alignment=(), **extra)
    # several groups: the first one's sample times, where every other group has data (inside
    # its span and outside its gaps longer than GAP_SPLIT of its periods)
    p_ns = primary.sample_stamps_ns
    keep = np.ones(len(p_ns), dtype=bool)
    others = [groups[u] for u in used[1:]]
    for g in others:
        g_ns = g.sample_stamps_ns
        keep &= (p_ns >= g_ns[0]) & (p_ns <= g_ns[-1])
        period = float(np.median(np.diff(g_ns))) if len(g_ns) > 1 else np.inf
        for i in np.flatnonzero(np.diff(g_ns) > GAP_SPLIT * period):
            keep &= ~((p_ns > g_ns[i]) & (p_ns < g_ns[i + 1]))
    if keep.sum() < 2:
        raise InputError(f"{topic}: the messages with joints {', '.join(primary.joint_names)} and those with "
                         f"joints {', '.join(others[0].joint_names)} do not overlap in time")
    names, cols = list(primary.joint_names), {}
    for g in others:
        cols[id(g)] = [c for c, nm in enumerate(g.joint_names) if nm not in names]
        names += [g.joint_names[c] for c in cols[id(g)]]
    at = p_ns[keep]

    def stacked(field):
        blocks = [getattr(primary, field)]
        if all(b is None for b in blocks + [getattr(g, field) for g in others]):
            return None
        blocks = [np.full((len(p_ns), len(primary.joint_names)), np.nan) if blocks[0] is None else blocks[0]]
        out = [blocks[0][keep]]
        for g in others:
            values = getattr(g, field)
            g_ns = g.sample_stamps_ns
            out.append(np.column_stack([np.full(len(at), np.nan) if values is None else
                                        np.interp(at, g_ns, values[:, c]) for c in cols[id(g)]]))
        return np.hstack(out)

    alignment = []
    for g in others:
        g_ns = g.sample_stamps_ns
        nearest = np.clip(np.searchsorted(p_ns, g_ns), 1, len(p_ns) - 1)
        lag = np.where(np.abs(g_ns - p_ns[nearest - 1]) < np.abs(g_ns - p_ns[nearest]), g_ns - p_ns[nearest - 1],
                       g_ns - p_ns[nearest])
        alignment.append({"joints": [g.joint_names[c] for c in cols[id(g)]], "messages": g.messages,
                          "rate": float(1e9 / np.median(np.diff(g_ns))),
                          "time_base": None if g.time_base is None else g.time_base.source,
                          "median_offset": float(np.median(lag) * 1e-9),
                          "samples_without_data": int(np.count_nonzero(~keep)),
                          "method": "fitted on their own sample times and evaluated at those of joints "
                                    f"{', '.join(primary.joint_names)}; their measured position, velocity and "
                                    "effort interpolated linearly there"})
    return replace(primary, joint_names=tuple(names), stamps_ns=primary.stamps_ns[keep], t=primary.t[keep],
                   position=stacked("position"), velocity=stacked("velocity"), effort=stacked("effort"),
                   receive_ns=None if primary.receive_ns is None else primary.receive_ns[keep],
                   sources=tuple(groups[u] for u in used), alignment=tuple(alignment), **extra)


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


def read_topic(path, topic, msgtype, option, visit, progress=None, raw_hook=None):
    """Call ``visit(k, total, receive_ns, msg)`` for the k-th of ``total`` messages of ``topic`` (checked to be of
    ``msgtype``; None: the only topic of that type, ``option`` names the CLI option that picks
    it); ``raw_hook(k, total, receive_ns, raw)``, when given, sees the serialized message first
    and returns True when it took it (no ``visit`` then). Returns ``(topic, message count)``;
    bag failures raise :class:`InputError`."""
    rosbags_module()
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


class _Group:
    """The messages of one joint-name set while a topic is read: bag indices, stamps, receive
    times and the rows of values (in the order of the group's first message), those decoded one
    by one and those kept as raw bytes of a known layout, decoded together at the end."""

    def __init__(self, names):
        self.names = tuple(names)
        self.k, self.stamp, self.receive = [], [], []
        self.rows = {f: [] for f in _FIELDS}
        self.raw = {}          # layout -> (bag indices, receive times, raw messages, column order)

    def add(self, k, stamp, receive, msg, order):
        self.k.append(k)
        self.stamp.append(stamp)
        self.receive.append(receive)
        n = len(self.names)
        for field in _FIELDS:
            values = np.asarray(getattr(msg, field), dtype=float)
            row = np.full(n, np.nan)
            if len(values) == len(msg.name):        # else: not recorded, stays NaN
                row[:] = values if order is None else values[order]
            self.rows[field].append(row)

    def arrays(self):
        """(bag indices, stamps, receive times, {field: (M, n) values}) in bag order."""
        k, stamp, receive = list(self.k), list(self.stamp), list(self.receive)
        n = len(self.names)
        values = {f: [np.reshape(np.array(rows), (len(rows), n))] for f, rows in self.rows.items()}
        for layout, (ks, rec, raws, order) in self.raw.items():
            st, decoded = layout.decode(raws)
            rec = np.asarray(rec, dtype=np.int64)
            k += ks
            stamp += np.where(st != 0, st, rec).tolist()
            receive += rec.tolist()
            for field in _FIELDS:
                v = decoded.get(field)
                values[field].append(np.full((len(ks), n), np.nan) if v is None or v.shape[1] != n
                                     else (v if order is None else v[:, order]))
        order = np.argsort(np.asarray(k), kind="stable")
        out = {f: np.concatenate(v)[order] for f, v in values.items()}
        return (np.asarray(k)[order], np.asarray(stamp, dtype=np.int64)[order],
                np.asarray(receive, dtype=np.int64)[order], out)


_MAX_LAYOUTS = 16      # byte layouts decoded in bulk (a topic with more varied messages decodes the rest one by one)


def read_joint_states(path, topic=None, *, joints=None, time_base="auto", progress=None):
    """All ``sensor_msgs/JointState`` messages of ``topic`` in the bag at ``path``.

    ``topic`` None picks the only JointState topic. The messages are grouped by their set
    of joint names (several publishers may share a topic: an arm's controller and a gripper
    driver, say); within a group the joint order is that of its first message and later
    messages are mapped by name. ``joints``: the joints needed (e.g. a model's
    ``joint_names``): the samples are those of the fewest groups that carry them all, the
    other groups are ignored (:attr:`JointStates.ignored` says why), and joints that come in
    different groups are aligned on the sample times of the first (see
    :class:`JointStates`); None: the joints of the group with the most joints (then the most
    messages), every group staying available to :meth:`JointStates.for_joints`.
    ``time_base``: how the sample
    times are chosen, one of ``"auto"``, ``"header"``, ``"receive"``, ``"index"`` (see
    :func:`~hod_dynamics.recordings.timebase.resolve_time_base`), for every group on its own.
    ``progress`` is called as ``progress(done, total)`` while reading. Returns
    :class:`JointStates`. Raises :class:`InputError` for a missing, corrupt or truncated bag,
    a missing topic (naming the topics present), a joint of ``joints`` that no message
    carries (naming it), messages without names or without positions, or an unknown time
    base.
    """
    from .timebase import MODES

    if time_base not in MODES:
        raise InputError(f"time base must be one of {list(MODES)}, got {time_base!r}")
    groups = {}                    # frozenset of names -> _Group
    layouts = []                   # (layout, group, column order)
    pending = {}

    def group_of(names, k):
        key = frozenset(names)
        if len(key) != len(names):
            dup = sorted({nm for nm in names if list(names).count(nm) > 1})
            raise InputError(f"{topic or 'joint states'}: message {k} names joints {dup} more than once")
        if key not in groups:
            groups[key] = _Group(names)
        g = groups[key]
        order = None if tuple(names) == g.names else np.array([list(names).index(nm) for nm in g.names])
        return g, order

    def visit(k, total, receive_ns, msg):
        if not msg.name:
            raise InputError(f"{topic or 'joint states'}: message {k} names no joints; JointState "
                             "messages must fill 'name' to be mapped onto the model")
        g, order = group_of(msg.name, k)
        g.add(k, _stamp_ns(msg.header, receive_ns), receive_ns, msg, order)
        raw = pending.pop("raw", None)
        if raw is not None and len(layouts) < _MAX_LAYOUTS:
            layout = _CdrLayout.of_joint_state(bytes(raw))
            if layout is not None:
                layouts.append((layout, g, order))

    def raw_hook(k, total, receive_ns, raw):
        # messages laid out byte for byte like one seen before (same names, same array sizes)
        # are decoded together at the end: rosbags' per-message decoding is most of the time
        # of reading a long recording
        for layout, g, order in layouts:
            if layout.accepts(raw):
                ks, rec, raws, _ = g.raw.setdefault(layout, ([], [], [], order))
                ks.append(k)
                rec.append(receive_ns)
                raws.append(raw)
                return True
        pending["raw"] = raw
        return False

    topic, _ = read_topic(path, topic, JOINT_STATE, "--joint-states", visit, progress, raw_hook)
    if not groups:
        raise InputError(f"topic '{topic}' holds no messages; record joint states or pick another topic")
    states = []
    for g in groups.values():
        _, stamps, receive, values = g.arrays()
        position, velocity, effort = (values[f] for f in _FIELDS)
        if np.isnan(position).any():
            raise InputError(f"{topic}: messages without a position for every joint {list(g.names)}; "
                             "position is needed to fit the trajectory")
        # velocities / efforts that no message carries are None rather than all-NaN
        one = JointStates(topic, g.names, int(stamps[0]), stamps, (stamps - stamps[0]) * 1e-9, position,
                          None if np.isnan(velocity).all() else velocity,
                          None if np.isnan(effort).all() else effort, 0, receive)
        states.append(one.with_time_base(time_base))
    return _combine(states, joints, "the model", topic)


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

    read_topic(path, topic, JOINT_TRAJECTORY, "--trajectory-topic", visit)
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


