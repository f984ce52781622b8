"""World-frame kernels, generated as LLVM IR: the mass matrix, forward dynamics, and the first-
and second-order partials of inverse dynamics.

The algorithms of :mod:`hod_dynamics.algorithms.partials` and :mod:`hod_dynamics.algorithms.second_partials`, after
S. Singh, R. P. Russell, P. M. Wensing, "Analytical second-order partial derivatives of
rigid-body inverse dynamics" (IROS 2022): the recursive Newton-Euler quantities resolved in the
world frame (motion subspaces S, twists V, accelerations A and their rates, world inertias I
and their composites over each subtree), from which

- the mass matrix is ``M_ij = S_j^T Ic_i S_i`` for j on the path of i to the base (the
  composite-rigid-body algorithm), and zero across branches;
- forward dynamics solves ``M qdd = tau - h`` with ``h = tau(q, qd, 0)``, the bias torque of
  the same pass (``h_i = S_i^T sum of the forces of i's subtree``), by LU with partial
  pivoting;
- the first-order partials are the assembly of :mod:`hod_dynamics.algorithms.partials`;
- the second-order partials are the backward pass of Singh, Russell and Wensing, O(n d^2) for
  depth d. For each body i (composites of its subtree), each ancestor j of i (i included)
  and each ancestor k of j (j included), the entries of the four tensors at the permutations
  of (i, j, k) are dot products of per-pair vectors with the motion subspace S_k and its two
  world-frame rates (for a 1-DoF joint the paper's phid_k = ad(V_k) S_k equals psid_k =
  ad(V_parent) S_k, since ad(S_k) S_k = 0); entries of triples that are not on one path to
  the base are structurally zero. Beyond the paper's symmetries: r1 = ad*(S_i) Ic - Ic ad(S_i)
  is symmetric and r0 = cmf(Ic S_i) skew, so the paper's 13 vectors per (i, j) reduce to 7
  applied to S_k, 4 to its rate and 2 to its second rate.

One sample at a time on scalars (these are per-sample calls, or batches of small matrices),
written out for the compiler: every 6-vector and 6x6 product is straight-line code over
values in registers, loops run over bodies and paths; nothing is allocated. The same
generated kernel serves every model (its arrays from :func:`model_arrays`). Compiled by LLVM
(:mod:`hod_dynamics.kernels.llvm`) in well under a second, cached on disk.

Longer than the package's other modules (about 1,000 lines): the four kernels share the
world-frame state, its layout and the spatial algebra on lists that writes their code; apart,
each module would import the others' private helpers.

Each kernel has the common signature of :mod:`hod_dynamics.kernels.llvm`: ``i32 f(model, x0, x1, x2,
out0, out1, out2, out3, g0s, -, B, base, flag, -, work)`` (``model``: :func:`model_arrays`) and returns DONE, NON_FINITE (an
input holds a NaN or an infinity; nothing is written for that sample onwards) or SINGULAR
(forward dynamics: a zero pivot).
"""

import threading

import numpy as np
from numba.extending import register_jitable

from ..model.robot_model import per_model
from .llvm import Emitter, STACK_WORK, call_address, compile_ir, is_cached, run, signature
from .njit import njit

# status codes (MISFIT: the one-sample callers met arrays of other shapes, nothing computed)
DONE, NON_FINITE, MISFIT, SINGULAR = 0, 1, 2, 3
_PREPARE = threading.Lock()  # see prepare
_prepared = set()

# per-body quantities of the state in the work array: (name, doubles); bodies 0..n-1 and a
# virtual base body n (identity pose, zero twist, base acceleration: the parent of the roots).
# Inertias (and their composites, sums of inertias in one frame) in the compact form
# (J00, J01, J02, J11, J12, J22, h0, h1, h2, m) of [[J, h~], [-h~, m 1]]: the sums and loads
# move 10 numbers, not 36, and the expanded matrix holds its zeros as constants (folded).
_STATE = (("RT", 9), ("pT", 3), ("S", 6), ("V", 6), ("Sd", 6), ("A", 6), ("alpha", 6),
          ("hc", 6), ("F", 6), ("Ic", 10), ("Bc", 36))
_PER_BODY = sum(size for _, size in _STATE)
# after the state: x, y, w, P, Q (n, 6) of the first-order assembly; M (n, n) and the pivots
# of forward dynamics


@register_jitable
def work_size(n):
    """Doubles of the work array of the kernels for n bodies."""
    return (n + 1) * _PER_BODY + 30 * n + n * n + n + 8


# -- the model arrays ---------------------------------------------------------------------------------
# one float64 array: first int64 values (their bits): n, d, r, the count of the int64 values,
# parents (n), depth (n), paths (n, d) root first, runs (r, 3), anc (n, n)
# (anc[i, j]: j is i or an ancestor of i), below (n, n) (below[i, j]: j is strictly below i)
def _float_offsets(e, n):
    return {"screws": 0, "refs": e.iop("mul", n, 6), "inertias": e.iop("mul", n, 22),
            "g0": e.iop("mul", n, 58)}


class _Layout:
    """Offsets in the model arrays and the work array, as i64 values of the emitted function."""

    def __init__(self, e):
        self.n = n = e.iload("%ints", 0)
        self.d = e.iload("%ints", 1)
        self.r = e.iload("%ints", 2)
        e.emit(f"%floats = getelementptr inbounds double, ptr %ints, i64 {e.iload('%ints', 3)}")
        self.f = _float_offsets(e, n)
        self.parents = 4
        self.depth = e.iop("add", n, 4)
        self.paths = e.iop("add", e.iop("mul", n, 2), 4)
        self.runs = e.iop("add", self.paths, e.iop("mul", n, self.d))
        self.anc = e.iop("add", self.runs, e.iop("mul", self.r, 3))
        self.below = e.iop("add", self.anc, e.iop("mul", n, n))
        n1 = e.iop("add", n, 1)
        e.work(e.iop("add", e.iop("add", e.iop("mul", n1, _PER_BODY), e.iop("mul", n, 31)),
                     e.iop("add", e.iop("mul", n, n), 8)))  # work_size(n)
        self.work = {}
        at = 0
        for name, size in _STATE:
            self.work[name] = (e.address("%work", at), size)
            at = e.iop("add", at, e.iop("mul", n1, size))
        for name in ("x", "y", "w", "P", "Q"):
            self.work[name] = (e.address("%work", at), 6)
            at = e.iop("add", at, e.iop("mul", n, 6))
        self.M = e.address("%work", at)
        self.pivot = e.address("%work", e.iop("add", at, e.iop("mul", n, n)))


