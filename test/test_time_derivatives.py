"""Time derivatives of inverse dynamics (both methods) against independent oracles.

Oracles: Pinocchio's exact first-order route tau_dot = T_q qd + T_v qdd + M q3, 7-point central
differences (6th order) of Pinocchio and of our lower orders, and the agreement of the two
formulations (recursive, Kumar and Müller 2021, sec. II; closed form, sec. III).
"""

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.model.paper_examples import IIWA_WRENCH_LINK, gaz_trajectory_jet, iiwa_wrench_jet
from oracles import (CENTRAL_7, PinocchioRobot, chain_urdf, pinocchio_robot, rel_err,
                     sinusoid_jet)

METHODS = ("recursive", "closed_form")
H = 2e-3  # FD step: truncation ~ (H w)^6 / 140 and round-off ~ 1e-16 / H both well below 1e-8
T0 = 0.7


@pytest.fixture(scope="module", params=["panda", "ur5", "talos", "chain50"])
def case(request):
    """(name, our model, PinocchioRobot) for the robots of the acceptance list."""
    if request.param == "chain50":
        text = chain_urdf(50)
        model = hd.RobotModel.from_urdf(text)
        return "chain50", model, PinocchioRobot(text, model)
    model, pinrobot = pinocchio_robot(request.param)
    return (request.param, model, pinrobot)


@pytest.fixture(scope="module")
def tree_case(random_tree):
    text, model = random_tree
    return "random", model, PinocchioRobot(text, model)


def pinocchio_tau_dot(pinrobot, jet):
    """Exact tau_dot from Pinocchio's first-order partials; jet (rows >= 4, n)."""
    q, qd, qdd, q3 = jet[:4]
    dq, dv, M = pinrobot.rnea_derivatives(q, qd, qdd)
    return dq @ qd + dv @ qdd + M @ q3


def samples(n, order, t0=T0, seed=0):
    """Jets at the 7 stencil times around t0: (7, order+3, n)."""
    return sinusoid_jet(n, t0 + H * np.arange(-3, 4), order + 3, seed)


def check_against_pinocchio(model, pinrobot, method):
    n = model.n_dof
    jets = sinusoid_jet(n, T0 + H * np.arange(-3, 4), 5)
    ours = hd.time_derivatives(model, jets[:, :4], 1, method=method)
    tau = np.array([pinrobot.rnea(*j[:3]) for j in jets])
    assert rel_err(ours[:, 0], tau) < 1e-11
    exact = np.array([pinocchio_tau_dot(pinrobot, j) for j in jets])
    assert rel_err(ours[3, 1], exact[3]) < 1e-10
    ddot = hd.time_derivatives(model, jets[3], 2, method=method)[2]
    fd = np.tensordot(CENTRAL_7, exact, axes=(0, 0)) / H
    assert rel_err(ddot, fd) < 1e-8


@pytest.mark.parametrize("method", METHODS)
def test_first_second_order_match_pinocchio(case, method):
    _, model, pinrobot = case
    check_against_pinocchio(model, pinrobot, method)


@pytest.mark.parametrize("method", METHODS)
def test_first_second_order_match_pinocchio_random_tree(tree_case, method):
    _, model, pinrobot = tree_case
    check_against_pinocchio(model, pinrobot, method)


def check_induction(model, method, order=6):
    """Row k of our jet equals the central difference of our row k-1, k = 1..order."""
    jets = samples(model.n_dof, order)
    out = hd.time_derivatives(model, jets, order, method=method)  # (7, order+1, n)
    fd = np.tensordot(CENTRAL_7, out, axes=(0, 0)) / H
    for k in range(1, order + 1):
        assert rel_err(out[3, k], fd[k - 1]) < 1e-8, (method, k)
    # lower rows do not depend on the requested order
    low = hd.time_derivatives(model, jets[3, :4], 1, method=method)
    assert rel_err(low, out[3, :2]) < 1e-14


@pytest.mark.parametrize("method", METHODS)
def test_orders_up_to_6_by_induction(case, method):
    check_induction(case[1], method)


@pytest.mark.parametrize("method", METHODS)
def test_orders_up_to_6_by_induction_random_tree(random_tree, method):
    check_induction(random_tree[1], method)


def check_agreement(model, seed):
    """Recursive and closed form agree for orders 0..4."""
    jets = sinusoid_jet(model.n_dof, [0.3, 1.9], 7, seed=seed)
    a = hd.time_derivatives(model, jets, 4, method="recursive")
    b = hd.time_derivatives(model, jets, 4, method="closed_form")
    for k in range(5):
        assert rel_err(b[:, k], a[:, k]) < 1e-11, k


def test_recursive_and_closed_form_agree(case):
    check_agreement(case[1], seed=3)


def test_recursive_and_closed_form_agree_random_tree(random_tree):
    check_agreement(random_tree[1], seed=4)


# -- external wrenches ----------------------------------------------------------------------------
def stencil(t0):
    return t0 + H * np.arange(-3, 4)


