"""Recursive O(n) inverse dynamics and its time derivatives of any order:
S. Kumar, A. Müller, "Nth order analytical time derivatives of inverse dynamics in recursive and
closed forms", IEEE ICRA 2021, sec. II.

Body-fixed Newton-Euler on a kinematic tree, carried out on jets of normalised Taylor
coefficients (see :mod:`hod_dynamics.jets`) so that the Leibniz sums of the paper become Cauchy
products. For body i with parent p (frames of body i, twists ``(omega, v)``, wrenches ``(t, f)``):

- ``Ad_{C_{i,p}}(t)`` from ``d/dt Ad_{C_{i,p}} = -qd_i ad(X_i) Ad_{C_{i,p}}`` (sec. II.C),
- ``V_i = Ad_{C_{i,p}} V_p + X_i qd_i``; the body acceleration is the derivative of ``V_i`` plus
  gravity ``G_i = Ad_{C_{i,p}} G_p``, ``G_base = (0, -g)`` (the base acceleration of
  Luh, Walker and Paul, "On-line computational scheme for mechanical manipulators", 1980),
- ``W_i = M_i (dV_i + G_i) - ad(V_i)^T M_i V_i - W_ext,i + sum_children Ad_{C_{c,i}}^T W_c``,
- ``tau_i = X_i^T W_i``.

Every array keeps the Taylor-coefficient axis first and the (flattened) batch second, so one
call evaluates many trajectory samples without a Python loop over samples.
"""

import numpy as np

from .backend import (MIN_CHUNK, is_kernel_array, kernel_array, kernels, map_chunks,
                      resolve_backend)
from .errors import InputError
from .jets import cauchy_bias, cauchy_matTvec, cauchy_matvec, cross, from_taylor, to_taylor
from .model import per_model
from .validation import batch_size, check_jet, real_array
from .spatial import Ad, inverse, rotation_matrix, screw_exp


def joint_adjoint_taylor(model, qc, wc, K):
    """Taylor coefficients of ``Ad_{C_{i,parent}}`` for every joint.

    ``qc`` (>=1, B, n) coefficients of q, ``wc`` (>=K-1, B, n) of qd. Returns (K, B, n, 6, 6):
    the twist transform from the parent body frame to body i's frame and its derivatives / k!.
    """
    A = np.empty((K,) + qc.shape[1:] + (6, 6))
    A[0] = Ad(screw_exp(model.screws, -qc[0])) @ model.Ad_references_inv
    adX = model.ad_screws
    for k in range(1, K):
        S = np.einsum("jbn,jbnrc->bnrc", wc[:k][::-1], A[:k])
        A[k] = (-1.0 / k) * (adX @ S)
    return A


def wrench_taylor(model, wrenches, batch_shape, K):
    """External wrenches -> body-frame Taylor coefficients (K, B, n, 6) (n + 1 slots for a
    floating model, the last one the base body).

    ``wrenches`` maps URDF link names to derivative jets (*batch, K, 6) of the wrench
    ``(torque, force)`` that the environment applies ON that link, expressed in the link's
    frame, torque about the link frame origin (N m, N). Wrenches on links rigidly attached
    to a fixed base do no work on the joints and are ignored.
    """
    B = int(np.prod(batch_shape, dtype=int))
    return _wrench_block(model, _wrench_terms(model, wrenches, batch_shape, K), 0, B, K)


def _wrench_terms(model, wrenches, batch_shape, K):
    """Validate wrenches; returns [(body, Ad(pose^-1) (6, 6), jet (B or 1, K, 6))]: a link wrench
    w (row) is ``w @ Ad(pose^-1)`` in the body frame (``Ad^T`` maps wrenches to the child).
    The base body of a floating model is body ``n``."""
    terms = []
    for link, jet in (wrenches or {}).items():
        frame = model.frame(link)
        W = real_array(f"wrench on link '{link}'", jet)
        if W.ndim < 2 or W.shape[-2:] != (K, 6):
            raise InputError(f"wrench on link '{link}' must have shape (..., {K}, 6) (rows "
                             f"W^(0..{K - 1}), (torque, force)), got {W.shape}")
        if not np.all(np.isfinite(W)):
            raise InputError(f"wrench on link '{link}' holds non-finite values")
        try:
            full = np.broadcast_to(W, tuple(batch_shape) + (K, 6))
        except ValueError:
            raise InputError(f"wrench on link '{link}' has batch shape {W.shape[:-2]}, which "
                             f"does not broadcast to the trajectory batch {tuple(batch_shape)}") from None
        if frame.body < 0 and not model.floating:
            continue
        # a wrench without batch axes stays one row (broadcast per block, no full-size copy)
        W = W.reshape(1, K, 6) if W.ndim == 2 else full.reshape(-1, K, 6)
        body = frame.body if frame.body >= 0 else model.n_dof
        terms.append((body, Ad(inverse(frame.pose)), W))
    return terms


