"""The two-level scenario under its former name (kept while callers move to :class:`Scenario`).

:class:`TwoLevelParams` is a :class:`dprisk.models.scenario.Scenario` with ``h = 2``;
``TwoLevelParams.validated(rho1=..., rho2=..., d=..., p=..., known=..., prior=...)`` is
:meth:`Scenario.two_level`.
"""

from __future__ import annotations

from dprisk.models.scenario import Scenario

__all__ = ["TwoLevelParams"]


# TODO(merge): callers in inference/studies.py, inference/mc_studies.py, validation/sbc.py,
# validation/studies_paper.py, tests/inference/test_mc_studies.py (use Scenario.two_level).
class TwoLevelParams(Scenario):
    """Validated parameters of the two-level model: a two-level :class:`Scenario`."""

    @classmethod
    def validated(cls, *, rho1, rho2, d, p, known, prior) -> Scenario:
        """:meth:`Scenario.two_level` with keyword arguments (every value checked once)."""
        return Scenario.two_level(rho1, rho2, d, p=p, known=known, prior=prior)
