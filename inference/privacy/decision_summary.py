r"""The decision summary: what an adversary learns at an allocation, Bayesian and worst case.

For the paper's five priors (:data:`PAPER_PRIORS`) and a unique target (``m = 0``, truth
``x1 = 1``), at the block's rho1 and, when given, the block group's rho2:

* ``posterior_block``: the marginal posterior (the posterior averaged over the releases of the
  truth) when only the block count is released
  (:func:`dprisk.inference.single_level.closed_form.marginal_posterior`);
* ``posterior_block_group``: the same for a target unique in its block and its block group
  (both counts read; :func:`dprisk.inference.nested.unique_levels.marginal_unique_levels`);
* ``marginal_risk``: ``posterior_block / p`` (R);
* ``accuracy``: the Bayes rule's prior-weighted accuracy with both levels
  (:func:`dprisk.inference.privacy.worst_case.bayes_accuracy_levels`);
* ``worst_case_accuracy``: the best accuracy of any test on the same two queries (exact,
  :func:`dprisk.inference.privacy.worst_case.worst_case_accuracy`); for a unique target the
  Bayes rule is the likelihood-ratio test, so the two agree: the worst case that can exceed
  them is the whole release (``worst_case_accuracy_all``, the 65 Census queries at p = 1/2,
  with ``census=True``).

And epsilon three ways at delta = 1e-10 for the total rho: Bun–Steinke (the paper's
Theorem 1), Canonne–Kamath–Steinke, and the PLD bracket of the discrete Gaussian queries (the
65 of the 2020 strategy with ``census=True``, else the one or two given).

The rows above are in the paper's convention (noise DG(0, 1/(2 rho)), rho under add/remove-one
neighbours). ``das_noise`` gives the block's answers at the noise the 2020 DAS actually drew
(:mod:`dprisk.inference.privacy.das_noise`): pmf proportional to exp(-x^2/(2 sigma^2)) with
sigma^2 = 1/rho_query (replace-one neighbours), about 10.09 for the block ``detailed`` query
with ``census=True``, 1/rho1 otherwise; for the replace-one question (which of two cells holds
the target: two cells of variance sigma^2, exact) and the did-the-target-respond question (one
cell of variance sigma^2), beside the paper's numbers, with sentences saying where they agree.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from dprisk.inference.privacy.das_noise import DasNoiseComparison, das_noise_comparison
from dprisk.inference.privacy.decision_sizing import check_summary_size
from dprisk.models.census.allocation import CENSUS_DELTA, CENSUS_RHO_TOTAL, census_level
from dprisk.models.checks import check_probability, check_rho
from dprisk.models.scenario import scalar_value

__all__ = ["PAPER_PRIORS", "DecisionRow", "DecisionSummary", "decision_summary"]

#: The paper's five priors.
PAPER_PRIORS = (1 / 2, 1 / 5, 1 / 10, 1 / 50, 1 / 864)


@dataclass(frozen=True)
class DecisionRow:
    """One prior's row of the decision summary (module docstring)."""

    p: float
    posterior_block: float
    posterior_block_group: float | None
    marginal_risk: float
    accuracy: float
    worst_case_accuracy: float


@dataclass(frozen=True)
class DecisionSummary:
    """The decision summary of an allocation.

    Attributes
    ----------
    rho1, rho2 : float, float or None
        The block's and (if given) the block group's rho.
    rho_total : float
        The rho that epsilon is computed for.
    rows : list of DecisionRow
        One per prior of :data:`PAPER_PRIORS`.
    epsilon_bun_steinke, epsilon_cks : float
        At ``delta``.
    epsilon_pld_lower, epsilon_pld_upper : float or None
        At ``delta``; None where ``dp-accounting`` does not resolve the PLD bracket
        (:mod:`dprisk.inference.privacy.accounting_limits`).
    delta : float
    worst_case_accuracy_all : float or None
        The 65 Census queries at p = 1/2 (PLD, upper end); None unless ``census``.
    census : bool
    das_noise : DasNoiseComparison or None
        The block's answers at the DAS's noise beside the paper's, for the same priors
        (module docstring).
    """

    rho1: float
    rho2: float | None
    rho_total: float
    rows: list[DecisionRow]
    epsilon_bun_steinke: float
    epsilon_cks: float
    epsilon_pld_lower: float | None
    epsilon_pld_upper: float | None
    delta: float
    worst_case_accuracy_all: float | None
    census: bool
    das_noise: DasNoiseComparison | None = None

    def to_dict(self) -> dict:
        """All fields as plain data (rows as dicts; ``das_noise`` with its sentences)."""
        payload = asdict(self)
        if self.das_noise is not None:
            payload["das_noise"] = self.das_noise.to_dict()
        return payload


