"""Where a streamed mechanism with loops is: its tree positions at the chunk starts of a trajectory.

A mechanism with loops is closed sample to sample from a configuration on its branch (see
:mod:`hod_dynamics.algorithms.loop_closure`); a stream computes its samples in chunks, each on
its own, and a chunk closed from the model's assembly would follow the whole motion from there
again: seconds into a trajectory, most of the chunk's cost, and after turns of a crank not
necessarily the branch the motion is on. :class:`BranchAnchors` keeps, for each trajectory, the
closed tree positions at the start of every chunk computed (the anchors), each closed from the
anchor one chunk before it; a trajectory's first anchor is closed from the last anchor made
(where the mechanism was when the trajectory took over). A chunk is then the loop model with
its anchor as assembly: closed from a configuration a chunk away at most.
"""

import threading
from collections import OrderedDict

import numpy as np

from ..algorithms.loop_closure import closed_assembly, positions
from ..model.loop_model import LoopModel

KEPT_TRAJECTORIES = 8  # anchors of the trajectories a stream may still serve (current, queued, just ended)


class BranchAnchors:
    """Anchors of the trajectories of one stream (thread-safe: a stream's computing and serving
    threads both compute chunks)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._anchors = OrderedDict()  # (id(traj), start ns) -> (traj, {first k: tree q (n_tree,)})
        self._last = None              # the last anchor made: where the mechanism is

    def model_at(self, model, traj, start, first, period, chunk_size):
        """``model`` for the chunk of ``traj`` (started at ``start`` ns, grid ``period`` s) whose
        first sample is index ``first`` (a multiple of ``chunk_size``): a LoopModel with its
        anchor there as assembly; any other model as it is. Raises ClosureError,
        ActuationError where the mechanism cannot follow the trajectory."""
        if not isinstance(model, LoopModel):
            return model
        return model.with_assembly(self._anchor(model, traj, start, first, period, chunk_size))

    def _anchor(self, model, traj, start, first, period, chunk_size):
        key = (id(traj), start)
        with self._lock:
            entry = self._anchors.get(key)
            if entry is None or entry[0] is not traj:
                entry = self._anchors[key] = (traj, {})
                while len(self._anchors) > KEPT_TRAJECTORIES:
                    self._anchors.popitem(last=False)
            known = entry[1]
            if first in known:
                return known[first]
            below = [k for k in known if k < first]
            base = max(below) if below else None
            from_q = known[base] if base is not None else self._last
        if from_q is None:
            from_q = closed_assembly(model)
        # one chunk at a time from the anchor below (or the trajectory's start): the motion
        # followed on its branch, never a jump across a chunk's worth of it
        ks = np.arange(0 if base is None else base + chunk_size, first + 1, chunk_size)
        y = traj.for_model(model).jet(ks * period, 0)[:, 0, :]
        q = positions(model, y, guess=from_q)
        with self._lock:
            known.update({int(k): row for k, row in zip(ks, q)})
            self._last = q[-1]
        return q[-1]
