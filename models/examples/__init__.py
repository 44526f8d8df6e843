"""Example adversary prior files, shipped with the package (found with ``importlib.resources``)."""
