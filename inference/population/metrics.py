r"""The summary of a population's risk: by block-size band and for all, from exact sums.

Per person (in a block of true population :math:`N_b`, band :data:`BAND_LABELS`), with
category :math:`t`, MAP category :math:`\hat t`, posterior of the truth :math:`p_t`:

* ``persons``; ``nonmodal_persons``: :math:`t` differs from the block's *modal* category (the
  largest true block count over all hhgq and voting ages, ties to the smallest index);
* ``map_correct``: share with :math:`\hat t = t`; ``map_correct_nonmodal``: the same among the
  non-modal persons;
* ``mean_posterior_true``: mean :math:`p_t`; ``posterior_true_ge_half``: share with
  :math:`p_t \ge 1/2` (within :data:`AT_EDGE_RELATIVE`: an exact tie of two hypotheses is 1/2);
* baselines, on the non-modal persons: ``mdg_correct_nonmodal``, everyone guessed as the
  block's *noisy* modal category (largest :math:`\sum_{h,v} y_{hvc}`, ties to the smallest);
  ``prg_correct_nonmodal``, the expected correctness of a guess drawn in proportion to the
  positive parts of the person's group's noisy cells, :math:`y_t^+/\sum_c y_c^+` (1/126 when
  no cell is positive);
* ``mean_fdp_bound``: mean of the f-DP worst-case success bound
  (:mod:`dprisk.inference.population.fdp`), beside ``map_correct``;
* ``calibration``: per bin of the MAP's posterior (:data:`CALIBRATION_EDGES`, each bin
  ``[low, high)``, a posterior within :data:`AT_EDGE_RELATIVE` below an edge counted at it),
  the persons, their mean MAP posterior and the share whose MAP is right.

Shares are fractions (None where a band has no persons, or no non-modal persons). Every sum
is exact (integers, :class:`~dprisk.inference.population.exact_sum.ExactSum`) and rounded
once at the end, so a summary does not depend on how the persons were partitioned or in
which order partitions finished: :meth:`Tally.__add__` is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dprisk.inference.population.categories import BAND_LABELS, N_CATEGORIES
from dprisk.inference.population.exact_sum import ExactSum

__all__ = [
    "AT_EDGE_RELATIVE",
    "CALIBRATION_EDGES",
    "COUNTS",
    "SUMS",
    "Tally",
    "modal_categories",
    "proportional_guess",
    "summary_payload",
]

#: Integer tallies per band.
COUNTS = ("blocks", "persons", "nonmodal_persons", "map_correct", "map_correct_nonmodal",
          "posterior_true_ge_half", "mdg_correct_nonmodal")
#: Exact float sums per band.
SUMS = ("posterior_true", "prg_nonmodal", "fdp_bound")
#: Edges of the calibration bins of the MAP posterior (the last bin includes 1).
CALIBRATION_EDGES = tuple(np.round(np.linspace(0.0, 1.0, 11), 10))
#: A posterior within this relative distance below 1/2 or a calibration edge is at it. Exact
#: ties make posteriors of exactly 1/k (k hypotheses tied, the others of prior 0: a tract
#: prior's absent categories), and 1/2, 1/5 and 1/10 are edges; the informed posterior of
#: such a tie is computed through a log-sum correction and came out up to 3 eps from 1/k
#: (0.49999999999999994 at sigma^2 = 10.09: the tie was not counted as >= 1/2, and fell in
#: the bin below), on either side (sigma^2 from 1e-3 to 1e4, k = 2 to 10): 64 eps.
AT_EDGE_RELATIVE = 64 * np.finfo(float).eps
_N_BANDS = len(BAND_LABELS)
_N_BINS = len(CALIBRATION_EDGES) - 1


def modal_categories(block_category_counts: np.ndarray) -> np.ndarray:
    """The first largest category of each block's (B, 126) counts (ties to the smallest)."""
    return np.argmax(block_category_counts, axis=1)


def proportional_guess(noisy_groups: np.ndarray) -> np.ndarray:
    r"""Per group and category, :math:`y_c^+ / \sum_{c'} y_{c'}^+` (1/126 where no cell > 0)."""
    positive = np.maximum(np.asarray(noisy_groups, dtype=np.float64), 0.0)
    total = positive.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = positive / total
    return np.where(total > 0, share, 1.0 / N_CATEGORIES)


