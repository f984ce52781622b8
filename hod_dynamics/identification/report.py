"""The outputs of an identification: residuals of the prior and the identified model on every
recording, the JSON summary (parameters, standard errors, the chosen weight and its fold
errors, the bounds and the plausibility report), the identified URDF, the friction file and
the plots.

The prior column is held out like the identified one: the prior's rigid body plus the friction
fitted on the identification recordings (:func:`~hod_dynamics.identification.fit.prior_friction`),
never on the recording it is compared on.
"""

import json
import os

import numpy as np

from ..model.inertia import com_form
from ..model.robot_model import body_names
from .fit import check_names
from .plausibility import plausibility_report


def residuals(result, analysis):
    """Per joint residual RMS (N m; N) of a recording analysed with the prior model: ``prior``
    (the prior's rigid body plus its friction fitted on the identification recordings,
    ``result.prior_friction``), ``prior_rigid_body`` and ``identified`` (the identified model
    with its friction, by Newton-Euler: independent of the regressor). Returns ``(table,
    predictions)``: ``table`` {joint: {...}}, ``predictions`` {"prior": (m, n),
    "identified": (m, n)} the predicted torques."""
    from ..algorithms.dynamics import inverse_dynamics

    q = analysis.result.qjet
    effort = analysis.effort
    rigid = analysis.rigid_tau if analysis.rigid_tau is not None else analysis.result.taujet[:, 0]
    names = result.model.joint_names
    prior = rigid + result.prior_friction.torque(q[:, 1]) if result.prior_friction is not None else rigid
    identified = inverse_dynamics(result.model, q[:, 0], q[:, 1], q[:, 2], friction=result.friction)
    table = {nm: {"prior": _rms(prior[:, j] - effort[:, j]), "prior_rigid_body": _rms(rigid[:, j] - effort[:, j]),
                  "identified": _rms(identified[:, j] - effort[:, j])} for j, nm in enumerate(names)}
    return table, {"prior": prior, "identified": identified}


def _rms(x):
    x = x[np.isfinite(x)]
    return float(np.sqrt(np.mean(x * x))) if len(x) else float("nan")


def evaluate(result, validation=(), validation_names=()):
    """Every recording's residuals and predictions: ``{name: (role, analysis, table,
    predictions)}`` (see :func:`residuals`) of the identification recordings and of
    ``validation`` (analyses with the prior model, named by ``validation_names``, names that
    differ from one another and from the identification recordings')."""
    out = {}
    runs = [(rec.name, rec.analysis, "identification") for rec in result.recordings]
    validation, validation_names = list(validation), list(validation_names)
    check_names([name for name, _, _ in runs] + validation_names, len(runs) + len(validation),
                 "validation_names (with the identification recordings' names)")
    for name, analysis, role in runs + list(zip(validation_names, validation, ["validation"] * len(validation))):
        out[name] = (role, analysis) + residuals(result, analysis)
    return out


def summary(result, evaluation, extra=None):
    """A JSON-ready dict of an :class:`Identification` and the residuals of ``evaluation``
    (:func:`evaluate`), with the entries of ``extra`` (a dict) added."""
    model, base = result.model, result.base
    relative = np.where(np.abs(result.beta) > 0, result.beta_se / np.maximum(np.abs(result.beta), 1e-300), np.inf)
    out = {
        "robot": model.name, "joints": list(model.joint_names), "method": result.method,
        "regularization": result.regularization if result.method == "consistent" else None,
        "cross_validation": None if result.cross_validation is None else result.cross_validation.to_mapping(),
        "friction": result.friction is not None,
        "samples": {rec.name: int(len(rec.analysis.t)) for rec in result.recordings},
        "condition_number": result.condition_number,
        "condition_number_unit_columns": result.condition_number_scaled,
        "noise_std": {nm: float(v) for nm, v in zip(model.joint_names, result.noise)},
        "base_parameters": [{"name": nm, "value": float(b), "standard_error": float(se),
                             "relative_standard_error": float(rel), "prior": float(p)}
                            for nm, b, se, rel, p in zip(base.names, result.beta, result.beta_se, relative,
                                                         result.beta_prior)],
        "bodies": {}, "notes": list(result.notes),
        "residual_rms": {name: {"role": role, "joints": table} for name, (role, _, table, _) in evaluation.items()},
    }
    for b, link in enumerate(body_names(model)):
        m, c, Ic = com_form(result.parameters[b])
        pm, pc, _ = com_form(result.prior[b])
        out["bodies"][link] = {
            "parameters": result.parameters[b].tolist(), "prior_parameters": result.prior[b].tolist(),
            "mass": float(m), "com": c.tolist(), "inertia_about_com": Ic.tolist(),
            "prior_mass": float(pm), "prior_com": pc.tolist(),
            "physically_consistent": bool(result.consistency[b] > 0),
            "consistency_margin": float(result.consistency[b])}
    if result.friction is not None:
        out["friction_model"] = result.friction.to_mapping()["friction"]
    if result.prior_friction is not None:
        out["prior_friction_model"] = result.prior_friction.to_mapping()["friction"]
    out["bounds"] = None if result.bounds is None else result.bounds.to_mapping()
    out["plausibility"] = plausibility_report(result.parameters, result.prior, body_names(model), result.bounds)
    out["total_mass"] = {"identified": float(result.parameters[:, 0].sum()), "prior": float(result.prior[:, 0].sum())}
    out.update(extra or {})
    return out


