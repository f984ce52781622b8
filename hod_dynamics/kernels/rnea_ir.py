"""The Newton-Euler recursion on Taylor jets, generated as LLVM IR for one Taylor order.

The algorithm of :mod:`hod_dynamics.algorithms.recursive` (S. Kumar, A. Müller, "Nth order analytical time
derivatives of inverse dynamics in recursive and closed forms", ICRA 2021, sec. II), in
joint-aligned body frames (:func:`joint_frames`: z along each joint axis, so that the joint
motion acts on the (x, y) components of twists and wrenches as the complex factor
``exp(-i q(t))``, and ``tau_i`` is a z component), for fixed bases whose joints all have such
frames (revolute and prismatic joints).

Why generated code: for a given number K of Taylor coefficients every Cauchy product, every
loop over coefficients and every index is known, so the per-body work of the recursion is
straight-line code over values that stay in registers. The generator writes it for a vector
of ``width`` samples (one SIMD register of doubles on AVX-512: 8), the samples of a batch in
the lanes, so one pass through the tree computes eight trajectory samples. The numba kernels
of :mod:`hod_dynamics.kernels.rnea_kernels` loop over coefficients at run time and keep their
intermediates in memory; CasADi's generated C (a symbolic expression of the whole model)
computes one sample at a time. Generating IR rather than numba source also keeps the first
compile short: LLVM alone compiles it (:mod:`hod_dynamics.kernels.llvm`), in a fraction of a second.

The tree itself is not unrolled: a loop runs over the bodies and reads each body's constants
(:func:`geometry`), so one kernel per (order, width, wrenches or not) serves every model and
its size does not grow with the model.

Data per group of ``width`` samples (``work``, vectors of ``width`` doubles): twists V
(n+1, K+1, 6), gravity G (n+1, K, 3) and wrenches F (n+1, K, 6) of the bodies and of a virtual
base body n (zero twist, gravity ``(0, -g)``: every root is its child), the coefficients of
``exp(-i q)`` E (n, K+1, 2), the group's jet J (K+2, n), its results O (K, n), one body's
wrench coefficients after the joint motion U (K, 4) and external wrenches X (K, n, 6). The
parts of a body's step that differ between revolute and prismatic joints are two branches;
what they share (the body wrench, the transform to the parent) is written once.

Longer than the package's other modules (about 600 lines): the generator of the recursion
(three input modes, the two joint kinds, the forward and backward passes), the packing of each
model and the numba callers of its kernels belong to one kernel family.
"""

import math
import threading

import numpy as np

from numba.extending import register_jitable

from ..model.robot_model import per_model
from ..model.spatial import Ad, inverse
from .llvm import Emitter, STACK_WORK, call_address, compile_ir, is_cached, run, run_batch, signature
from .njit import njit, njit_without_nrt

WIDTH = 8  # samples per vector: one AVX-512 register of doubles (LLVM splits it on narrower CPUs)


# -- the model array (doubles) ----------------------------------------------------------------------
# after n: (name, doubles per joint) in the order of geometry(); g0 (3,) last
_MODEL_LAYOUT = (("parents", 1), ("kinds", 1), ("RH", 9), ("pH", 3), ("M", 36), ("Tw", 36))


def _model_offsets(e, n):
    """{name: offset in geometry()'s array}, offsets as i64 values of the joint count n."""
    offsets, per = {}, 0
    for key, size in _MODEL_LAYOUT + (("g0", 0),):
        offsets[key] = e.iop("add", e.iop("mul", n, per), 1)
        per += size
    return offsets