@dataclass(frozen=True)
class Tally:
    """Additive, exact tallies of one set of persons, per band (rows of :data:`BAND_LABELS`).

    ``counts[name]`` is an int64 array over the bands, ``sums[name]`` a list of
    :class:`ExactSum` over the bands; ``calibration`` holds, per MAP-posterior bin, the
    persons, the right MAPs and the exact sum of the MAP posteriors.
    """

    counts: dict = field(default_factory=dict)
    sums: dict = field(default_factory=dict)
    calibration_persons: tuple = (0,) * _N_BINS
    calibration_correct: tuple = (0,) * _N_BINS
    calibration_posterior: tuple = (ExactSum(),) * _N_BINS

    @classmethod
    def of(cls, *, band, block_band, category, modal, map_category, posterior_true,
           map_posterior, fdp_bound, mdg_guess, prg_probability) -> Tally:
        """Tally persons (every argument a per-person array; ``block_band`` per block)."""
        nonmodal = category != modal
        correct = map_category == category
        counts = {
            "blocks": np.bincount(block_band, minlength=_N_BANDS),
            "persons": np.bincount(band, minlength=_N_BANDS),
            "nonmodal_persons": np.bincount(band[nonmodal], minlength=_N_BANDS),
            "map_correct": np.bincount(band[correct], minlength=_N_BANDS),
            "map_correct_nonmodal": np.bincount(band[correct & nonmodal], minlength=_N_BANDS),
            "posterior_true_ge_half": np.bincount(
                band[posterior_true * (1.0 + AT_EDGE_RELATIVE) >= 0.5], minlength=_N_BANDS),
            "mdg_correct_nonmodal": np.bincount(band[nonmodal & (mdg_guess == category)],
                                                minlength=_N_BANDS),
        }
        sums = {
            "posterior_true": ExactSum.by_group(posterior_true, band, _N_BANDS),
            "prg_nonmodal": ExactSum.by_group(prg_probability[nonmodal], band[nonmodal],
                                              _N_BANDS),
            "fdp_bound": ExactSum.by_group(fdp_bound, band, _N_BANDS),
        }
        bins = np.clip(np.searchsorted(np.asarray(CALIBRATION_EDGES),
                                       map_posterior * (1.0 + AT_EDGE_RELATIVE),
                                       side="right") - 1, 0, _N_BINS - 1)
        return cls(
            counts={k: v.astype(np.int64) for k, v in counts.items()},
            sums=sums,
            calibration_persons=tuple(int(v) for v in np.bincount(bins, minlength=_N_BINS)),
            calibration_correct=tuple(int(v) for v in np.bincount(bins[correct],
                                                                  minlength=_N_BINS)),
            calibration_posterior=tuple(ExactSum.by_group(map_posterior, bins, _N_BINS)),
        )

    def __add__(self, other: Tally) -> Tally:
        if not self.counts:
            return other
        if not other.counts:
            return self
        return Tally(
            counts={k: self.counts[k] + other.counts[k] for k in COUNTS},
            sums={k: [a + b for a, b in zip(self.sums[k], other.sums[k])] for k in SUMS},
            calibration_persons=tuple(a + b for a, b in zip(self.calibration_persons,
                                                            other.calibration_persons)),
            calibration_correct=tuple(a + b for a, b in zip(self.calibration_correct,
                                                            other.calibration_correct)),
            calibration_posterior=tuple(a + b for a, b in zip(self.calibration_posterior,
                                                              other.calibration_posterior)),
        )

    def to_json(self) -> dict:
        """A JSON-able form (big integers as strings); :meth:`from_json` inverts it."""
        return {
            "counts": {k: [int(v) for v in self.counts[k]] for k in COUNTS},
            "sums": {k: [s.to_json() for s in self.sums[k]] for k in SUMS},
            "calibration_persons": list(self.calibration_persons),
            "calibration_correct": list(self.calibration_correct),
            "calibration_posterior": [s.to_json() for s in self.calibration_posterior],
        }

    @classmethod
    def from_json(cls, data: dict) -> Tally:
        """Inverse of :meth:`to_json`."""
        return cls(
            counts={k: np.asarray(data["counts"][k], dtype=np.int64) for k in COUNTS},
            sums={k: [ExactSum.from_json(s) for s in data["sums"][k]] for k in SUMS},
            calibration_persons=tuple(data["calibration_persons"]),
            calibration_correct=tuple(data["calibration_correct"]),
            calibration_posterior=tuple(ExactSum.from_json(s)
                                        for s in data["calibration_posterior"]),
        )


def _share(count: int, total: int) -> float | None:
    return None if total == 0 else count / total  # int / int: correctly rounded


def _row(counts: dict, sums: dict) -> dict:
    persons, nonmodal = counts["persons"], counts["nonmodal_persons"]
    return {
        "blocks": counts["blocks"],
        "persons": persons,
        "nonmodal_persons": nonmodal,
        "map_correct": _share(counts["map_correct"], persons),
        "map_correct_nonmodal": _share(counts["map_correct_nonmodal"], nonmodal),
        "mean_posterior_true": sums["posterior_true"].mean(persons),
        "posterior_true_ge_half": _share(counts["posterior_true_ge_half"], persons),
        "mdg_correct_nonmodal": _share(counts["mdg_correct_nonmodal"], nonmodal),
        "prg_correct_nonmodal": sums["prg_nonmodal"].mean(nonmodal),
        "mean_fdp_bound": sums["fdp_bound"].mean(persons),
    }


def summary_payload(tally: Tally) -> dict:
    """The JSON summary of a tally, every share rounded once from exact sums.

    ``{"persons": N, "all": {...}, "by_block_size": [{"band": "1-9", ...}, ...],
    "calibration": [...]}``.
    """
    by_band = []
    for i, label in enumerate(BAND_LABELS):
        counts = {k: int(tally.counts[k][i]) for k in COUNTS}
        sums = {k: tally.sums[k][i] for k in SUMS}
        by_band.append({"band": label, **_row(counts, sums)})
    total_counts = {k: int(tally.counts[k].sum()) for k in COUNTS}
    total_sums = {k: sum(tally.sums[k], ExactSum()) for k in SUMS}
    calibration = []
    for i in range(_N_BINS):
        persons = tally.calibration_persons[i]
        calibration.append({
            "low": float(CALIBRATION_EDGES[i]), "high": float(CALIBRATION_EDGES[i + 1]),
            "persons": persons,
            "mean_map_posterior": tally.calibration_posterior[i].mean(persons),
            "map_correct": _share(tally.calibration_correct[i], persons),
        })
    return {"persons": total_counts["persons"], "all": _row(total_counts, total_sums),
            "by_block_size": by_band, "calibration": calibration}