def _get(e, L, name, l):
    """The values (a list) of quantity ``name`` of body l (an i64 value)."""
    base, size = L.work[name]
    start = e.iop("mul", l, size)
    return [e.load(base, e.iop("add", start, c)) for c in range(size)]


def _put(e, L, name, l, values):
    base, size = L.work[name]
    start = e.iop("mul", l, size)
    for c, v in enumerate(values):
        e.store(v, base, e.iop("add", start, c))


_COMPACT = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))  # the J entries kept


def _expand(e, c):
    """The 36 list [[J, h~], [-h~, m 1]] of the compact inertia c (zeros as constants)."""
    I = [0.0] * 36
    for k, (r, col) in enumerate(_COMPACT):
        I[6 * r + col] = I[6 * col + r] = c[k]
    h0, h1, h2, m = c[6:]
    upper = [[0.0, e.neg(h2), h1], [h2, 0.0, e.neg(h0)], [e.neg(h1), h0, 0.0]]
    for r in range(3):
        I[6 * (r + 3) + r + 3] = m
        for col in range(3):
            I[6 * r + col + 3] = upper[r][col]
            I[6 * (r + 3) + col] = e.neg(upper[r][col])
    return I


def _inertia(e, L, l):
    """The (composite) inertia of body l as a 36 list."""
    return _expand(e, _get(e, L, "Ic", l))


def _add_to(e, L, name, l, values):
    """quantity[l] += values."""
    old = _get(e, L, name, l)
    _put(e, L, name, l, [e.add(a, b) for a, b in zip(old, values)])


# -- spatial algebra on lists (twists (w, v), wrenches (t, f), 6x6 matrices row-major) ------------
def _cross(e, a, b):
    return [e.sub(e.mul(a[1], b[2]), e.mul(a[2], b[1])), e.sub(e.mul(a[2], b[0]), e.mul(a[0], b[2])),
            e.sub(e.mul(a[0], b[1]), e.mul(a[1], b[0]))]


def _vadd(e, *vectors):
    out = vectors[0]
    for v in vectors[1:]:
        out = [e.add(a, b) for a, b in zip(out, v)]
    return out


def _scale(e, c, v):
    return [e.mul(x, c) for x in v]


def _ad(e, a, b):
    """ad(a) b = (wa x wb, wa x vb + va x wb)."""
    w = _cross(e, a[:3], b[:3])
    return w + _vadd(e, _cross(e, a[:3], b[3:]), _cross(e, a[3:], b[:3]))


def _adstar(e, a, f):
    """ad*(a) f = -ad(a)^T f = (wa x t + va x f, wa x f) for the wrench f = (t, f)."""
    return _vadd(e, _cross(e, a[:3], f[:3]), _cross(e, a[3:], f[3:])) + _cross(e, a[:3], f[3:])


def _mv(e, M, x):
    return [e.dot(zip(M[6 * r:6 * r + 6], x)) for r in range(6)]


def _mtv(e, M, x):
    return [e.dot((M[6 * k + c], x[k]) for k in range(6)) for c in range(6)]


def _transpose(M):
    return [M[6 * c + r] for r in range(6) for c in range(6)]


def _adstar_cols(e, a, M):
    """ad*(a) M (6x6), column by column."""
    cols = [_adstar(e, a, [M[6 * r + c] for r in range(6)]) for c in range(6)]
    return [cols[c][r] for r in range(6) for c in range(6)]


def _sym_adstar(e, a, D):
    """N + N^T with N = ad*(a) D: with D = I the inertia rate ad*(a) I - I ad(a)."""
    N = _adstar_cols(e, a, D)
    return [e.add(N[6 * r + c], N[6 * c + r]) for r in range(6) for c in range(6)]


def _cmf(e, f):
    """The 6x6 X with X v = ad*(v) f, for the wrench f = (n, l): [[-n~, -l~], [-l~, 0]]."""
    X = [0.0] * 36
    for r0, c0, x in ((0, 0, 0), (0, 3, 3), (3, 0, 3)):
        x0, x1, x2 = f[x], f[x + 1], f[x + 2]
        X[6 * r0 + c0 + 1], X[6 * r0 + c0 + 2] = x2, e.neg(x1)
        X[6 * (r0 + 1) + c0], X[6 * (r0 + 1) + c0 + 2] = e.neg(x2), x0
        X[6 * (r0 + 2) + c0], X[6 * (r0 + 2) + c0 + 1] = x1, e.neg(x0)
    return X


def _world_inertia(e, inertia, RT, p):
    """The compact form (see _STATE) of the spatial inertia [[J, h~], [-h~, m 1]] (body frame,
    (angular, linear); ``inertia`` its 36 list) expressed in the world frame, the body frame
    being at (RT, p): h' = R h + m p and J' = R J R^T + m (|p|^2 1 - p p^T) + 2 (p . g) 1 -
    g p^T - p g^T (g = R h; the parallel-axis theorem): a quarter of the work of Ad^-T M Ad^-1."""
    m = inertia[21]
    h = [inertia[2 * 6 + 4], inertia[0 * 6 + 5], inertia[1 * 6 + 3]]
    RJ = [[e.dot((RT[3 * r + k], inertia[6 * k + c]) for k in range(3)) for c in range(3)]
          for r in range(3)]
    g = [e.dot((RT[3 * r + k], h[k]) for k in range(3)) for r in range(3)]
    pp, pg = e.dot(zip(p, p)), e.dot(zip(p, g))
    diag = e.add(e.mul(m, pp), e.mul(pg, 2.0))
    J = []
    for r, c in _COMPACT:
        t = e.dot([(RJ[r][k], RT[3 * c + k]) for k in range(3)])
        t = e.sub(t, e.add(e.mul(e.mul(m, p[r]), p[c]), e.add(e.mul(g[r], p[c]), e.mul(p[r], g[c]))))
        J.append(e.add(t, diag) if r == c else t)
    return J + [e.add(g[r], e.mul(m, p[r])) for r in range(3)] + [m]


