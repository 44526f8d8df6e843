r"""The adversary's two-level (block, block-group) model (paper §3.2, supplement S3) in PyMC.

The adversary knows ``known`` = :math:`m = x_{1,-t}` and is unsure whether the target has
characteristics ``c``; the block-group count X2 has a swappable prior given X1
(:mod:`dprisk.models.priors.library`):

.. math::

    T &\sim \mathrm{Bernoulli}(p), \qquad X_1 = m + T, \qquad
    X_2 \mid X_1 \sim w(\,\cdot \mid X_1) \quad (X_2 \ge X_1), \\
    x_1^* &\sim \mathrm{DG}(X_1, 1/(2\rho_1)), \qquad
    x_2^* \sim \mathrm{DG}(X_2, 1/(2\rho_2)), \qquad
    y_1^* \sim \mathrm{DG}(X_2 - X_1, d/(2\rho_1)).

The last line is the adversary's approximation of the sum of the ``d`` other blocks' noises,
:math:`\sum_{i=1}^d \eta_1^{(i)} \approx \mathrm{DG}(0, d/(2\rho_1))` (paper §3.2, S2), i.e. a
discrete Gaussian with parameter :math:`\rho_1/d` in this project's convention. The posterior
of (T, X2) is the joint posterior :math:`\pi(k_1, k_2)` (paper §3.2, S3), the same one the
exact enumeration (:mod:`dprisk.inference.two_level.exact`) and the Gibbs samplers target.

How the model carries its inputs
--------------------------------
The release lives in the model as three ``pm.Data`` containers (:data:`RELEASE_DATA`,
float64 holding integers, exact up to 2**53), observed through the discrete-Gaussian
likelihoods, so :func:`set_release` can change it without rebuilding or recompiling: PyMC's
compiled logp functions and step methods read the shared values. The other inputs (rho1, rho2,
d, p, known and the prior object) are recorded by :func:`build_two_level_model` in a
registry keyed (weakly) by the model object. :func:`two_level_spec` returns both as one
:class:`TwoLevelSpec` (release = the current data). The exact Gibbs step method
(:class:`dprisk.inference.two_level.gibbs_step.ExactGibbsStep`) reads it there.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from dprisk.models.builders.single_level import TARGET_VAR, X1_STAR_VAR, X1_VAR
from dprisk.models.priors.library import PointMass
from dprisk.models.scenario import Release, Scenario, two_level_scenario
from dprisk.runtime.renamed import renamed_attributes

if TYPE_CHECKING:
    import pymc as pm

__all__ = [
    "RELEASE_DATA",
    "TARGET_VAR",
    "X1_STAR_VAR",
    "X1_VAR",
    "X2_STAR_VAR",
    "X2_VAR",
    "Y1_STAR_VAR",
    "TwoLevelSpec",
    "build_two_level_model",
    "model_from_spec",
    "release_setter",
    "set_release",
    "two_level_spec",
    "validated_spec",
]

#: Name of the block-group count X2 (free, or a Deterministic under a point-mass prior).
X2_VAR = "X2"
#: Name of the observed noisy block-group count ``x2*``.
X2_STAR_VAR = "x2_star"
#: Name of the observed noisy sum of the other ``d`` blocks' counts ``y1*``.
Y1_STAR_VAR = "y1_star"
#: Names of the ``pm.Data`` containers holding ``(x1*, x2*, y1*)``.
RELEASE_DATA = ("x1_star_data", "x2_star_data", "y1_star_data")


#: Scenario values a :class:`TwoLevelSpec` exposes as attributes.
_SCENARIO_VALUES = frozenset({"rho1", "rho2", "d", "p", "known", "prior"})


@dataclass(frozen=True)
class TwoLevelSpec:
    """The validated inputs of one two-level model (see :func:`build_two_level_model`).

    Attributes
    ----------
    release : tuple of int
        The release D = ``(x1_star, x2_star, y1_star)``.
    scenario : Scenario
        The validated two-level scenario; its ``rho1, rho2, d, p, known, prior`` are also
        attributes of the spec.
    """

    release: tuple[int, int, int]
    scenario: Scenario

    def __getattr__(self, name: str):
        """``rho1, rho2, d, p, known, prior``: the scenario's values."""
        if name in _SCENARIO_VALUES:
            return getattr(self.scenario, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def parameters(self) -> dict:
        """Keyword arguments ``rho1, rho2, d, p, known, prior`` of the inference functions."""
        return self.scenario.parameters()

    @property
    def x2_is_free(self) -> bool:
        """Whether X2 is a free variable (False for a point-mass prior: a Deterministic)."""
        return not isinstance(self.prior, PointMass)


#: Model -> its spec at build time (the release part is superseded by the model's data).
_SPECS: weakref.WeakKeyDictionary[pm.Model, TwoLevelSpec] = weakref.WeakKeyDictionary()


def validated_spec(
    x1_star, x2_star, y1_star, *, scenario: Scenario | None = None, **parameters
) -> TwoLevelSpec:
    """Check every input once (:mod:`dprisk.models.scenario`); return the spec.

    ``parameters`` are ``rho1, rho2, d, p, known, prior`` (as in
    :func:`build_two_level_model`), or ``scenario`` a validated two-level
    :class:`dprisk.models.scenario.Scenario`.

    Raises
    ------
    ValueError
        One line naming the offending parameter and its allowed range (``TypeError`` for a
        value that is not a number at all).
    """
    release = Release.two_level(x1_star, x2_star, y1_star, single=True).one("the model")
    return TwoLevelSpec(release, two_level_scenario(scenario, **parameters))


def build_two_level_model(
    x1_star, x2_star, y1_star, *, scenario: Scenario | None = None, **parameters
) -> pm.Model:
    r"""Build the adversary's two-level model for one release D = (x1*, x2*, y1*).

    .. math::

        T \sim \mathrm{Bernoulli}(p),\ X_1 = m + T,\ X_2 \mid X_1 \sim w,\
        x_1^* \sim \mathrm{DG}(X_1, \tfrac{1}{2\rho_1}),\
        x_2^* \sim \mathrm{DG}(X_2, \tfrac{1}{2\rho_2}),\
        y_1^* \sim \mathrm{DG}(X_2 - X_1, \tfrac{d}{2\rho_1})

    Parameters
    ----------
    x1_star, x2_star, y1_star : int
        Released noisy block count, block-group count and sum of the other ``d`` blocks'
        counts (any integers, may be negative).
    rho1, rho2 : float (> 0)
        zCDP parameters of the block and block-group levels (census: about 0.0992, 0.2465).
    d : int (d >= 1)
        Number of other blocks in the block group (paper §4.3: 27).
    p : float (0 < p < 1), default 0.5
        Prior probability :math:`P[X_1 = m + 1]`.
    known : int (known >= 0), default 0
        The adversary's count :math:`m = x_{1,-t}`.
    prior : str or X2Prior, default "improper"
        Prior of X2 given X1: ``improper``, ``truncated:U``, ``point:K``, ``PATH.py:NAME`` or
        an :class:`dprisk.models.priors.library.X2Prior` (declared with ``prior.declare("X2",
        X1)``).
    scenario : Scenario, optional
        A validated two-level scenario (:meth:`dprisk.models.scenario.Scenario.two_level`)
        instead of ``rho1, rho2, d, p, known, prior``.

    Returns
    -------
    pymc.Model
        Free ``"target_has_c"`` (Bernoulli, started at the largest feasible value), free
        ``"X2"`` (a Deterministic for ``point:K``), deterministic ``"X1"``, observed
        ``"x1_star"``, ``"x2_star"``, ``"y1_star"`` (values in the ``pm.Data`` containers
        :data:`RELEASE_DATA`); :func:`two_level_spec` returns the inputs.

    Raises
    ------
    ValueError
        If an input is outside its allowed range (the message names the parameter), e.g.
        ``d < 1``, a malformed prior spec, or a prior with no possible X2 (``truncated:U``
        with ``U < known + 1``).
    """
    return model_from_spec(validated_spec(x1_star, x2_star, y1_star, scenario=scenario,
                                          **parameters))


def model_from_spec(spec: TwoLevelSpec) -> pm.Model:
    """The model of :func:`build_two_level_model` for validated inputs (no checks)."""
    import pymc as pm

    from dprisk.models.mechanism.pymc_dist import DiscreteGaussian

    start = max(spec.prior.feasible_x1(spec.known)) - spec.known
    with pm.Model() as model:
        x1_data, x2_data, y1_data = (
            pm.Data(name, np.float64(value))
            for name, value in zip(RELEASE_DATA, spec.release, strict=True)
        )
        target_has_c = pm.Bernoulli(TARGET_VAR, p=np.float64(spec.p), initval=start)
        x1 = pm.Deterministic(X1_VAR, spec.known + target_has_c)
        x2 = spec.prior.declare(X2_VAR, x1)
        DiscreteGaussian(X1_STAR_VAR, mu=x1, rho=spec.rho1, observed=x1_data)
        DiscreteGaussian(X2_STAR_VAR, mu=x2, rho=spec.rho2, observed=x2_data)
        DiscreteGaussian(
            Y1_STAR_VAR, mu=x2 - x1, rho=np.float64(spec.rho1 / spec.d), observed=y1_data
        )
    _SPECS[model] = spec
    return model


def set_release(model: pm.Model, x1_star, x2_star, y1_star) -> None:
    """Replace the release D of a model from :func:`build_two_level_model` in place.

    Compiled functions and step methods of ``model`` see the new values (``pm.set_data``);
    :class:`dprisk.inference.two_level.gibbs_step.ExactGibbsStep` re-tabulates its conditionals
    when a chain
    starts.

    Raises
    ------
    ValueError
        If a value is not an integer (naming it), or ``model`` was not built by
        :func:`build_two_level_model`.
    """
    import pymc as pm

    two_level_spec(model)
    release = Release.two_level(x1_star, x2_star, y1_star, single=True).one("set_release")
    pm.set_data(
        {name: np.float64(v) for name, v in zip(RELEASE_DATA, release, strict=True)},
        model=model,
    )


def release_setter(model: pm.Model, releases):
    """A function ``set(r)`` setting ``model``'s release D to the ``r``-th of ``releases``.

    ``releases`` is ``(x1*, x2*, y1*)``, integer arrays of one shape, checked here once
    (:meth:`Release.two_level`) instead of once per release as :func:`set_release` does;
    ``set(r)`` then does what ``pm.set_data`` does with :func:`set_release`'s values: each
    data variable's ``set_value`` with the 0-d float64 array of ``np.float64(v)`` (PyMC's
    ``convert_observed_data``), no dims or coords to update. The same values in the model's
    shared variables; about a tenth of :func:`set_release`'s cost (0.5 ms).

    Raises
    ------
    ValueError
        As :func:`set_release`.
    """
    two_level_spec(model)
    release = Release.two_level(*releases)
    values = [np.asarray(a, dtype=np.int64).ravel() for a in
              (release.x_stars[..., 0], release.x_stars[..., 1], release.y_stars[..., 0])]
    shared = [model[name] for name in RELEASE_DATA]

    def set_release_number(r: int) -> None:
        for variable, column in zip(shared, values, strict=True):
            variable.set_value(np.asarray(np.float64(int(column[r]))))

    return set_release_number


def two_level_spec(model: pm.Model) -> TwoLevelSpec:
    """The inputs of ``model``: its current release D and the recorded parameters.

    Raises
    ------
    ValueError
        If ``model`` was not built by :func:`build_two_level_model`.
    """
    try:
        spec = _SPECS[model]
    except (KeyError, TypeError):
        raise ValueError(
            "model must be built by models.builders.two_level.build_two_level_model "
            f"(no two-level inputs recorded for {model!r})"
        ) from None
    release = (int(model[name].get_value()) for name in RELEASE_DATA)
    return replace(spec, release=tuple(release))


#: Old names (issue 35: ``two_level`` for two levels, ``nested`` for h levels), still importable
#: from this module with a FutureWarning naming the new one.
__getattr__ = renamed_attributes(__name__, {
    "build_hierarchical_model": "build_two_level_model",
    "hierarchical_spec": "two_level_spec",
    "HierarchicalSpec": "TwoLevelSpec",
})
