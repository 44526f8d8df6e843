"""How we know the answers are right: published values, cross-checks and the paper report."""