def _screw_exp(e, X, theta):
    """(E (3x3 list), p): exp of the unit screw X = (w, v) by theta (see
    :func:`hod_dynamics.kernels.block_spatial.screw_exp`)."""
    w, v = X[:3], X[3:]
    ww, wv = e.dot(zip(w, w)), e.dot(zip(w, v))
    sn, cs = e.sincos(theta)
    a, d = e.sub(1.0, cs), e.sub(theta, sn)
    E = [[None] * 3 for _ in range(3)]
    for r in range(3):
        E[r][r] = e.add(1.0, e.mul(a, e.sub(e.mul(w[r], w[r]), ww)))
    for r, c, k, sign in ((0, 1, 2, -1.0), (1, 0, 2, 1.0), (0, 2, 1, 1.0), (2, 0, 1, -1.0),
                          (1, 2, 0, -1.0), (2, 1, 0, 1.0)):
        E[r][c] = e.add(e.mul(e.mul(sn, w[k]), sign), e.mul(a, e.mul(w[r], w[c])))
    wxv = _cross(e, w, v)
    p = [e.add(e.add(e.mul(theta, v[r]), e.mul(a, wxv[r])),
               e.mul(d, e.sub(e.mul(w[r], wv), e.mul(ww, v[r])))) for r in range(3)]
    return E, p


# -- the world-frame state of one sample ------------------------------------------------------------
def _state(e, L, q, qd, qdd, g0, base, what):
    """Emit the forward pass over the bodies for the sample at q, qd, qdd (pointers to n
    doubles; qd, qdd None: zero), then the subtree sums. ``what``: "mass" (S, Ic), "bias" (S,
    Ic, the forces F of the recursion: forward dynamics), "partials" (everything). ``g0``: the
    pointer to the base acceleration (0, -g) (6 doubles); ``base``: the number of leading
    columns that form a free joint (i64 value; 0 for a fixed base)."""
    n = L.n
    zero6 = [0.0] * 6
    _put(e, L, "RT", n, [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0])
    _put(e, L, "pT", n, [0.0] * 3)
    if what != "mass":
        _put(e, L, "V", n, zero6)
        _put(e, L, "A", n, [e.load(g0, c) for c in range(6)])

    def body(l):
        par = e.iload("%ints", e.iop("add", l, L.parents))
        root = e.icmp("slt", par, 0)
        pose_parent = e.select(root, n, par)
        X = [e.load("%floats", e.iop("add", e.iop("mul", l, 6), c)) for c in range(6)]
        theta = e.load(q, l)
        E, pe = _screw_exp(e, X, theta)
        ref = e.iop("add", L.f["refs"], e.iop("mul", l, 16))
        B = [[e.load("%floats", e.iop("add", ref, 4 * r + c)) for c in range(4)] for r in range(3)]
        C = [[e.dot((B[r][k], E[k][c]) for k in range(3)) for c in range(3)] for r in range(3)]
        pc = [e.add(e.dot((B[r][k], pe[k]) for k in range(3)), B[r][3]) for r in range(3)]
        RTp, pTp = _get(e, L, "RT", pose_parent), _get(e, L, "pT", pose_parent)
        RT = [e.dot((RTp[3 * r + k], C[k][c]) for k in range(3)) for r in range(3) for c in range(3)]
        p = [e.add(e.dot((RTp[3 * r + k], pc[k]) for k in range(3)), pTp[r]) for r in range(3)]
        sw = [e.dot((RT[3 * r + k], X[k]) for k in range(3)) for r in range(3)]
        sv = [e.dot((RT[3 * r + k], X[3 + k]) for k in range(3)) for r in range(3)]
        S = sw + _vadd(e, sv, _cross(e, p, sw))
        _put(e, L, "RT", l, RT)
        _put(e, L, "pT", l, p)
        _put(e, L, "S", l, S)
        ino = e.iop("add", L.f["inertias"], e.iop("mul", l, 36))
        compact = _world_inertia(e, [e.load("%floats", e.iop("add", ino, c)) for c in range(36)],
                                 RT, p)
        _put(e, L, "Ic", l, compact)
        if what == "mass":
            return
        I = _expand(e, compact)
        # the free joint's columns all move the base body: their "parent" is the world
        motion_parent = e.select(e.boolean("or", root, e.icmp("slt", l, base)), n, par)
        Vp, Ap = _get(e, L, "V", motion_parent), _get(e, L, "A", motion_parent)
        qdl = 0.0 if qd is None else e.load(qd, l)
        qddl = 0.0 if qdd is None else e.load(qdd, l)
        Sd = _ad(e, Vp, S)
        V = _vadd(e, Vp, _scale(e, qdl, S))
        A = _vadd(e, Ap, _scale(e, qddl, S), _scale(e, qdl, Sd))
        _put(e, L, "V", l, V)
        _put(e, L, "A", l, A)

        def free_body():  # the twist and acceleration of all the free joint's columns
            _put(e, L, "V", l, zero6)
            _put(e, L, "A", l, [e.load(g0, c) for c in range(6)])

            def column(k):
                Sk = _get(e, L, "S", k)
                _add_to(e, L, "V", l, _scale(e, e.load(qd, k), Sk))
                if qdd is not None:
                    _add_to(e, L, "A", l, _scale(e, e.load(qdd, k), Sk))

            e.loop(0, base, column)

        if qd is not None:
            e.branch(e.icmp("eq", l, e.iop("sub", base, 1)), free_body)
            V, A = _get(e, L, "V", l), _get(e, L, "A", l)
        h = _mv(e, I, V)
        _put(e, L, "F", l, _vadd(e, _mv(e, I, A), _adstar(e, V, h)))
        if what == "bias":
            return
        _put(e, L, "Sd", l, Sd)
        _put(e, L, "alpha", l, _vadd(e, _ad(e, Ap, S), _ad(e, Vp, Sd)))
        _put(e, L, "hc", l, h)
        _put(e, L, "Bc", l, _sym_adstar(e, V, I))

    e.loop(0, n, body)

    def composite(j):  # leaf to root: each body's quantities added to its parent's
        l = e.iop("sub", e.iop("sub", n, 1), j)
        par = e.iload("%ints", e.iop("add", l, L.parents))
        target = e.select(e.icmp("slt", par, 0), n, par)  # roots: into the virtual base
        names = {"mass": ("Ic",), "bias": ("Ic", "F"), "partials": ("Ic", "F", "hc", "Bc")}[what]
        for name in names:
            _add_to(e, L, name, target, _get(e, L, name, l))

    e.loop(0, n, composite)


def _finite(e, pointers, n):
    """Emit the test that the n doubles at each pointer are finite; returns the i1 'some
    value is not' (x - x is 0, or NaN for a NaN or an infinity)."""
    acc = e.alloca()
    e.emit(f"store double 0.0, ptr {acc}, align 8")
    for p in pointers:
        def check(m):
            x = e.load(p, m)
            d = e.sub(x, x)
            e.store(e.add(e.load(acc, 0), d), acc, 0)

        e.loop(0, n, check)
    return e.fcmp("uno", e.load(acc, 0), 0.0)


def _sample(e, pointer, b, n):
    return e.address(pointer, e.iop("mul", b, n))


def _params():
    return signature(["%ints", "%x0", "%x1", "%x2", "%out0", "%out1", "%out2", "%out3", "%g0s"],
                     ["%B", "%base", "%flag"])


def _samples(e, body, inputs):
    """Emit the loop over the B samples: the finiteness test of each sample's ``inputs``
    (pointers to (B, n) arrays), then ``body(b)``; returns NON_FINITE at the first sample
    that holds a NaN or an infinity (the samples before it are written)."""
    n = e.iload("%ints", 0)

    def sample(b):
        bad = _finite(e, [_sample(e, x, b, n) for x in inputs], n)
        refuse, go = e.new_label("refuse"), e.new_label("go")
        e.emit(f"br i1 {bad}, label %{refuse}, label %{go}")
        e.label(refuse)
        e.emit(f"ret i32 {NON_FINITE}")
        e.label(go)
        body(b)

    e.loop(0, "%B", sample)
    e.emit(f"ret i32 {DONE}")


def _g0(e, L, b):
    """The base acceleration of sample b: g0s[b] when the caller gives one per sample
    (``flag`` bit 1: a floating base in its own frame), else the model's."""
    per_sample = e.icmp("ne", e.iop("and", "%flag", 2), 0)
    own = e.address("%g0s", e.iop("mul", b, 6))
    model = e.address("%floats", L.f["g0"])
    r = e.fresh("p")
    e.emit(f"{r} = select i1 {per_sample}, ptr {own}, ptr {model}")
    return r


# -- the kernels ---------------------------------------------------------------------------------------
def mass_ir():
    """M (B, n, n) of q (B, n) into out0: the composite-rigid-body algorithm in the world frame."""
    e = Emitter(1)
    L = _Layout(e)
    n = L.n

    def body(b):
        _state(e, L, _sample(e, "%x0", b, n), None, None, None, "%base", "mass")
        _mass_matrix(e, L, e.address("%out0", e.iop("mul", b, e.iop("mul", n, n))))

    _samples(e, body, ["%x0"])
    return e.function("crba", _params()), "crba"


def _mass_matrix(e, L, M):
    """M_ij = M_ji = S_j^T Ic_i S_i for j on the path of i to the base (paths root first), the
    rest zero; written into the n x n doubles at M."""
    n = L.n
    e.zero(M, 0, e.iop("mul", n, n))

    def row(i):
        P = _mv(e, _inertia(e, L, i), _get(e, L, "S", i))
        depth = e.iload("%ints", e.iop("add", L.depth, i))
        start = e.iop("add", L.paths, e.iop("mul", i, L.d))

        def ancestor(m):
            j = e.iload("%ints", e.iop("add", start, m))
            v = e.dot(zip(_get(e, L, "S", j), P))
            e.store(v, M, e.iop("add", e.iop("mul", i, n), j))
            e.store(v, M, e.iop("add", e.iop("mul", j, n), i))

        e.loop(0, depth, ancestor)

    e.loop(0, n, row)


def forward_ir():
    """qdd (B, n) into out0 from q, qd, tau (B, n): M qdd = tau - h(q, qd) by LU with partial
    pivoting (SINGULAR for a zero pivot)."""
    e = Emitter(1)
    L = _Layout(e)
    n = L.n

    def body(b):
        q, qd, tau = (_sample(e, x, b, n) for x in ("%x0", "%x1", "%x2"))
        _state(e, L, q, qd, None, _g0(e, L, b), "%base", "bias")
        _mass_matrix(e, L, L.M)
        qdd = _sample(e, "%out0", b, n)

        def rhs(i):  # tau_i - h_i, h_i = S_i^T F_i (composite forces)
            h = e.dot(zip(_get(e, L, "S", i), _get(e, L, "F", i)))
            e.store(e.sub(e.load(tau, i), h), qdd, i)

        e.loop(0, n, rhs)
        _lu_solve(e, L.M, qdd, n)

    _samples(e, body, ["%x0", "%x1", "%x2"])
    return e.function("forward_dynamics", _params()), "forward_dynamics"