def joint_frames(model):
    """``(kinds (n,), T (n, 4, 4))``: kind 0 revolute, 1 prismatic, and the pose in body i's
    frame of a frame whose z axis is joint i's axis (origin on it), in which the screw is
    ``Z = e_z`` (angular, revolute) or linear (prismatic): ``X_i = Ad(T_i) Z``. None when a
    screw is neither a unit rotation about a line nor a unit translation."""
    n = model.n_dof
    kinds, T = np.zeros(n), np.tile(np.eye(4), (n, 1, 1))
    for i, X in enumerate(model.screws):
        w, v = X[:3], X[3:]
        if np.any(w != 0):
            if abs(w @ w - 1) > 1e-14 or abs(w @ v) > 1e-14 * max(1.0, np.linalg.norm(v)):
                return None
            axis, T[i, :3, 3] = w, np.cross(w, v)  # v = r x w for the line through r
        else:
            if abs(v @ v - 1) > 1e-14:
                return None
            axis, kinds[i] = v, 1.0
        if not (axis[0] == axis[1] == 0 and axis[2] == 1):
            helper = np.eye(3)[np.argmin(np.abs(axis))]
            x = np.cross(helper, axis)
            x /= np.linalg.norm(x)
            T[i, :3, :3] = np.stack([x, np.cross(axis, x), axis], axis=1)
    return kinds, T


@per_model
def geometry(model):
    """The model for the generated kernels, one float64 array (layout: :data:`_MODEL_LAYOUT`):
    n, the parents (-1: the base), the joint kinds (0 revolute, 1 prismatic), the blocks RH
    (n, 3, 3), pH (n, 3) of the constant part ``Ad(H_i) = Ad(T_i^-1 B_i^-1 T_parent)`` of each
    joint transform (parent's joint-aligned frame to body i's, at q = 0), the inertias
    ``Ad(T_i)^T M_i Ad(T_i)`` and ``Ad(T_i)^T`` (external wrenches) in the joint-aligned frames
    (:func:`joint_frames`), and the linear part of the base acceleration ``-g``. None for a
    floating model or when a joint has no joint-aligned frame (a screw with a pitch)."""
    frames = None if model.floating else joint_frames(model)
    if frames is None:
        return None
    n = model.n_dof
    kinds, T = frames
    parent_T = np.array([T[p] if p >= 0 else np.eye(4) for p in model.parents]).reshape(n, 4, 4)
    H = inverse(T) @ inverse(model.references) @ parent_T
    A = Ad(T)
    AT = np.swapaxes(A, -1, -2)
    arrays = (model.parents.astype(float), kinds, H[:, :3, :3], H[:, :3, 3],
              AT @ model.inertias @ A, AT, -model.gravity)
    return np.concatenate([[float(n)]] + [np.ascontiguousarray(a).ravel() for a in arrays])


MODES = ("jet", "state", "gravity")
# status codes: the kernels return DONE or NON_FINITE, the one-sample callers MISFIT for
# arrays of other shapes (those of the world-frame kernels of hod_dynamics.kernels.partials_ir)
DONE, NON_FINITE, MISFIT = 0, 1, 2


