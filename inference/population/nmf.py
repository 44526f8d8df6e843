"""The released noisy-measurement layout: its writer and its lazy reader, under one name.

:mod:`.nmf_write` writes every level and query of the 2020 strategy in the layout of the
released PL 94-171 files; :mod:`.nmf_read` reads a state's block ``detailed`` query back
lazily. See those modules for the layout and the public sources it was checked against.
"""

from dprisk.inference.population.nmf_read import DETAILED_QUERY, read_nmf_block_detailed
from dprisk.inference.population.nmf_write import PRODUCT_DIRS, NmfWriter, product_dir

__all__ = ["DETAILED_QUERY", "PRODUCT_DIRS", "NmfWriter", "product_dir",
           "read_nmf_block_detailed"]
