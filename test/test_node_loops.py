"""feedforward_node serving a mechanism with loops, with real rclpy over DDS on loopback: the
shipped four-bar (Drake's <loop_joint> in its URDF), its crank's trajectory streamed and its
profile computed, tau_a and its derivatives equal to the library's over the whole motion."""

import json

import numpy as np
import pytest

from ros_harness import LATCHED, context, feedforward_node, harness, rclpy, refused_start, wait_for  # noqa: F401

import hod_dynamics as hd  # noqa: E402
from hod_dynamics.errors import StartupError  # noqa: E402
from hod_dynamics.ros.conversions import to_seconds, trajectory_msg  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

NS = "/hod_feedforward"
ASSEMBLY = {"coupler_joint": -0.95, "rocker_joint": 2.19}  # the open four-bar (doc/loops.md)
LOOPS = dict(urdf_path="planar_fourbar", loops="urdf", assembly_joints=list(ASSEMBLY),
             assembly_positions=list(ASSEMBLY.values()))


def fourbar():
    return hd.RobotModel.from_urdf(hd.robot_path("planar_fourbar"), loops="urdf", assembly=ASSEMBLY)


def stamp_ns(msg):
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def test_a_four_bar_streams_tau_a_and_its_derivatives_through_a_turn_and_a_half_of_its_crank(harness):
    """The crank turns by 9.4 rad in 2 s (a trajectory naming the actuated joint only): every
    sample streamed (computed in chunks of 0.1 s, each closed from the one before) carries
    tau_a, tau_a' and tau_a'' of the whole motion closed once from the assembly (1e-9), from
    its first sample on (the trajectory, stamped 0, starts when accepted, a few hundred ms of
    work here); the points for a controller, stamped with that start, carry tau_a =
    inverse_dynamics of the mechanism at each point."""
    node = feedforward_node(harness, publish_rate=200.0, initial_positions=[0.0], **LOOPS)
    model = fourbar()
    assert isinstance(node.model, hd.LoopModel) and list(node.model.joint_names) == ["crank_joint"]
    ff = harness.collect(JointTrajectory, f"{NS}/feedforward", qos=2000)
    jets = [harness.collect(JointState, f"{NS}/{topic}", qos=2000) for topic in ("tau", "tau_dot", "tau_ddot")]
    points = harness.collect(JointTrajectory, f"{NS}/trajectory_with_effort")
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    pub.publish(trajectory_msg(["crank_joint"], [0.0, 1.0, 2.0], np.array([[0.0], [4.0], [9.4]])))
    wait_for(lambda: node.stream.active is not None and node.stream.active[0] is node.latest, 10, "the start")
    traj, start = node.stream.active
    wait_for(lambda: ff and stamp_ns(ff[-1]) > start + 2_050_000_000, 20, "the whole motion")
    wait_for(lambda: points, 20, "the points for a controller")
    assert stamp_ns(points[-1]) == start  # the controller runs them on the stream's time base
    # the trajectory's samples (not the hold's before it) that came on every topic, by stamp
    by_stamp = [{stamp_ns(m): m.effort[0] for m in box} for box in jets]
    stamps = sorted(stamp_ns(m) for m in ff if start <= stamp_ns(m) <= start + 2_000_000_000
                    and all(stamp_ns(m) in b for b in by_stamp))
    t = (np.array(stamps) - start) * 1e-9
    assert len(t) > 300 and t.min() < 0.05 and t.max() > 1.95
    want = hd.time_derivatives(model, traj.jet(t, 4), 2)[:, :, 0]      # closed once, in order
    got = np.array([[b[s] for b in by_stamp] for s in stamps])
    assert traj.jet(t, 0)[:, 0, 0].max() > 1.4 * 2 * np.pi              # through a turn and a half
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    sent = points[-1].points
    q, qd, qdd = (np.array([getattr(p, f) for p in sent]) for f in ("positions", "velocities", "accelerations"))
    np.testing.assert_allclose(np.array([p.effort for p in sent]), hd.inverse_dynamics(model, q, qd, qdd),
                               rtol=1e-9, atol=1e-9)


def test_a_four_bar_profile_from_the_service_is_the_mechanism_s(harness):
    node = feedforward_node(harness, publish_rate=100.0, initial_positions=[0.0], **LOOPS)
    profile = harness.collect(JointTrajectory, f"{NS}/torque_profile", qos=LATCHED)
    pub = harness.publisher(JointTrajectory, f"{NS}/trajectory")
    pub.publish(trajectory_msg(["crank_joint"], [0.0, 1.0, 2.0], np.array([[0.0], [4.0], [9.4]])))
    wait_for(lambda: node.latest is not None, 10, "the trajectory")
    answer = harness.call(Trigger, f"{NS}/compute_profile", Trigger.Request(), timeout=120)
    assert answer.success, answer.message
    assert json.loads(answer.message)["joint_names"] == ["crank_joint"]
    wait_for(lambda: profile, 10, "the latched profile")
    sent = profile[-1].points
    q, qd, qdd = (np.array([getattr(p, f) for p in sent]) for f in ("positions", "velocities", "accelerations"))
    assert len(sent) > 100 and q.max() > 9.3
    np.testing.assert_allclose(np.array([p.effort for p in sent]), hd.inverse_dynamics(fourbar(), q, qd, qdd),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("params, message", [
    (dict(assembly_joints=["rocker_joint"], assembly_positions=[2.19]),
     "parameter assembly_joints ['rocker_joint']: an assembly is of a mechanism with loops (set loops or "
     "actuated_joints)"),
    (dict(loops="urdf", assembly_joints=["rocker_joint"], assembly_positions=[]),
     "parameters assembly_joints ['rocker_joint'] and assembly_positions [] differ in length"),
    (dict(loops="urdf", actuated_joints=["elbow"]), "elbow"),
])
def test_a_mechanism_the_parameters_do_not_describe_stops_the_start_naming_the_parameter(params, message):
    error = refused_start(urdf_path="planar_fourbar", **params)
    assert isinstance(error, StartupError) and message in str(error), repr(error)
