"""The ``h``-level nested adversary and targets unique at several levels."""
