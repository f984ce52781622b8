"""The FollowJointTrajectory proxy with real rclpy over DDS on loopback: a MoveIt-shaped goal
through the node's ``~/follow_joint_trajectory`` reaches a real action server playing
joint_trajectory_controller, with effort = inverse dynamics at every point; feedback, result and
cancel are relayed. control_msgs is built for the tests from its interface definitions
(test/data/control_msgs, test/ros_interfaces.py): there is no wheel of it."""

import os
import sys
import time

import numpy as np
import pytest

import ros_interfaces
from ros_harness import context, feedforward_node, harness, rclpy, wait_for  # noqa: F401

import hod_dynamics as hd  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CONTROLLERS = iter(range(100))  # a controller's action name per test: a server of the test before may be
                                # seen in the graph for a moment after it is gone
NS = "/hod_feedforward"


@pytest.fixture(scope="module")
def control_msgs():
    """The control_msgs Python package, built once per machine (cached)."""
    lacking = ros_interfaces.missing_tools()
    if lacking:
        pytest.skip(f"building control_msgs needs {lacking}")
    prefix = ros_interfaces.build(os.path.join(HERE, "data", "control_msgs"), "control_msgs")
    sys.path.insert(0, ros_interfaces.site_packages(prefix))
    from control_msgs.action import FollowJointTrajectory

    yield FollowJointTrajectory
    sys.path.remove(ros_interfaces.site_packages(prefix))


class FakeController:
    """A FollowJointTrajectory action server as joint_trajectory_controller answers: it records
    each goal, publishes a feedback per point (``period`` s apart) and succeeds at the last one,
    or ends the goal canceled when a cancel was asked for."""

    def __init__(self, harness, action, name, period=0.02):
        from rclpy.action import ActionServer, CancelResponse
        from rclpy.callback_groups import ReentrantCallbackGroup
        from rclpy.executors import MultiThreadedExecutor

        self.action, self.period, self.goals, self.cancelled = action, period, [], []
        self.node = rclpy.create_node("fake_joint_trajectory_controller", context=harness.context)
        self.server = ActionServer(self.node, action, name, self._execute,
                                   cancel_callback=lambda handle: CancelResponse.ACCEPT,
                                   callback_group=ReentrantCallbackGroup())
        harness.actions.append(self.server)
        harness._spin(self.node, MultiThreadedExecutor(num_threads=2, context=harness.context))

    def _execute(self, handle):
        goal = handle.request
        self.goals.append(goal)
        for k, point in enumerate(goal.trajectory.points):
            if handle.is_cancel_requested:
                self.cancelled.append(goal)
                handle.canceled()
                return self.action.Result(error_code=self.action.Result.SUCCESSFUL, error_string="canceled")
            feedback = self.action.Feedback(joint_names=goal.trajectory.joint_names, desired=point, index=k)
            handle.publish_feedback(feedback)
            time.sleep(self.period)
        handle.succeed()
        return self.action.Result(error_code=self.action.Result.SUCCESSFUL, error_string="reached")


def moveit_goal(action, model, duration=1.2, points=25, start=(0.1,) * 7):
    """A goal as MoveIt's controller manager sends one: every point with positions, velocities
    and accelerations of a time-parameterised path (a smooth rest-to-rest profile), header
    stamp 0, tolerances for some joints, a goal time tolerance."""
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectoryPoint

    goal = action.Goal()
    goal.trajectory.joint_names = list(model.joint_names)
    s = np.linspace(0.0, 1.0, points)
    shape = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5          # rest to rest
    rate = (30 * s ** 2 - 60 * s ** 3 + 30 * s ** 4) / duration
    accel = (60 * s - 180 * s ** 2 + 120 * s ** 3) / duration ** 2
    move = np.linspace(0.2, 0.5, model.n_dof)
    for k in range(points):
        p = JointTrajectoryPoint()
        p.positions = (np.asarray(start) + move * shape[k]).tolist()
        p.velocities = (move * rate[k]).tolist()
        p.accelerations = (move * accel[k]).tolist()
        sec, nanosec = divmod(int(round(s[k] * duration * 1e9)), 10**9)
        p.time_from_start = Duration(sec=sec, nanosec=nanosec)
        goal.trajectory.points.append(p)
    from control_msgs.msg import JointTolerance

    goal.path_tolerance = [JointTolerance(name=model.joint_names[0], position=0.1, velocity=0.5)]
    goal.goal_tolerance = [JointTolerance(name=n, position=0.01) for n in model.joint_names]
    goal.goal_time_tolerance = Duration(sec=0, nanosec=500_000_000)
    return goal


