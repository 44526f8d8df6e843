"""Sampler plumbing for every room: alias tables, compiled chains, DataTrees, ArviZ statistics."""
