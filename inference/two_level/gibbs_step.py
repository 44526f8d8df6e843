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
        self._tabulated = {}  # release -> ExactConditionals (tabulate)
        self._x2_free = x2_free
        self._x2_fixed = None if x2_free else int(spec.prior.k)
        self.rng = get_random_generator(rng)

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Take the chain's generator; re-tabulate if the model's release D has changed.

        The conditionals of a release tabulated beforehand (:meth:`tabulate`) are taken
        from there.
        """
        super().setup_chain(rng, tune, draws)
        release = tuple(int(data.get_value()) for data in self._release_data)
        if release != self.conditionals.release:
            tabulated = self._tabulated.get(release)
            self.conditionals = tabulated if tabulated is not None else ExactConditionals(
                *release, scenario=self._scenario, tail_mass=self.tail_mass
            )

    def tabulate(self, releases) -> None:
        """Tabulate the conditionals of the releases ``(x1s, x2s, y1s)`` the step will see.

        All at once (:meth:`ExactConditionals.tabulated_many`: the same tables, bit for bit,
        as one release at a time, about 20 times faster per release); :meth:`setup_chain`
        then takes them instead of tabulating when
        :func:`dprisk.models.builders.two_level.set_release` changes the release.
        """
        self._tabulated.update(ExactConditionals.tabulated_many(releases, self._scenario,
                                                                self.tail_mass))

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

    @property
    def run_names(self) -> tuple[str, ...]:
        """The variables whose values :meth:`run` records, in its order."""
        return (TARGET_VAR, X2_VAR) if self._x2_free else (TARGET_VAR,)

    def run(self, point, iterations: int, record: bool = False):
        """``iterations`` calls of :meth:`step` from ``point`` at once; the last point.

        The same draws as the calls one by one: :meth:`step` takes ``rng.random()`` for X1
        then (X2 free) for X2, so the ``2 n`` uniforms are ``rng.random(2 n)`` (the same
        doubles in the same order), ``u1 = u[0::2]``, ``u2 = u[1::2]``. The first X1 is
        :meth:`step`'s own scalar draw from the point's X2 (which may lie outside the
        tabulated window). Every later X2 is an alias draw on the window, so for each
        branch ``b`` the X2 an iteration would draw, ``k2_b[t]`` (the alias draw of
        ``u2[t]``, :meth:`ExactConditionals.x2_given_branch`, the scalar draw's arithmetic
        elementwise), and the X1 the next one would draw from it,
        ``u1[t + 1] < P[X1 = m + 1 | k2_b[t]]`` (the tabulated probability, as the scalar
        path reads it), are computed for all iterations at once; the path of ``X1`` then
        follows by one pass over those two-way choices. With ``record``: also each
        iteration's values of :attr:`run_names` (int64 arrays).
        """
        cond = self.conditionals
        known = self.known
        n = int(iterations)
        dtypes = {name: np.asarray(point[name]).dtype for name in self.run_names}
        if n == 0:
            empty = [np.empty(0, dtype=np.int64) for _ in self.run_names]
            return (point, *empty) if record else point
        if self._x2_free:
            u = self.rng.random(2 * n)
            u1, u2 = u[0::2], u[1::2]
            first = cond.x1_given_x2(int(point[X2_VAR]), np.float64(u1[0])) - known
            k2_by_branch = [cond.x2_given_branch(np.full(n, b, dtype=np.int64), u2)
                            for b in (0, 1)]
            # next_by_branch[b][t]: X1 - m at iteration t + 1 after X1 = m + b at t
            next_by_branch = [(u1[1:] < cond.prob_x1_table[k2[:-1] - cond.k2_start]).tolist()
                              for k2 in k2_by_branch]
            path = [first]
            b = first
            next0, next1 = next_by_branch
            for t in range(n - 1):
                b = next1[t] if b else next0[t]
                path.append(b)
            t_values = np.array(path, dtype=np.int64)
            chosen = set(np.unique(t_values).tolist())
            for b in chosen:  # as x2_given_x1: only a feasible X1 has an X2 to draw
                if known + b not in cond.feasible_x1:
                    raise ValueError(f"k1 must be one of the feasible values "
                                     f"{cond.feasible_x1}, got {known + b!r}")
            x_values = np.where(t_values == 1, k2_by_branch[1], k2_by_branch[0])
            values = (t_values, x_values)
        else:
            u1 = self.rng.random(n)
            k2 = self._x2_fixed
            offset = k2 - cond.k2_start
            prob = (float(cond.prob_x1_table[offset]) if 0 <= offset < cond.width
                    else float(cond.prob_x1_given_x2(k2)))
            values = ((u1 < prob).astype(np.int64),)
        new_point = dict(point)
        for name, kept in zip(self.run_names, values, strict=True):
            new_point[name] = np.asarray(kept[-1], dtype=dtypes[name])
        return (new_point, *values) if record else new_point