def client_of(harness, action):
    from hod_dynamics.ros.follow_joint_trajectory import LockedActionClient

    # made while the client node spins in another thread, as the proxy's own client may be:
    # rclpy's ActionClient then races its executor (see LockedActionClient)
    client = LockedActionClient(harness.client, action, f"{NS}/follow_joint_trajectory")
    harness.actions.append(client)
    assert client.wait_for_server(timeout_sec=15), "the proxy's action server"
    return client


def test_without_control_msgs_the_node_serves_and_says_it_has_no_action(harness, capfd):
    """Before the built control_msgs is put on the path (this module's first test), the node
    offers no action, says so in one line, and serves."""
    if "control_msgs" in sys.modules:
        pytest.skip("control_msgs was imported earlier in this process (run this module's tests in order)")
    node = feedforward_node(harness)
    wait_for(lambda: node.ready, 10, "the node")
    assert node.proxy is None
    assert any("control_msgs is not installed: no ~/follow_joint_trajectory action" in line
               for line in capfd.readouterr().err.splitlines())


def test_a_moveit_goal_reaches_the_controller_with_inverse_dynamics_effort_and_comes_back(harness, control_msgs):
    action, name = control_msgs, f"/jtc_{next(CONTROLLERS)}/follow_joint_trajectory"
    controller = FakeController(harness, action, name)
    node = feedforward_node(harness, controller_action=name, on_limit_violation="reject")
    client = client_of(harness, action)
    goal = moveit_goal(action, node.model)
    feedback = []
    sent = client.send_goal_async(goal, feedback_callback=lambda msg: feedback.append(msg.feedback))
    wait_for(sent.done, 20, "the goal's acceptance")
    handle = sent.result()
    assert handle.accepted
    result = handle.get_result_async()
    wait_for(result.done, 30, "the result")
    assert result.result().status == 4  # GoalStatus.STATUS_SUCCEEDED
    assert result.result().result.error_string == "reached"
    forwarded = controller.goals[0]
    points = forwarded.trajectory.points
    q, qd, qdd, effort = (np.array([getattr(p, f) for p in points])
                          for f in ("positions", "velocities", "accelerations", "effort"))
    np.testing.assert_allclose(effort, hd.inverse_dynamics(node.model, q, qd, qdd), rtol=0, atol=1e-9)
    times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in points])
    sent_times = [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in goal.trajectory.points]
    assert set(np.round(sent_times, 9)) <= set(np.round(times, 9))  # every waypoint is a point
    for p_sent, t_sent in zip(goal.trajectory.points, sent_times):  # where the goal had a point: the same state
        k = int(np.argmin(np.abs(times - t_sent)))
        np.testing.assert_allclose(q[k], p_sent.positions, atol=1e-12)
        np.testing.assert_allclose(qd[k], p_sent.velocities, atol=1e-9)
    assert list(forwarded.trajectory.joint_names) == list(node.model.joint_names)
    assert [t.name for t in forwarded.goal_tolerance] == list(node.model.joint_names)
    assert forwarded.path_tolerance[0].position == 0.1 and forwarded.goal_time_tolerance.nanosec == 500_000_000
    wait_for(lambda: len(feedback) == len(points), 10, "every feedback")
    assert [f.index for f in feedback] == list(range(len(points)))
    assert node.stats["accepted"] == 1  # the goal is the stream's reference too


def test_a_cancel_from_the_client_cancels_the_controllers_goal(harness, control_msgs):
    action, name = control_msgs, f"/jtc_{next(CONTROLLERS)}/follow_joint_trajectory"
    controller = FakeController(harness, action, name, period=0.05)
    node = feedforward_node(harness, controller_action=name)
    client = client_of(harness, action)
    feedback = []
    sent = client.send_goal_async(moveit_goal(action, node.model, duration=6.0),
                                  feedback_callback=lambda msg: feedback.append(msg))
    wait_for(sent.done, 20, "the goal's acceptance")
    handle = sent.result()
    assert handle.accepted
    wait_for(lambda: len(feedback) >= 2, 10, "feedback")
    cancel = handle.cancel_goal_async()
    wait_for(cancel.done, 10, "the cancel's answer")
    assert len(cancel.result().goals_canceling) == 1
    result = handle.get_result_async()
    wait_for(result.done, 10, "the result")
    assert result.result().status == 5  # GoalStatus.STATUS_CANCELED
    assert controller.cancelled and controller.cancelled[0] is controller.goals[0]
    assert len(feedback) < len(controller.goals[0].trajectory.points)


