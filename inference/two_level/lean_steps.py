"""PyMC's Metropolis step for one discrete scalar, with its per-step statistics read directly.

``pm.Metropolis.astep`` ends each step with three numpy reductions for its statistics
(``np.mean`` of the one-element ``scaling`` and ``accepted`` arrays and of ``exp`` of the
acceptance log-ratio): about 15 % of a two-level ``pymc`` step's CPU time (BinaryGibbsMetropolis
for X1 plus Metropolis for X2), measured by sampling the report's run. For one discrete scalar
(X2 of the two-level model: ``elemwise_update`` off, every dimension discrete), the mean of a
one-element array is that element, so :class:`LeanMetropolis` reads them directly (the same
float64 values) and otherwise runs the step of PyMC's ``Metropolis.astep`` line for line: the
same proposal, rounding, acceptance and tuning, hence the same draws from the same generator,
bit for bit (``tests/inference/two_level/test_lean_steps.py`` compares them with
``pm.Metropolis``'s through ``pm.sample`` and through
:class:`~dprisk.inference.mcmc.compiled_chain.CompiledChain`). Any other configuration goes
to ``pm.Metropolis.astep`` itself.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pymc.blocking import RaveledVars
from pymc.step_methods.arraystep import metrop_select
from pymc.step_methods.metropolis import tune

__all__ = ["LeanMetropolis"]


class Metropolis(pm.Metropolis):
    """``pm.Metropolis`` (same arguments, state and draws) with cheaper per-step statistics.

    Named as PyMC's (exported as :data:`LeanMetropolis`), so that ``pm.sample``'s log line
    for the step (``>Metropolis: [X2]``) reads as before.
    """

    def astep(self, q0: RaveledVars):
        """One Metropolis step (module notes); PyMC's own for anything but a discrete scalar."""
        if self.elemwise_update or not self.all_discrete or self.scaling.size != 1:
            return super().astep(q0)
        if not self.steps_until_tune and self.tune:
            self.scaling = tune(self.scaling, self.accepted_sum / float(self.tune_interval))
            self.steps_until_tune = self.tune_interval
            self.accepted_sum[:] = 0
        delta = self.proposal_dist(rng=self.rng) * self.scaling
        delta = delta.round(0).astype("int64")
        q0d = q0.data.astype("int64")
        q = (q0d + delta).astype("int64")
        accept_rate = self.delta_logp(q, q0d)
        q, accepted = metrop_select(accept_rate, q, q0d, rng=self.rng)
        self.accept_rate_iter = accept_rate
        self.accepted_iter[0] = accepted
        self.accepted_sum += accepted
        self.steps_until_tune -= 1
        stats = {
            "scaling": np.float64(self.scaling[0]),
            "accept": np.float64(np.exp(accept_rate)),
            "accepted": np.float64(accepted),
        }
        return RaveledVars(q, q0.point_map_info), [stats]


#: The step under the name this package uses (the class is named as PyMC's, see there).
LeanMetropolis = Metropolis
