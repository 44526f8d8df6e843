r"""What one view of the explorer shows: numbers, a labelled dataset and a figure.

Each ``*_result`` function takes validated values, calls the public entry points of
:mod:`dprisk.inference` (nothing is computed here) and returns a :class:`WhatIf`: the numbers
shown in the page (and downloaded as JSON), an ``xarray.Dataset`` (downloaded as netCDF) and a
Matplotlib figure drawn on demand (downloaded as PNG). Figures are ``matplotlib.figure.Figure``
objects, never ``pyplot`` state, so several sessions can draw at once.

The views:

- :func:`single_level_result`: :math:`P[X_1 = m+1 \mid x_1^*]` over releases, with the
  marginal posterior, the risk :math:`R`, the decision threshold and :math:`P[\text{correct}]`
  (:mod:`dprisk.inference.single_level.closed_form`).
- :func:`two_level_result`: the exact posterior of X1 and X2 for one release D and the
  decision map :math:`P[X_1 = m+1 \mid x_1^*, x_2^*, y_1^*] > 1/2` over a grid of
  :math:`(x_1^*, x_2^*)` at the given :math:`y_1^*` (:mod:`dprisk.inference.two_level.exact`).
- :func:`p_correct_result`: :math:`P[\text{correct}]` against :math:`\rho` for one level,
  and with the block group at the truth :math:`(x_1, x_2)`
  (:mod:`dprisk.inference.studies.p_correct`).
- :func:`budget_result`: the largest :math:`\rho` keeping a risk measure below a target
  (:func:`dprisk.inference.privacy.budget.rho_for_target`).
- :func:`accounting_result`: the :math:`(\varepsilon, \delta)` of :math:`\rho`-zCDP,
  :math:`\varepsilon = \rho + 2\sqrt{\rho \log(1/\delta)}` and the tighter CKS conversion
  (:mod:`dprisk.inference.privacy.accounting`).
"""

from __future__ import annotations

import io
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "WhatIf",
    "accounting_result",
    "budget_result",
    "p_correct_result",
    "single_level_result",
    "two_level_result",
]

#: Points of the rho grids of the curves (log-spaced).
N_RHO = 60
#: Points of the accounting curve (the CKS conversion costs about 0.1 s a point).
N_CKS = 9
#: The largest count's magnitude a release may have (:func:`dprisk.models.checks.check_count`).
MAX_COUNT = 2**53


@dataclass
class WhatIf:
    """The current answer of one view.

    Attributes
    ----------
    view : str
        The view's name (``single``, ``two-level``, ``p-correct``, ``budget``, ``accounting``).
    numbers : dict
        Scalars shown in the page, by name (floats, ints, strings).
    dataset : xarray.Dataset
        The curve or table behind the figure, parameters in ``attrs``.
    draw : callable
        ``draw() -> matplotlib.figure.Figure``: the view's figure, drawn only when asked for
        (the PNG download); the page plots ``dataset`` with Bokeh, which is much cheaper to
        update (:mod:`dprisk.explore.plots`).
    """

    view: str
    numbers: dict
    dataset: object
    draw: object = field(repr=False)

    def to_json(self) -> bytes:
        """The numbers as a JSON object (UTF-8)."""
        return json.dumps({"view": self.view, **self.numbers}, indent=2).encode()

    def to_netcdf(self) -> bytes:
        """The dataset as netCDF bytes (attributes made netCDF-safe: str, int or float)."""
        ds = self.dataset.copy()
        ds.attrs = {k: v if isinstance(v, (int, float, str)) and not isinstance(v, bool)
                    else str(v) for k, v in ds.attrs.items()}
        with tempfile.TemporaryDirectory(prefix="dprisk-explore-") as tmp:
            path = Path(tmp) / f"{self.view}.nc"
            ds.to_netcdf(path, engine="netcdf4")  # the format of every netCDF dprisk writes
            return path.read_bytes()

    def to_png(self) -> bytes:
        """The figure as PNG bytes."""
        buf = io.BytesIO()
        self.draw().savefig(buf, format="png", dpi=100)
        return buf.getvalue()


def _spec(prior) -> str:
    """A prior as its spec string (``improper``, ``truncated:10``, ``FILE.py:NAME``)."""
    return str(getattr(prior, "spec", None) or prior)


def _figure(ncols: int = 1, width: float = 6.4):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, 3.6), layout="constrained")
    axes = fig.subplots(1, ncols)
    return fig, axes