def kernel_ir(K, width, wrenches, mode="jet"):
    """(IR text, function name) of the kernel for K Taylor coefficients (torque order K - 1),
    ``width`` samples per vector, with or without external wrenches.

    The function, in the common signature of :mod:`hod_dynamics.kernels.llvm`: ``i32 f(geo, x0, x1,
    x2, wext, out, -, -, -, -, B, rows, Bw, -, work)`` with ``geo`` from :func:`geometry`, the
    samples in the ``mode``:

    - ``"jet"``: x0 (B, rows, n) the derivative jet q^(0..) (rows >= K + 2 read);
    - ``"state"`` (K = 1): x0, x1, x2 (B, n) q, qd, qdd (inverse dynamics);
    - ``"gravity"`` (K = 1): x0 (B, n) q, at rest (the generalised gravity): the twists are
      zero, and the code without them is generated (constants folded);

    ``wext`` (K, Bw, n, 6) body-frame wrench coefficients in the links' frames (read when the
    kernel has wrenches), ``out`` (B, K, n) receiving tau^(0..K-1) (derivatives, not
    coefficients), ``work`` :func:`work_size` doubles. Returns 1, or 0 (computing nothing)
    when a value it reads is a NaN or an infinity.
    """
    if mode not in MODES or (mode != "jet" and K != 1):
        raise ValueError(f"no kernel for mode {mode!r} and K = {K}")
    e = Emitter(width)
    W = width
    name = f"rnea_{mode}_K{K}_w{W}{'_wrench' if wrenches else ''}"
    fact = [float(math.factorial(k)) for k in range(K + 2)]
    e.emit("%nf = load double, ptr %geo, align 8")
    e.emit("%n = fptosi double %nf to i64")
    n = "%n"
    mo = _model_offsets(e, n)
    # work layout (doubles)
    n1 = e.iop("add", n, 1)
    sizes = [("V", e.iop("mul", n1, (K + 1) * 6 * W)), ("G", e.iop("mul", n1, K * 3 * W)),
             ("F", e.iop("mul", n1, K * 6 * W)), ("E", e.iop("mul", n, (K + 1) * 2 * W)),
             ("J", e.iop("mul", n, (K + 2) * W)), ("O", e.iop("mul", n, K * W)),
             ("U", K * 4 * W), ("X", e.iop("mul", n, K * 6 * W))]
    total = 0
    for _, size in sizes:
        total = e.iop("add", total, size)
    e.work(total)
    base = {}
    at = 0
    for key, size in sizes:
        base[key] = e.address("%work", at)
        at = e.iop("add", at, size)
    # the rows of the input: (pointer to sample b's row, row index in J) per row read
    if mode == "jet":
        def rows(b):
            return [(e.address("%x0", e.iop("mul", e.iop("mul", b, "%rows"), n)), 0, K + 2)]
    else:
        def rows(b):
            start = e.iop("mul", b, n)
            return [(e.address(x, start), r, 1) for r, x in enumerate(("%x0", "%x1", "%x2")[:3 if mode == "state" else 1])]

    # 1. every value the kernel reads is finite (x - x is 0, or NaN for a NaN or an infinity)
    e.emit("%acc = alloca double, align 8")
    e.emit("store double 0.0, ptr %acc, align 8")

    def check_sample(b):
        for start, _, count in rows(b):
            def check(m):
                x, d, a, s = e.fresh("x"), e.fresh("x"), e.fresh("x"), e.fresh("x")
                e.emit(f"{x} = load double, ptr {e.address(start, m)}, align 8")
                e.emit(f"{d} = fsub double {x}, {x}")
                e.emit(f"{a} = load double, ptr %acc, align 8")
                e.emit(f"{s} = fadd double {a}, {d}")
                e.emit(f"store double {s}, ptr %acc, align 8")

            e.loop(0, e.iop("mul", n, count), check)

    e.loop(0, "%B", check_sample)
    e.emit("%accv = load double, ptr %acc, align 8")
    e.emit("%bad = fcmp uno double %accv, 0.0")
    e.emit("br i1 %bad, label %refuse, label %groups")
    e.label("refuse")
    e.emit(f"ret i32 {NON_FINITE}")
    e.label("groups")

    def group(b0):
        # gather the group's samples into vectors (the last group repeats its last sample)
        last = e.iop("sub", "%B", 1)
        for lane in range(W):
            b = e.iop("add", b0, lane)
            if lane:
                c = e.fresh("c")
                e.emit(f"{c} = icmp slt i64 {b}, {last}")
                bb = e.fresh("n")
                e.emit(f"{bb} = select i1 {c}, i64 {b}, i64 {last}")
                b = bb
            for src, r, count in rows(b):
                dst = e.address(base["J"], e.iop("add", e.iop("mul", n, r * W), lane))
                e.strided_copy(dst, W, src, 1, e.iop("mul", n, count))
            if wrenches:
                for k in range(K):
                    src = e.address("%wext", e.iop("mul", e.iop("add", e.iop("mul", k, "%Bw"), b),
                                                   e.iop("mul", n, 6)))
                    dst = e.address(base["X"], e.iop("add", e.iop("mul", e.iop("mul", n, 6 * W), k),
                                                     lane))
                    e.strided_copy(dst, W, src, 1, e.iop("mul", n, 6))
        # the virtual base body n: zero twist and wrench, gravity (0, -g) in coefficient 0
        if mode != "gravity":
            Vn = e.address(base["V"], e.iop("mul", n, (K + 1) * 6 * W))
            for m in range((K + 1) * 6):
                e.store(0.0, Vn, m * W)
        Fn = e.address(base["F"], e.iop("mul", n, K * 6 * W))
        for m in range(K * 6):
            e.store(0.0, Fn, m * W)
        Gn = e.address(base["G"], e.iop("mul", n, K * 3 * W))
        for r in range(3):
            e.store(e.scalar("%geo", e.iop("add", mo["g0"], r)), Gn, r * W)
        for m in range(3, K * 3):
            e.store(0.0, Gn, m * W)
        e.loop(0, n, lambda i: _forward(e, i, K, n, mo, base, fact, wrenches, mode))
        e.loop(0, n, lambda j: _backward(e, e.iop("sub", e.iop("sub", n, 1), j), K, n, mo, base,
                                         fact))
        # scatter the group's results: out[b0 + s, k, i] = O[k, i][s] for the real samples
        left = e.iop("sub", "%B", b0)
        c = e.fresh("c")
        e.emit(f"{c} = icmp slt i64 {left}, {W}")
        count = e.fresh("n")
        e.emit(f"{count} = select i1 {c}, i64 {left}, i64 {W}")
        KN = e.iop("mul", n, K)

        def scatter(s):
            dst = e.address("%out", e.iop("mul", e.iop("add", b0, s), KN))
            e.strided_copy(dst, 1, e.address(base["O"], s), W, KN)

        e.loop(0, count, scatter)

    e.loop(0, "%B", group, step=W)
    e.emit(f"ret i32 {DONE}")
    return e.function(name, signature(["%geo", "%x0", "%x1", "%x2", "%wext", "%out"],
                                      ["%B", "%rows", "%Bw"])), name


