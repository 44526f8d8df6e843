"""The single-level adversary: closed forms, their kernels, sequential releases."""
