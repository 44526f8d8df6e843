"""Twin two-level chains: two copies of one model whose chains must draw the same, bit for bit.

Used where a faster path of :class:`dprisk.inference.mcmc.compiled_chain.CompiledChain` is
compared with the plain one (batched recorded values, PyTensor's input checks skipped). The
release is changed in place between runs (so tuned step state is carried over alike); tune 0
is included, and one chain, then two (each chain from the steps' entry state).
"""

import numpy as np

from dprisk.models.builders.two_level import set_release

PARAMS = {"rho1": 0.5, "rho2": 0.3, "d": 4, "p": 0.5, "known": 0}
RELEASES = [(1, 5, 4), (0, 3, 2), (2, 8, 7)]


def assert_twins_draw_the_same(models, chains, *, draws: int, tune_step: int, seed: int):
    """Run ``chains[0]`` and ``chains[1]`` (on ``models``) over :data:`RELEASES`, same seeds.

    Run ``k`` has ``tune_step * k`` tuning steps, seed ``seed + k`` and ``1 + k % 2`` chains;
    X1 and X2 must have the same dtype and equal values.
    """
    for k, release in enumerate(RELEASES):
        for model in models:
            set_release(model, *release)
        run = {"draws": draws, "tune": tune_step * k, "random_seed": seed + k,
               "chains": 1 + k % 2}
        got, expected = (chain.run(**run) for chain in chains)
        for name in ("X1", "X2"):
            assert got[name].dtype == expected[name].dtype
            assert np.array_equal(got[name], expected[name])
