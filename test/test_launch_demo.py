"""launch_testing: demo.launch.py brings up the node and the demo publisher, motor references
stream, and at the end of the test, when launch_testing shuts the launch down (SIGINT to each
process), every process exits with code 0. Runs where launch_testing and launch_ros are
installed (a ROS 2 system); skipped otherwise (they are not available as wheels)."""

import os
import time
import unittest

import pytest

launch_testing = pytest.importorskip("launch_testing", reason="launch_testing is not installed (no ROS 2 system)")
pytest.importorskip("launch_ros", reason="launch_ros is not installed (no ROS 2 system)")

import launch  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
import rclpy  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402


@pytest.mark.launch_test
def generate_test_description():
    demo = os.path.join(get_package_share_directory("hod_dynamics"), "launch", "demo.launch.py")
    return launch.LaunchDescription([
        IncludeLaunchDescription(PythonLaunchDescriptionSource(demo)),
        launch_testing.actions.ReadyToTest(),
    ])


class TestDemoLaunch(unittest.TestCase):
    def test_motor_references_stream(self):
        rclpy.init()
        try:
            node = rclpy.create_node("hod_launch_probe")
            got = []
            node.create_subscription(JointTrajectory, "/hod_feedforward/motor_reference", got.append, 10)
            deadline = time.monotonic() + 30
            while len(got) < 10 and time.monotonic() < deadline:
                rclpy.spin_once(node, timeout_sec=0.1)
            self.assertGreaterEqual(len(got), 10, "no motor references from demo.launch.py")
            self.assertEqual(len(got[-1].points[0].positions), 7)
        finally:
            rclpy.shutdown()


@launch_testing.post_shutdown_test()
class TestDemoShutdown(unittest.TestCase):
    def test_every_process_exits_with_code_0(self, proc_info):
        self.assertEqual(len(proc_info.process_names()), 2, proc_info.process_names())
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0])

    def test_no_process_aborts_or_prints_a_traceback(self, proc_output):
        text = "".join(out.text.decode() for out in proc_output)
        self.assertNotIn("terminate called", text)
        self.assertNotIn("Traceback", text)