def _joint(e, i, n, mo):
    """(parent index, i1 revolute) of body i; a root's parent is the virtual base n."""
    pf, p, root, kind, rev = e.fresh("x"), e.fresh("n"), e.fresh("c"), e.fresh("x"), e.fresh("c")
    e.emit(f"{pf} = load double, ptr {e.address('%geo', e.iop('add', mo['parents'], i))}, align 8")
    e.emit(f"{p} = fptosi double {pf} to i64")
    e.emit(f"{root} = icmp slt i64 {p}, 0")
    parent = e.fresh("n")
    e.emit(f"{parent} = select i1 {root}, i64 {n}, i64 {p}")
    e.emit(f"{kind} = load double, ptr {e.address('%geo', e.iop('add', mo['kinds'], i))}, align 8")
    e.emit(f"{rev} = fcmp oeq double {kind}, 0.0")
    return parent, rev


def _transform(e, i, mo):
    """R (3x3 list) and pH (3) of Ad(H_i), broadcast."""
    R = [[e.scalar("%geo", e.iop("add", mo["RH"], e.iop("add", e.iop("mul", i, 9), 3 * r + c)))
          for c in range(3)] for r in range(3)]
    q = [e.scalar("%geo", e.iop("add", mo["pH"], e.iop("add", e.iop("mul", i, 3), r)))
         for r in range(3)]
    return R, q


def _rotate(e, R, a):
    """R a for a 3x3 list R and a 3-list a."""
    return [e.dot(zip(R[r], a)) for r in range(3)]


def _twists(e, K, V_p, V_i, R, q, E, wc, revolute):
    """Body i's twist coefficients V_k (stored in V_i): the parent's moved by Ad(H) (Y_k), then
    by the joint motion (a product of jets), plus wc_k Z."""
    W = e.width
    Y = []
    for k in range(K + 1):
        a = [e.load(V_p, (6 * k + r) * W) for r in range(6)]
        r3, b3 = _rotate(e, R, a[:3]), _rotate(e, R, a[3:])
        # Ad(H) (w, v) = (R w, R v + pH x R w)
        Y.append(r3 + [e.add(b3[0], e.sub(e.mul(q[1], r3[2]), e.mul(q[2], r3[1]))),
                       e.add(b3[1], e.sub(e.mul(q[2], r3[0]), e.mul(q[0], r3[2]))),
                       e.add(b3[2], e.sub(e.mul(q[0], r3[1]), e.mul(q[1], r3[0])))])
    V = []
    for k in range(K + 1):
        if revolute:  # exp(-i q) (x + i y) on (w0, w1) and (v0, v1), E_j = (c_j, s_j)
            x = []
            for c0, c1 in ((0, 1), (3, 4)):
                x.append(e.dot([(E[j][0], Y[k - j][c0]) for j in range(k + 1)]
                               + [(e.neg(E[j][1]), Y[k - j][c1]) for j in range(k + 1)]))
                x.append(e.dot([(E[j][1], Y[k - j][c0]) for j in range(k + 1)]
                               + [(E[j][0], Y[k - j][c1]) for j in range(k + 1)]))
            V.append([x[0], x[1], e.add(Y[k][2], wc[k]), x[2], x[3], Y[k][5]])
        else:  # v += (-q e_z) x w = q (w1, -w0, 0)
            x3 = e.add(Y[k][3], e.dot((E[j][0], Y[k - j][1]) for j in range(k + 1)))
            x4 = e.sub(Y[k][4], e.dot((E[j][0], Y[k - j][0]) for j in range(k + 1)))
            V.append([Y[k][0], Y[k][1], Y[k][2], x3, x4, e.add(Y[k][5], wc[k])])
        for r in range(6):
            e.store(V[k][r], V_i, (6 * k + r) * W)
    return V


