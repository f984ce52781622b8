"""validation: each rule is checked in one place and reads the same from every entry point."""

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics import arrays
from hod_dynamics.model import validation
from hod_dynamics.feedforward.trajectory_feedforward import feedforward


@pytest.fixture(scope="module")
def solo():
    return hd.load_robot("solo12", floating_base=True)


def test_every_fixed_base_function_refuses_a_floating_model_with_one_message(solo):
    q, v = np.zeros(solo.nq), np.zeros(solo.nv)
    joints = np.zeros(solo.n_dof)
    calls = {
        "gravity_torques": lambda: hd.gravity_torques(solo, q),
        "coriolis_matrix": lambda: hd.coriolis_matrix(solo, q, v),
        "frame_pose/frame_jacobian": lambda: hd.frame_pose(solo, q, solo.root_link),
        "id_second_partials": lambda: hd.id_second_partials(solo, q, v, v, backend="numpy"),
        "id_partials_directional": lambda: hd.algorithms.id_partials_directional(solo, *[joints] * 6),
        "id_second_order_rate": lambda: hd.algorithms.id_second_order_rate(solo, *[joints] * 4),
        "SecondPartialsData": lambda: hd.algorithms.SecondPartialsData(solo),
        "regressor_time_derivatives": lambda: hd.regressor_time_derivatives(solo, np.zeros((3, solo.n_dof)), 0),
    }
    for what, call in calls.items():
        with pytest.raises(hd.InputError) as caught:
            call()
        assert str(caught.value) == (
            f"{what} takes fixed-base models; 'solo' has a floating base (floating-base models: "
            "inverse_dynamics, time_derivatives_floating, forward_dynamics, mass_matrix, "
            "kinetic_energy, id_partials, feedforward, regressor, regressors.regressor_time_derivatives_floating; "
            "or fix the base: build the model without floating_base=True, or with root_link)"), what


def test_the_floating_entry_point_refuses_a_fixed_model_naming_itself(iiwa):
    with pytest.raises(hd.InputError, match=r"^time_derivatives_floating\(model, q, vjet, order\) needs "
                                            r"a floating-base model; 'iiwa14' is fixed to the world"):
        hd.time_derivatives_floating(iiwa, np.zeros(7), np.zeros((2, 7)), 0)


@pytest.mark.parametrize("bad", [True, 2.0, -1, "2", None])
def test_an_order_is_an_integer_that_is_not_a_bool_wherever_it_is_given(iiwa, solo, bad):
    jet = np.zeros((5, 7))
    calls = (lambda: hd.time_derivatives(iiwa, jet, bad),
             lambda: hd.time_derivatives(iiwa, jet, bad, method="closed_form"),
             lambda: hd.time_derivatives_floating(solo, np.r_[np.zeros(6), 1.0, np.zeros(12)],
                                                  np.zeros((3, 18)), bad),
             lambda: feedforward(iiwa, hd.load_trajectory("iiwa14_demo"), 0.0, bad))
    for call in calls:
        with pytest.raises(hd.InputError) as caught:
            call()
        assert str(caught.value) == f"order must be an integer >= 0, got {bad!r}"


def test_trajectory_integers_follow_the_same_rule_with_a_trajectory_error():
    traj = hd.load_trajectory("iiwa14_demo")
    with pytest.raises(hd.TrajectoryError, match=r"^n_derivatives must be an integer >= 0, got True$"):
        traj.jet(0.0, True)
    with pytest.raises(hd.TrajectoryError, match=r"^continuity must be an integer >= 1, got 0$"):
        hd.Trajectory.from_waypoints(["a"], [0.0, 1.0], [[0.0], [1.0]], continuity=0)


def test_a_bounded_integer_names_its_few_values_and_the_reason():
    with pytest.raises(hd.InputError, match=r"^order must be 0, 1 or 2, got 3: because$"):
        arrays.whole_number("order", 3, 0, 2, why="because")
    with pytest.raises(hd.InputError, match=r"^k must be an integer in \[0, 8\], got 9$"):
        arrays.whole_number("k", 9, 0, 8)
    assert arrays.whole_number("k", np.int64(4), 0, 8) == 4
    assert type(arrays.whole_number("k", np.int64(4))) is int


@pytest.mark.parametrize("shape", [(-1,), "ab", 3, (2.5,), (True,), (np.bool_(True),)])
def test_a_batch_shape_is_a_tuple_of_whole_numbers(shape):
    with pytest.raises(hd.InputError, match=r"^batch_shape must be a tuple of whole numbers >= 0, got "):
        arrays.check_batch_shape(shape)
    assert arrays.check_batch_shape((np.int64(2), 3)) == (2, 3)


def test_a_jet_names_the_derivative_row_and_joint_of_a_non_finite_value(iiwa):
    jet = np.zeros((4, 7))
    jet[2, 5] = np.inf
    with pytest.raises(hd.InputError, match=r"qjet holds a non-finite value at index \(2, 5\) "
                                            r"\(derivative 2, joint 'iiwa_joint_6'\)"):
        validation.check_jet(iiwa, jet, 4)
    assert validation.check_jet(iiwa, np.zeros((2, 6, 7)), 4, at_least=True).shape == (2, 4, 7)


def test_a_floating_configuration_names_the_base_coordinate_and_the_sample(solo):
    q = np.tile(np.r_[np.zeros(6), 1.0, np.zeros(12)], (3, 1))
    q[1, 2] = np.nan
    with pytest.raises(hd.InputError, match=r"index \(1, 2\) \(base_z\)"):
        validation.split_configuration(solo, q)
    q[1, 2] = 0.0
    q[2, 6] = 0.5
    with pytest.raises(hd.InputError, match=r"at batch index \(2,\) has norm 0\.5"):
        validation.split_configuration(solo, q)
    v = np.zeros((2, 18))
    v[1, 4] = np.nan
    with pytest.raises(hd.InputError, match=r"index \(1, 4\) \(base_vy\)"):
        validation.check_velocity(solo, v, "v")


