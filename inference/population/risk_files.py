"""The files of ``dprisk population risk --out DIR``.

* ``persons.parquet``: the persons file's rows, in its order, with its five columns
  (``geoid`` ... ``cenrace``; any other column of the file is not read, so not written: join
  on the row number) and ``posterior_true`` (the posterior of the person's true category),
  ``map`` (the MAP category index c = 63 * hispanic + cenrace - 1, ties to the smallest),
  ``map_posterior`` and
  ``fdp_bound`` (the worst-case success bound of any adversary with the same prior that reads
  the block cells);
* ``summary.json``: the summary printed by ``--json``;
* ``summary.nc``: the same, labelled (xarray): dimension ``band`` (the seven block-size bands
  and ``all``) for every per-band number, dimension ``bin`` for the calibration; units and the
  run's settings in attributes;
* ``figures/by_band.png`` (non-modal persons guessed right, by band: the Bayes MAP beside the
  block-modal and proportional guesses) and ``figures/calibration.png`` (share of right MAPs
  against the MAP's posterior, per bin, with binomial 95 % intervals: Wilson's).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dprisk.inference.population.categories import BAND_LABELS

__all__ = ["BAND_VARIABLES", "Z_95", "summary_dataset", "wilson_interval", "write_risk_files"]

#: Per-band numbers of the summary, with their units.
BAND_VARIABLES = {
    "blocks": "blocks", "persons": "persons", "nonmodal_persons": "persons",
    "map_correct": "fraction of persons", "map_correct_nonmodal": "fraction of non-modal persons",
    "mean_posterior_true": "probability", "posterior_true_ge_half": "fraction of persons",
    "mdg_correct_nonmodal": "fraction of non-modal persons",
    "prg_correct_nonmodal": "fraction of non-modal persons",
    "mean_fdp_bound": "probability",
}


def _value(v) -> float:
    return float("nan") if v is None else float(v)


def summary_dataset(payload: dict, attrs: dict):
    """The summary as an ``xarray.Dataset`` (band and calibration-bin dimensions)."""
    import xarray as xr

    rows = [*payload["by_block_size"], {"band": "all", **payload["all"]}]
    data = {}
    for name, units in BAND_VARIABLES.items():
        values = np.asarray([_value(row[name]) for row in rows])
        data[name] = xr.DataArray(values, dims="band", attrs={"units": units})
    calibration = payload["calibration"]
    centres = [(b["low"] + b["high"]) / 2 for b in calibration]
    data["calibration_persons"] = xr.DataArray(
        np.asarray([b["persons"] for b in calibration], dtype=np.int64), dims="bin",
        attrs={"units": "persons"})
    data["calibration_mean_map_posterior"] = xr.DataArray(
        np.asarray([_value(b["mean_map_posterior"]) for b in calibration]), dims="bin",
        attrs={"units": "probability"})
    data["calibration_map_correct"] = xr.DataArray(
        np.asarray([_value(b["map_correct"]) for b in calibration]), dims="bin",
        attrs={"units": "fraction of persons"})
    coords = {"band": [*BAND_LABELS, "all"], "bin": centres,
              "bin_low": ("bin", [b["low"] for b in calibration]),
              "bin_high": ("bin", [b["high"] for b in calibration])}
    return xr.Dataset(data, coords=coords, attrs=attrs)


#: The standard normal quantile of a two-sided 95 % interval.
Z_95 = 1.959963984540054


def wilson_interval(share, count, z: float = Z_95):
    r"""The Wilson score interval of a binomial share :math:`\hat p` of :math:`n` trials.

    .. math:: \frac{\hat p + z^2/(2n) \pm z\sqrt{\hat p(1 - \hat p)/n + z^2/(4n^2)}}
              {1 + z^2/n}

    Inside [0, 1] and of positive width at :math:`\hat p \in \{0, 1\}`, where the normal
    approximation :math:`\hat p \pm z\sqrt{\hat p(1 - \hat p)/n}` has none (a bin of two
    persons, both right, was drawn as certain).

    Returns
    -------
    (low, high) : float arrays of the shape of ``share``
    """
    share = np.asarray(share, dtype=np.float64)
    count = np.asarray(count, dtype=np.float64)
    z2n = z * z / count
    centre = (share + z2n / 2) / (1 + z2n)
    half = z * np.sqrt(share * (1 - share) / count + z2n / (4 * count)) / (1 + z2n)
    return np.clip(centre - half, 0.0, share), np.clip(centre + half, share, 1.0)


def _figures(folder: Path, payload: dict, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    rows = payload["by_block_size"]
    x = np.arange(len(rows))
    fig = Figure(figsize=(8, 4.5), layout="constrained")
    ax = fig.add_subplot()
    for offset, (key, label) in zip((-0.27, 0.0, 0.27), (
            ("map_correct_nonmodal", "Bayes MAP"),
            ("mdg_correct_nonmodal", "block-modal guess (noisy)"),
            ("prg_correct_nonmodal", "proportional guess (noisy)"))):
        ax.bar(x + offset, [_value(r[key]) for r in rows], width=0.27, label=label)
    ax.set_xticks(x, [r["band"] for r in rows])
    ax.set_xlabel("block population (true)")
    ax.set_ylabel("non-modal persons guessed right (fraction)")
    ax.set_title(f"Non-modal persons by block size: {title}")
    ax.legend()
    fig.savefig(folder / "by_band.png", dpi=110)

    fig = Figure(figsize=(5.5, 5), layout="constrained")
    ax = fig.add_subplot()
    bins = [b for b in payload["calibration"] if b["persons"]]
    mean = np.asarray([b["mean_map_posterior"] for b in bins])
    right = np.asarray([b["map_correct"] for b in bins])
    count = np.asarray([b["persons"] for b in bins])
    low, high = wilson_interval(right, count)
    ax.plot([0, 1], [0, 1], color="grey", lw=1, label="calibrated")
    ax.errorbar(mean, right, yerr=[right - low, high - right], fmt="o",
                label="persons per bin (95 % interval)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("posterior of the MAP category (bin mean)")
    ax.set_ylabel("MAP right (fraction of the bin's persons)")
    ax.set_title(f"Calibration: {title}")
    ax.legend(loc="upper left")
    fig.savefig(folder / "calibration.png", dpi=110)


def write_risk_files(folder: Path, persons, risk, payload: dict, attrs: dict) -> None:
    """Write the module's files into ``folder`` (a fresh temporary directory).

    ``persons`` is the persons table of an in-memory ``risk``
    (:class:`~dprisk.inference.population.risk.PopulationRisk`), or None for a
    :class:`~dprisk.inference.population.stream.FileRisk`, which writes ``persons.parquet``
    from its file batch by batch (:meth:`~dprisk.inference.population.stream.FileRisk
    .write_persons`).
    """
    folder = Path(folder)
    if persons is None:  # a FileRisk: the persons file is joined to its answers batch by batch
        risk.write_persons(folder / "persons.parquet")
    else:
        table = persons.copy()
        table["posterior_true"] = risk.posterior_true
        table["map"] = risk.map.astype(np.int16)
        table["map_posterior"] = risk.map_posterior
        table["fdp_bound"] = risk.fdp_bound
        table.to_parquet(folder / "persons.parquet", index=False, engine="pyarrow")
    (folder / "summary.json").write_text(json.dumps(payload, indent=1) + "\n")
    summary_dataset(payload, attrs).to_netcdf(folder / "summary.nc", engine="netcdf4")
    (folder / "figures").mkdir()
    _figures(folder / "figures", payload,
             f"{attrs.get('adversary', '')} adversary, {attrs.get('prior', '')} prior")
