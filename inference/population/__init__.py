"""Every person of a population: per-person attribute-inference risk (docs/noise-conventions.md).

From block-level noisy measurements. The room's modules: :mod:`.categories` (the person's
category and the block's cells, the block-size bands); :mod:`.synth` (a synthetic state),
:mod:`.persons` (the persons file); :mod:`.priors`, :mod:`.kernels` (informed and outsider
posteriors), :mod:`.fdp` (the worst-case bound); :mod:`.metrics` and :mod:`.exact_sum` (the
summary by block size, exact); :mod:`.risk` and :mod:`.partitions` (the pipeline, in-process
or on Dask); and the measurement readers and the noise beside them.
"""
