"""Bag I/O with rosbags: joint states in, derived results out, one-line errors on bad bags."""

import numpy as np
import pytest

import hod_dynamics as hd
from hod_dynamics import cli
from hod_dynamics.recordings.bag_writer import read_derived_bag, write_joint_states
from hod_dynamics.recordings.bag import read_joint_states

pytest.importorskip("rosbags")


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_joint_states_read_back_exactly(storage, panda_recording, panda_bags):
    rec = panda_recording
    states = read_joint_states(panda_bags[storage])
    assert states.topic == "/joint_states" and states.joint_names[-1] == "gripper"
    assert states.t0_ns == rec.T0_NS and states.dropped == 0
    np.testing.assert_array_equal(states.stamps_ns, rec.stamps_ns)
    np.testing.assert_array_equal(states.position[:, :7], rec.position)
    np.testing.assert_array_equal(states.effort[:, :7], rec.effort)
    np.testing.assert_allclose(states.t, rec.t, atol=1e-9)


def test_zero_header_stamps_fall_back_to_receive_times_and_duplicates_are_dropped(tmp_path):
    receive = 5 * 10**9 + np.array([0, 2, 1, 1, 3]) * 10**6   # out of order, one repeated
    q = np.arange(5.0)[:, None] * [1.0, -1.0]
    write_joint_states(tmp_path / "b", np.zeros(5), ["a", "b"], q, receive_ns=receive)
    states = read_joint_states(tmp_path / "b", time_base="header")
    np.testing.assert_array_equal(states.stamps_ns, 5 * 10**9 + np.array([0, 1, 2, 3]) * 10**6)
    np.testing.assert_array_equal(states.position[:, 0], [0, 2, 1, 4])   # stable: first of a repeat kept
    assert states.dropped == 1 and states.velocity is None and states.effort is None


def test_derived_bag_feedforward_equals_inverse_dynamics_of_its_points(panda_recording, panda_bags, tmp_path):
    rec = panda_recording
    out = tmp_path / "out"
    assert cli.main(["analyze-bag", str(panda_bags["sqlite3"]), "--urdf", rec.urdf, "--out", str(out),
                     "--no-plot", "--no-progress"] + rec.locks) == 0
    names, stamps, q, qd, qdd, effort, jets = read_derived_bag(out / "derived.mcap")
    assert names == rec.model.joint_names and len(stamps) == len(rec.t)
    np.testing.assert_array_equal(stamps, rec.stamps_ns)
    tau = hd.inverse_dynamics(rec.model, q, qd, qdd)
    np.testing.assert_allclose(effort, tau, rtol=1e-12, atol=1e-10)
    assert jets.shape == (len(rec.t), 3, 7)
    np.testing.assert_array_equal(jets[:, 0], effort)
    # tau_dot comes from the fit chosen for tau_dot: nearer the true tau' than the central
    # differences of tau (fitted for tau), within 1 % of its range away from the ends
    truth = rec.taujet[:, 1]
    inner = slice(250, -250)
    rms = (lambda a: np.sqrt(np.mean(a[inner] ** 2, axis=0)))
    fd = np.gradient(effort, rec.t, axis=0)
    assert np.all(rms(jets[:, 1] - truth) < rms(fd - truth))
    assert np.all(rms(jets[:, 1] - truth) < 0.01 * np.ptp(truth, axis=0))


def test_derived_bag_layout_is_the_nodes_order_joint_layout(panda_recording, panda_bags, tmp_path):
    from rosbags.highlevel import AnyReader

    rec = panda_recording
    out = tmp_path / "out"
    assert cli.main(["analyze-bag", str(panda_bags["mcap"]), "--urdf", rec.urdf, "--out", str(out),
                     "--order", "1", "--no-plot", "--no-progress", "--end", "0.1"] + rec.locks) == 0
    with AnyReader([out / "derived.mcap"]) as reader:
        assert {t: i.msgtype for t, i in reader.topics.items()} == {
            "/feedforward": "trajectory_msgs/msg/JointTrajectory",
            "/torque_derivatives": "std_msgs/msg/Float64MultiArray"}
        conn = reader.topics["/torque_derivatives"].connections
        msg = reader.deserialize(next(reader.messages(connections=conn))[2], conn[0].msgtype)
    assert [(d.label, d.size, d.stride) for d in msg.layout.dim] == [("order", 2, 14), ("joint", 7, 7)]