def _lu_solve(e, M, x, n):
    """x = M^-1 x in place (M n x n row-major, destroyed): Gaussian elimination with partial
    pivoting (rows swapped in M and x as it goes), then back substitution."""
    def column(k):
        # the pivot: the largest |M[r, k]| for r >= k (its row index kept in an alloca)
        best = e.alloca("i64")
        e.emit(f"store i64 {k}, ptr {best}, align 8")

        def scan(r):
            at = e.fresh("n")
            e.emit(f"{at} = load i64, ptr {best}, align 8")
            bigger = e.fcmp("ogt", e.call("fabs", e.load(M, e.iop("add", e.iop("mul", r, n), k))),
                            e.call("fabs", e.load(M, e.iop("add", e.iop("mul", at, n), k))))
            e.emit(f"store i64 {e.select(bigger, r, at)}, ptr {best}, align 8")

        e.loop(e.iop("add", k, 1), n, scan)
        p = e.fresh("n")
        e.emit(f"{p} = load i64, ptr {best}, align 8")
        pivot = e.load(M, e.iop("add", e.iop("mul", p, n), k))
        singular, fine = e.new_label("singular"), e.new_label("pivot")
        e.emit(f"br i1 {e.fcmp('oeq', pivot, 0.0)}, label %{singular}, label %{fine}")
        e.label(singular)
        e.emit(f"ret i32 {SINGULAR}")
        e.label(fine)

        def swap():
            def entry(c):
                a, b = e.iop("add", e.iop("mul", k, n), c), e.iop("add", e.iop("mul", p, n), c)
                va, vb = e.load(M, a), e.load(M, b)
                e.store(vb, M, a)
                e.store(va, M, b)

            e.loop(k, n, entry)
            va, vb = e.load(x, k), e.load(x, p)
            e.store(vb, x, k)
            e.store(va, x, p)

        e.branch(e.icmp("ne", p, k), swap)
        inverse = e.div(1.0, e.load(M, e.iop("add", e.iop("mul", k, n), k)))

        def eliminate(r):
            f = e.mul(e.load(M, e.iop("add", e.iop("mul", r, n), k)), inverse)

            def entry(c):
                at = e.iop("add", e.iop("mul", r, n), c)
                e.store(e.sub(e.load(M, at), e.mul(f, e.load(M, e.iop("add", e.iop("mul", k, n), c)))),
                        M, at)

            e.loop(e.iop("add", k, 1), n, entry)
            e.store(e.sub(e.load(x, r), e.mul(f, e.load(x, k))), x, r)

        e.loop(e.iop("add", k, 1), n, eliminate)

    e.loop(0, n, column)

    def back(j):  # rows n-1 .. 0
        i = e.iop("sub", e.iop("sub", n, 1), j)

        def term(c):
            e.store(e.sub(e.load(x, i), e.mul(e.load(M, e.iop("add", e.iop("mul", i, n), c)),
                                              e.load(x, c))), x, i)

        e.loop(e.iop("add", i, 1), n, term)
        e.store(e.div(e.load(x, i), e.load(M, e.iop("add", e.iop("mul", i, n), i))), x, i)

    e.loop(0, n, back)


def first_ir():
    """d tau/dq, d tau/dqd, M (each (B, n, n), into out0, out1, out2) of q, qd, qdd (B, n):
    the assembly of :func:`hod_dynamics.algorithms.partials._assemble`. ``base`` leading columns form a
    free joint (floating models in their base frame, ``g0s`` (B, 6) per sample)."""
    e = Emitter(1)
    L = _Layout(e)
    n = L.n

    def body(b):
        q, qd, qdd = (_sample(e, x, b, n) for x in ("%x0", "%x1", "%x2"))
        _state(e, L, q, qd, qdd, _g0(e, L, b), "%base", "partials")

        def pq(i):
            S, Bc, hc = (_get(e, L, name, i) for name in ("S", "Bc", "hc"))
            Ic = _inertia(e, L, i)
            _put(e, L, "P", i, _mv(e, Ic, S))
            _put(e, L, "Q", i, [e.sub(a, c) for a, c in zip(_mv(e, Bc, S), _adstar(e, S, hc))])

        e.loop(0, n, pq)
        nn = e.iop("mul", n, n)
        for wrt, out in enumerate(("%out0", "%out1", "%out2")):
            _assemble(e, L, wrt, e.address(out, e.iop("mul", b, nn)))

    _samples(e, body, ["%x0", "%x1", "%x2"])
    return e.function("first_partials", _params()), "first_partials"


def _assemble(e, L, wrt, out):
    """out[i, j] = d tau_i / d wrt_j (wrt 0: q, 1: qd, 2: qdd) from the state: P_i . x_j +
    Q_i . y_j for j on the path of i to the base, S_i . w_j for j below i, 0 across branches.
    x, y, w are stored component-major ((6, n): contiguous in j) and the three cases are
    selected, not branched, so that the loop over j runs in SIMD lanes."""
    n = L.n

    def column(name, j, values):  # component c of column j at c n + j
        base, _ = L.work[name]
        for c, v in enumerate(values):
            e.store(v, base, e.iop("add", e.iop("mul", n, c), j))

    def read(name, j):
        base, _ = L.work[name]
        return [e.load(base, e.iop("add", e.iop("mul", n, c), j)) for c in range(6)]

    def inputs(j):
        S, Ic = _get(e, L, "S", j), _inertia(e, L, j)
        if wrt == 0:
            x, y = _get(e, L, "alpha", j), _get(e, L, "Sd", j)
        elif wrt == 1:
            column("x", j, _scale(e, 2.0, _get(e, L, "Sd", j)))

            def free():  # the free joint's columns: ad(V_base) S, the base's own twist
                column("x", j, _ad(e, _get(e, L, "V", e.iop("sub", "%base", 1)), S))

            e.branch(e.icmp("slt", j, "%base"), free)
            x, y = read("x", j), S
        else:
            x, y = S, None
        w = _mv(e, Ic, x)
        if y is not None:
            hc = _get(e, L, "hc", j)
            w = _vadd(e, w, _mv(e, _get(e, L, "Bc", j), y), _adstar(e, y, hc))
        if wrt == 0:
            w = _vadd(e, w, _adstar(e, S, _get(e, L, "F", j)))
        column("x", j, x)
        column("y", j, [0.0] * 6 if y is None else y)
        column("w", j, w)

    e.loop(0, n, inputs)

    def row(i):
        P, Q, S = _get(e, L, "P", i), _get(e, L, "Q", i), _get(e, L, "S", i)

        def entry(j):
            at = e.iop("add", e.iop("mul", i, n), j)
            up = e.icmp("ne", e.iload("%ints", e.iop("add", L.anc, at)), 0)  # j is i or above it
            down = e.icmp("ne", e.iload("%ints", e.iop("add", L.below, at)), 0)  # j below i
            x = read("x", j)
            low = e.dot(list(zip(P, x)) + (list(zip(Q, read("y", j))) if wrt < 2 else []))
            high = e.dot(zip(S, read("w", j)))
            e.store(e.select(up, low, e.select(down, high, 0.0, "T"), "T"), out, at)

        e.loop(0, n, entry)

    e.loop(0, n, row)


