"""The paper's qualitative statements that the report checks: claims, not published numbers.

A claim ("for ρ1 < 0.25 the risk is approximately one", "post-processing keeps the risk below
its value without post-processing") is recorded with status ``holds`` or ``does not hold``
(:data:`dprisk.validation.paper.records.CLAIM_STATUSES`), ``published`` None, and the *measured
quantity* in ``computed``; :class:`Claim` says what the paper states, what is measured and the
relation the measured quantity is checked against. Claims the paper states with a threshold
(``kind`` ``claim`` or ``bound`` in :mod:`dprisk.validation.paper.published`) take their statement
and
threshold from there; the others are listed here. Only the records named here may carry a claim
status (:func:`dprisk.validation.paper.records.validate_records`).
"""

from __future__ import annotations

from dataclasses import dataclass

from dprisk.validation.paper import published as pub

__all__ = ["CLAIMS", "Claim", "get", "is_claim"]


@dataclass(frozen=True)
class Claim:
    """One qualitative statement of the paper and how the suite checks it.

    Attributes
    ----------
    id : str
        The record id.
    statement : str
        What the paper says (quoted where it has words for it).
    measured : str
        What the record's ``computed`` holds: the measured quantity.
    relation : str
        The relation the measured quantity is checked against (``"≤ 0"``, ``"< 0.01"``,
        ``"≈ 1 (within 10 %, our tolerance)"``); "ours" marks a criterion the paper does not give.
    """

    id: str
    statement: str
    measured: str
    relation: str


_PRIORS = ("1/2", "1/5", "1/10", "1/50", "1/864")
_RHO1 = "the Census block ρ1 = 0.0992"

#: What is measured for the claims of :mod:`dprisk.validation.paper.published` (by id).
_MEASURED = {
    **{f"text4.2/p={lab}/p_correct_bound":
       f"probability of a correct 0-1-loss decision, P[correct | x1 = 1], at {_RHO1}, p = {lab}"
       for lab in _PRIORS[1:]},
    **{f"text4.2/fig2/rho=0.25/p={lab}/risk": f"marginal risk R at ρ1 = 0.25, p = {lab}"
       for lab in _PRIORS},
    **{f"text4.2/fig2/rho=5/p={lab}/posterior": f"marginal posterior at ρ1 = 5, p = {lab}"
       for lab in _PRIORS},
    "fig4/region_mass": "probability of the release region −3 ≤ x2* ≤ 5, −30 ≤ y1* ≤ 30 "
                        "(truth x1 = x2 = 1, Census ρ1, ρ2, d = 27; exact)",
    "s1.3/largest_increase_level": "the ℓ reached by the largest step of the marginal "
                                   "posterior in ℓ (the smallest over the five priors)",
    "s2/variance_gap/s>0.5": "largest |σ² − s| over a dense grid of s in (0.5, 1e6]",
    "s2/variance_gap/s>1": "largest |σ² − s| over a dense grid of s in (1, 1e6]",
}


def _relation(value: pub.PublishedValue) -> str:
    text = f"{value.relation} {value.printed}"
    return text + " (within 10 %, our tolerance)" if value.relation == "≈" else text


def _from_published() -> list[Claim]:
    out = []
    for value in pub.PUBLISHED:
        if value.kind in ("claim", "bound"):
            out.append(Claim(value.id, value.quantity, _MEASURED[value.id], _relation(value)))
    return out


_F9 = "Figure 9: a sum of n DG(0, 1/(2ρ)) noises against DG(0, n/(2ρ))"
_LISTED = [
    Claim("s1.3/risk_increases_with_levels",
          "'the risk increases as a function of ℓ' (Figure 7)",
          "smallest increase of R from ℓ to ℓ + 1 over the five priors and ℓ = 1…5", "> 0"),
    Claim("s1.3/contour_vs_exact_sum",
          "method check of the suite, not a statement of the paper: the contour integral and "
          "the exact finite sum give the same marginal posterior (Figure 7)",
          "largest relative difference over ℓ = 1…6 and the five priors", "< 1e-13"),
    *(Claim(f"s2/figure8/rho={rho}/n={n}/total_variation",
            f"'the approximation does extremely well' ({_F9})",
            f"total-variation distance between the exact sum and DG(0, n/(2ρ)) at ρ = {rho}, "
            f"n = {n}", "< 0.01 (ours; the paper gives no criterion)")
      for rho in ("0.0992", "1") for n in (27, 5)),
    Claim("s5/product_identity",
          "eq. (S5.6): the risk R' of sequential releases is the product of the per-release "
          "risks",
          "largest relative difference between the product of 3 per-release risks and the risk "
          "from all releases at once, over a grid of releases and the five priors", "≤ 1e-12"),
    Claim("s6/fig10_left/bounded_by_no_postprocessing",
          "post-processing keeps the marginal risk below its value without post-processing "
          "(Figure 12, left)",
          "largest excess of the post-processed marginal posterior over the single-level one, "
          f"x̃2 = 1…100, at {_RHO1}", "≤ 0 (to 1e-12)"),
    Claim("s6/fig10_left/data_processing_bound",
          "post-processing cannot raise the risk above its value before post-processing "
          "(Figure 12, left)",
          "largest excess of the post-processed marginal posterior over the one from "
          f"(x1*, y1*) with x2 known, x̃2 = 1…100, at {_RHO1}", "≤ 0 (to 1e-12)"),
    Claim("s6/fig10_left/increasing_in_x2_tilde",
          "'larger values of x̃2 give risks closer to the bound' (Figure 12, left)",
          "smallest step of the post-processed marginal posterior from x̃2 to x̃2 + 1",
          "≥ 0"),
    Claim("s6/fig10_right/bounded_by_no_postprocessing",
          "the marginal risk without post-processing bounds the one with it, over ρ1 "
          "(Figure 12, right)",
          "largest excess of the post-processed marginal posterior over the single-level one, "
          "over the ρ1 grid and x̃2 ∈ {1, 10, 100}", "≤ 0 (to 1e-12)"),
    Claim("s6/fig10_right/data_processing_bound",
          "the data-processing bound over ρ1 (Figure 12, right)",
          "largest excess of the post-processed marginal posterior over the one from "
          "(x1*, y1*) with x2 known, over the ρ1 grid and x̃2 ∈ {1, 10, 100}", "≤ 0 (to 1e-12)"),
    Claim("s6/fig10_right/ordered_in_x2_tilde",
          "'we observe a similar effect': a larger x̃2 gives a larger risk at every ρ1 "
          "(Figure 12, right)",
          "smallest difference between consecutive x̃2 lines (1 → 10 → 100) at the same ρ1",
          "≥ 0 (to 1e-12)"),
]

#: Every claim the report checks, by record id.
CLAIMS: dict[str, Claim] = {c.id: c for c in _from_published() + _LISTED}


def is_claim(record_id: str) -> bool:
    """Whether the record ``record_id`` checks a claim (status ``holds`` / ``does not hold``)."""
    return record_id in CLAIMS


def get(record_id: str) -> Claim:
    """The :class:`Claim` of record ``record_id`` (KeyError naming it when it is not a claim)."""
    try:
        return CLAIMS[record_id]
    except KeyError:
        raise KeyError(f"record {record_id!r} is not a claim of the paper") from None