def write_outputs(result, out, source, evaluation, *, plots=True, xacro_args=None, command="", extra=None):
    """Write ``identified.urdf`` (from the prior ``source``), ``friction.yaml`` (with friction),
    ``identification.json`` (:func:`summary` of ``evaluation``, see :func:`evaluate`, and
    ``extra``) and, with ``plots``, ``torque_<recording>.png`` (measured against predicted
    torque, prior and identified) of every validation recording (of the identification ones
    when there is none) and, with bounding volumes, ``bounding_volumes.png`` (each link's
    ellipsoid, joint origins, prior and identified centre of mass) into the folder ``out``.
    Returns the paths."""
    from ..algorithms.friction import save_friction
    from ..model.urdf_writer import identified_urdf

    os.makedirs(out, exist_ok=True)
    paths = []
    origin = f"identified by hod-dynamics identify ({result.method}) from {', '.join(r.name for r in result.recordings)}"
    text = identified_urdf(source, result.model, result.parameters, result.friction, xacro_args=xacro_args,
                           comment=origin + ("; friction offsets and v_s: friction.yaml" if result.friction else ""))
    paths.append(write_text(os.path.join(out, "identified.urdf"), text))
    if result.friction is not None:
        paths.append(save_friction(result.friction, os.path.join(out, "friction.yaml"), comments=[origin]))
    data = summary(result, evaluation, extra)
    data["command"] = command
    paths.append(write_text(os.path.join(out, "identification.json"), json.dumps(data, indent=2) + "\n"))
    if plots:
        paths += plot_torques(result.model, evaluation, out)
        if result.bounds is not None and any(e is not None for e in result.bounds.ellipsoids):
            paths.append(plot_volumes(result, os.path.join(out, "bounding_volumes.png")))
    return paths


def plot_volumes(result, path):
    """``bounding_volumes.png``: per link its bounding ellipsoid, its joint origins, the prior's
    and the identified centre of mass (:func:`~hod_dynamics.plots.plot_bounding_volumes`)."""
    from ..plots import plot_bounding_volumes

    model = result.model
    links = body_names(model)
    origins = [np.vstack([np.zeros(3)] + [model.references[c][:3, 3] for c in model.children[b]])
               for b in range(len(links))]
    return plot_bounding_volumes(links, result.bounds.ellipsoids, [com_form(p)[1] for p in result.parameters],
                                 [com_form(p)[1] for p in result.prior], origins, path,
                                 title=f"{model.name}: bounding volumes and centres of mass")


def plot_torques(model, evaluation, out):
    """``torque_<recording>.png`` (measured against predicted torque) of every validation
    recording of ``evaluation`` (of every recording without one) in ``out``; returns the paths."""
    from ..plots import plot_torque_comparison

    shown = [name for name, entry in evaluation.items() if entry[0] == "validation"] or list(evaluation)
    paths = []
    for name in shown:
        role, analysis, _, predictions = evaluation[name]
        path = os.path.join(out, f"torque_{_file_label(name)}.png")
        paths.append(plot_torque_comparison(analysis.t, analysis.effort, predictions, model.joint_names, path,
                                            title=f"{model.name}: {name} ({role})"))
    return paths


def write_text(path, text):
    """Write ``text`` (UTF-8) to ``path``; returns the path."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def _file_label(name):
    keep = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(name))
    return keep or "recording"
