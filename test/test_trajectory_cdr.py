"""The JointTrajectory reader of the node's raw subscription against rclpy's own
deserialisation: every field of messages serialised by rclpy (Fast DDS's CDR), whatever the
alignment of their points (joint counts 1 to 8, frame ids of every length modulo 8), with
fields left empty, points of differing lengths, no points, and the long planner messages whose
points are read as strided views."""

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ros-rclpy wheels) not installed")
from builtin_interfaces.msg import Duration  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from hod_dynamics.recordings.trajectory_cdr import FIELDS, decode_joint_trajectory  # noqa: E402


def message(rng, joints, points, frame="", empty=(), ragged=False):
    msg = JointTrajectory()
    msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = 1_700_000_000, 123_456_789, frame
    msg.joint_names = [f"joint_{j}" for j in range(joints)]
    for k in range(points):
        point = JointTrajectoryPoint(time_from_start=Duration(sec=k // 10, nanosec=(k % 10) * 100_000_000 + k))
        for field in FIELDS:
            size = 0 if field in empty else joints - (k % 2) if ragged and field == "velocities" else joints
            setattr(point, field, rng.normal(size=size).tolist())
        msg.points.append(point)
    return msg


def check(msg):
    got = decode_joint_trajectory(serialize_message(msg))
    assert got.stamp_ns == msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
    assert got.frame_id == msg.header.frame_id and got.joint_names == tuple(msg.joint_names)
    np.testing.assert_array_equal(got.time_from_start_ns, [p.time_from_start.sec * 10**9 + p.time_from_start.nanosec
                                                           for p in msg.points])
    n = len(msg.joint_names)
    for f, field in enumerate(FIELDS):
        rows = [list(getattr(p, field)) for p in msg.points]
        np.testing.assert_array_equal(got.lengths[:, f] if len(rows) else [], [len(r) for r in rows])
        if not any(rows):
            assert getattr(got, field) is None, field
            continue
        want = np.array([r if len(r) == n else [np.nan] * n for r in rows])
        np.testing.assert_array_equal(getattr(got, field), want, err_msg=field)  # bit for bit, NaN where short


@pytest.mark.parametrize("joints", range(1, 9))
@pytest.mark.parametrize("frame", ["", "a", "base", "base_lin", "world_frame_7"])
def test_every_alignment_of_the_points_reads_as_rclpy_wrote_it(joints, frame):
    rng = np.random.default_rng(joints)
    for points in (0, 1, 2, 3, 7):
        check(message(rng, joints, points, frame))


@pytest.mark.parametrize("empty", [("velocities", "accelerations", "effort"), ("positions",), ("effort",)])
def test_fields_left_empty_and_points_of_differing_lengths(empty):
    rng = np.random.default_rng(3)
    for joints in (1, 2, 6, 7):
        check(message(rng, joints, 9, "base", empty=empty))
        check(message(rng, joints, 9, "map", empty=empty, ragged=True))


def test_a_planner_trajectory_of_6001_points_reads_bit_for_bit():
    check(message(np.random.default_rng(5), 7, 6001, "world"))
