"""Bayesian disclosure-risk assessment of differentially private count data.

One import package: ``dprisk.models`` (what the adversary assumes), ``dprisk.inference``
(how answers are computed), ``dprisk.validation`` (how we know they are right) and
``dprisk.cli`` (the command line). Imports point one way:
models <- inference <- validation <- cli.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dp-disclosure-risk")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
