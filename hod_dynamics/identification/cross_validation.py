"""The weight of the divergence from the prior, chosen by cross-validation on the training data.

Every identification recording is cut into ``folds`` contiguous time blocks of equal length;
block k of every recording makes fold k. For each weight of the grid and each fold, the
consistent fit (:class:`~hod_dynamics.identification.program.ConvexFit`) is made on the other
folds and scored on fold k: the mean squared residual of its samples, each joint's divided by
that joint's noise level (1 = the noise). The chosen weight has the least mean over the folds
(the first of the grid on a tie). Contiguous blocks rather than random samples: neighbouring
samples of a smoothed recording share their errors, so a sample's neighbours would vouch for
it (Bergmeir and Benitez, "On the use of cross-validation for time series predictor
evaluation", Information Sciences 2012). The validation recordings never take part.

The fits differ only in the data factor and the weight, which are parameters of the one
compiled program.
"""

from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ..errors import InputError
from .defaults import FOLDS, WEIGHTS  # noqa: F401  (FOLDS: the default of cross_validate's callers)


@dataclass(frozen=True, eq=False)
class CrossValidation:
    """``weights`` (W,) the grid, ``fold_errors`` (W, folds) the mean whitened squared residual
    of each held-out fold, ``rows`` (folds,) its joint samples, ``chosen`` the weight."""

    weights: Tuple[float, ...]
    fold_errors: np.ndarray
    rows: np.ndarray
    chosen: float

    @property
    def mean_errors(self):
        """(W,) the mean over the folds of each weight's error."""
        return self.fold_errors.mean(axis=1)

    def to_mapping(self):
        return {"weights": list(self.weights), "folds": int(self.fold_errors.shape[1]),
                "fold_errors": self.fold_errors.tolist(), "mean_errors": self.mean_errors.tolist(),
                "fold_rows": self.rows.tolist(), "chosen": self.chosen}


def triangular(A, size):
    """The (size, size) upper triangular factor R of A (rows, size) with A^T A = R^T R (zero
    rows below A's rank)."""
    R = np.linalg.qr(A, mode="r")
    out = np.zeros((size, size))
    out[:R.shape[0]] = R[:size]
    return out


def check_weights(weights, folds):
    """InputError unless ``weights`` is a non-empty list of numbers >= 0 and ``folds`` an integer >= 2."""
    weights = tuple(float(w) for w in weights)
    if not weights or not all(np.isfinite(w) and w >= 0 for w in weights):
        raise InputError(f"the regularization weights to cross-validate must be numbers >= 0, got {list(weights)}")
    if int(folds) != folds or folds < 2:
        raise InputError(f"folds must be an integer >= 2 (the training data is cut into that many blocks), "
                         f"got {folds!r}")
    return weights, int(folds)


def cross_validate(program, blocks, rows, weights=WEIGHTS, progress=None):
    """:class:`CrossValidation` of ``program`` (a ConvexFit) on whitened block factors
    ``blocks`` (folds, r+1, r+1) holding ``rows`` (folds,) joint samples each."""
    folds = len(blocks)
    if np.any(rows < 1):
        raise InputError("cross-validation: a fold holds no samples; record longer or give fewer --folds")
    errors = np.zeros((len(weights), folds))
    for k in range(folds):
        keep = [i for i in range(folds) if i != k]
        R = triangular(np.vstack([blocks[i] for i in keep]), blocks.shape[1])
        for w, gamma in enumerate(weights):
            if progress:
                progress(f"cross-validation: fold {k + 1} of {folds}, weight {gamma:g}")
            full = program.solve(R, rows[keep].sum(), gamma)
            e = blocks[k] @ np.append(program.K @ full, -1.0)
            errors[w, k] = float(e @ e) / rows[k]
    chosen = float(weights[int(np.argmin(errors.mean(axis=1)))])
    return CrossValidation(tuple(weights), errors, np.asarray(rows), chosen)
