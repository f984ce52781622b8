"""Seed 000 Fig. 4 for the KUKA LBR iiwa 14: tau, tau_dot and tau_ddot over the Gaz et al. test
trajectory with the end-effector wrench W(t) = 10 sin(pi t) (1, 1, 1, 1, 1, 1) on iiwa_link_7.

Solid lines: the closed form (seed 001 sec. III / seed 000); dots: numerical differentiation
(np.gradient) of the order below, as in the paper. Usage::

    python examples/iiwa_fig4.py [out.png] [--duration SECONDS]
"""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import hod_dynamics as hd  # noqa: E402

# Gaz et al. 2019 eq. 31 (REFERENCE.md sec. 4): q_i(t) = a_i cos(w_i t)
A = np.array([-1.2943753211777664, 0.7175341454355011, -0.5691380764966176, 0.5848944158627155,
              1.6216297151633214, -0.9187855709752027, 0.4217605991935227])
W = np.array([1.7073873117335832, 3.079992797637052, 2.1084514453622774, 3.5903916041026207,
              1.4183262544423447, 2.285625793808507, 5.927533308659986])
ORDER = 2


def trajectory(t):
    """Joint jet (len(t), ORDER+3, 7) and wrench jet (len(t), ORDER+1, 6), exact derivatives."""
    k = np.arange(ORDER + 3)[:, None]
    q = A * W ** k * np.cos(W * t[:, None, None] + k * np.pi / 2)
    k = k[:ORDER + 1]
    wrench = np.repeat(10.0 * np.pi ** k * np.sin(np.pi * t[:, None, None] + k * np.pi / 2), 6, -1)
    return q, wrench


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="iiwa_fig4.png", help="PNG file to write")
    parser.add_argument("--duration", type=float, default=10.0, help="trajectory length (s)")
    args = parser.parse_args(argv)

    model = hd.load_robot("iiwa14").with_gravity((0.0, 0.0, -9.80665))
    t = np.linspace(0.0, args.duration, int(100 * args.duration) + 1)
    qjet, wrench = trajectory(t)
    tau = hd.time_derivatives(model, qjet, ORDER, method="closed_form",
                              wrenches={"iiwa_link_7": wrench})  # (len(t), 3, 7)

    names = ["tau", "d tau / dt", "d^2 tau / dt^2"]
    units = ["N m", "N m / s", "N m / s^2"]
    fig, axes = plt.subplots(ORDER + 1, 1, figsize=(9, 10), sharex=True)
    colours = plt.cm.tab10(np.arange(model.n_dof))
    for k, ax in enumerate(axes):
        for i in range(model.n_dof):
            ax.plot(t, tau[:, k, i], color=colours[i], lw=1.2, label=f"joint {i + 1}")
            if k:
                numeric = np.gradient(tau[:, k - 1, i], t)
                ax.plot(t[::10], numeric[::10], ".", color=colours[i], ms=3)
        ax.set_ylabel(f"{names[k]} ({units[k]})")
        ax.grid(alpha=0.3)
    axes[0].set_title("KUKA iiwa 14: inverse dynamics and its time derivatives\n"
                      "(lines: closed form; dots: numerical differentiation)")
    axes[0].legend(ncol=7, fontsize=7, loc="upper center")
    axes[-1].set_xlabel("t (s)")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