def second_ir():
    """The four tensors (B, n, n, n) qq, vv, qv, dM (out0..out3) of q, qd, qdd (B, n):
    the backward pass of Singh, Russell and Wensing, written into the entries that can be
    nonzero; with ``flag`` bit 1 the structurally zero entries are zeroed from the runs too."""
    e = Emitter(1)
    L = _Layout(e)
    n = L.n

    def body(b):
        q, qd, qdd = (_sample(e, x, b, n) for x in ("%x0", "%x1", "%x2"))
        _state(e, L, q, qd, qdd, _g0(e, L, b), 0, "partials")
        n3 = e.iop("mul", e.iop("mul", n, n), n)
        T = [e.address(f"%out{k}", e.iop("mul", b, n3)) for k in range(4)]
        e.branch(e.icmp("ne", e.iop("and", "%flag", 1), 0), lambda: _zero_runs(e, L, T))
        e.loop(0, n, lambda i: _body_triples(e, L, i, T))

    _samples(e, body, ["%x0", "%x1", "%x2"])
    return e.function("second_partials", _params()), "second_partials"


def _zero_runs(e, L, T):
    """Zero the entries no triple writes: rows (tensor, start, stop) of the runs."""
    def run(m):
        at = e.iop("add", L.runs, e.iop("mul", m, 3))
        t, a, b = (e.iload("%ints", e.iop("add", at, c)) for c in range(3))
        target = T[3]
        for k in (2, 1, 0):
            chosen = e.fresh("p")
            e.emit(f"{chosen} = select i1 {e.icmp('eq', t, k)}, ptr {T[k]}, ptr {target}")
            target = chosen
        e.zero(target, a, e.iop("sub", b, a))

    e.loop(0, L.r, run)


def _body_terms(e, L, i):
    """Per-body matrices and vectors of the backward pass at body i (composites of its
    subtree): R0 = ad*(S) Ic - Ic ad(S); R1 = ad*(Sd) Ic - Ic ad(Sd) + cmf(Ic Sd) + ad*(S) BC
    - BC ad(S); R2 = BC = Bc + cmf(hc); rows of w: Ic S, BC^T S, BC Sd + ad*(S) F + Ic alpha,
    BC S + 2 Ic Sd, 2 ad*(S) Ic S (the paper's r6 S_i)."""
    S, Sd, alpha, Bc, hc, F = (_get(e, L, name, i) for name in ("S", "Sd", "alpha", "Bc", "hc", "F"))
    Ic = _inertia(e, L, i)
    R2 = [e.add(a, b) for a, b in zip(Bc, _cmf(e, hc))]
    R0 = _sym_adstar(e, S, Ic)
    w5 = _mv(e, Ic, Sd)
    R1 = [e.add(a, b) for a, b in zip(_sym_adstar(e, Sd, Ic), _cmf(e, w5))]
    N0, N1 = _adstar_cols(e, S, R2), _adstar_cols(e, S, _transpose(R2))
    R1 = [e.add(R1[6 * r + c], e.add(N0[6 * r + c], N1[6 * c + r])) for r in range(6) for c in range(6)]
    w0 = _mv(e, Ic, S)
    w1 = _mtv(e, R2, S)
    w2 = _vadd(e, _mv(e, R2, Sd), _adstar(e, S, F), _mv(e, Ic, alpha))
    w3 = _vadd(e, _mv(e, R2, S), _scale(e, 2.0, w5))
    w4 = _scale(e, 2.0, _adstar(e, S, w0))
    return R0, R1, (w0, w1, w2, w3, w4)


def _pair_vectors(e, R0, R1, w, s, ps, pss):
    """The vectors of pair (i, j) that meet every ancestor k of j, for s = S_j, ps = Sd_j,
    pss = alpha_j: a = R0 s, b = ad*(s) w0, u1 = R1^T s, u3 = R1 ps + R0 pss + ad*(s) w2,
    g = ad*(s) w1 + ad*(ps) w0 - R0 ps, u6 = R0 ps + ad*(ps) w0 + ad*(s) w3, u7 = R1 s + 2 R0 ps."""
    c, d = _mv(e, R0, ps), _adstar(e, ps, w[0])
    return [_mv(e, R0, s), _adstar(e, s, w[0]), _mtv(e, R1, s),
            _vadd(e, _mv(e, R1, ps), _mv(e, R0, pss), _adstar(e, s, w[2])),
            _vadd(e, _adstar(e, s, w[1]), d, _scale(e, -1.0, c)),
            _vadd(e, c, d, _adstar(e, s, w[3])),
            _vadd(e, _mv(e, R1, s), _scale(e, 2.0, c))]