@pytest.mark.parametrize("method", METHODS)
def test_iiwa_gaz_trajectory_with_end_effector_wrench(iiwa_pinocchio, method):
    """Müller and Kumar 2021, sec. 6.2: tau matches Pinocchio rnea with the wrench as external force;
    tau_dot matches the central difference of Pinocchio's tau, tau_ddot that of our tau_dot."""
    model, pinrobot = iiwa_pinocchio
    for t0 in (0.35, 1.6):
        t = stencil(t0)
        jets, W = gaz_trajectory_jet(t, 5), iiwa_wrench_jet(t, 3)
        ours = hd.time_derivatives(model, jets, 2, method=method,
                                   wrenches={IIWA_WRENCH_LINK: W})
        pin_tau = np.array([
            pinrobot.rnea(*j[:3], pinrobot.external_forces({IIWA_WRENCH_LINK: w[0]}, j[0]))
            for j, w in zip(jets, W)])
        assert rel_err(ours[:, 0], pin_tau) < 1e-12
        assert rel_err(ours[3, 1], np.tensordot(CENTRAL_7, pin_tau, axes=(0, 0)) / H) < 1e-8
        assert rel_err(ours[3, 2], np.tensordot(CENTRAL_7, ours[:, 1], axes=(0, 0)) / H) < 1e-8
        other = hd.time_derivatives(model, jets, 2, method=METHODS[method == "recursive"],
                                    wrenches={IIWA_WRENCH_LINK: W})
        assert rel_err(other, ours) < 1e-12


WRENCH_LINKS = [("panda", ["panda_hand"]), ("panda", ["panda_link4", "panda_link7"]),
                ("iiwa", ["iiwa_link_ee", "iiwa_link_3"])]


@pytest.mark.parametrize("robot, links", WRENCH_LINKS)
@pytest.mark.parametrize("method", METHODS)
def test_wrenches_match_pinocchio_and_finite_differences(robot, links, method, iiwa_pinocchio,
                                                         rng):
    model, pinrobot = iiwa_pinocchio if robot == "iiwa" else pinocchio_robot("panda")
    n, order = model.n_dof, 3
    t = stencil(0.4)
    jets = sinusoid_jet(n, t, order + 3, seed=7)
    # wrench jets: smooth random sinusoids, one per link, exact derivatives
    amp, w, ph = rng.normal(size=(3, len(links), 6)) * [[[20.0]], [[1.5]], [[3.0]]]
    k = np.arange(order + 1)[:, None]
    wrenches = {ln: amp[i] * w[i] ** k * np.sin(w[i] * t[:, None, None] + ph[i] + k * np.pi / 2)
                for i, ln in enumerate(links)}
    ours = hd.time_derivatives(model, jets, order, method=method, wrenches=wrenches)
    pin_tau = np.array([pinrobot.rnea(*jets[s, :3], pinrobot.external_forces(
        {ln: W[s, 0] for ln, W in wrenches.items()}, jets[s, 0])) for s in range(7)])
    assert rel_err(ours[:, 0], pin_tau) < 1e-12
    fd = np.tensordot(CENTRAL_7, ours, axes=(0, 0)) / H
    for kk in range(1, order + 1):
        assert rel_err(ours[3, kk], fd[kk - 1]) < 1e-8, kk
    # the wrench term alone, from the public closed-form piece
    q_ext = hd.algorithms.closed_form.external_wrench_derivatives(model, jets, order, wrenches)
    free = hd.time_derivatives(model, jets, order, method=method)
    assert rel_err(free + q_ext, ours) < 1e-12


def test_wrench_batch_broadcasts(panda):
    """One wrench jet (no batch axis) applies to every trajectory sample."""
    jets = sinusoid_jet(panda.n_dof, [0.1, 0.5, 0.9], 4)
    W = np.arange(12.0).reshape(2, 6)
    both = [hd.time_derivatives(panda, jets, 1, method=m, wrenches={"panda_hand": W})
            for m in METHODS]
    each = [hd.time_derivatives(panda, jets[s], 1, wrenches={"panda_hand": W}) for s in range(3)]
    assert rel_err(both[0], np.array(each)) < 1e-14
    assert rel_err(both[1], both[0]) < 1e-12


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("wrench, error, words", [
    ({"no_such_link": np.zeros((2, 6))}, hd.ModelError, "no_such_link"),
    ({"panda_hand": np.zeros((3, 6))}, hd.InputError, "panda_hand"),
    ({"panda_hand": np.zeros((2, 3))}, hd.InputError, "panda_hand"),
    ({"panda_hand": np.full((2, 6), np.nan)}, hd.InputError, "non-finite"),
    ({"panda_hand": np.zeros((4, 2, 6))}, hd.InputError, "broadcast"),
])
def test_bad_wrench_raises(panda, method, wrench, error, words):
    jets = sinusoid_jet(panda.n_dof, [0.1, 0.2], 4)
    with pytest.raises(error, match=words):
        hd.time_derivatives(panda, jets, 1, method=method, wrenches=wrench)


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("qjet, order, words", [
    (np.zeros((3, 7)), 1, "shape"),            # too few rows for order 1
    (np.zeros((5, 7)), 1, "shape"),            # too many rows
    (np.zeros((4, 6)), 1, "shape"),            # wrong joint count
    (np.zeros(7), 0, "shape"),                 # not a jet
    (np.full((4, 7), np.nan), 1, "non-finite"),
    (np.zeros((2, 7)), -1, "order"),
    (np.zeros((4, 7)), 1.0, "order"),
    (np.zeros((4, 7)), True, "order"),
])
def test_bad_input_raises(panda, method, qjet, order, words):
    with pytest.raises(hd.InputError, match=words):
        hd.time_derivatives(panda, qjet, order, method=method)


def test_unknown_method_raises(panda):
    with pytest.raises(hd.InputError, match="method"):
        hd.time_derivatives(panda, np.zeros((3, 7)), 0, method="symbolic")
