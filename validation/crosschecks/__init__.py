"""Cross-checks between methods, ArviZ convergence reports, prior sensitivity."""
