"""PyMC model builders: each returns a ``pm.Model`` of one adversary."""
