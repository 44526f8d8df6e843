"""PyMC's Metropolis step for one discrete scalar, in scalar arithmetic.

``pm.Metropolis.astep`` works on one-element arrays: the proposal ``rng.normal(scale=S)``
with an array ``S`` (numpy checks ``S >= 0`` by an array reduction on every call), rounding
and casting of the arrays, ``metrop_select``'s ``np.isfinite`` and ``np.log`` of the uniform
on scalars, and three ``np.mean`` reductions for its statistics: together more than half of
a two-level ``pymc`` step's CPU time (BinaryGibbsMetropolis for X1 plus Metropolis for X2)
besides the model's log density. For one discrete scalar (X2 of the two-level model:
``elemwise_update`` off, every dimension discrete) :class:`LeanMetropolis` runs PyMC's step
line for line on floats and ints with the same IEEE operations:

* proposal: ``rng.normal(scale=S)`` is ``0.0 + S * z`` with ``z`` the generator's next standard
  normal (numpy's ``random_normal``), so ``z = rng.standard_normal()`` (the same draw) and
  ``delta = (0.0 + S[0] * z) * scaling[0]``, rounded half to even (``np.round``) to an int;
* acceptance: :func:`dprisk.inference.mcmc.fused_steps.log_uniform_below`, PyMC's
  ``np.isfinite(r) and np.log(rng.uniform()) < r`` with the same draw and outcome;
* statistics: the mean of a one-element array is that element (the same float64 values).

The draws are the same from the same generator, bit for bit
(``tests/inference/two_level/test_lean_steps.py`` compares them with ``pm.Metropolis``'s
through ``pm.sample`` and through :class:`~dprisk.inference.mcmc.compiled_chain.CompiledChain`).
A proposal too large for exact integer arithmetic (``|delta| >= 2**53`` or ``|q0| >= 2**62``)
takes PyMC's array operations; any other configuration (continuous or vector variables, a
proposal other than ``NormalProposal``) goes to ``pm.Metropolis.astep`` itself.
:meth:`Metropolis.discrete_scalar_step` is the step on the raveled value without statistics,
which :mod:`dprisk.inference.mcmc.fused_steps` calls with the log density evaluated directly
(so the step's own ``delta_logp`` is compiled only when :meth:`Metropolis.astep` first runs).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pymc.blocking import RaveledVars
from pymc.pytensorf import make_shared_replacements
from pymc.step_methods import metropolis as pymc_metropolis
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.metropolis import MultivariateNormalProposal, NormalProposal, tune
from pymc.util import get_value_vars_from_user_vars
from pymc.vartypes import discrete_types

from dprisk.inference.mcmc.fused_steps import log_uniform_below

__all__ = ["LeanMetropolis"]

#: Largest |proposal| (exclusive) rounded in float arithmetic; beyond, PyMC's array path.
_EXACT_DELTA = 2.0**53
#: Largest |current value| (exclusive) added to in Python ints; beyond, PyMC's array path.
_EXACT_VALUE = 2**62


class Metropolis(pm.Metropolis):
    """``pm.Metropolis`` (same arguments, state and draws) in scalar arithmetic (module notes).

    Named as PyMC's (exported as :data:`LeanMetropolis`), so that ``pm.sample``'s log line
    for the step (``>Metropolis: [X2]``) reads as before.

    Its compiled ``delta_logp`` (``log pi(q) - log pi(q0)`` of the model's log density
    ``log pi``, PyMC's ``metropolis.delta_logp``) is built when first used, not when
    the step is: :mod:`dprisk.inference.mcmc.fused_steps` takes the difference from the
    model's log density, which the indicator's step compiles anyway, so a chain run there
    never needs it (its graph and rewrites cost 0.2-0.5 s a model). The step's other state
    is ``pm.Metropolis.__init__``'s, set by the same lines.
    """

    def __init__(self, vars=None, *, S=None, proposal_dist=None, scaling=1.0, tune=True,
                 tune_interval=100, model=None, mode=None, rng=None, initial_point=None,
                 compile_kwargs=None, blocked=False):
        model = pm.modelcontext(model)
        if initial_point is None:
            initial_point = model.initial_point()
        vars = model.value_vars if vars is None else get_value_vars_from_user_vars(vars, model)
        shapes = [initial_point[v.name].shape for v in vars]
        if S is None:
            S = np.ones(int(sum(np.prod(shape) for shape in shapes)))
        if proposal_dist is not None:
            self.proposal_dist = proposal_dist(S)
        elif S.ndim == 1:
            self.proposal_dist = NormalProposal(S)
        elif S.ndim == 2:
            self.proposal_dist = MultivariateNormalProposal(S)
        else:
            raise ValueError(f"Invalid rank for variance: {S.ndim}")
        self.scaling = np.atleast_1d(scaling).astype("d")
        self.tune = tune
        self.tune_interval = tune_interval
        self.steps_until_tune = tune_interval
        self.discrete = np.concatenate(
            [[v.dtype in discrete_types] * (initial_point[v.name].size or 1) for v in vars])
        self.any_discrete = self.discrete.any()
        self.all_discrete = self.discrete.all()
        is_scalar = len(shapes) == 1 and shapes[0] == ()
        self.elemwise_update = not (
            is_scalar
            or (self.any_discrete
                and max(getattr(model.values_to_rvs[var].owner.op, "ndim_supp", 1)
                        for var in vars) > 0))
        dims = int(sum(np.prod(shape) for shape in shapes)) if self.elemwise_update else 1
        self.enum_dims = np.arange(dims, dtype=int)
        self.accept_rate_iter = np.zeros(dims, dtype=float)
        self.accepted_iter = np.zeros(dims, dtype=bool)
        self.accepted_sum = np.zeros(dims, dtype=int)
        self._untuned_settings = {"scaling": self.scaling, "steps_until_tune": tune_interval}
        self.mode = mode
        shared = make_shared_replacements(initial_point, vars, model)
        # what delta_logp's compilation needs, until it is compiled (the model is kept by
        # PyMC's BlockedStep for unpickling already)
        self._delta_logp_inputs = (initial_point, model, vars, shared, compile_kwargs)
        self._delta_logp = None
        ArrayStepShared.__init__(self, vars, shared, blocked=blocked, rng=rng)

    @property
    def delta_logp(self):
        """PyMC's compiled ``delta_logp(q, q0)`` of the step's variables, compiled once."""
        if self._delta_logp is None:
            initial_point, model, vars, shared, compile_kwargs = self._delta_logp_inputs
            self._delta_logp = pymc_metropolis.delta_logp(initial_point, model.logp(), vars,
                                                          shared, compile_kwargs)
            self._delta_logp_inputs = None
        return self._delta_logp

    @delta_logp.setter
    def delta_logp(self, function) -> None:
        self._delta_logp, self._delta_logp_inputs = function, None

    def astep(self, q0: RaveledVars):
        """One Metropolis step (module notes); PyMC's own for anything but a discrete scalar."""
        if not self.discrete_scalar:
            return super().astep(q0)

        def delta_logp(proposal: int, current: int):
            return self.delta_logp(np.array([proposal], dtype=np.int64),
                                   np.array([current], dtype=np.int64))

        q, accept_rate, accepted = self.discrete_scalar_step(int(q0.data[0]), delta_logp)
        stats = {
            "scaling": np.float64(self.scaling[0]),
            "accept": np.float64(np.exp(accept_rate)),
            "accepted": np.float64(accepted),
        }
        return RaveledVars(np.array([q], dtype=np.int64), q0.point_map_info), [stats]

    @property
    def discrete_scalar(self) -> bool:
        """Whether the step updates one discrete scalar by a normal proposal (module notes)."""
        return (not self.elemwise_update and self.all_discrete and self.scaling.size == 1
                and type(self.proposal_dist) is NormalProposal
                and np.shape(self.proposal_dist.s) == (1,))

    def discrete_scalar_step(self, current: int, delta_logp):
        """PyMC's ``Metropolis.astep`` for one discrete scalar at the value ``current``.

        ``delta_logp(proposal, current)`` is the log-density difference of two values (the
        step's compiled ``delta_logp`` on (1,) int64 arrays of them, or the difference of the
        model's log density at both, :mod:`dprisk.inference.mcmc.fused_steps`). Tunes, proposes,
        accepts and counts as PyMC does (module notes); returns the new value (an int), the
        acceptance log-ratio (as ``delta_logp`` returned it) and whether the proposal was
        accepted, without the statistics. Only for :attr:`discrete_scalar` steps.
        """
        if not self.steps_until_tune and self.tune:
            self.scaling = tune(self.scaling, self.accepted_sum / float(self.tune_interval))
            self.steps_until_tune = self.tune_interval
            self.accepted_sum[:] = 0
        normal = 0.0 + float(self.proposal_dist.s[0]) * self.rng.standard_normal()
        delta = normal * float(self.scaling[0])
        if abs(delta) < _EXACT_DELTA and abs(current) < _EXACT_VALUE:
            proposal = current + round(delta)
        else:  # PyMC's array operations on the same draw
            delta = (np.array([normal]) * self.scaling).round(0).astype("int64")
            proposal = int((np.array([current], dtype=np.int64) + delta).astype("int64")[0])
        accept_rate = delta_logp(proposal, current)
        accepted = log_uniform_below(accept_rate, self.rng)
        self.accept_rate_iter = accept_rate
        self.accepted_iter[0] = accepted
        if accepted:  # accepted_sum += accepted, without a ufunc call on a bool (4 us)
            self.accepted_sum[0] += 1
        self.steps_until_tune -= 1
        return (proposal if accepted else current), accept_rate, accepted


#: The step under the name this package uses (the class is named as PyMC's, see there).
LeanMetropolis = Metropolis
