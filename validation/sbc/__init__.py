"""Simulation-based calibration of the samplers."""
