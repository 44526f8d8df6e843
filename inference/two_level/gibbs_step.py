r"""The exact two-block Gibbs sweep of the two-level model as a PyMC step method.

:class:`ExactGibbsStep` updates the target indicator ``target_has_c`` (T, with
``X1 = m + T``) and the block-group count ``X2`` of a model built by
:func:`dprisk.models.builders.two_level.build_two_level_model` together, by one sweep of the
exact
Gibbs sampler of paper §3.2 / supplement S3:

.. math::

    X_1' \sim P[X_1 \mid X_2 = k_2, D], \qquad X_2' \sim P[X_2 \mid X_1 = X_1', D],

both drawn exactly from the tabulated full conditionals of
:class:`dprisk.inference.two_level.gibbs.ExactConditionals` (``X1 | X2`` on {m, m+1} ∩ {≤ k2} times
the prior
weight; ``X2 | X1`` a discrete Gaussian of precision ``rho2 + rho1/d`` truncated to the
prior's support, on a window whose neglected mass is below ``tail_mass``). Each sweep uses
two uniforms from ``self.rng``, which PyMC sets per chain from ``random_seed``
(:meth:`BlockedStep.setup_chain`), so ``pm.sample(..., random_seed=s)`` is reproducible and
gives the same draws with ``cores=1`` and ``cores=2``.

Under a point-mass prior ``point:K`` X2 is not a free variable (it is the constant K); the
step then draws only ``X1 | X2 = K``, i.e. independent draws from the exact posterior of X1.

Where the inputs come from: at construction the step reads the release and the parameters
that :func:`dprisk.models.builders.two_level.build_two_level_model` recorded for the model
(:func:`dprisk.models.builders.two_level.two_level_spec`) and tabulates the conditionals; it
keeps
references to the model's release ``pm.Data`` containers and re-tabulates in
:meth:`ExactGibbsStep.setup_chain` if :func:`dprisk.models.builders.two_level.set_release` changed
them,
so one step object serves a model across releases. It never evaluates the model's logp.

Example::

    model = build_two_level_model(2, 1, -1, rho1=0.0992, rho2=0.2465, d=27)
    idata = pm.sample(step=ExactGibbsStep(model=model), model=model, random_seed=1)
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pymc as pm
from pymc.step_methods.compound import BlockedStep
from pymc.util import get_random_generator

from dprisk.inference.two_level.exact import DEFAULT_TAIL_MASS
from dprisk.inference.two_level.gibbs import ExactConditionals
from dprisk.models.builders.two_level import RELEASE_DATA, TARGET_VAR, X2_VAR, two_level_spec

__all__ = ["ExactGibbsStep"]


class ExactGibbsStep(BlockedStep):
    r"""One exact Gibbs sweep ``X1 | X2`` then ``X2 | X1`` per PyMC iteration.

    Parameters
    ----------
    vars : list, optional
        The value variables (or their names) to update; must be ``target_has_c`` and ``X2``
        (only ``target_has_c`` under a point-mass prior). Default: both.
    model : pymc.Model, optional
        A model from :func:`dprisk.models.builders.two_level.build_two_level_model` (default: the
        model on the context stack).
    rng : RandomGenerator, optional
        Seed or Generator used until PyMC calls :meth:`setup_chain` (which replaces it with
        the chain's generator).
    blocked : bool
        Accepted for PyMC's interface; the two variables are always updated together.
    tail_mass : float (0 < tail_mass < 1)
        Largest share of a conditional ``X2 | X1`` the tabulated window may leave out.

    Attributes
    ----------
    conditionals : inference.gibbs.ExactConditionals
        The tabulated full conditionals of the model's release.

    Raises
    ------
    ValueError
        If the model was not built by ``build_two_level_model`` or ``vars`` names other
        variables.

    Notes
    -----
    Sampler statistic ``x1_flipped`` (bool): whether the sweep changed X1. Its mean is the
    X1 chain's flip rate; the indicator's lag-1 autocorrelation is ``1 - rate / (2 q (1 - q))``
    with ``q = P[X1 = m + 1 | D]``.
    """

    name = "exact_gibbs"
    stats_dtypes_shapes: ClassVar[dict] = {"x1_flipped": (bool, [])}

    def __init__(
        self,
        vars=None,
        *,
        model=None,
        rng=None,
        blocked: bool = True,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ):
        model = pm.modelcontext(model)
        spec = two_level_spec(model)
        x2_free = spec.x2_is_free  # False only for point:K, where X2 is a Deterministic
        names = [TARGET_VAR, X2_VAR] if x2_free else [TARGET_VAR]
        if vars is not None:
            given = vars if isinstance(vars, (list, tuple)) else [vars]
            given_names = {v if isinstance(v, str) else v.name for v in given}
            if given_names != set(names):
                raise ValueError(
                    f"vars must be the model's {names} (updated together), got "
                    f"{sorted(given_names)}"
                )
        self.vars = [model.rvs_to_values[model[name]] for name in names]
        self.blocked = True
        self.known = spec.known
        self.tail_mass = tail_mass
        self._scenario = spec.scenario
        self._release_data = [model[name] for name in RELEASE_DATA]
        self.conditionals = ExactConditionals(
            *spec.release, scenario=self._scenario, tail_mass=tail_mass
        )
        self._x2_free = x2_free
        self._x2_fixed = None if x2_free else int(spec.prior.k)
        self.rng = get_random_generator(rng)

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Take the chain's generator; re-tabulate if the model's release D has changed."""
        super().setup_chain(rng, tune, draws)
        release = tuple(int(data.get_value()) for data in self._release_data)
        if release != self.conditionals.release:
            self.conditionals = ExactConditionals(
                *release, scenario=self._scenario, tail_mass=self.tail_mass
            )

    def step(self, point):
        """Draw X1 given the current X2, then X2 given the new X1; return the new point.

        The uniforms are handed to the conditionals as ``np.float64`` (the same values):
        their scalar test ``np.ndim(u) == 0`` reads the attribute instead of converting a
        Python float to an array (about 2 us of a 15 us sweep, each).
        """
        cond = self.conditionals
        old_k1 = self.known + int(point[TARGET_VAR])
        k2 = int(point[X2_VAR]) if self._x2_free else self._x2_fixed
        k1 = cond.x1_given_x2(k2, np.float64(self.rng.random()))
        new_point = dict(point)
        new_point[TARGET_VAR] = np.asarray(k1 - self.known, dtype=point[TARGET_VAR].dtype)
        if self._x2_free:
            k2 = cond.x2_given_x1(k1, np.float64(self.rng.random()))
            new_point[X2_VAR] = np.asarray(k2, dtype=point[X2_VAR].dtype)
        return new_point, [{"x1_flipped": k1 != old_k1}]
