"""Fig. 4 of Müller and Kumar 2021 for the KUKA LBR iiwa 14: tau, tau_dot and tau_ddot over the
Gaz et al. test trajectory with the end-effector wrench W(t) = 10 sin(pi t) (1, 1, 1, 1, 1, 1) on
iiwa_link_7.

Solid lines: the closed form (Kumar and Müller 2021, sec. III; Müller and Kumar 2021); dots:
numerical differentiation (np.gradient) of the order below, as in the paper. Usage::

    python examples/iiwa_fig4.py [out.png] [--duration SECONDS]
"""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import hod_dynamics as hd  # noqa: E402
from hod_dynamics.model import paper_examples as paper  # noqa: E402

ORDER = 2


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="iiwa_fig4.png", help="PNG file to write")
    parser.add_argument("--duration", type=float, default=10.0, help="trajectory length (s)")
    args = parser.parse_args(argv)

    model = hd.load_robot("iiwa14").with_gravity(paper.IIWA_GRAVITY)
    t = np.linspace(0.0, args.duration, int(100 * args.duration) + 1)
    qjet = paper.gaz_trajectory_jet(t, ORDER + 3)
    wrench = paper.iiwa_wrench_jet(t, ORDER + 1)
    tau = hd.time_derivatives(model, qjet, ORDER, method="closed_form",
                              wrenches={paper.IIWA_WRENCH_LINK: wrench})  # (len(t), 3, 7)

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
