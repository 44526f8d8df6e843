"""The figure of the report's section "Every person of a population".

Non-modal precision by block-size band: the Bayes MAP guess of the informed and the outsider
adversary beside the block-modal (MDG) and proportional random (PRG) guesses from the same
noisy cells, and the Census Bureau's published rates for the same bands when given
(:data:`dprisk.validation.beyond.population.CENSUS_PER_BAND`: ``{series: {band: share}}``,
drawn in red shades, dash-dotted).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

__all__ = ["figure"]

_SERIES = (("map_correct_nonmodal", "informed", "Bayes MAP, informed", "C0", "o", "-"),
           ("map_correct_nonmodal", "outsider", "Bayes MAP, outsider", "C1", "s", "-"),
           ("mdg_correct_nonmodal", "informed", "block-modal guess (MDG)", "0.4", "v", "--"),
           ("prg_correct_nonmodal", "informed", "proportional guess (PRG)", "0.4", "^", ":"))


#: Colours of the Census Bureau's published series (reds and browns).
_CENSUS_STYLE = ("#b2182b", "#ef8a62", "#8c510a", "#d6604d", "#67001f", "#f4a582")


def figure(data: xr.Dataset, census: dict | None = None) -> Figure:
    """Left: non-modal precision by band (lines per guess); right: persons and blocks per band."""
    bands = [b for b in data.band.values if b != "all"]
    x = np.arange(len(bands))
    fig = Figure(figsize=(12, 4.8), layout="constrained")
    ax, ax_n = fig.subplots(1, 2, width_ratios=(2.2, 1))
    for name, adversary, label, color, marker, style in _SERIES:
        values = 100 * data[name].sel(adversary=adversary, band=bands).values
        ax.plot(x, values, color=color, marker=marker, ls=style, label=label)
    for (label, rates), color, marker in zip((census or {}).items(), _CENSUS_STYLE,
                                             "DPXd"):
        values = [100 * rates.get(b, np.nan) for b in bands]
        ax.plot(x, values, color=color, marker=marker, ls="-.", lw=1, ms=4,
                label=f"Census study: {label}")
    ax.set_xticks(x, bands)
    ax.set_xlabel("block population (band)")
    ax.set_ylabel("precision for non-modal persons (%)")
    top = np.nanmax([100 * data[name].sel(band=bands).max() for name, *_ in _SERIES]
                    + [100 * v for rates in (census or {}).values() for v in rates.values()])
    ax.set_ylim(0, 1.3 * max(top, 1.0))  # room for the legend above the lines
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7 if census else 9, ncols=2, loc="upper center")
    ax.set_title("Who is guessed right among non-modal persons")
    ax_n.bar(x - 0.2, data["persons"].sel(band=bands) / 1e3, width=0.4, label="persons")
    ax_n.bar(x + 0.2, data["nonmodal_persons"].sel(band=bands) / 1e3, width=0.4,
             label="non-modal persons")
    for i, band in enumerate(bands):  # few blocks make a band's share jumpy
        ax_n.annotate(f"{int(data['blocks'].sel(band=band)):,}\nblocks",
                      (x[i] - 0.2, float(data["persons"].sel(band=band)) / 1e3),
                      ha="center", va="bottom", fontsize=7)
    ax_n.set_ylim(0, 1.5 * float(data["persons"].sel(band=bands).max()) / 1e3)  # legend room
    ax_n.set_xticks(x, bands, rotation=45)
    ax_n.set_xlabel("block population (band)")
    ax_n.set_ylabel("thousands")
    ax_n.legend(fontsize=8, ncols=2, loc="upper center")
    ax_n.grid(alpha=0.3, axis="y")
    ax_n.set_title("Persons and blocks per band")
    fig.suptitle(rf"Every person of a synthetic state ({data.attrs['persons_total']:,} "
                 rf"persons): $\sigma^2$ = {data.attrs['noise_variance']:.2f} from the "
                 "measurements (the DAS's noise), tract prior")
    return fig
