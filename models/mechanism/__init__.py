"""The discrete Gaussian mechanism: pmf, samplers, sums, PyMC distribution, zCDP conversions."""
