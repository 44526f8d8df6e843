"""Captions of the accounting and budget figures (:mod:`dprisk.validation.beyond.decisions`).

Kept apart from the study so that :mod:`dprisk.validation.figures.captions` can merge them into
its table without importing the accounting and budget code.
"""

from __future__ import annotations

__all__ = ["DESCRIPTIONS"]

#: Figure stem -> (what it mirrors, what is plotted), for the report's captions.
DESCRIPTIONS: dict[str, tuple[str, str]] = {
    "budget_rho_star": (
        "no figure of the paper (the inverse of Figures 2-3)",
        "The largest single-level ρ whose risk measure stays at most the target, against the "
        "target, one line per prior of the paper (a prior where the target is never exceeded "
        "is not drawn). Marginal risk and marginal posterior increase in ρ; P[correct] and "
        "the tail P[R'(X*) > max(3, 0.25/p)] are step-like, so ρ* is their first crossing, "
        "located at the computed jump points."),
    "budget_risk_profile": (
        "Kazan & Reiter's risk-profile method and its discrete Gaussian counterpart",
        "Left: the profile r*(p) = max(3, 0.25/p). Middle: the largest ε of an ε-DP release "
        "meeting it at each prior, minimal (binding) at p = 1/12. Right: the largest ρ of the "
        "discrete Gaussian release whose tail P[R'(X*) > r*(p)] stays at most 0.05; the "
        "binding prior is marked in every panel."),
    "budget_epsilon_table": (
        "paper Section 2.3 (17.91), the Census Bureau's stated ε (17.14)",
        "The (ε, δ = 1e-10) guarantee of the 2020 persons release three ways: Theorem 1 of "
        "the paper (Bun–Steinke), the Canonne–Kamath–Steinke conversion the Census uses, and "
        "the privacy-loss-distribution composition of every query of the strategy (a "
        "pessimistic upper bound at loss grid 1e-4; bracketed in [16.4789, 16.4796])."),
}