def _row(p: float, rho1: float, rho2: float | None) -> DecisionRow:
    from dprisk.inference.nested.unique_levels import marginal_posterior_unique_levels
    from dprisk.inference.privacy.worst_case import bayes_accuracy_levels, worst_case_accuracy
    from dprisk.inference.single_level.closed_form import marginal_posterior

    block = float(marginal_posterior(rho1, p))
    rhos = [rho1] if rho2 is None else [rho1, rho2]
    both = None if rho2 is None else float(marginal_posterior_unique_levels(rhos, p))
    return DecisionRow(p, block, both, block / p, bayes_accuracy_levels(rhos, p),
                       worst_case_accuracy(rhos, p).accuracy)


def decision_summary(*, census: bool = False, rho1=None, rho2=None,
                     delta: float = CENSUS_DELTA) -> DecisionSummary:
    r"""The decision table for the paper's five priors at an allocation.

    Parameters
    ----------
    census : bool
        The 2020 allocation: rho1, rho2 the block and block-group GVHR queries, epsilon of
        the global rho 2.56 and the PLD bracket of all 65 queries.
    rho1 : float (> 0), optional
        The block's rho (required unless ``census``).
    rho2 : float (> 0), optional
        The block group's rho (``posterior_block_group`` is None without it).
    delta : float (0 < delta < 1)
        The delta of the (epsilon, delta)-DP guarantees in the table.

    Returns
    -------
    DecisionSummary

    Raises
    ------
    ValueError
        Bad input, or (before any array is built) an allocation the exact sums, the
        accountants or the memory and work limits refuse, named ``rho1`` or ``rho2``
        (:func:`dprisk.inference.privacy.decision_sizing.check_summary_size`).
    """
    from dprisk.inference.privacy.accounting import (
        census_epsilon_pld_bracket,
        epsilon_bun_steinke,
        epsilon_cks,
        epsilon_pld_bracket,
    )

    if census:
        if rho1 is not None or rho2 is not None:
            raise ValueError("census and rho1/rho2 are alternatives: give one of them")
        from dprisk.inference.privacy.worst_case import census_worst_case

        rho1, rho2 = census_level("block").rho, census_level("block-group").rho
        total = float(CENSUS_RHO_TOTAL)
        delta = float(scalar_value(check_probability(delta, "delta"), "delta"))
        # a delta without a CKS epsilon is refused here, before the bracket composes the
        # strategy's 65 queries at its fine grid (a minute of CPU where not cached)
        epsilon_cks(total, delta)
        try:
            lower, upper = census_epsilon_pld_bracket(CENSUS_RHO_TOTAL, delta)
        except ValueError:  # outside dp-accounting's resolved range (accounting_limits)
            lower = upper = None
        everything = census_worst_case(CENSUS_RHO_TOTAL, p=0.5).accuracy
    else:
        if rho1 is None:
            raise ValueError("rho1 is required (a rho > 0) unless census=True")
        rho1 = float(scalar_value(check_rho(rho1, "rho1"), "rho1"))
        if rho2 is not None:
            rho2 = float(scalar_value(check_rho(rho2, "rho2"), "rho2"))
        rhos = [rho1] if rho2 is None else [rho1, rho2]
        check_summary_size(rho1, rho2, delta=float(check_probability(delta, "delta")),
                           priors=PAPER_PRIORS)  # every window, before any is built
        total = float(sum(rhos))
        try:
            lower, upper = epsilon_pld_bracket(rhos, delta)
        except ValueError:  # outside dp-accounting's resolved range (accounting_limits)
            lower = upper = None
        everything = None
    rows = [_row(p, rho1, rho2) for p in PAPER_PRIORS]
    das = (das_noise_comparison(census=True, priors=PAPER_PRIORS) if census
           else das_noise_comparison(rho=rho1, priors=PAPER_PRIORS))
    return DecisionSummary(rho1, rho2, total, rows, epsilon_bun_steinke(total, delta),
                           epsilon_cks(total, delta), lower, upper, float(delta), everything,
                           census, das)
