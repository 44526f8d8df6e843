"""Run-time services under every layer: resource limits, safe output files, captured output."""
