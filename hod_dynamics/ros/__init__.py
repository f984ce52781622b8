"""The ROS 2 layer: nodes that turn messages into arrays and back. Imports rclpy; the core
(hod_dynamics.*) never imports this package."""
