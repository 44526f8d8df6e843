"""Whole-record attribute inference: the target's cell among the K cells of a histogram."""
