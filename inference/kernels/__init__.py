"""Compiled (numba) kernels and the rule that decides when they load."""
