"""Every person of a population: per-person attribute-inference risk from block-level noisy
measurements (DESIGN.md §9).

The room's modules: :mod:`.categories` (the person's category and the block's cells, the
block-size bands), and the inputs, the noise, the per-person kernels and the summaries that
issue 34 adds beside it.
"""
