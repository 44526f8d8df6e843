r"""A person's category, the block's ``detailed`` cells and the block-size bands.

A person's record is (``hhgq``, ``votingage``, ``hispanic``, ``cenrace``) with ``hhgq`` in
0-7 (0 household, 1-7 the group-quarters types in the DAS order), ``votingage`` in {0, 1}
(0 under 18), ``hispanic`` in {0, 1} and ``cenrace`` in 1-63 (the Census order, 1 White
alone). Their category is

.. math:: c = 63 \cdot \mathrm{hispanic} + \mathrm{cenrace} - 1 \in \{0, \dots, 125\},

and their cell in the block's ``detailed`` query (hhgq x votingage x hispanic x cenrace, 2,016
cells, C order as the DAS flattens it) is

.. math:: \mathrm{cell} = ((h \cdot 2 + v) \cdot 2 + x) \cdot 63 + (\mathrm{cenrace} - 1)
          = (h \cdot 2 + v) \cdot 126 + c.

A (hhgq, votingage) *group* is ``g = h * 2 + v`` (16 groups of 126 categories).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BAND_EDGES",
    "BAND_LABELS",
    "N_CATEGORIES",
    "N_CENRACE",
    "N_DETAILED_CELLS",
    "N_GROUPS",
    "N_HHGQ",
    "N_VOTINGAGE",
    "band_index",
    "category",
    "detailed_cell",
    "group",
]

#: Group-quarters types (0 household, 1-7 group quarters).
N_HHGQ = 8
#: Voting-age levels (0 under 18, 1 18 and over).
N_VOTINGAGE = 2
#: Race combinations of ``cenrace`` (1-63).
N_CENRACE = 63
#: Categories ``c = 63 * hispanic + cenrace - 1``.
N_CATEGORIES = 2 * N_CENRACE
#: (hhgq, votingage) groups.
N_GROUPS = N_HHGQ * N_VOTINGAGE
#: Cells of the block's ``detailed`` query.
N_DETAILED_CELLS = N_GROUPS * N_CATEGORIES

#: Lower edges of the block-size bands of true block population (the Census reconstruction
#: study's bands); the last band is open.
BAND_EDGES = (1, 10, 50, 100, 250, 500, 1000)
#: Labels of the bands, in order.
BAND_LABELS = ("1-9", "10-49", "50-99", "100-249", "250-499", "500-999", "1000+")


def category(hispanic, cenrace):
    """The category ``c = 63 * hispanic + cenrace - 1`` (0-125) of each person."""
    hispanic, cenrace = np.asarray(hispanic, dtype=np.int64), np.asarray(cenrace, dtype=np.int64)
    return N_CENRACE * hispanic + cenrace - 1


def group(hhgq, votingage):
    """The (hhgq, votingage) group ``g = 2 * hhgq + votingage`` (0-15) of each person."""
    return N_VOTINGAGE * np.asarray(hhgq, dtype=np.int64) + np.asarray(votingage, dtype=np.int64)


def detailed_cell(hhgq, votingage, hispanic, cenrace):
    """The index ``((h * 2 + v) * 2 + x) * 63 + cenrace - 1`` of each person's ``detailed`` cell."""
    return group(hhgq, votingage) * N_CATEGORIES + category(hispanic, cenrace)


def band_index(block_population):
    """The band (0-6, an index into :data:`BAND_LABELS`) of each block's true population (>= 1)."""
    return np.searchsorted(np.asarray(BAND_EDGES), np.asarray(block_population), side="right") - 1
