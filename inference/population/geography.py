r"""Spine geocodes of the released layout, made from 15-character block GEOIDs, and back.

The released files key every geounit by its DAS *spine* geocode. Facts used (public readers):
lengths State 3, County 9, Tract 13, Block_Group 15, Block 31, each a prefix of its children's
(``sbaldasty/dpvalue`` ``src/noisyvalue/nmf.py``: the spine tract of a block is
``geocode[:-18]``); the first character is the AIAN-branch flag (0 non-AIAN, 1 AIAN) and the
next two the state FIPS (``google-research/census-bluedown`` ``census_bluedown/constants.py``,
``SUBTREE_GEOCODE_PATTERNS = ('0%s', '1%s')``); a block's last 16 characters are its
tabulation code state(2) county(3) tract(6) block-group digit(1) block(4), the block-group
digit repeating the block's first digit, so

.. math:: \mathrm{GEOID} = g[{:}11] + g[12{:}], \qquad g = \mathrm{geocode}[-16{:}]

(dpvalue ``_geoid``; the Census Bureau's GLS code joins blocks on ``geocode[-16:]``,
``uscensusbureau/DAS_2020_GLS_Uncertainty_Evaluation`` ``GLS/main_two_pass_alg.py``).

The real spine above the block (optimized block groups, renumbered tracts) is not derivable
from GEOIDs. The codes written here are synthetic but keep the facts above: county
``F SS 0 0CCC 0`` (county FIPS at ``[4:8]``, as dpvalue reads it), tract = county + its 4-digit
rank among the branch's tracts of that county (sorted GEOIDs), block group = tract + ``0`` +
the tabulation block-group digit, block = block group + the 16-character tabulation code.
"""

from __future__ import annotations

import re

import numpy as np

from dprisk.runtime.ascii_numbers import ascii_digits

__all__ = ["GEOID_PATTERN", "SpineCodes", "geocode_to_geoid", "spine_codes"]

#: A 15-character block GEOID: state 2, county 3, tract 6, block 4 (ASCII digits; ``\Z``: no
#: trailing newline, which ``$`` lets through).
GEOID_PATTERN = re.compile(r"\A[0-9]{15}\Z")


def geocode_to_geoid(geocodes) -> np.ndarray:
    """15-character GEOIDs ``g[:11] + g[12:]`` of ``g = geocode[-16:]`` (Block geocodes).

    Raises
    ------
    ValueError
        Naming the first geocode shorter than 16 characters or whose last 16 are not digits.
    """
    out = []
    for geocode in geocodes:
        tail = str(geocode)[-16:]
        if not ascii_digits(tail, 16):
            raise ValueError(f"block geocode {geocode!r} does not end in a 16-digit tabulation "
                             "code")
        out.append(tail[:11] + tail[12:])
    return np.asarray(out, dtype=object)


class SpineCodes:
    """The spine geocodes of every geounit above and at the blocks ``geoids``.

    Parameters
    ----------
    geoids : array_like of str
        Distinct 15-character block GEOIDs, sorted ascending.
    aian_tracts : collection of str, optional
        11-character tract GEOIDs whose blocks are in the AIAN branch (flag 1).

    Attributes
    ----------
    block, block_group, tract, county, state : ndarray of str
        For each block (in ``geoids`` order), its geocode at that level.
    """

    def __init__(self, geoids, aian_tracts=()):
        geoids = np.asarray(geoids, dtype=object)
        aian = frozenset(aian_tracts)
        tract_ids = np.array([g[:11] for g in geoids], dtype=object)
        flags = np.array(["1" if t in aian else "0" for t in tract_ids], dtype=object)
        self.state = np.array([f + g[:2] for f, g in zip(flags, geoids, strict=True)],
                              dtype=object)
        self.county = np.array([s + "00" + g[2:5] + "0" for s, g in
                                zip(self.state, geoids, strict=True)], dtype=object)
        rank: dict[tuple[str, str], int] = {}
        per_county: dict[str, int] = {}
        for county, tract in sorted(set(zip(self.county, tract_ids, strict=True))):
            per_county[county] = per_county.get(county, 0) + 1
            if per_county[county] > 9999:
                raise ValueError(f"county {county[3:8]} has more than 9999 tracts")
            rank[county, tract] = per_county[county]
        self.tract = np.array([c + f"{rank[c, t]:04d}" for c, t in
                               zip(self.county, tract_ids, strict=True)], dtype=object)
        self.block_group = np.array([t + "0" + g[11] for t, g in
                                     zip(self.tract, geoids, strict=True)], dtype=object)
        self.block = np.array([b + g[:11] + g[11] + g[11:] for b, g in
                               zip(self.block_group, geoids, strict=True)], dtype=object)

    def at(self, level: str) -> np.ndarray:
        """Each block's geocode at ``level`` (a folder name: ``State`` ... ``Block``)."""
        return {"State": self.state, "County": self.county, "Tract": self.tract,
                "Block_Group": self.block_group, "Block": self.block}[level]


def spine_codes(geoids, aian_tracts=()) -> SpineCodes:
    """:class:`SpineCodes` of sorted distinct block ``geoids``."""
    return SpineCodes(geoids, aian_tracts)