def _forward(e, i, K, n, mo, base, fact, wrenches, mode):
    """Body i's twists, gravity and wrench coefficients (stored in V, G, F), and its motion's
    coefficients (E), from its parent's. ``mode`` "gravity": no twists (all zero)."""
    W = e.width
    parent, rev = _joint(e, i, n, mo)

    def J(r):  # row r of the group's jet: q^(r) of joint i (only q at rest)
        if mode == "gravity" and r > 0:
            return 0.0
        return e.load(base["J"], e.iop("mul", e.iop("add", e.iop("mul", n, r), i), W))

    E_i = e.address(base["E"], e.iop("mul", i, (K + 1) * 2 * W))
    V_p = e.address(base["V"], e.iop("mul", parent, (K + 1) * 6 * W))
    G_p = e.address(base["G"], e.iop("mul", parent, K * 3 * W))
    V_i = e.address(base["V"], e.iop("mul", i, (K + 1) * 6 * W))
    G_i = e.address(base["G"], e.iop("mul", i, K * 3 * W))
    F_i = e.address(base["F"], e.iop("mul", i, K * 6 * W))
    R, q = _transform(e, i, mo)

    def kind(revolute):
        t = J(0)
        wc = [e.mul(J(k + 1), 1.0 / fact[k]) for k in range(K + 1)]
        # E_k: coefficients of exp(-i q) (revolute), of q (prismatic, real part)
        if revolute:
            sn, cs = e.sincos(t)
            E = [(cs, e.neg(sn))]
            for k in range(K):
                a0 = e.dot((wc[j], E[k - j][0]) for j in range(k + 1))
                a1 = e.dot((wc[j], E[k - j][1]) for j in range(k + 1))
                E.append((e.mul(a1, 1.0 / (k + 1)), e.mul(a0, -1.0 / (k + 1))))
        else:
            E = [(t, 0.0)] + [(e.mul(wc[k - 1], 1.0 / k), 0.0) for k in range(1, K + 1)]
        for k in range(K + 1):
            e.store(E[k][0], E_i, 2 * k * W)
            e.store(E[k][1], E_i, (2 * k + 1) * W)
        if mode != "gravity":  # at rest every twist coefficient is zero; the wrench pass below reads them
            _twists(e, K, V_p, V_i, R, q, E, wc, revolute)   # stored in V_i
        # gravity: the linear part of (0, -g) moved along the tree
        Z = [_rotate(e, R, [e.load(G_p, (3 * k + r) * W) for r in range(3)]) for k in range(K)]
        G = []
        for k in range(K):
            if revolute:
                g0 = e.dot([(E[j][0], Z[k - j][0]) for j in range(k + 1)]
                           + [(e.neg(E[j][1]), Z[k - j][1]) for j in range(k + 1)])
                g1 = e.dot([(E[j][1], Z[k - j][0]) for j in range(k + 1)]
                           + [(E[j][0], Z[k - j][1]) for j in range(k + 1)])
                G.append([g0, g1, Z[k][2]])
            else:
                G.append(Z[k])
            for r in range(3):
                e.store(G[k][r], G_i, (3 * k + r) * W)

    e.branch(rev, lambda: kind(True), lambda: kind(False))
    # the body wrench, the same for both kinds (written once: half the code to compile)
    if mode == "gravity":
        V = [[0.0] * 6 for _ in range(K + 1)]
    else:
        V = [[e.load(V_i, (6 * k + r) * W) for r in range(6)] for k in range(K + 1)]
    G = [[e.load(G_i, (3 * k + r) * W) for r in range(3)] for k in range(K)]
    _body_wrench(e, i, K, V, G, mo, base, wrenches, F_i)