def _body_triples(e, L, i, T):
    """All entries of body i's triples (i, j, k), k <= j <= i on the path of i to the base:
    T = (qq, vv, qv, dM) pointers to the flat (n^3,) tensors of the sample: qq = d2tau/dq dq,
    vv = d2tau/dqd dqd, qv = d2tau/dq dqd, dM = dM/dq, each entry written by the pair whose
    indices it permutes."""
    n = L.n
    nn = e.iop("mul", n, n)
    R0, R1, w = _body_terms(e, L, i)
    u7 = w[4]
    depth = e.iload("%ints", e.iop("add", L.depth, i))
    start = e.iop("add", L.paths, e.iop("mul", i, L.d))

    def pair(pj):
        j = e.iload("%ints", e.iop("add", start, pj))
        U = _pair_vectors(e, R0, R1, w, _get(e, L, "S", j), _get(e, L, "Sd", j),
                          _get(e, L, "alpha", j))
        i_is_j = e.icmp("eq", j, i)

        def triple(pk):
            k = e.iload("%ints", e.iop("add", start, pk))
            s, ps, pss = (_get(e, L, name, k) for name in ("S", "Sd", "alpha"))
            D = [e.dot(zip(U[u], s)) for u in range(7)]
            Pa, Pb = e.dot(zip(U[0], ps)), e.dot(zip(U[1], ps))
            D9, D10 = e.dot(zip(U[2], ps)), e.dot(zip(U[4], ps))
            D11, D12 = e.dot(zip(U[0], pss)), e.dot(zip(U[1], pss))
            Sa, Sb = D[0], D[1]
            p1, p2 = e.sub(Pa, Pb), e.add(D12, D10)

            def at(a, b, c):  # flat offset of [a, b, c]
                return e.iop("add", e.iop("add", e.iop("mul", a, nn), e.iop("mul", b, n)), c)

            qq, vv, qv, dM = T
            e.store(p2, qq, at(i, j, k))
            e.store(e.neg(p1), qv, at(i, k, j))

            def j_not_i():
                t = e.add(D9, D11)
                e.store(t, qq, at(j, k, i))
                e.store(t, qq, at(j, i, k))
                e.store(p1, qv, at(j, k, i))
                e.store(e.add(D[2], e.mul(Pa, 2.0)), qv, at(j, i, k))
                v = e.sub(Sa, Sb)
                e.store(v, vv, at(j, k, i))
                e.store(v, vv, at(j, i, k))
                e.store(Sa, dM, at(k, j, i))
                e.store(Sa, dM, at(j, k, i))

            e.branch(i_is_j, lambda: None, j_not_i)

            def k_not_j():
                S3 = D[3]
                e.store(p2, qq, at(i, k, j))
                e.store(S3, qq, at(k, i, j))
                v = e.sub(Sb, Sa)
                e.store(v, vv, at(i, j, k))
                e.store(v, vv, at(i, k, j))
                e.store(e.add(D[4], e.mul(Pb, 2.0)), qv, at(i, j, k))
                e.store(D[5], qv, at(k, j, i))
                e.store(Sb, dM, at(k, i, j))
                e.store(Sb, dM, at(i, k, j))

                def also_j_not_i():
                    e.store(S3, qq, at(k, j, i))
                    v2 = e.add(Sa, Sb)
                    e.store(v2, vv, at(k, i, j))
                    e.store(v2, vv, at(k, j, i))
                    e.store(D[6], qv, at(k, i, j))

                def j_is_i():
                    e.store(e.dot(zip(u7, s)), vv, at(k, j, i))

                e.branch(i_is_j, j_is_i, also_j_not_i)

            def k_is_j():
                e.store(e.neg(Sa), vv, at(i, j, k))

            e.branch(e.icmp("ne", k, j), k_not_j, k_is_j)

        e.loop(0, e.iop("add", pj, 1), triple)

    e.loop(0, depth, pair)


# -- packing, compiled kernels and their numba callers -------------------------------------------
_KERNELS = {"crba": mass_ir, "forward_dynamics": forward_ir, "first_partials": first_ir,
            "second_partials": second_ir}
_addresses = {}
_texts = {}


def _text(which):
    if which not in _texts:
        _texts[which] = _KERNELS[which]()[0]
    return _texts[which]


def kernel_address(which):
    """Address of the kernel ``which`` ("crba", "forward_dynamics", "first_partials",
    "second_partials"), compiled on first use in this process or loaded from the disk cache."""
    address = _addresses.get(which)
    if address is None:
        address = _addresses[which] = compile_ir(_text(which), which)
    return address


def kernel_cached(which):
    """True when the kernel's machine code is loaded or in the disk cache."""
    return which in _addresses or is_cached(_text(which), which)


def model_arrays(model, free_joint=False):
    """The model for the kernels, one float64 array (see the layout above); the runs of
    structurally zero entries of the second-order tensors are added by :func:`second_model`.
    With ``free_joint`` the first six columns are one joint (a floating model's tree with its
    free joint, hod_dynamics.algorithms.partials._with_free_joint): ancestors of one another."""
    return _free_arrays(model) if free_joint else _fixed_arrays(model)


def _pack(model, runs, free_joint):
    n = model.n_dof
    chains = [chain[::-1] for chain in model.ancestors]  # root first
    depth = np.array([len(c) for c in chains], dtype=np.int64)
    paths = np.zeros((n, max(depth, default=1)), dtype=np.int64)
    for i, chain in enumerate(chains):
        paths[i, :len(chain)] = chain
    anc = np.zeros((n, n), dtype=np.int64)
    for l, chain in enumerate(model.ancestors):
        anc[l, list(chain)] = 1
    if free_joint:
        anc[:6, :6] = 1
    below = anc.T * (1 - np.eye(n, dtype=np.int64))
    if free_joint:
        below[:6, :6] = 0
    gravity = np.concatenate([np.zeros(3), -model.gravity])
    floats = np.concatenate([a.ravel() for a in (model.screws, model.references, model.inertias,
                                                 gravity)]).astype(float)
    runs = np.asarray(runs, dtype=np.int64).reshape(-1, 3)
    body = [model.parents, depth, paths.ravel(), runs.ravel(), anc.ravel(), below.ravel()]
    count = 4 + sum(a.size for a in body)
    ints = np.concatenate([[n, paths.shape[1], len(runs), count]] + body).astype(np.int64)
    return np.concatenate([ints.view(np.float64), floats])


@per_model
def _fixed_arrays(model):
    return _pack(model, [], False)


@per_model
def _free_arrays(tree):
    return _pack(tree, [], True)


@per_model
def second_model(model):
    """The model array of a fixed-base model for the second-order kernel, with the runs of its
    structurally zero entries: found by running the kernel on tensors filled with NaN (for
    finite inputs every entry it writes is finite)."""
    packed = _fixed_arrays(model)
    n = model.n_dof
    tensors = np.full((4, n, n, n), np.nan)
    state = np.random.default_rng(0).uniform(-1.0, 1.0, (3, n))
    # the run also compiles the one-sample caller for the arguments it takes, kernel arrays,
    # and its dispatcher then compiles no other variant: any other argument type raises
    # TypeError in the dispatch (under a lock: see prepare)
    with _PREPARE:
        run_second(kernel_address("second_partials"), packed, *state, *tensors,
                   np.empty(work_size(n)), False)
        run_second.disable_compile()
    zeros = np.isnan(tensors)
    if 2 * np.count_nonzero(zeros) > zeros.size:  # mostly zero (a branched tree): clearing
        runs = [(t, 0, n ** 3) for t in range(4)]  # whole tensors (memset) is faster
    else:
        runs = []
        for t in range(4):
            edges = np.diff(np.concatenate([[0], zeros[t].ravel(), [0]]).astype(int))
            runs += [(t, a, b) for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1))]
    return _pack(model, runs, False)


