r"""Published-vs-computed records and the figure of the paper's Tables 7-8 (MCMC posteriors).

Each published Table 7 / Table 8 number is compared with the exact posterior (its MC error:
that of a correct 1e4-draw Gibbs run,
:func:`dprisk.validation.paper.two_level.correct_sampler_mcse`) and with the
constraint-dropping Gibbs variant (:mod:`dprisk.inference.studies.variant`), whose 1e4-draw runs
give the spread. The tables come from
:func:`dprisk.validation.paper.two_level.compute_tables`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from dprisk.inference.two_level.sampling import SAMPLING_METHODS
from dprisk.validation.paper import published as pub

__all__ = [
    "N_MCSE",
    "PAPER_DRAWS",
    "TABLE5_K2",
    "Comparison",
    "at_method",
    "comparisons",
    "figure",
    "records",
]

#: The k2 columns of Table 8.
TABLE5_K2 = tuple(range(8))
#: MCMC draws behind the published Tables 7 and 8.
PAPER_DRAWS = 10_000
#: A published MC estimate "agrees" when within N_MCSE MCSEs (+ half its printed unit).
N_MCSE = 4.0


def at_method(values: xr.DataArray, method: str) -> xr.DataArray:
    """``values.sel(method=...)`` (``sel``'s own ``method`` keyword shadows the dim name)."""
    return values.sel({"method": method})


def _z_text(published: float, reference: float, mcse: float, half_unit: float) -> tuple:
    """``(within, text)``: |published - reference| vs N_MCSE MCSE, allowing the rounding."""
    if not mcse > 0:
        return False, "z undefined (no spread)"
    z = (published - reference) / mcse
    z_rounded = max(abs(published - reference) - half_unit, 0.0) / mcse
    within = z_rounded <= N_MCSE
    return within, (f"z = {z:+.1f} MCSE ({z_rounded:.1f} allowing for the printed rounding: "
                    f"{'within' if within else 'beyond'} {N_MCSE:g} MCSE)")


def _number(x: float, decimals: int = 4) -> str:
    """``x`` to ``decimals`` places, or to 2 significant digits where those show fewer.

    Table 8's tail: an MCSE of 6.7e-5 is written 6.7e-05, not 0.0001 or 0.0000.
    """
    if x == 0 or abs(x) >= 10.0 ** (1 - decimals):
        return f"{x:.{decimals}f}"
    return f"{x:.2g}"


def _mc_text(estimates: dict, exact: float) -> str:
    parts = []
    for method, (value, mcse) in estimates.items():
        if mcse > 0:
            parts.append(f"{method} {_number(value)} ± {_number(mcse)} "
                         f"(z {(value - exact) / mcse:+.1f})")
        else:
            parts.append(f"{method} {_number(value)} (no spread: every draw equal)")
    return "; ".join(parts)


@dataclass(frozen=True)
class Comparison:
    """One published Table 7/8 number beside everything it is compared with.

    ``versus_exact`` / ``versus_variant`` give ``(within, text)``: whether
    ``|published - reference| - half a printed unit <= N_MCSE * spread``, and its z text.
    """

    record: pub.PublishedValue
    exact: float
    paper_mcse: float
    variant: float
    variant_sd: float
    estimates: dict

    def versus_exact(self) -> tuple[bool, str]:
        """Against the exact posterior, in MCSEs of a correct 1e4-draw run."""
        return _z_text(self.record.value, self.exact, self.paper_mcse, self.record.half_unit)

    def versus_variant(self) -> tuple[bool, str]:
        """Against the variant's stationary value, in sd of its 1e4-draw runs."""
        return _z_text(self.record.value, self.variant, self.variant_sd, self.record.half_unit)


def comparisons(tables: xr.Dataset) -> list[Comparison]:
    """One :class:`Comparison` per Table 7 (k1 = 0, 1) and Table 8 (k2 = 0..7) number."""
    out = []
    x1, x1_mcse = tables["p_x1"], tables["p_x1_mcse"]
    for k1 in (0, 1):
        def prob(method, k1=k1):
            value = float(at_method(x1, method))
            return value if k1 == 1 else 1.0 - value

        out.append(Comparison(
            pub.get(f"table4/k1={k1}/posterior"), exact=prob("exact"),
            paper_mcse=float(tables["paper_mcse_x1"]), variant=prob("variant"),
            variant_sd=float(at_method(x1_mcse, "variant-runs")),
            estimates={m: (prob(m), float(at_method(x1_mcse, m))) for m in SAMPLING_METHODS},
        ))
    for k in TABLE5_K2:
        x2, x2_mcse = tables["p_x2"].sel(k2=k), tables["p_x2_mcse"].sel(k2=k)
        out.append(Comparison(
            pub.get(f"table5/k2={k}/posterior"), exact=float(at_method(x2, "exact")),
            paper_mcse=float(tables["paper_mcse_x2"].sel(k2=k)),
            variant=float(at_method(x2, "variant")),
            variant_sd=float(at_method(x2_mcse, "variant-runs")),
            estimates={m: (float(at_method(x2, m)), float(at_method(x2_mcse, m)))
                       for m in SAMPLING_METHODS},
        ))
    return out


def _record(c: Comparison) -> dict:
    within, exact_text = c.versus_exact()
    _, variant_text = c.versus_variant()
    explanation = (
        f"Exact enumeration: {_number(c.exact, 5)}. Monte Carlo (estimate ± MCSE, z vs "
        f"exact): {_mc_text(c.estimates, c.exact)}. The published {c.record.printed} is an "
        f"MCMC estimate from 1e4 draws; a correct 1e4-draw exact-Gibbs run has MCSE "
        f"{_number(c.paper_mcse)} here (analytic, from the X1 chain's autocorrelation), and "
        f"the published value is {exact_text} from exact. Variant: a Gibbs sampler whose X1 "
        f"update omits the support constraint k1 <= k2 (eq. X1fc applied at k1 = 1 when "
        f"X2 = 0) while its X2 update keeps k2 >= k1 has stationary value "
        f"{_number(c.variant, 5)} (2-state transition matrix on X1); its 1e4-draw runs spread "
        f"with sd {_number(c.variant_sd)}, and the published value is {variant_text} from the "
        f"variant."
    )
    return {
        "id": c.record.id,
        "source": c.record.source,
        "published": c.record.value,
        "computed": c.exact,
        "mcse": c.paper_mcse,
        "status": "within-mc-error" if within else "differs",
        "explanation": explanation,
    }


def records(tables: xr.Dataset) -> list[dict]:
    """One record per Table 7 / Table 8 id: published vs exact, MC error of a 1e4-draw run.

    ``computed`` is the exact posterior; ``mcse`` the MCSE of a correct 1e4-draw run
    (:func:`correct_sampler_mcse`); ``status`` is ``within-mc-error`` when
    ``|published - exact| - half a printed unit <= N_MCSE * mcse``, else ``differs``. The
    explanation gives every MC estimate with its z against exact, and the variant sampler's
    value and spread with the published value's z against it.
    """
    return [_record(c) for c in comparisons(tables)]


# --------------------------------------------------------------------------- figure
def figure(tables: xr.Dataset) -> Figure:
    """Bar charts of P[X1 = 1 | D] and P[X2 = k2 | D]: exact, MC, variant, published.

    Error bars: ±2 MCSE for the Monte Carlo estimates; for the published values ±2 MCSE of
    a correct 1e4-draw run (the scatter the paper's estimate would have around exact).
    """
    shown = ("exact", "pymc-gibbs", "pymc", "variant", "published")
    colours = ("#333333", "#1f77b4", "#2ca02c", "#d62728", "#ff7f0e")

    def errors(name, method):
        if method == "published":
            return 2 * tables[f"paper_mcse_{name}"].values
        values = 2 * at_method(tables[f"p_{name}_mcse"], method).values
        return np.nan_to_num(values)

    fig = Figure(figsize=(11, 4.2))
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 3]})
    width = 0.8 / len(shown)
    for i, (method, colour) in enumerate(zip(shown, colours, strict=True)):
        ax1.bar(i, float(at_method(tables["p_x1"], method)), yerr=errors("x1", method),
                color=colour, capsize=3)
        offsets = tables["k2"].values + (i - (len(shown) - 1) / 2) * width
        ax2.bar(offsets, at_method(tables["p_x2"], method).values, width=width, color=colour,
                yerr=errors("x2", method), capsize=2, label=method)
    no_hierarchy = float(at_method(tables["p_x1"], "no-hierarchy"))
    ax1.axhline(no_hierarchy, color="k", ls="--", lw=1)
    # the label sits left, over the short exact bar, clear of the bars that reach the line
    ax1.text(-0.4, no_hierarchy + 0.002, "no hierarchy", ha="left", va="bottom", fontsize=8)
    ax1.set_xticks(range(len(shown)), shown, rotation=45, ha="right")
    ax1.set_ylim(0.45, 0.6)
    ax1.set_ylabel("P[X1 = 1 | D]")
    ax1.set_title("Table 7")
    ax2.set_xlabel("k2 (block-group count with characteristics c, persons)")
    ax2.set_ylabel("P[X2 = k2 | D]")
    ax2.set_title("Table 8: D = (2, 1, −1), Census ρ, d = 27, p = 1/2; bars ±2 MCSE")
    ax2.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig
