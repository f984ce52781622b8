"""The FollowJointTrajectory proxy: MoveIt's goals to joint_trajectory_controller, with effort.

MoveIt's controller manager sends ``control_msgs/action/FollowJointTrajectory`` goals to a
controller's action server. The node offers the same action, ``~/follow_joint_trajectory``: each
goal's trajectory is taken in as a trajectory on ``~/trajectory`` is (the same intake: joined from
the measured state, checked against the URDF limits, streamed as the node's reference), its points
for a controller (the node's ``effort_trajectory_rate`` grid and the goal's waypoints, with
effort = the inverse-dynamics torque, friction included) become the goal sent to the controller's
server (parameter ``controller_action``), tolerances as given. Acceptance, feedback, result and
cancel are relayed both ways, one controller goal per goal: the goal is accepted when the
controller accepts it, its feedback is the controller's, its result the controller's, and a
cancel of the goal cancels the controller's.

control_msgs is not a Python wheel: a ROS system has it with ros2_controllers; without it the
node offers no action and says so in one line (:func:`make_proxy`).
"""

import threading

import numpy as np
from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.serialization import deserialize_message
from rclpy.task import Future
from trajectory_msgs.msg import JointTrajectory

from ..recordings.msgfields import NS_PER_S
from ..recordings.trajectory_cdr import encode_joint_trajectory
from .trajectory_intake import Job

CONTROLLER_ANSWER = 10.0  # s: a controller that has not accepted or rejected a goal by then is not there


def make_proxy(node, controller_action):
    """The proxy of ``node`` (a FeedforwardNode) to ``controller_action``, or None (one log line)
    when control_msgs cannot be imported."""
    try:
        from control_msgs.action import FollowJointTrajectory
    except ImportError:
        node.get_logger().info("control_msgs is not installed: no ~/follow_joint_trajectory action (on a ROS "
                               "system it comes with ros2_controllers: ros-<distro>-control-msgs)")
        return None
    return FollowJointTrajectoryProxy(node, FollowJointTrajectory, controller_action)


def points_msg(points, stamp_ns, frame_id):
    """The JointTrajectory of an EffortTrajectory's points (q, qd, qdd, effort = tau)."""
    q, tau = points.qjet, points.taujet
    ns = np.round(points.t * NS_PER_S).astype(np.int64)
    raw = encode_joint_trajectory(points.joint_names, ns, q[:, 0], q[:, 1], q[:, 2], tau[:, 0],
                                  stamp_ns=stamp_ns, frame_id=frame_id)
    return deserialize_message(raw, JointTrajectory)


class LockedActionClient(ActionClient):
    """rclpy's ActionClient with its lock made before it joins the node's wait set.

    rclpy (up to 9.x at least) adds the client to the node's waitables and only then creates the
    lock its ``get_num_entities`` takes: an executor spinning the node in another thread
    (MultiThreadedExecutor; the proxy is made when a robot_description arrives) can meet the
    client in between, and its spin loop dies with AttributeError (reported upstream as rclpy bug #1589)."""

    def __init__(self, *args, **kwargs):
        self._lock = threading.Lock()
        super().__init__(*args, **kwargs)


class FollowJointTrajectoryProxy:
    """The action server ``~/follow_joint_trajectory`` of ``node`` and its client of
    ``controller_action``; see the module docstring."""

    def __init__(self, node, action, controller_action):
        self.node, self.action, self.controller_action = node, action, controller_action
        group = ReentrantCallbackGroup()  # goals, results and cancels of several goals at once
        self.client = LockedActionClient(node, action, controller_action, callback_group=group)
        self.server = ActionServer(node, action, "~/follow_joint_trajectory", execute_callback=self._execute,
                                   goal_callback=self._on_goal, cancel_callback=self._on_cancel,
                                   callback_group=group)
        self._forwarded = {}  # id(our goal request) -> [controller goal handle, our goal handle or None]

    def destroy(self):
        self.server.destroy()
        self.client.destroy()

    def _log(self):
        return self.node.get_logger()

    async def _on_goal(self, goal):
        """Accept ``goal`` when its trajectory is accepted and the controller accepts the goal
        made of it; reject it otherwise, saying why in one line."""
        if not self.client.server_is_ready():
            self._log().warning(f"rejected goal: the controller's action server {self.controller_action} is not "
                                "available")
            return GoalResponse.REJECT
        accepted = self._future()
        self.node.intake.submit(Job(self.node.get_clock().now().nanoseconds,
                                    lambda a, header: accepted.set_result((a, header)),
                                    lambda reason: accepted.set_result(reason), msg=goal.trajectory))
        outcome = await accepted
        if isinstance(outcome, str):
            self._log().warning(f"rejected goal: {outcome}")
            return GoalResponse.REJECT
        self.node._accepted(*outcome)  # streamed and published as a topic's trajectory is
        forward = self.action.Goal()
        for field in ("multi_dof_trajectory", "path_tolerance", "component_path_tolerance", "goal_tolerance",
                      "component_goal_tolerance", "goal_time_tolerance"):
            if hasattr(goal, field):
                setattr(forward, field, getattr(goal, field))
        forward.trajectory = points_msg(outcome[0].points, *outcome[1])
        relay = [None, None, []]  # controller goal handle, our goal handle, feedback before it existed
        sent = self.client.send_goal_async(forward, feedback_callback=lambda fb: self._feedback(relay, fb))
        handle = await self._within(sent, CONTROLLER_ANSWER)
        if handle is None:
            self._log().warning(f"rejected goal: the controller's action server {self.controller_action} did not "
                                f"answer within {CONTROLLER_ANSWER:g} s")
            return GoalResponse.REJECT
        if not handle.accepted:
            self._log().warning("rejected goal: the controller rejected it")
            return GoalResponse.REJECT
        relay[0] = handle
        self._forwarded[id(goal)] = relay
        return GoalResponse.ACCEPT

    def _feedback(self, relay, message):
        if relay[1] is None:
            relay[2].append(message.feedback)
        else:
            relay[1].publish_feedback(message.feedback)

    async def _execute(self, goal_handle):
        """Relay the controller's feedback and result; the goal ends as the controller's does."""
        relay = self._forwarded[id(goal_handle.request)]
        relay[1] = goal_handle
        for feedback in relay[2]:
            goal_handle.publish_feedback(feedback)
        relay[2].clear()
        try:
            outcome = await relay[0].get_result_async()
        finally:
            self._forwarded.pop(id(goal_handle.request), None)
        if outcome.status == GoalStatus.STATUS_SUCCEEDED:
            goal_handle.succeed()
        elif outcome.status == GoalStatus.STATUS_CANCELED:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        return outcome.result

    def _on_cancel(self, goal_handle):
        """A cancel of a goal is a cancel of its controller goal; the goal ends when the
        controller's does (its result relayed by :meth:`_execute`)."""
        relay = self._forwarded.get(id(goal_handle.request))
        if relay is None or relay[0] is None:
            return CancelResponse.REJECT
        relay[0].cancel_goal_async()
        return CancelResponse.ACCEPT

    async def _within(self, future, seconds):
        """``future``'s result, or None when it is not done within ``seconds``."""
        either = self._future()
        timer = self.node.create_timer(seconds, lambda: either.done() or either.set_result(None))
        future.add_done_callback(lambda f: either.done() or either.set_result(f.result()))
        try:
            return await either
        finally:
            self.node.destroy_timer(timer)

    def _future(self):
        """A Future completed from the intake thread that wakes the executor when done (a plain
        Future would be seen only at the executor's next wake-up)."""
        future = Future(executor=self.node.executor)
        future.add_done_callback(lambda _: None)
        return future