def _wrench_block(model, terms, start, stop, K):
    """Body-frame wrench coefficients (K, stop-start, n (+1 floating), 6) of samples start..stop-1."""
    out = np.zeros((K, stop - start, model.n_dof + model.floating, 6))
    for body, Ad_inv, W in terms:
        rows = W if len(W) == 1 else W[start:stop]
        out[:, :, body] += to_taylor(rows) @ Ad_inv
    return out


def rnea_taylor(model, qc, wc, K, wext=None, root=None):
    """Newton-Euler on Taylor coefficients: returns tau coefficients (K, B, n).

    ``qc`` (K+1, B, n), ``wc`` (K+1, B, n): coefficients of q and qd; ``wext`` (K, B, n, 6)
    body-frame wrench coefficients or None. The twist needs one coefficient more than tau
    because the acceleration is its derivative.

    ``root`` (floating base): ``(VR (K+1, B, 6), GR (K, B, 6))`` coefficients of the base body
    twist and of the gravity twist ``(0, -R^T g)`` in the base frame; then ``wext`` has a last
    slot for the base and the result is ``(tau (K, B, n), base wrench (K, B, 6))``.
    """
    n = model.n_dof
    B = qc.shape[1]
    A = joint_adjoint_taylor(model, qc, wc, K + 1)
    scale = np.arange(1, K + 1, dtype=float)[:, None, None]
    g0 = np.concatenate([np.zeros(3), -model.gravity])
    V = [None] * n
    acc = [None] * n
    G = [None] * n
    W = [None] * n
    for i in range(n):
        p = model.parents[i]
        X = model.screws[i]
        Ai = A[:, :, i]
        if p < 0 and root is None:
            Vi = wc[:K + 1, :, i, None] * X
            Gi = Ai[:K] @ g0
        else:
            Vp, Gp = root if p < 0 else (V[p], G[p])
            Vi = cauchy_matvec(Ai, Vp, K + 1) + wc[:K + 1, :, i, None] * X
            Gi = cauchy_matvec(Ai, Gp, K)
        V[i], G[i] = Vi, Gi
        acc[i] = scale * Vi[1:] + Gi
        W[i] = _newton_euler(model.inertias[i], acc[i], Vi, K)
        if wext is not None:
            W[i] -= wext[:, :, i]
    tau = np.empty((K, B, n))
    W_root = None if root is None else np.zeros((K, B, 6))
    for i in reversed(range(n)):
        tau[:, :, i] = W[i] @ model.screws[i]
        p = model.parents[i]
        if p >= 0:
            W[p] = W[p] + cauchy_matTvec(A[:K, :, i], W[i], K)
        elif root is not None:
            W_root += cauchy_matTvec(A[:K, :, i], W[i], K)
    if root is None:
        return tau
    VR, GR = root
    W_root += _newton_euler(model.base_inertia, scale * VR[1:] + GR, VR, K)
    if wext is not None:
        W_root -= wext[:, :, n]
    return tau, W_root


def _newton_euler(M, acc, V, K):
    """Wrench coefficients ``M acc_k + sum_j -ad(V_j)^T M V_{k-j}`` (K, B, 6) of one body."""
    return acc @ M.T + cauchy_bias(V, V[:K] @ M.T, K)


def time_derivatives_recursive(model, qjet, order, wrenches=None, backend=None):
    """tau and its time derivatives up to ``order`` by the recursive algorithm.

    ``qjet`` (..., order+3, n): q, qd, qdd, ..., q^(order+2). Returns (..., order+1, n).
    ``backend``: "numba", "numpy" or "auto" (None: see :mod:`hod_dynamics.backend`). Large
    batches run in blocks of samples, so the working memory stays bounded whatever the batch.
    (Floating models: :func:`hod_dynamics.floating.time_derivatives_floating`.)
    """
    compiled = resolve_backend(backend) == "numba"
    if compiled and not wrenches:
        tau = _compiled_call(model, qjet, order)
        if tau is not None:
            return tau
    jet = check_jet(model, qjet, order + 3, finite=not compiled, what="time_derivatives",
                    result=(order + 1) * model.n_dof)
    batch = jet.shape[:-2]
    flat = jet.reshape((batch_size(batch),) + jet.shape[-2:])
    out, _ = recursion(model, flat, order + 1, batch, wrenches, compiled,
                       refuse=lambda: check_jet(model, qjet, order + 3))
    return out.reshape(batch + (order + 1, model.n_dof))


