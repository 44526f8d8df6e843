"""Sampler draws as an ``xarray.DataTree`` with a ``posterior`` group, the way PyMC returns them.

One helper for the hand-written samplers (:mod:`dprisk.inference.two_level.gibbs`, the nested-level
Gibbs sampler of :mod:`dprisk.inference.nested.gibbs`), so that their results and
``pm.sample``'s compare by variable name and go through the same diagnostics.
"""

from __future__ import annotations

import numpy as np

__all__ = ["draws_datatree"]


def draws_datatree(variables: dict, *, sampler: str, attrs: dict | None = None):
    """``DataTree`` whose ``posterior`` group holds ``variables`` with dims ``(chain, draw)``.

    Parameters
    ----------
    variables : dict of str to ndarray, each of shape ``S + (chains, draws)``
        Draws per variable (e.g. ``X1``, ``X2``); a batch shape ``S`` becomes the trailing
        dims ``release_dim_0, ...``.
    sampler : str
        Recorded in the group's attribute ``sampler``.
    attrs : dict, optional
        Further attributes of the posterior group (e.g. the scenario).
    """
    import xarray as xr

    arrays = {name: np.asarray(values) for name, values in variables.items()}
    first = next(iter(arrays.values()))
    batch = first.ndim - 2
    order = (batch, batch + 1, *range(batch))
    dims = ("chain", "draw", *(f"release_dim_{i}" for i in range(batch)))
    chains, draws = first.shape[-2:]
    posterior = xr.Dataset(
        {name: (dims, np.transpose(values, order)) for name, values in arrays.items()},
        coords={"chain": np.arange(chains), "draw": np.arange(draws)},
        attrs={"sampler": sampler, **(attrs or {})},
    )
    return xr.DataTree.from_dict({"posterior": posterior})
