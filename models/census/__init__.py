"""The 2020 Census as data: the rho allocation, the persons strategy, the histograms."""
