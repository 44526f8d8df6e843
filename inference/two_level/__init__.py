"""The two-level adversary: exact tables, Gibbs samplers, PyMC steps, sampling dispatch."""