def single_level_result(*, rho1: float, p: float, m: int, x1_star: int) -> WhatIf:
    """Posterior and P[correct] of the single-level adversary (validated inputs)."""
    import xarray as xr

    from dprisk.inference.single_level import closed_form as sl

    numbers = {
        "rho1": rho1, "p": p, "m": m, "x1_star": x1_star,
        "posterior": sl.posterior(x1_star, rho1, p, m),
        "risk": sl.risk(x1_star, rho1, p, m),
        "marginal_posterior": sl.marginal_posterior(rho1, p, m),
        "marginal_risk": sl.marginal_risk(rho1, p, m),
        "threshold": int(sl.decision_threshold(rho1, p, m)),
        "p_correct": sl.p_correct(rho1, p, m),
    }
    half = int(np.clip(4 / np.sqrt(2 * rho1), 5, 60))
    # the curve's releases within the counts' range, <= 2**53 (m >= 0 keeps the start in
    # it): a known count near its end is computed, not refused quoting a release nobody typed
    grid = np.arange(m - half, min(m + half + 1, MAX_COUNT) + 1)
    grid = np.union1d(grid, [x1_star])
    post = np.asarray(sl.posterior(grid, rho1, p, m), dtype=float)
    pmf = np.asarray(sl.release_pmf(grid, rho1, m), dtype=float)  # P[X1* = x1* | x1 = m+1]
    ds = xr.Dataset({"posterior": ("x1_star", post), "release_pmf_given_m_plus_1": ("x1_star",
                     pmf)}, coords={"x1_star": grid},
                    attrs={"rho1": rho1, "p": p, "known": m, "p_correct": numbers["p_correct"]})

    def draw():
        fig, ax = _figure()
        ax.plot(grid, post, "o-", ms=3, label="P[X1 = m+1 | x1*]")
        ax.axhline(p, color="grey", ls=":", label=f"prior p = {p:.3g}")
        ax.axhline(0.5, color="k", lw=0.5)
        ax.axvline(x1_star, color="C3", ls="--", label=f"x1* = {x1_star}")
        ax.set(xlabel="release x1*", ylabel="posterior", ylim=(0, 1),
               title=f"rho1 = {rho1:.4g}: P[correct] = {numbers['p_correct']:.4f}")
        ax.legend(fontsize=8)
        return fig

    return WhatIf("single", numbers, ds, draw)


def two_level_result(*, rho1: float, rho2: float, d: int, p: float, m: int, prior,
                     x1_star: int, x2_star: int, y1_star: int, span: int = 8) -> WhatIf:
    """Exact posterior of X1 and X2 for one release and the decision map over releases."""
    import xarray as xr

    from dprisk.inference.two_level import exact

    params = {"rho1": rho1, "rho2": rho2, "d": d, "p": p, "known": m, "prior": prior}
    post = exact.exact_posterior(x1_star, x2_star, y1_star, **params)
    k2 = post.k2_values.ravel()
    x2_pmf = post.x2_pmf.ravel()
    # the map's releases within the counts' range, +-2**53 (dprisk.models.checks): a release
    # at its end is computed, and the map is not refused quoting a release nobody typed
    x1s = np.arange(max(x1_star - span, -MAX_COUNT), min(x1_star + span, MAX_COUNT) + 1)
    x2s = np.arange(max(x2_star - span, -MAX_COUNT), min(x2_star + span, MAX_COUNT) + 1)
    grid = np.asarray(exact.posterior_x1(x1s[:, None], x2s[None, :], y1_star, **params))
    numbers = {
        "rho1": rho1, "rho2": rho2, "d": d, "p": p, "m": m, "prior": _spec(prior),
        "x1_star": x1_star, "x2_star": x2_star, "y1_star": y1_star,
        "posterior_x1": post.prob_x1, "risk": post.prob_x1 / p,
        "x2_mean": float(post.x2_mean()), "neglected_mass": float(post.neglected_mass),
    }
    ds = xr.Dataset({"x2_pmf": ("k2", x2_pmf),
                     "decision_posterior": (("x1_star", "x2_star"), grid)},
                    coords={"k2": k2, "x1_star": x1s, "x2_star": x2s},
                    attrs={**{k: (_spec(v) if k == "prior" else v) for k, v in params.items()},
                           "y1_star": y1_star, "posterior_x1": post.prob_x1})

    def draw():
        fig, (left, right) = _figure(2, 9.6)
        keep = x2_pmf > 1e-6 * x2_pmf.max()
        left.bar(k2[keep], x2_pmf[keep], color="C0")
        left.set(xlabel="k2", ylabel="P[X2 = k2 | D]",
                 title=f"P[X1 = m+1 | D] = {post.prob_x1:.4f}")
        image = right.pcolormesh(x2s, x1s, grid, vmin=0, vmax=1, cmap="RdBu_r", shading="nearest")
        right.contour(x2s, x1s, grid, levels=[0.5], colors="k", linewidths=1)
        right.plot([x2_star], [x1_star], "k*", ms=10)
        right.set(xlabel="x2*", ylabel="x1*", title=f"decision map at y1* = {y1_star}")
        fig.colorbar(image, ax=right, label="P[X1 = m+1 | D]")
        return fig

    return WhatIf("two-level", numbers, ds, draw)