def _body_wrench(e, i, K, V, G, mo, base, wrenches, F_i):
    """F_k = M (dV_k + (0, G_k)) + sum_j -ad(V_j)^T M V_{k-j} (- Tw W_ext,k), stored in F_i."""
    W = e.width
    M = [[e.scalar("%geo", e.iop("add", mo["M"], e.iop("add", e.iop("mul", i, 36), 6 * r + c)))
          for c in range(6)] for r in range(6)]
    h = [[e.dot(zip(M[r], V[k])) for r in range(6)] for k in range(K)]
    if wrenches:
        Tw = [[e.scalar("%geo", e.iop("add", mo["Tw"], e.iop("add", e.iop("mul", i, 36), 6 * r + c)))
               for c in range(6)] for r in range(6)]
    for k in range(K):
        d = [e.mul(V[k + 1][c], float(k + 1)) for c in range(6)]
        d = d[:3] + [e.add(d[3 + c], G[k][c]) for c in range(3)]
        F = [e.dot(zip(M[r], d)) for r in range(6)]
        # -ad(V)^T h = (w x L + v x F, w x F) for V = (w, v), h = (L, F)
        for j in range(k + 1):
            w, v, L, f = V[j][:3], V[j][3:], h[k - j][:3], h[k - j][3:]
            for r in range(3):
                a, b = (r + 1) % 3, (r + 2) % 3
                F[r] = e.add(F[r], e.sub(e.add(e.mul(w[a], L[b]), e.mul(v[a], f[b])),
                                         e.add(e.mul(w[b], L[a]), e.mul(v[b], f[a]))))
                F[3 + r] = e.add(F[3 + r], e.sub(e.mul(w[a], f[b]), e.mul(w[b], f[a])))
        if wrenches:
            n_ = "%n"
            X = e.address(base["X"], e.iop("mul", e.iop("add", e.iop("mul", n_, k), i), 6 * W))
            x = [e.load(X, c * W) for c in range(6)]
            F = [e.sub(F[r], e.dot(zip(Tw[r], x))) for r in range(6)]
        for r in range(6):
            e.store(F[r], F_i, (6 * k + r) * W)


def _backward(e, i, K, n, mo, base, fact):
    """tau_i (into O) and body i's wrench moved to its parent (added to F_parent)."""
    W = e.width
    parent, rev = _joint(e, i, n, mo)
    E_i = e.address(base["E"], e.iop("mul", i, (K + 1) * 2 * W))
    F_i = e.address(base["F"], e.iop("mul", i, K * 6 * W))
    F_p = e.address(base["F"], e.iop("mul", parent, K * 6 * W))
    R, q = _transform(e, i, mo)

    U = base["U"]  # (t0, t1, f0, f1) of each coefficient after the joint motion

    def kind(revolute):
        F = [[e.load(F_i, (6 * k + r) * W) for r in range(6)] for k in range(K)]
        z = 2 if revolute else 5
        for k in range(K):
            e.store(e.mul(F[k][z], fact[k]),
                    e.address(base["O"], e.iop("mul", e.iop("add", e.iop("mul", n, k), i), W)), 0)
        if revolute:
            E = [(e.load(E_i, 2 * k * W), e.load(E_i, (2 * k + 1) * W)) for k in range(K)]
        else:
            E = [(e.load(E_i, 2 * k * W), 0.0) for k in range(K)]
        for k in range(K):
            # the joint motion transposed: exp(+i q) on (x, y), or t += q e_z x f
            if revolute:
                def rot(c0, c1):
                    x = e.dot([(E[j][0], F[k - j][c0]) for j in range(k + 1)]
                              + [(E[j][1], F[k - j][c1]) for j in range(k + 1)])
                    y = e.dot([(E[j][0], F[k - j][c1]) for j in range(k + 1)]
                              + [(e.neg(E[j][1]), F[k - j][c0]) for j in range(k + 1)])
                    return x, y

                t0, t1 = rot(0, 1)
                f0, f1 = rot(3, 4)
            else:
                t0 = e.sub(F[k][0], e.dot((E[j][0], F[k - j][4]) for j in range(k + 1)))
                t1 = e.add(F[k][1], e.dot((E[j][0], F[k - j][3]) for j in range(k + 1)))
                f0, f1 = F[k][3], F[k][4]
            for c, v in enumerate((t0, t1, f0, f1)):
                e.store(v, U, (4 * k + c) * W)

    e.branch(rev, lambda: kind(True), lambda: kind(False))
    # Ad(H)^T (t, f) = (R^T (t + f x pH), R^T f), added to the parent's (the same for both kinds)
    for k in range(K):
        t0, t1, f0, f1 = (e.load(U, (4 * k + c) * W) for c in range(4))
        t2, f2 = e.load(F_i, (6 * k + 2) * W), e.load(F_i, (6 * k + 5) * W)
        u = [e.add(t0, e.sub(e.mul(f1, q[2]), e.mul(f2, q[1]))),
             e.add(t1, e.sub(e.mul(f2, q[0]), e.mul(f0, q[2]))),
             e.add(t2, e.sub(e.mul(f0, q[1]), e.mul(f1, q[0])))]
        f = [f0, f1, f2]
        for c in range(3):
            for part, vec in ((0, u), (3, f)):
                at = (6 * k + part + c) * W
                old = e.load(F_p, at)
                e.store(e.add(old, e.dot((R[r][c], vec[r]) for r in range(3))), F_p, at)