def test_a_goal_the_node_refuses_or_without_a_controller_is_rejected_and_the_node_keeps_serving(
        harness, control_msgs, capfd):
    action, name = control_msgs, f"/jtc_{next(CONTROLLERS)}/follow_joint_trajectory"
    node = feedforward_node(harness, controller_action=name)
    client = client_of(harness, action)
    sent = client.send_goal_async(moveit_goal(action, node.model))  # no controller yet
    wait_for(sent.done, 20, "the answer")
    assert not sent.result().accepted
    controller = FakeController(harness, action, name)
    wait_for(lambda: node.proxy.client.server_is_ready(), 15, "the controller's server")
    bad = moveit_goal(action, node.model)
    bad.trajectory.joint_names[2] = "elbow"
    sent = client.send_goal_async(bad)
    wait_for(sent.done, 20, "the answer")
    assert not sent.result().accepted and not controller.goals
    lines = [line for line in capfd.readouterr().err.splitlines() if "rejected goal" in line]
    assert len(lines) == 2 and "is not available" in lines[0] and "unknown joints ['elbow']" in lines[1], lines
    sent = client.send_goal_async(moveit_goal(action, node.model))
    wait_for(sent.done, 20, "the answer")
    assert sent.result().accepted


def test_a_destroyed_node_with_the_proxy_leaves_the_graph(context, control_msgs):
    """rclpy's destroy_node leaves a node's action servers and clients alive, and the node with
    them; the node destroys its proxy first, so a relaunched node is the only one of its name."""
    from ros_harness import Harness

    first = Harness(context)
    node = feedforward_node(first, controller_action=f"/jtc_{next(CONTROLLERS)}/follow_joint_trajectory")
    wait_for(lambda: node.ready and node.proxy is not None, 10, "the node and its proxy")
    first.close()
    second = Harness(context)
    try:
        wait_for(lambda: ("hod_feedforward", "/") not in second.client.get_node_names_and_namespaces(), 10,
                 "the destroyed node to leave the graph")
    finally:
        second.close()


def test_the_proxys_action_client_can_be_waited_on_the_moment_it_joins_the_node(harness, control_msgs):
    """An executor in another thread may wait on the client as soon as it is among the node's
    waitables; rclpy's own ActionClient is not ready for that yet (ros2/rclpy issue 1589), the
    proxy's is. The executor's call is made at that moment, deterministically."""
    from hod_dynamics.ros.follow_joint_trajectory import LockedActionClient

    node = rclpy.create_node("hod_test_waitables", context=harness.context)
    joined = node.add_waitable
    node.add_waitable = lambda waitable: (joined(waitable), waitable.get_num_entities())
    try:
        client = LockedActionClient(node, control_msgs, "/as_the_proxy_makes_it")
        assert client.get_num_entities().num_clients == 3  # goal, cancel and result services
        client.destroy()
    finally:
        node.destroy_node()


def test_the_moveit_controllers_file_points_moveit_at_the_proxy():
    """config/moveit_controllers.yaml: MoveIt's simple controller manager sends the iiwa 14's
    goals to <controller>/<action_ns> = the node's ~/follow_joint_trajectory."""
    import yaml

    with open(os.path.join(HERE, "..", "config", "moveit_controllers.yaml"), encoding="utf-8") as fh:
        config = yaml.safe_load(fh)
    manager = config["moveit_simple_controller_manager"]
    assert config["moveit_controller_manager"] == "moveit_simple_controller_manager/MoveItSimpleControllerManager"
    (name,) = manager["controller_names"]
    controller = manager[name]
    assert f"/{name}/{controller['action_ns']}" == f"{NS}/follow_joint_trajectory"
    assert controller["type"] == "FollowJointTrajectory" and controller["default"] is True
    assert controller["joints"] == list(hd.load_robot("iiwa14").joint_names)
