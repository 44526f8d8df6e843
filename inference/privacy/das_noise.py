r"""The Census-block answers at the noise the 2020 DAS drew, beside the paper's convention.

The paper (and this package) model a count's noise as :math:`\mathrm{DG}(0, 1/(2\rho))`, pmf
:math:`\propto e^{-\rho x^2}`, with :math:`\rho` the query's budget under add/remove-one
neighbours. The DAS drew pmf :math:`\propto e^{-x^2/(2\sigma^2)}` with
:math:`\sigma^2 = 1/\rho_{\text{query}}`, :math:`\rho_{\text{query}}` its budget under
replace-one neighbours (``docs/noise-conventions.md``: the DAS source, file by file). At the
block ``detailed`` query that is :math:`\sigma^2 \approx 10.09`, not the 5.04 of the paper's
convention. Which number an adversary faces depends on the question:

* **replace-one** (which of two cells ``a``, ``b`` holds the target): two cells of variance
  :math:`\sigma^2` (:mod:`dprisk.inference.single_level.replace_one`, exact). In the Gaussian
  limit this carries what one cell of variance :math:`\sigma^2/2` carries (the paper's
  convention at :math:`\rho = \rho_{\text{query}}`): the marginal posterior and risk agree to
  rounding (both are lattice sums of a smooth function, equal to the same Gaussian integral up
  to terms like :math:`e^{-\pi^2\sigma^2}`), P[correct] and the accuracy do not quite (the
  two-cell statistic lives on every integer, the one-cell statistic on every other one: the
  decision thresholds fall differently);
* **did the target respond** (one cell, a count that moves by one): one cell of variance
  :math:`\sigma^2`, i.e. :math:`\rho' = 1/(2\sigma^2)` in the paper's formulas: half the
  paper's precision.

:func:`das_noise_comparison` computes, per prior, the four measures (marginal posterior,
marginal risk, P[correct], prior-weighted accuracy) of the paper's convention, of both
questions at :math:`\sigma^2`, and of one cell at :math:`\sigma^2/2`. Everything is an exact
lattice sum (closed forms of :mod:`dprisk.inference.single_level.closed_form`; a few
milliseconds).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from dprisk.models.census.allocation import census_level
from dprisk.models.checks import check_probability, check_rho
from dprisk.models.mechanism.discrete_gaussian import rho_of_das_sigma_sq
from dprisk.models.scenario import scalar_value

__all__ = [
    "AGREE_TOLERANCE",
    "CONVENTIONS",
    "MEASURES",
    "Answers",
    "DasNoiseComparison",
    "DasNoiseRow",
    "census_block_sigma_sq",
    "das_noise_comparison",
]

#: The four measures of every question.
MEASURES = ("marginal_posterior", "marginal_risk", "p_correct", "accuracy")
#: Two exact answers within this (absolute) agree: far above the rounding of the lattice sums
#: (about 1e-16) and the neglected tail mass (2e-17), far below any difference of substance.
AGREE_TOLERANCE = 1e-12
#: The two noise conventions, in words (the JSON's ``conventions``).
CONVENTIONS = {
    "paper": "rho-zCDP under add/remove-one neighbours: each count gets DG(0, 1/(2 rho)), "
             "pmf proportional to exp(-rho x^2) (Kazan & Reiter; this package)",
    "das": "the 2020 DAS: pmf proportional to exp(-x^2/(2 sigma^2)), sigma^2 = 1/rho_query "
           "with rho_query the query's rho under replace-one neighbours (a histogram query "
           "moves two cells: sensitivity^2 = 2)",
}


@dataclass(frozen=True)
class Answers:
    """The four measures of one question at one prior (:data:`MEASURES`)."""

    marginal_posterior: float
    marginal_risk: float
    p_correct: float
    accuracy: float


@dataclass(frozen=True)
class DasNoiseRow:
    """One prior's answers.

    Attributes
    ----------
    p : float
    paper : Answers
        One cell, DG(0, 1/(2 rho_paper)): the paper's convention (its Table 2 numbers).
    one_cell : Answers
        Did the target respond: one cell of the DAS's variance sigma^2.
    two_cell : Answers
        Which of two cells holds the target: two cells of variance sigma^2 each (exact).
    half_variance : Answers
        One cell of variance sigma^2/2 (the paper's convention at rho_query = 1/sigma^2):
        the two-cell question's Gaussian limit.
    """

    p: float
    paper: Answers
    one_cell: Answers
    two_cell: Answers
    half_variance: Answers


@dataclass(frozen=True)
class DasNoiseComparison:
    """The answers at the DAS's noise beside the paper's convention (module docstring).

    Attributes
    ----------
    sigma_sq : float
        The DAS's noise variance of the query (pmf ``exp(-x^2/(2 sigma^2))``).
    rho_query : float
        ``1/sigma_sq``: the query's rho under the DAS's replace-one neighbours.
    rho_paper : float
        The rho of the paper's convention the comparison is made with (noise
        DG(0, 1/(2 rho_paper)); the Census block's at the global rho 2.56 with ``census``).
    rows : list of DasNoiseRow
    census : bool
        ``sigma_sq`` is the 2020 block ``detailed`` query's (at the production global rho
        (542/339)^2), ``rho_paper`` the paper's block rho1 (at 2.56).
    """

    sigma_sq: float
    rho_query: float
    rho_paper: float
    rows: list[DasNoiseRow]
    census: bool

    def difference(self, question: str, measure: str, against: str = "paper") -> np.ndarray:
        """``question``'s ``measure`` minus ``against``'s, one per row (prior)."""
        return np.array([getattr(getattr(row, question), measure)
                         - getattr(getattr(row, against), measure) for row in self.rows])

    def largest_difference(self, question: str, measure: str,
                           against: str = "paper") -> tuple[float, float]:
        """The largest absolute difference over the priors and the prior it is at."""
        diff = np.abs(self.difference(question, measure, against))
        k = int(np.argmax(diff))
        return float(diff[k]), self.rows[k].p

    def agreement(self) -> list[str]:
        """When the answers at the DAS's noise agree with the paper's, in sentences."""
        s2 = self.sigma_sq
        post, _ = self.largest_difference("two_cell", "marginal_posterior", "half_variance")
        risk, _ = self.largest_difference("two_cell", "marginal_risk", "half_variance")
        post_paper, at_paper = self.largest_difference("two_cell", "marginal_posterior")
        pc, at_pc = self.largest_difference("two_cell", "p_correct", "half_variance")
        acc, at_acc = self.largest_difference("two_cell", "accuracy", "half_variance")
        agree = max(post, risk) <= AGREE_TOLERANCE
        one = (f"one cell of variance sigma^2/2 = {s2 / 2:.4g} (the paper's convention at "
               f"rho = 1/sigma^2 = {self.rho_query:.5g})")
        lines = [
            f"Which of two cells holds the target (replace-one: two cells of variance "
            f"sigma^2 = {s2:.4g}): its marginal posterior and risk "
            + (f"agree with {one} to rounding ({max(post, risk):.1g}) at every prior" if agree
               else f"differ from {one} by up to {max(post, risk):.2g} (the lattice shows: they "
                    f"agree in the Gaussian limit only)")
            + (f"; the largest posterior difference from the paper's rho = "
               f"{self.rho_paper:.5g} is {post_paper:.2g} (p = {at_paper:.4g}), the rounding "
               f"of the global rho" if self.rho_paper != self.rho_query else "")
            + ".",
            f"Its P[correct] and accuracy differ from that one cell's by up to {pc:.2g} "
            f"(p = {at_pc:.4g}) and {acc:.2g} (p = {at_acc:.4g}): the two-cell statistic lives "
            f"on every integer, the one cell's on every other one (they agree in the Gaussian "
            f"limit only).",
        ]
        half = [row for row in self.rows if row.p == 0.5]
        if half:
            row = half[0]
            lines.append(
                f"Did the target respond (one cell of variance sigma^2 = {s2:.4g}): half the "
                f"paper's precision; at p = 1/2 P[correct] is {row.one_cell.p_correct:.4f}, "
                f"not {row.paper.p_correct:.4f}, and the marginal posterior "
                f"{row.one_cell.marginal_posterior:.4f}, not {row.paper.marginal_posterior:.4f}.")
        return lines

    def to_dict(self) -> dict:
        """All fields as plain data, with ``agreement`` and ``conventions``."""
        return {**asdict(self), "agreement": self.agreement(), "conventions": dict(CONVENTIONS)}


def census_block_sigma_sq() -> float:
    """The noise variance the 2020 DAS drew the block ``detailed`` query with (about 10.09).

    :attr:`dprisk.models.census.strategy.StrategyQuery.das_variance` of that query at
    :data:`dprisk.models.census.strategy.PRODUCTION_RHO`.
    """
    from dprisk.models.census.strategy import PRODUCTION_RHO, strategy_queries

    (query,) = [q for q in strategy_queries(PRODUCTION_RHO)
                if q.level == "block" and q.query == "detailed"]
    return query.das_variance


def _answers(summary: dict, k: int) -> Answers:
    return Answers(*(float(np.ravel(summary[name])[k]) for name in MEASURES))


def das_noise_comparison(*, census: bool = False, rho=None, priors=(0.5,)) -> DasNoiseComparison:
    r"""The paper's answers beside both questions at the DAS's noise, per prior.

    Parameters
    ----------
    census : bool
        The 2020 block: :math:`\sigma^2` = :func:`census_block_sigma_sq`, the paper's rho the
        block's rho1 at 2.56.
    rho : float (> 0), optional
        Instead of ``census``: a query's rho, read both ways: the paper's
        DG(0, 1/(2 rho)) and the DAS's :math:`\sigma^2 = 1/\rho`.
    priors : sequence of float (0 < p < 1)

    Returns
    -------
    DasNoiseComparison
    """
    from dprisk.inference.single_level.closed_form import design_summary
    from dprisk.inference.single_level.replace_one import replace_one_summary

    if census == (rho is not None):
        raise ValueError("give exactly one of census=True and rho")
    if census:
        sigma_sq = census_block_sigma_sq()
        rho_query = 1.0 / sigma_sq
        rho_paper = census_level("block").rho
    else:
        rho_paper = rho_query = float(scalar_value(check_rho(rho, "rho"), "rho"))
        sigma_sq = 1.0 / rho_paper
    p = np.atleast_1d(check_probability(priors, "priors")).astype(float)
    cell = float(rho_of_das_sigma_sq(sigma_sq))  # one cell of the DAS's noise, 1/(2 sigma^2)
    paper = design_summary(rho_paper, p)
    one_cell = design_summary(cell, p)
    half_variance = design_summary(2.0 * cell, p)
    two_cell = replace_one_summary(cell, p)
    rows = [DasNoiseRow(float(value), _answers(paper, k), _answers(one_cell, k),
                        _answers(two_cell, k), _answers(half_variance, k))
            for k, value in enumerate(p)]
    return DasNoiseComparison(float(sigma_sq), float(rho_query), float(rho_paper), rows,
                              bool(census))
