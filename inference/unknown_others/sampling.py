r"""PyMC sampling of the adversary who does not know everyone, summarised against the exact sum.

:func:`pymc_posterior` samples
:func:`dprisk.models.builders.unknown_others.build_unknown_others_model`
with PyMC's own steps (``BinaryGibbsMetropolis`` for :math:`B_t`, ``Metropolis`` for
:math:`K`) and reports the posterior mean of :math:`B_t` with its MCSE, R-hat and ESS
(:func:`dprisk.inference.mcmc.chain_stats.chain_diagnostics`), next to the exact
:func:`dprisk.inference.unknown_others.closed_form.posterior`. This is the cross-check of the exact
sum
over the binomial: the two must agree within a few MCSE.

The single-site steps mix well when the release is noisy (:math:`\rho \lesssim 1`); for large
:math:`\rho` the release nearly fixes :math:`B_t + K`, and flipping :math:`B_t` alone is rarely
accepted (R-hat shows it).
"""

from __future__ import annotations

from dprisk.inference.mcmc.chain_stats import chain_diagnostics
from dprisk.inference.unknown_others import (
    closed_form_kernels as unknown_others_kernels,
)
from dprisk.models.checks import check_positive_int
from dprisk.models.mechanism.dg_sampling import resolve_random_seed
from dprisk.models.numerics import expit
from dprisk.models.unknown_others import UnknownOthers

__all__ = ["pymc_posterior", "pymc_posterior_battery"]


def pymc_posterior(x1_star, rho, p=0.5, known=0, *, unknown_others=0, q=None,
                   draws: int = 2000, chains: int = 4, tune: int = 500,
                   random_seed=None) -> dict:
    r"""Sample :math:`P[B_t = 1 \mid x_1^*]` with PyMC and compare it with the exact value.

    Parameters
    ----------
    x1_star, rho, p, known, unknown_others, q
        As in :func:`dprisk.inference.unknown_others.closed_form.posterior`.
    draws, chains, tune : int (>= 1, >= 1, >= 0)
        As in ``pm.sample``.
    random_seed : int >= 0 or None
        Drawn (and reported) when None.

    Returns
    -------
    dict
        ``posterior`` (mean of the draws of :math:`B_t`), ``mcse``, ``r_hat``, ``ess_bulk``,
        ``ess_tail``, ``exact`` (the exact posterior), ``z`` (``(posterior - exact) / mcse``,
        NaN when the MCSE is 0) and ``random_seed``.
    """
    case = {"x1_star": x1_star, "rho": rho, "p": p, "known": known,
            "unknown_others": unknown_others, "q": q}
    return pymc_posterior_battery([case], draws=draws, chains=chains, tune=tune,
                                  random_seed=random_seed)[0]


def pymc_posterior_battery(cases: list[dict], *, draws: int = 2000, chains: int = 4,
                           tune: int = 500, random_seed=None) -> list[dict]:
    """:func:`pymc_posterior` for several releases, compiling the model once per structure.

    Parameters
    ----------
    cases : list of dict
        Keyword arguments of :func:`dprisk.inference.unknown_others.closed_form.posterior`
        (``x1_star``,
        ``rho``, optional ``p``, ``known``, ``unknown_others``, ``q``), each checked once.
    draws, chains, tune, random_seed
        As in :func:`pymc_posterior`; case ``i`` uses seed ``random_seed + i``.

    Returns
    -------
    list of dict
        One :func:`pymc_posterior` result per case, in order.
    """
    import numpy as np
    import pymc as pm

    from dprisk.models.builders.unknown_others import (
        DATA_X1_STAR,
        TARGET_VAR,
        checked_values,
        declare_unknown_others_model,
    )

    values = [checked_values(**case) for case in cases]
    draws = check_positive_int(draws, "draws")
    chains = check_positive_int(chains, "chains")
    tune = check_positive_int(tune, "tune", minimum=0)
    seed = resolve_random_seed(random_seed)
    models: dict[bool, pm.Model] = {}
    steps: dict[bool, tuple[list, list]] = {}
    out = []
    for i, case in enumerate(values):
        structure = bool(case["n"] > 0)
        if structure not in models:
            models[structure] = declare_unknown_others_model(case)
        model = models[structure]
        with model:
            pm.set_data({name: np.asarray(value, dtype=model[name].dtype)
                         for name, value in case.items()})
        if structure not in steps:
            built = _default_steps(model)
            steps[structure] = (built, [step.sampling_state for step in built])
        built, entry_states = steps[structure]
        for step, state in zip(built, entry_states, strict=True):
            step.sampling_state = state  # as built: pm.sample leaves its last chain's state
        tree = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, model=model,
                         step=built, random_seed=seed + i, progressbar=False,
                         quiet=True, compute_convergence_checks=False)
        stats = chain_diagnostics(tree.posterior[TARGET_VAR].values)
        exact = float(unknown_others_kernels.log_posterior_odds(
            case[DATA_X1_STAR], case["rho"], case["p"], case["known"],
            UnknownOthers(int(case["n"]), float(case["q"]))))
        exact = float(expit(exact))
        z = (stats["mean"] - exact) / stats["mcse"] if stats["mcse"] > 0 else float("nan")
        out.append({"posterior": stats["mean"], "mcse": stats["mcse"], "r_hat": stats["r_hat"],
                    "ess_bulk": stats["ess_bulk"], "ess_tail": stats["ess_tail"],
                    "exact": exact, "z": z, "random_seed": seed + i})
    return out


def _default_steps(model) -> list:
    """The steps ``pm.sample`` assigns to ``model`` (in its order), compiled once per structure.

    ``pm.sample`` without ``step`` compiles new steps at every call (four PyTensor functions
    here, most of a small battery's CPU). Given these instead, with their ``sampling_state``
    put back to the state they were built in before each call, it draws the same, bit for bit
    (checked on four releases of both structures, two chains each): it seeds each step for
    each chain and resets their tuning, and the compiled functions read the release from the
    model's data, which ``pm.set_data`` changes in place.
    """
    from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
    from pymc.step_methods import STEP_METHODS

    provided, selected = assign_step_methods(model, None, methods=STEP_METHODS)
    built = instantiate_steppers(model, steps=list(provided), selected_steps=selected)
    return built if isinstance(built, list) else [built]