# -- compiled kernels and their numba callers -------------------------------------------------------
_addresses = {}  # (K, width, wrenches, mode) -> address of the compiled kernel


def kernel_address(K, width, wrenches=False, mode="jet"):
    """Address of the kernel (:func:`kernel_ir`), compiled on first use in this process or
    loaded from the disk cache."""
    key = (K, width, wrenches, mode)
    address = _addresses.get(key)
    if address is None:
        text, name = kernel_ir(K, width, wrenches, mode)
        address = _addresses[key] = compile_ir(text, name)
    return address


def kernel_cached(K, width, wrenches=False, mode="jet"):
    """True when the kernel's machine code is loaded in this process or in the disk cache."""
    if (K, width, wrenches, mode) in _addresses:
        return True
    return is_cached(*kernel_ir(K, width, wrenches, mode))


def width_for(B):
    """Samples per vector for a batch of B: the scalar kernel for one sample (a vector of
    eight would compute seven copies), vectors otherwise."""
    return 1 if B == 1 else WIDTH


def rnea(parents, geo, jet, K, wext, out):
    """The recursion on ``jet`` (B, >=K+2, n) into ``out`` (B, K, n) (C-contiguous float64
    arrays; ``wext`` (K, B, n, 6) or empty): the arguments of
    :func:`hod_dynamics.kernels.rnea_kernels.rnea_jets_general` (``parents`` unused: they are in ``geo``).
    Returns False, leaving ``out`` unfinished, when the jet holds a NaN or an infinity."""
    B, rows, n = jet.shape
    wrenches = wext.shape[1] > 0
    if n != int(geo[0]) or rows < K + 2 or out.shape != (B, K, n) or (
            wrenches and wext.shape != (K, B, n, 6)):
        raise ValueError("generated kernel: arrays of the wrong shape")
    if B == 0:
        return True
    width = width_for(B)
    flat = jet.reshape(-1)
    return run_batch(kernel_address(K, width, wrenches), geo, flat, flat, flat, wext.reshape(-1),
                     out.reshape(-1), geo, geo, geo, geo, B, rows, wext.shape[1], 0,
                     work_size(n, K, width, wrenches)) == DONE


@register_jitable
def work_size(n, K, width, wrenches):
    """Doubles of the work array of one group of samples (see the module docstring)."""
    per = (n + 1) * (K + 1) * 6 + (n + 1) * K * 9 + n * (K + 1) * 2 + (K + 2) * n + K * n + K * 4
    if wrenches:
        per += K * n * 6
    return per * width




