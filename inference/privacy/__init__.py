"""Privacy accounting and budgets: epsilon of a release, rho from a risk target."""
