"""Base parameters: as many as the regressor's numerical rank, the same torques from beta as from
pi at states never seen, readable names, the closed form of a planar arm."""

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics.identification.base_parameters import base_parameters, random_states, standard_names
from oracles import erd_model, rel_err


@pytest.mark.parametrize("name", ["iiwa14", "ur5", "talos"])
def test_base_torques_equal_standard_torques_at_new_states(name):
    model = hd.load_robot(name) if name == "iiwa14" else erd_model(name)
    base = base_parameters(model, friction=True)
    pi = np.r_[hd.inertial_parameters(model).ravel(), np.arange(3 * model.n_dof) % 5 + 0.5]
    q, qd, qdd = random_states(model, 30, seed=99)       # other states than the decomposition's
    Y = hd.regressor(model, q, qd, qdd, friction=True)
    assert rel_err(base.columns(Y) @ base.base(pi), Y @ pi) < 1e-10
    # rank: the singular values of the stacked regressor fall by orders of magnitude after r
    s = np.linalg.svd(Y.reshape(-1, Y.shape[-1]), compute_uv=False)
    assert s[base.rank - 1] / s[0] > 1e-6 and (base.rank == len(s) or s[base.rank] / s[0] < 1e-11)
    np.testing.assert_array_equal(base.K[:, base.independent], np.eye(base.rank))


def test_planar_arm_has_the_textbook_base_parameters(planar_2r):
    """Two parallel revolute joints, link length L (Khalil and Dombre, ch. 12): the first body's
    zz-inertia takes m2 L^2 and its first moment along the link takes m2 L; the rest of the
    second body's mass is invisible."""
    base = base_parameters(planar_2r)
    L = planar_2r.references[1][0, 3]
    assert base.rank == 6
    assert set(base.names) == {f"mx_link1 + {L:.4g} m_link2", "my_link1", f"Izz_link1 + {L * L:.4g} m_link2",
                               "mx_link2", "my_link2", "Izz_link2"}


def test_names_and_friction_parameters(iiwa):
    base = base_parameters(iiwa, friction=True)
    names = standard_names(iiwa, friction=True)
    assert names[:3] == ("m_iiwa_link_1", "mx_iiwa_link_1", "my_iiwa_link_1")
    assert names[-3:] == ("viscous_iiwa_joint_7", "coulomb_iiwa_joint_7", "offset_iiwa_joint_7")
    assert set(names[70:]) <= set(base.names)           # every friction parameter is identifiable
    assert "Izz_iiwa_link_7" in base.names and not any(nm.startswith("m_iiwa_link_1") for nm in base.names)