def p_correct_result(*, rho1: float, rho2: float, d: int, p: float, m: int, prior,
                     x2: int) -> WhatIf:
    """P[correct] against rho1 (one level) and at rho1 with the block group (truth x2)."""
    import xarray as xr

    from dprisk.inference.single_level import closed_form as sl
    from dprisk.inference.studies.p_correct import p_correct_two_level

    rhos = np.geomspace(min(1e-3, rho1 / 10), max(10.0, rho1 * 10), N_RHO)
    curve = np.asarray(sl.p_correct(rhos, p, m), dtype=float)
    here = p_correct_two_level(x2=x2, rho1=rho1, rho2=rho2, d=d, p=p, known=m,
                                  prior=prior)
    numbers = {"rho1": rho1, "rho2": rho2, "d": d, "p": p, "m": m, "prior": _spec(prior),
               "x2": x2, "p_correct_single_level": sl.p_correct(rho1, p, m),
               "p_correct_two_level": here.p_correct, "gain": here.gain, "loss": here.loss}
    ds = xr.Dataset({"p_correct": ("rho", curve)}, coords={"rho": rhos},
                    attrs={"p": p, "known": m, "level": "single"})

    def draw():
        fig, ax = _figure()
        ax.semilogx(rhos, curve, label="one level (x1* only)")
        ax.plot([rho1], [here.p_correct], "C3o", label=f"with block group, x2 = {x2}")
        ax.axvline(rho1, color="grey", ls=":")
        ax.set(xlabel="rho1", ylabel="P[correct decision]", ylim=(0, 1.02),
               title=f"P[correct] at rho1 = {rho1:.4g}: {numbers['p_correct_single_level']:.4f}")
        ax.legend(fontsize=8)
        return fig

    return WhatIf("p-correct", numbers, ds, draw)


def budget_result(*, measure: str, target: float, p: float, m: int) -> WhatIf:
    """The largest single-level rho whose risk ``measure`` stays at most ``target``."""
    import xarray as xr

    from dprisk.inference.privacy.accounting import epsilon_cks
    from dprisk.inference.privacy.budget import measure_function, rho_for_target

    found = rho_for_target(measure, target, p=(p,), known=m)
    value = measure_function(measure, p, m)
    rhos = np.geomspace(found.rho / 30, found.rho * 30, N_RHO)
    curve = np.array([value(float(r)) for r in rhos])
    numbers = {"measure": measure, "target": target, "p": p, "m": m, "rho": found.rho,
               "value_at_rho": found.value_at_rho, "epsilon_cks": epsilon_cks(found.rho, 1e-10)}
    ds = xr.Dataset({measure.replace("-", "_"): ("rho", curve)}, coords={"rho": rhos},
                    attrs={"measure": measure, "target": target, "p": p, "rho_star": found.rho})

    def draw():
        fig, ax = _figure()
        ax.semilogx(rhos, curve, label=measure)
        ax.axhline(target, color="C3", ls="--", label=f"target {target:.4g}")
        ax.axvline(found.rho, color="k", ls=":", label=f"rho* = {found.rho:.4g}")
        ax.set(xlabel="rho", ylabel=measure, title="largest rho meeting the target")
        ax.legend(fontsize=8)
        return fig

    return WhatIf("budget", numbers, ds, draw)


def accounting_result(*, rho: float, delta: float) -> WhatIf:
    """The (epsilon, delta) guarantee of rho-zCDP, Bun-Steinke and CKS, against rho."""
    import xarray as xr

    from dprisk.inference.privacy.accounting import epsilon_bun_steinke, epsilon_cks

    # the point first: a rho the conversions refuse is refused as the command line refuses it
    # (quoting the rho typed, not a point of the curve)
    numbers = {"rho": rho, "delta": delta, "epsilon_bun_steinke": epsilon_bun_steinke(rho, delta),
               "epsilon_cks": epsilon_cks(rho, delta)}

    def curve(epsilon, r):  # a point of the curve beyond a conversion's range: not drawn
        try:
            return epsilon(float(r), delta)
        except ValueError:
            return np.nan

    rhos = np.geomspace(rho / 100, rho * 100, N_CKS)
    bs = np.array([curve(epsilon_bun_steinke, r) for r in rhos])
    cks = np.array([curve(epsilon_cks, r) for r in rhos])  # ~0.1 s each
    ds = xr.Dataset({"epsilon_bun_steinke": ("rho", bs), "epsilon_cks": ("rho", cks)},
                    coords={"rho": rhos}, attrs={"delta": delta})

    def draw():
        fig, ax = _figure()
        ax.loglog(rhos, bs, "o-", ms=3, label="Bun-Steinke")
        ax.loglog(rhos, cks, "s-", ms=3, label="Canonne-Kamath-Steinke")
        ax.axvline(rho, color="k", ls=":")
        ax.set(xlabel="rho (zCDP)", ylabel=f"epsilon at delta = {delta:g}",
               title=f"rho = {rho:.4g}: epsilon_CKS = {numbers['epsilon_cks']:.4f}")
        ax.legend(fontsize=8)
        return fig

    return WhatIf("accounting", numbers, ds, draw)
