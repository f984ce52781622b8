"""The figure of doc/ros2_interface.md, "Joining from the robot's state": a single point 2 s
ahead sent to a feedforward stream while the robot is elsewhere and moving; the trajectory starts
at the measured positions and velocities and arrives at the point at 2 s, at rest.

    python examples/join_from_measured_state.py [OUT.png]
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hod_dynamics as hd  # noqa: E402
from hod_dynamics.feedforward.measured_state import MeasuredState  # noqa: E402
from hod_dynamics.feedforward.reference_stream import ReferenceStream  # noqa: E402

T0 = 100 * 1_000_000_000  # ns, the stream's clock when the point arrives


def main(out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model = hd.load_robot("iiwa14")
    stream = ReferenceStream(0.001, 2)
    stream.set_model(model, hold=np.zeros(7), now_ns=T0)
    measured = MeasuredState()
    # the robot measured 0.5 s before and at the arrival: moving (joint 2 and joint 4 shown)
    history = np.linspace(-0.5, 0.0, 51)
    q = lambda t: np.array([0.3, 0.2 + 0.15 * t, -0.1, -1.0 - 0.1 * t, 0.1, 0.5, 0.2])  # noqa: E731
    v = np.array([0.0, 0.15, 0.0, -0.1, 0.0, 0.0, 0.0])
    measured.update(model.joint_names, q(0.0), v, received_ns=T0)
    goal = np.array([0.5, 0.6, 0.0, -1.5, 0.2, 0.6, 0.3])
    accepted = stream.accept(list(model.joint_names), [2.0], goal[None], now_ns=T0,
                             state=measured.state(model.joint_names, T0))
    t = np.linspace(0.0, 2.4, 241)
    jet = accepted.trajectory.jet(t, 1)
    fig, axes = plt.subplots(2, 1, figsize=(7.5, 5.0), sharex=True)
    for j, color in ((1, "C0"), (3, "C3")):
        name = model.joint_names[j]
        axes[0].plot(history, [q(x)[j] for x in history], color=color, ls=":", label=f"{name} measured")
        axes[0].plot(t, jet[:, 0, j], color=color, label=f"{name} trajectory")
        axes[0].plot([2.0], [goal[j]], "o", color=color)
        axes[1].plot(history, np.full_like(history, v[j]), color=color, ls=":")
        axes[1].plot(t, jet[:, 1, j], color=color)
    axes[0].set_ylabel("position [rad]")
    axes[1].set_ylabel("velocity [rad/s]")
    axes[1].set_xlabel("time from the point's arrival [s]")
    axes[0].legend(fontsize=8, ncol=2)
    axes[0].set_title("A single point 2 s ahead, joined from the measured moving state")
    for ax in axes:
        ax.axvline(0.0, color="0.6", lw=0.8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return out


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else
               os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "doc", "join_from_measured_state.png")))
