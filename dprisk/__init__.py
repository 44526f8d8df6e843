"""Bayesian disclosure-risk assessment of differentially private count data.

One import package: ``dprisk.models`` (what the adversary assumes), ``dprisk.inference``
(how answers are computed), ``dprisk.validation`` (how we know they are right) and
``dprisk.cli`` (the command line). Imports point one way:
models <- inference <- validation <- cli.
"""

__all__ = ["__version__"]


def __getattr__(name: str):
    """``__version__``, read from the installed metadata on first use (not at import)."""
    if name != "__version__":
        raise AttributeError(f"module 'dprisk' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("dp-disclosure-risk")
    except PackageNotFoundError:  # pragma: no cover - a source tree without install
        value = "0+unknown"
    globals()["__version__"] = value
    return value