def _run(args, capsys):
    code = cli.main(["analyze-bag"] + [str(a) for a in args] + ["--no-progress", "--no-plot"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and err.startswith("hod-dynamics: error: "), err
    return err


def test_missing_topic_lists_the_topics(panda_recording, panda_bags, tmp_path, capsys):
    rec = panda_recording
    err = _run([panda_bags["mcap"], "--urdf", rec.urdf, "--out", tmp_path, "--joint-states", "/nope"]
               + rec.locks, capsys)
    assert "topic '/nope' is not in the bag" in err and "/joint_states (sensor_msgs/msg/JointState)" in err
    err = _run([panda_bags["mcap"], "--urdf", rec.urdf, "--out", tmp_path, "--trajectory-topic", "/plan"]
               + rec.locks, capsys)
    assert "pass --trajectory-topic with one of: /joint_states" in err


def test_joints_not_in_the_model_and_too_few_samples(panda_recording, panda_bags, tmp_path, capsys):
    rec = panda_recording
    err = _run([panda_bags["mcap"], "--urdf", hd.robot_path("iiwa14"), "--out", tmp_path], capsys)
    assert "are in no message on /joint_states" in err and "'panda_joint1'" in err
    err = _run([panda_bags["mcap"], "--urdf", rec.urdf, "--out", tmp_path], capsys)   # fingers not locked
    assert "panda_finger_joint1" in err and "--lock JOINT=VALUE" in err
    err = _run([panda_bags["mcap"], "--urdf", rec.urdf, "--out", tmp_path, "--start", "1", "--end", "1.01"]
               + rec.locks, capsys)
    assert "only 6 joint state samples" in err


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
@pytest.mark.parametrize("damage", ["truncate", "garble"])
def test_corrupt_bags_fail_with_one_line(storage, damage, panda_recording, tmp_path, capsys):
    rec = panda_recording
    folder = rec.write(tmp_path / "bag", storage)
    data = next(p for p in folder.iterdir() if p.suffix in (".mcap", ".db3"))
    raw = bytearray(data.read_bytes())
    if damage == "truncate":
        raw = raw[:len(raw) // 2]
    else:
        rng = np.random.default_rng(0)
        raw[16:] = rng.integers(0, 256, len(raw) - 16, dtype=np.uint8).tobytes()
    data.write_bytes(bytes(raw))
    err = _run([data, "--urdf", rec.urdf, "--out", tmp_path / "out"] + rec.locks, capsys)
    assert f"cannot read bag '{data}'" in err and "corrupt" in err


def test_missing_bag(panda_recording, tmp_path, capsys):
    rec = panda_recording
    err = _run([tmp_path / "none.mcap", "--urdf", rec.urdf, "--out", tmp_path] + rec.locks, capsys)
    assert "bag not found" in err


def test_ros1_bag_is_read_too(tmp_path):
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS1_NOETIC)
    types, msgtype = store.types, "sensor_msgs/msg/JointState"
    path = tmp_path / "run.bag"
    with Writer(path) as writer:
        conn = writer.add_connection("/robot/joint_states", msgtype, typestore=store)
        for i in range(30):
            header = types["std_msgs/msg/Header"](seq=i, stamp=types["builtin_interfaces/msg/Time"](
                sec=3, nanosec=2_000_000 * i), frame_id="")
            msg = types[msgtype](header=header, name=["b", "a"], position=np.array([-i, i], float),
                                 velocity=np.zeros(0), effort=np.array([0.5 * i, 1.0]))
            writer.write(conn, 4 * 10**9 + i, store.serialize_ros1(msg, msgtype))
    states = read_joint_states(path)
    assert states.topic == "/robot/joint_states" and states.joint_names == ("b", "a")
    assert states.t0_ns == 3 * 10**9 and states.velocity is None
    np.testing.assert_allclose(states.t, 0.002 * np.arange(30), atol=1e-12)
    np.testing.assert_array_equal(states.position[:, 1], np.arange(30))
    np.testing.assert_array_equal(states.effort[:, 0], 0.5 * np.arange(30))


def test_progress_reaches_the_total(panda_bags):
    calls = []
    states = read_joint_states(panda_bags["mcap"], progress=lambda done, total: calls.append((done, total)))
    assert calls[0] == (0, len(states.t)) and calls[-1] == (len(states.t), len(states.t))


def test_help_explains_every_option():
    sub = next(a for a in cli.build_parser()._actions if a.dest == "command").choices["analyze-bag"]
    options = [a for a in sub._actions if a.dest != "help"]
    assert {"bag", "urdf", "out", "joint_states", "trajectory_topic", "order", "actuators", "start",
            "end"} <= {a.dest for a in options}
    assert all(a.help and len(a.help) > 15 for a in options)


def test_derived_bag_written_in_blocks_reads_back_like_one_written_message_by_message(tmp_path, monkeypatch):
    from hod_dynamics.recordings import bag_writer

    rng = np.random.default_rng(4)
    m, names = 9000, [f"j{i}" for i in range(3)]
    qjet, taujet = rng.standard_normal((m, 3, 3)), rng.standard_normal((m, 2, 3))
    stamps = 10**18 + np.arange(m) * 2_000_000 + rng.integers(0, 1000, m)
    bag_writer.write_derived_bag(tmp_path / "blocks.mcap", stamps, names, qjet, taujet)

    def one_by_one(self, conns, stamps_ns, rows, progress=None):
        for i in range(len(stamps_ns)):
            for conn, r in zip(conns, rows):
                self.write_raw(conn, stamps_ns[i], r[i])

    monkeypatch.setattr(bag_writer._McapBag, "write_rows", one_by_one)
    bag_writer.write_derived_bag(tmp_path / "single.mcap", stamps, names, qjet, taujet)
    fast, slow = read_derived_bag(tmp_path / "blocks.mcap"), read_derived_bag(tmp_path / "single.mcap")
    assert fast[0] == slow[0] == tuple(names)
    for a, b in zip(fast[1:], slow[1:]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fast[6], taujet)
    np.testing.assert_array_equal(fast[1], stamps)


# -- joint-state topics shared by several publishers --------------------------------------------
@pytest.fixture(scope="module")
def arm_and_gripper(tmp_path_factory):
    """An arm (200 Hz, 20 s) recorded alone and with a gripper driver on the same topic
    (finger_left, finger_right at 50 Hz): (Recording, arm-only bag, shared bag)."""
    from recordings import Recording

    root = tmp_path_factory.mktemp("shared")
    rec = Recording(seed=5, duration=20.0)
    return rec, rec.write(root / "arm"), rec.write(root / "shared", streams=[rec.gripper_stream(50.0)])


def test_a_gripper_on_the_joint_state_topic_is_ignored_and_changes_nothing(arm_and_gripper, tmp_path, capsys):
    rec, arm, shared = arm_and_gripper
    outs = {}
    for name, bag in (("arm", arm), ("shared", shared)):
        outs[name] = tmp_path / name
        assert cli.main(["analyze-bag", str(bag), "--urdf", rec.urdf, "--out", str(outs[name]), "--no-plot",
                         "--no-derived-bag", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "note: ignored 1,000 messages with joints finger_left, finger_right: not in the model" in text
    from test_analysis import _columns

    a, b = _columns(outs["arm"] / "samples.csv"), _columns(outs["shared"] / "samples.csv")
    for k in range(3):
        for j in rec.model.joint_names:
            np.testing.assert_allclose(b[f"tau{k}_{j}"], a[f"tau{k}_{j}"], rtol=1e-12, atol=1e-12)
    import json

    groups = json.loads((outs["shared"] / "summary.json").read_text())["joint_state_groups"]
    assert groups["used"] == [{"joints": list(rec.model.joint_names), "messages": len(rec.t) + 1}]
    assert groups["ignored"] == [{"joints": ["finger_left", "finger_right"], "messages": 1000,
                                  "reason": "not in the model"}]
    # read without a model: the arm (the group with the most joints); the gripper stays at hand
    states = read_joint_states(shared)
    assert states.joint_names == rec.model.joint_names and len(states.groups) == 2
    fingers = states.for_joints(["finger_left"])
    assert fingers.joint_names == ("finger_left", "finger_right") and len(fingers.t) == 1000


def test_arm_joints_from_two_drivers_are_aligned_on_one_time_base(tmp_path):
    # joints 1-4 from one driver, 5-7 from another sampling 0.37 periods later, each with its
    # own drops, jitter and receive delays
    import json

    from hod_dynamics.replay.analysis import analyze_joint_states
    from hod_dynamics.recordings.bag_writer import write_joint_state_streams
    from recordings import Recording

    rec = Recording(seed=6, duration=20.0)
    second, _ = rec.second_driver([4, 5, 6], offset=0.37)
    bag = write_joint_state_streams(tmp_path / "split", [rec.stream(joints=[0, 1, 2, 3]), second])
    states = read_joint_states(bag, joints=rec.model.joint_names)
    assert [s.joint_names for s in states.sources] == [rec.model.joint_names[:4], rec.model.joint_names[4:]]
    result = analyze_joint_states(rec.model, states)
    # the samples are the first driver's; the model torques against the truth at their times
    k = np.round(result.t / 0.005 + (states.t0_ns - rec.exact_ns[0]) * 1e-9 / 0.005).astype(int)
    truth = rec.truth(k * 0.005)
    near = np.zeros(len(result.t), dtype=bool)
    near[:400], near[-400:] = True, True
    for order in range(3):
        err = np.sqrt(np.mean((result.result.taujet[~near, order] - truth[~near, order]) ** 2, axis=0))
        assert np.all(err < 2 * result.errors.total[order] + 1e-9), (order, err, result.errors.total[order])
    out = tmp_path / "out"
    assert cli.main(["analyze-bag", str(bag), "--urdf", rec.urdf, "--out", str(out), "--no-plot", "--no-derived-bag",
                     "--no-progress"]) == 0
    alignment = json.loads((out / "summary.json").read_text())["joint_state_groups"]["alignment"]
    assert len(alignment) == 1 and alignment[0]["joints"] == list(rec.model.joint_names[4:])
    assert abs(alignment[0]["median_offset"] - 0.37 * 0.005) < 2e-4
    assert alignment[0]["method"].startswith("fitted on their own sample times and evaluated at those of joints "
                                             "iiwa_joint_1, iiwa_joint_2, iiwa_joint_3, iiwa_joint_4")


def test_a_model_joint_no_message_carries_is_the_error_and_named(arm_and_gripper, tmp_path, capsys):
    from hod_dynamics.recordings.bag_writer import write_joint_state_streams

    rec, _, _ = arm_and_gripper
    bag = write_joint_state_streams(tmp_path / "six", [rec.stream(joints=range(6)), rec.gripper_stream()])
    err = _run([bag, "--urdf", rec.urdf, "--out", tmp_path / "o"], capsys)
    assert "joints ['iiwa_joint_7'] of the model are in no message on /joint_states" in err
    assert "finger_left" in err and "--lock JOINT=VALUE" in err


def test_messages_naming_the_same_joints_in_another_order_are_one_group(tmp_path):
    from hod_dynamics.recordings.bag_writer import JointStream, write_joint_state_streams

    t = np.arange(200) * 0.01
    q = np.column_stack([np.sin(t), np.cos(t)])
    stamps = 10**18 + np.round(t * 1e9).astype(np.int64)
    even, odd = slice(0, None, 2), slice(1, None, 2)
    bag = write_joint_state_streams(tmp_path / "b", [JointStream(("a", "b"), stamps[even], q[even]),
                                                    JointStream(("b", "a"), stamps[odd], q[odd][:, ::-1])])
    states = read_joint_states(bag, time_base="header")
    assert states.joint_names == ("a", "b") and not states.groups and len(states.t) == 200
    np.testing.assert_array_equal(states.position, q)
