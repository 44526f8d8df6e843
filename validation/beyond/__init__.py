"""Studies beyond the paper: accounting and budgets, unknown others, the whole record."""