def test_result_arrays_are_refused_with_every_fault_named():
    shape = (2, 2)
    assert arrays.out_fault(np.zeros(shape), shape) == ""
    fault = arrays.out_fault(np.zeros((2, 3), dtype=np.float32)[:, :2], shape)
    assert fault == "dtype float32, an array that is not C-contiguous"
    with pytest.raises(hd.InputError, match=r"^out must be a tuple of 2 arrays \(a, b\) or a thing, got list"):
        arrays.check_out([np.zeros(shape)], shape, ("a", "b"), "a thing")
    with pytest.raises(hd.InputError, match=r"^out\[1\] must be .* got a read-only array"):
        frozen = np.zeros(shape)
        frozen.flags.writeable = False
        arrays.check_out((np.zeros(shape), frozen), shape, ("a", "b"))


def test_a_compiled_kernels_nan_is_named_by_the_same_check(iiwa):
    bad = np.zeros(7)
    bad[3] = np.nan
    with pytest.raises(hd.InputError, match=r"qd holds a non-finite value at index \(3,\) "
                                            r"\(joint 'iiwa_joint_4'\)"):
        validation.name_non_finite(iiwa, q=np.zeros(7), qd=bad)


# -- odd input that used to pass without a word ----------------------------------------------------
def test_text_is_refused_where_numbers_go_naming_the_argument(iiwa, solo):
    """float("0") reads text as a number: a column read as strings would pass unnoticed."""
    from hod_dynamics.feedforward.trajectory import load_trajectory

    zero = np.zeros(7)
    texts = {"q": lambda: hd.inverse_dynamics(iiwa, ["0"] * 7, zero, zero),
             "qd": lambda: hd.inverse_dynamics(iiwa, zero, np.array([b"0"] * 7), zero),
             "qjet": lambda: hd.time_derivatives(iiwa, np.full((4, 7), "0.5"), 1),
             "qdd": lambda: hd.id_partials(iiwa, zero, zero, np.array(["1", 2, 3, 4, 5, 6, 7], dtype=object)),
             "v": lambda: hd.inverse_dynamics(solo, np.r_[0, 0, 0, 0, 0, 0, 1.0, np.zeros(12)],
                                              ["0"] * 18, np.zeros(18))}
    for name, call in texts.items():
        with pytest.raises(hd.InputError, match=rf"^{name} must be an array of real numbers, got text such as"):
            call()
    traj = load_trajectory("iiwa14_demo")
    with pytest.raises(hd.TrajectoryError, match=r"^evaluation times t must be an array of real numbers, got text"):
        traj.jet(["0.5", "1.0"], 2)
    with pytest.raises(hd.InputError, match=r"^t must be an array of real numbers, got text"):
        feedforward(iiwa, traj, ["0.5"], order=1)
    # numbers in any real dtype still pass
    assert hd.inverse_dynamics(iiwa, np.zeros(7, dtype=np.int32), [0] * 7, np.zeros(7, np.uint8)).shape == (7,)


def test_a_batch_that_cannot_fit_in_memory_is_refused_before_allocating(iiwa):
    """10^12 samples (broadcast views cost nothing; no computer holds their result): the
    package's error with the estimate and the largest batch that fits, not numpy's MemoryError
    midway (nor a scan of the values first)."""
    from hod_dynamics.feedforward.trajectory import load_trajectory

    many = np.broadcast_to(np.zeros(7), (10**12, 7))
    calls = {"inverse_dynamics": lambda: hd.inverse_dynamics(iiwa, many, many, many),
             "time_derivatives": lambda: hd.time_derivatives(iiwa, np.broadcast_to(np.zeros((4, 7)), (10**12, 4, 7)), 1),
             "id_partials": lambda: hd.id_partials(iiwa, many, many, many),
             "id_second_partials": lambda: hd.id_second_partials(iiwa, many, many, many),
             "mass_matrix": lambda: hd.mass_matrix(iiwa, many),
             "frame_pose/frame_jacobian": lambda: hd.frame_jacobian(iiwa, many, "iiwa_link_7"),
             "Trajectory.jet": lambda: load_trajectory("iiwa14_demo").jet(np.broadcast_to(0.5, (10**12,)), 4)}
    for what, call in calls.items():
        with pytest.raises(hd.InputError, match=rf"{what} of 1,000,000,000,000 samples needs about [\d.]+ GB of "
                                                r"memory, [\d.]+ [GM]B is available; compute it in parts of at "
                                                r"most [\d,]+ samples"):
            call()


def test_derivatives_above_a_trajectorys_continuity_come_with_a_warning():
    import warnings

    from hod_dynamics.feedforward.trajectory import Trajectory

    traj = Trajectory.from_waypoints(["a", "b"], [0.0, 1.0, 2.0], [[0, 0], [1, 2], [0, 1]], continuity=4)
    t = np.linspace(0.0, 2.0, 11)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert traj.jet(t, 4).shape == (11, 5, 2)   # up to the continuity: no word
    with pytest.warns(hd.HodDynamicsWarning, match=r"n_derivatives=6 exceeds the continuity of this trajectory "
                                                   r"\(C\^4\): its derivatives of order 5 to 6 jump at the knots"):
        jet = traj.jet(t, 6)
    assert jet.shape == (11, 7, 2)