def _compiled_call(model, qjet, order):
    """The common call (a node's or a controller's: one sample or a small batch, a float64
    C-contiguous jet of the right shape, a fixed base, no wrenches) in one kernel call, with
    only the checks that call needs (the kernel tests finiteness as it reads); None for
    anything else, which the general path validates (with its error messages)."""
    if not is_kernel_array(qjet) or model.floating:
        return None
    n = model.n_dof
    if qjet.shape[-2:] != (order + 3, n):
        return None
    batch = qjet.shape[:-2]
    B = batch_size(batch)
    if B >= 2 * MIN_CHUNK:  # worth threads
        return None
    out = np.empty(batch + (order + 1, n))
    kernel, parents, geometry = _rnea_kernel(model)
    if not kernel(parents, geometry, qjet.reshape((B, order + 3, n)), order + 1, _NO_WRENCH,
                  out.reshape((B, order + 1, n))):
        check_jet(model, qjet, order + 3)  # names the NaN or infinity the kernel met
        raise InputError("qjet holds a non-finite value")  # not reached after check_jet
    return out


def recursion(model, flat, K, batch, wrenches, compiled, refuse=None, root=None):
    """The recursion on a flat batch, in blocks of samples (and threads for numba).

    ``flat`` (B, K+1, n): the joint jet q^(0..K); ``root`` (floating base): ``(quat (B, 4),
    vbase (B, K+1, 6))`` the unit quaternion of the base and its body twist's derivative rows
    (:mod:`hod_dynamics.floating`). Returns ``(tau (B, K, n), base wrench (B, K, 6) or
    None)``, derivatives (not coefficients). ``refuse()`` raises the InputError naming a NaN
    the compiled kernel met.
    """
    n = model.n_dof
    B = flat.shape[0]
    out = np.empty((B, K, n))
    if compiled and root is None and not wrenches and B < 2 * MIN_CHUNK:
        # the common call (one sample, a controller's or a node's batch): validated once, one
        # kernel call, no thread hand-off (HOD_DYNAMICS_THREADS is read only for batches it
        # splits); the kernel tests finiteness as it reads
        if not _rnea_numba(model, flat, K, None, out):
            if refuse is not None:
                refuse()
            raise InputError("qjet holds a non-finite value")  # not reached after refuse
        return out, None
    terms = _wrench_terms(model, wrenches, batch, K) if wrenches else []
    base = None if root is None else np.empty((B, K, 6))
    if compiled:
        run, block = _rnea_numba, NUMBA_BLOCK
    else:
        run, block = _rnea_numpy, max(1, NUMPY_BLOCK_BYTES // ((K + 1) * max(n, 1) * 640))

    def chunk(a, b):
        wext = _wrench_block(model, terms, a, b, K) if terms else None
        if root is None:
            return run(model, flat[a:b], K, wext, out[a:b])
        return run(model, flat[a:b], K, wext, out[a:b], (root[0][a:b], root[1][a:b], base[a:b]))

    for start in range(0, B, block):
        stop = min(start + block, B)
        # the compiled kernel releases the GIL: a large block is shared among threads
        done = map_chunks(chunk, start, stop) if compiled else [chunk(start, stop)]
        if not all(done):
            if refuse is not None:
                refuse()  # names the NaN or infinity the kernel met
            raise InputError("qjet holds a non-finite value")  # not reached after refuse
    return out, base


# samples per block: numpy's working set is about 640 (K+1) n bytes per sample (Ad jets,
# twists, wrenches, temporaries), numba's a few arrays per sample (block only bounds wext)
NUMPY_BLOCK_BYTES = 64 * 2**20
NUMBA_BLOCK = 2**16


def _rnea_numpy(model, jet, K, wext, out, root=None):
    """Vectorised path: jet (B, K+2, n) of finite numbers -> tau jet written into out (B, K, n)
    (and the base wrench jet into root[2] (B, K, 6) for a floating base). Returns True."""
    c = to_taylor(jet[:, :K + 1])
    wc = to_taylor(jet[:, 1:K + 2])
    if root is None:
        out[...] = from_taylor(rnea_taylor(model, c, wc, K, wext), jet.shape[:1])
        return True
    quat, vbase, base = root
    tau, W = rnea_taylor(model, c, wc, K, wext, root_taylor(model, quat, vbase, K))
    out[...] = from_taylor(tau, jet.shape[:1])
    base[...] = from_taylor(W, jet.shape[:1])
    return True


def _rnea_numba(model, jet, K, wext, out, root=None):
    """Compiled path: jet (B, K+2, n) -> tau jet written into out (B, K, n), C-contiguous.
    Returns False (out unfinished) when the jet holds a NaN or an infinity."""
    wext = _NO_WRENCH if wext is None else kernel_array(wext)
    if root is None:
        kernel, parents, geometry = _rnea_kernel(model)
        return kernel(parents, geometry, kernel_array(jet), K, wext, out)
    quat, vbase, base = root
    return kernels().rnea_floating(*_kernel_model(model), *_kernel_base(model),
                                   kernel_array(jet), kernel_array(quat), kernel_array(vbase), K,
                                   wext, out, base)


_NO_WRENCH = np.zeros((0, 0, 0, 0))  # the kernel reads wext only when wext.shape[1] > 0


@per_model
def _kernel_model(model):
    """Contiguous model arrays in the form the compiled kernel takes."""
    Ainv = model.Ad_references_inv
    arrays = (model.parents.astype(np.int64), model.screws, Ainv[:, :3, :3], Ainv[:, 3:, :3],
              model.inertias, np.concatenate([np.zeros(3), -model.gravity]))
    return tuple(np.ascontiguousarray(a) for a in arrays)


@per_model
def _kernel_geometry(model):
    """``(parents, geometry)``: the model arrays of :func:`_kernel_model` but the parents end
    to end in one flat array, then those of :func:`_z_geometry`: the form ``rnea_jets`` and
    ``rnea_jets_general`` take (fewer arguments to convert)."""
    parents, *arrays = _kernel_model(model)
    return parents, np.concatenate([a.ravel() for a in arrays] + [_z_geometry(model)])


@per_model
def _rnea_kernel(model):
    """``(kernel, parents, geometry)``: ``rnea_jets`` (joint-aligned frames) or, for a model
    with a pitched screw, ``rnea_jets_general``, and its arguments (:func:`_kernel_geometry`)."""
    parents, geometry = _kernel_geometry(model)
    aligned = geometry[60 * model.n_dof + 6] > 0.0
    return (kernels().rnea_jets if aligned else kernels().rnea_jets_general), parents, geometry


def _joint_frames(model):
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


def _z_geometry(model):
    """The model arrays re-expressed in joint-aligned body frames (:func:`_joint_frames`) for
    the compiled batch kernel: a flag (1.0, or 0.0 with zeros when some screw does not allow
    it), then ``kinds``, ``RH`` (n, 3, 3), ``pH`` (n, 3) the blocks of ``Ad(H_i) = Ad(T_i^-1
    B_i^-1 T_parent)``, the inertias ``Ad(T_i)^T M_i Ad(T_i)``, ``Ad(T_i)^T`` (external
    wrenches) and the linear part of the base acceleration (see
    :func:`hod_dynamics._kernels.z_model_arrays`)."""
    n = model.n_dof
    frames = _joint_frames(model)
    if frames is None:
        return np.zeros(1 + 85 * n + 3)
    kinds, T = frames
    parent_T = np.array([T[p] if p >= 0 else np.eye(4) for p in model.parents]).reshape(n, 4, 4)
    H = inverse(T) @ inverse(model.references) @ parent_T
    A = Ad(T)
    AT = np.swapaxes(A, -1, -2)
    arrays = (kinds, H[:, :3, :3], H[:, :3, 3], AT @ model.inertias @ A, AT, -model.gravity)
    return np.concatenate([[1.0]] + [np.ascontiguousarray(a).ravel() for a in arrays])


@per_model
def _kernel_base(model):
    """Writable copies of a floating model's base inertia and world gravity for the kernel."""
    return np.array(model.base_inertia), np.array(model.gravity)


def gravity_taylor(R, gravity, omega, K):
    """Taylor coefficients (B, K, 3) of ``-R^T g`` (gravity as an upward acceleration of the
    base, in the base frame) along the motion: ``R`` (B, 3, 3) the base orientation now,
    ``omega`` (B, >=K-1, 3) Taylor coefficients of the base angular velocity (base frame).

    From ``d/dt (R^T g) = -omega x (R^T g)``: ``(k+1) c_{k+1} = -sum_j omega_j x c_{k-j}``.
    """
    c = np.empty((R.shape[0], K, 3))
    c[:, 0] = -np.einsum("bji,j->bi", R, gravity)
    for k in range(K - 1):
        acc = cross(omega[:, 0], c[:, k])
        for j in range(1, k + 1):
            acc += cross(omega[:, j], c[:, k - j])
        c[:, k + 1] = -acc / (k + 1)
    return c


def root_taylor(model, quat, vbase, K):
    """The base's Taylor coefficients for the recursion: twist ``VR`` (K+1, B, 6) from the
    derivative rows ``vbase`` (B, K+1, 6), gravity twist ``GR`` (K, B, 6) = (0, -R^T g) and its
    jet (:func:`gravity_taylor`) from the unit quaternions ``quat`` (B, 4)."""
    VR = to_taylor(vbase)
    GR = gravity_taylor(rotation_matrix(quat), model.gravity, np.moveaxis(VR[:, :, :3], 0, 1), K)
    G6 = np.concatenate([np.zeros(GR.shape), GR], axis=-1)
    return VR, np.ascontiguousarray(np.moveaxis(G6, 1, 0))