@njit
def run_one(address, geo, jet, out):
    """One sample: the scalar "jet" kernel at ``address`` on jet (K+2, n) into out (K, n)
    (K = out.shape[0]). Returns DONE, NON_FINITE (a NaN or an infinity in the jet) or MISFIT
    (arrays of other shapes; nothing computed)."""
    n = int(geo[0])
    K = out.shape[0]
    if jet.shape[1] != n or jet.shape[0] != K + 2 or out.shape[1] != n:
        return MISFIT
    if work_size(n, K, 1, False) <= STACK_WORK:  # the kernel's stack
        return call_address(address, (geo, jet, jet, jet, out, out, out, out, out, out, 1, K + 2,
                                      0, 0, None))
    return call_address(address, (geo, jet, jet, jet, out, out, out, out, out, out, 1, K + 2, 0, 0,
                                  np.empty(work_size(n, K, 1, False))))


@njit_without_nrt
def run_state(address, geo, q, qd, qdd, out):
    """One sample: the scalar "state" kernel at ``address`` on q, qd, qdd (n,) into out (n,).
    Returns DONE, NON_FINITE or MISFIT (arrays of other lengths, or a model whose work array
    does not fit the kernel's stack; nothing computed). Without numba's runtime: of the
    callers it takes the most arrays, whose wrapping the runtime would charge it (it
    allocates nothing, so it needs none)."""
    n = int(geo[0])
    if q.shape[0] != n or qd.shape[0] != n or qdd.shape[0] != n or out.shape[0] != n \
            or work_size(n, 1, 1, False) > STACK_WORK:
        return MISFIT
    return call_address(address, (geo, q, qd, qdd, out, out, out, out, out, out, 1, 3, 0, 0, None))


@njit
def run_gravity(address, geo, q, out):
    """One sample: the scalar "gravity" kernel at ``address`` on q (n,) (the kernel reads the
    positions only) into out (n,). Returns DONE, NON_FINITE or MISFIT."""
    n = int(geo[0])
    if q.shape[0] != n or out.shape[0] != n:
        return MISFIT
    if work_size(n, 1, 1, False) <= STACK_WORK:  # the kernel's stack
        return call_address(address, (geo, q, q, q, out, out, out, out, out, out, 1, 3, 0, 0, None))
    return call_address(address, (geo, q, q, q, out, out, out, out, out, out, 1, 3, 0, 0,
                                  np.empty(work_size(n, 1, 1, False))))


def state(geo, q, qd, qdd, out, gravity):
    """The "state" (or, with ``gravity``, "gravity") kernel on q, qd, qdd (B, n) C-contiguous
    into out (B, n); DONE or NON_FINITE. For the batch paths (threads share large batches)."""
    B, n = q.shape
    if qd.shape != q.shape or qdd.shape != q.shape or out.shape != q.shape or n != int(geo[0]):
        raise ValueError("generated kernel: arrays of the wrong shape")
    if B == 0:
        return DONE
    width = width_for(B)
    flat = [a.reshape(-1) for a in (q, qd, qdd, out)]
    # slots: geo, x0, x1, x2, wext (unused), out
    return run(kernel_address(1, width, False, "gravity" if gravity else "state"), geo, *flat[:3],
               flat[3], flat[3], geo, geo, geo, geo, B, 3, 0, 0, work_size(n, 1, width, False))


_FIRST = threading.Lock()
_prepared = []


def prepare_one_sample():
    """Compile (or load) the one-sample callers for kernel arrays, then forbid other variants:
    the fast path hands them the caller's arrays unchecked by Python, and numba's dispatch
    raises TypeError for any other argument type (a read-only, strided, misaligned or
    non-float array) instead of compiling a variant for it (seconds). Under a lock: numba tests
    whether it may compile only once it holds its compile lock, so a thread whose first call
    waited there while another compiled and disabled compiling would raise."""
    with _FIRST:
        if _prepared:
            return
        geo, one, two = np.zeros(1), np.zeros(1), np.zeros((1, 1))
        run_one(0, geo, two, two)  # MISFIT: n = 0 columns expected, nothing called
        run_state(0, geo, one, one, one, one)
        run_gravity(0, geo, one, one)
        for dispatcher in (run_one, run_state, run_gravity):
            dispatcher.disable_compile()
        _prepared.append(True)