_NO_G0 = np.zeros(6)  # a placeholder for g0s when the model's base acceleration serves


def _call(which, model, x, outs, B, base=0, g0s=None, flag=0):
    """The kernel ``which`` on B samples of the model array ``model``: x three flat inputs,
    outs up to four flat outputs (C-contiguous float64 arrays; the sizes are the caller's to
    get right)."""
    outs = list(outs) + [outs[0]] * (4 - len(outs))
    if g0s is not None:
        flag |= 2
    return run(kernel_address(which), model, *x, *outs, _NO_G0 if g0s is None else g0s.reshape(-1),
               model, B, base, flag, 0, work_size(int(model[:1].view(np.int64)[0])))


def mass(model, q, out):
    """M (B, n, n) of q (B, n) into out; DONE or NON_FINITE."""
    flat = q.reshape(-1)
    return _call("crba", model, (flat, flat, flat), (out.reshape(-1),), q.shape[0])


def forward(model, q, qd, tau, out, base=0, g0s=None):
    """qdd (B, n) into out; DONE, NON_FINITE or SINGULAR. ``base`` free-joint columns and
    ``g0s`` (B, 6) the base acceleration of every sample (a floating base in its own frame)."""
    return _call("forward_dynamics", model, [a.reshape(-1) for a in (q, qd, tau)],
                 (out.reshape(-1),), q.shape[0], base, g0s)


def first(model, q, qd, qdd, out, base=0, g0s=None):
    """(d tau/dq, d tau/dqd, M) of q, qd, qdd (B, n) into out (3, B, n, n); DONE or
    NON_FINITE. ``base``, ``g0s`` as for :func:`forward`."""
    return _call("first_partials", model, [a.reshape(-1) for a in (q, qd, qdd)],
                 [o.reshape(-1) for o in out], q.shape[0], base, g0s)


def seconds(model, q, qd, qdd, tensors, zero):
    """The four tensors (B, n, n, n) of q, qd, qdd (B, n) into ``tensors``; with ``zero`` the
    structurally zero entries too. DONE, or NON_FINITE at the first sample holding a NaN or
    an infinity (the samples before it are written)."""
    return _call("second_partials", model, [a.reshape(-1) for a in (q, qd, qdd)],
                 [t.reshape(-1) for t in tensors], q.shape[0], flag=1 if zero else 0)


@njit
def _joints(model):
    """n, the first int64 value of a model array."""
    return model[:1].view(np.int64)[0]


@njit
def run_mass(address, model, q, out):
    """One sample: M (n, n) of q (n,) into out. DONE, NON_FINITE or MISFIT (shapes)."""
    n = _joints(model)
    if q.shape[0] != n or out.shape[0] != n or out.shape[1] != n:
        return MISFIT
    if work_size(n) <= STACK_WORK:  # the kernel's stack
        return call_address(address, (model, q, q, q, out, out, out, out, q, q, 1, 0, 0, 0, None))
    return call_address(address, (model, q, q, q, out, out, out, out, q, q, 1, 0, 0, 0,
                                  np.empty(work_size(n))))


@njit
def run_forward(address, model, q, qd, tau, out):
    """One sample of a fixed base: qdd (n,) into out. DONE, NON_FINITE, MISFIT or SINGULAR."""
    n = _joints(model)
    if q.shape[0] != n or qd.shape[0] != n or tau.shape[0] != n or out.shape[0] != n:
        return MISFIT
    if work_size(n) <= STACK_WORK:  # the kernel's stack
        return call_address(address, (model, q, qd, tau, out, out, out, out, q, q, 1, 0, 0, 0, None))
    return call_address(address, (model, q, qd, tau, out, out, out, out, q, q, 1, 0, 0, 0,
                                  np.empty(work_size(n))))


@njit
def run_first(address, model, q, qd, qdd, out):
    """One sample of a fixed base: (d tau/dq, d tau/dqd, M) of q, qd, qdd (n,) into out
    (3, n, n). DONE, NON_FINITE or MISFIT."""
    n = _joints(model)
    if (q.shape[0] != n or qd.shape[0] != n or qdd.shape[0] != n or out.shape[0] != 3
            or out.shape[1] != n or out.shape[2] != n):
        return MISFIT
    if work_size(n) <= STACK_WORK:  # the kernel's stack
        return call_address(address, (model, q, qd, qdd, out[0], out[1], out[2], out[0], q, q, 1,
                                      0, 0, 0, None))
    return call_address(address, (model, q, qd, qdd, out[0], out[1], out[2], out[0], q, q, 1, 0,
                                  0, 0, np.empty(work_size(n))))


@njit
def run_second(address, model, q, qd, qdd, qq, vv, qv, dM, work, zero):
    """One sample: the four tensors (n, n, n) of q, qd, qdd (n,) into qq, vv, qv, dM; with
    ``zero`` the structurally zero entries too. DONE, NON_FINITE or MISFIT."""
    n = _joints(model)
    if (q.shape[0] != n or qd.shape[0] != n or qdd.shape[0] != n or work.shape[0] < work_size(n)):
        return MISFIT
    for T in (qq, vv, qv, dM):
        if T.shape[0] != n or T.shape[1] != n or T.shape[2] != n:
            return MISFIT
    return call_address(address, (model, q, qd, qdd, qq, vv, qv, dM, q, q, 1, 0,
                                  1 if zero else 0, 0, work))


def prepare(caller):
    """Compile (or load) the one-sample ``caller`` (:func:`run_mass`, :func:`run_forward`,
    :func:`run_first`) for kernel arrays, then forbid other variants: the fast paths hand it
    the caller's arrays unchecked by Python, and numba's dispatch raises TypeError for any
    other argument type instead of compiling a variant for it (seconds). Under a lock (see
    :func:`hod_dynamics.kernels.rnea_ir.prepare_one_sample`)."""
    with _PREPARE:
        if caller in _prepared:
            return
        model, one = np.zeros(1), np.zeros(1)
        arrays = {run_mass: (one, np.zeros((1, 1))), run_forward: (one, one, one, one),
                  run_first: (one, one, one, np.zeros((1, 1, 1)))}[caller]
        caller(0, model, *arrays)  # MISFIT: n = 0 expected, nothing called
        caller.disable_compile()
        _prepared.add(caller)
