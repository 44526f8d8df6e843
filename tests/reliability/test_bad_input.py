"""Bad input, one table: every public function and every ``dprisk`` subcommand, refused cleanly.

:data:`CASES` is ONE parametrised table. Each row is a call (``module:function`` with its
arguments, or a command line) that must be refused:

* Python API: ``ValueError`` / ``TypeError`` (as listed) with a one-line message that names
  the parameter (the listed name must appear as a word: ``d`` does not match "allowed");
* command line (in-process ``dprisk.cli.main`` and the installed ``dprisk`` console script):
  exit status 2, exactly one line on stderr naming the parameter, no traceback, nothing on
  stdout;
* both: no file or directory appears in the test's directory, where every ``--out`` / ``out``
  points (no partial output, no ``.chunks`` sidecar, no temporary file).

A row with ``xfail`` is a defect found by this table and reported to the file's owner; it is
a strict xfail, so the row fails (XPASS) once the defect is fixed and the mark must go.

The kinds of bad input tried: wrong types, NaN, inf, negative or zero rho, p outside (0, 1),
non-integer counts, negative and zero d, empty grids, unknown methods, broken prior model
files (one that raises on import, one with a syntax error, one lacking NAME, one where NAME
has the wrong type) and unwritable ``--out`` paths (a path under a regular file: the tests run
as root, so permissions alone would not stop a write). ``N_CASES`` is the number of rows
(quoted in the README); every row's module is the package's own, so a row whose module does
not import fails (it was skipped, which hid a broken import).

Strings in a row may contain ``{tmp}``: it is replaced by the module's directory, where the
fixture :func:`workdir` has written ``file.txt`` (a regular file) and the broken prior files.
"""

from __future__ import annotations

import importlib
import math
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from cli_helpers import check_contract, names_option, run_cli, tree

TMP = "{tmp}"
FILE = f"{TMP}/file.txt"  # a regular file: every path below it is unwritable
BROKEN_PRIOR = f"{TMP}/raises_on_import.py:prior"
SYNTAX_PRIOR = f"{TMP}/syntax_error.py:prior"
NO_NAME_PRIOR = f"{TMP}/lacks_name.py:prior"
WRONG_TYPE_PRIOR = f"{TMP}/wrong_type.py:prior"
MISSING_PRIOR = f"{TMP}/does_not_exist.py:prior"
PRIOR_FILES = {
    "raises_on_import.py": "raise RuntimeError('this prior file is broken')\n",
    "syntax_error.py": "def prior(:\n",
    "lacks_name.py": "OTHER = 1\n",
    "wrong_type.py": "prior = 3\n",
}
BAD_PRIORS = [BROKEN_PRIOR, SYNTAX_PRIOR, NO_NAME_PRIOR, WRONG_TYPE_PRIOR, MISSING_PRIOR]

DG = "dprisk.models.mechanism.discrete_gaussian"
SAMPLING = "dprisk.models.mechanism.dg_sampling"
SUMS = "dprisk.models.mechanism.dg_sums"
PRIVACY = "dprisk.models.mechanism.conversions"
CENSUS = "dprisk.models.census.allocation"
PRIORS = "dprisk.models.priors.library"
PYMC_DIST = "dprisk.models.mechanism.pymc_dist"
SL_MODEL = "dprisk.models.builders.single_level"
H_MODEL = "dprisk.models.builders.two_level"
ML_MODEL = "dprisk.models.builders.nested"
SL = "dprisk.inference.single_level.closed_form"
EXACT = "dprisk.inference.two_level.exact"
GIBBS = "dprisk.inference.two_level.gibbs"
SAMPLE = "dprisk.inference.two_level.sampling"
ML = "dprisk.inference.nested.posterior"
UL = "dprisk.inference.nested.unique_levels"
PP = "dprisk.inference.product.one_block"
SWEEPS = "dprisk.inference.sweeps.sweep"
GRIDS = "dprisk.cli.grids"
LEVELS = "dprisk.cli.levels"
STUDIES = "dprisk.inference.studies.p_correct"
MC = "dprisk.inference.studies.monte_carlo"
DIAG = "dprisk.validation.crosschecks.diagnostics"


@dataclass(frozen=True)
class Case:
    """One bad input: an API call (``target`` = ``module:attr``) or a command line."""

    target: str  # "module:attr", "cli" (in-process main) or "script" (console script)
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    raises: tuple = (ValueError,)
    names: str = ""  # substring the error message must contain (the parameter)
    xfail: str = ""  # a known defect (reported to the owner): strict xfail with this reason

    @property
    def id(self) -> str:
        if self.target in ("cli", "script"):
            text = f"{self.target}: " + " ".join(self.args)
        else:
            shown = [_short(a) for a in self.args]
            shown += [f"{k}={_short(v)}" for k, v in self.kwargs.items()]
            text = f"{self.target.split('.')[-1]}({', '.join(shown)})"
        return text.replace(f"{TMP}/", "")


SEQUENTIAL = "dprisk.inference.single_level.sequential:sequential_posterior"
FINITE = "dprisk.inference.studies.finite_draws:"


def _short(value) -> str:
    if isinstance(value, xr.Dataset):
        return f"Dataset({', '.join(value.data_vars)}; {dict(value.sizes)})"
    text = repr(value) if not isinstance(value, str) else repr(value.replace(f"{TMP}/", ""))
    return text if len(text) <= 40 else text[:37] + "..."


def api(target: str, *args, raises=ValueError, names: str, xfail: str = "", **kwargs) -> Case:
    """A call ``target(*args, **kwargs)`` that must raise ``raises`` naming ``names``."""
    raises = raises if isinstance(raises, tuple) else (raises,)
    return Case(target, args, kwargs, raises, names, xfail)


def cli(*argv: str, names: str, xfail: str = "") -> Case:
    """``dprisk ARGV`` in-process: exit 2, one stderr line containing ``names``."""
    return Case("cli", argv, names=names, xfail=xfail)


def script(*argv: str, names: str) -> Case:
    """``dprisk ARGV`` through the installed console script (a subprocess)."""
    return Case("script", argv, names=names)


# --------------------------------------------------------------------------- shared arguments
#: Reason of the rows that currently fail in ``dprisk.models.checks`` (reported to the lead).
HUGE_INT_DEFECT = ("models/checks.py check_positive_int: a Python int beyond int64 makes "
                   "np.isfinite raise TypeError 'ufunc isfinite not supported' (no name)")
H = {"rho1": 0.1, "rho2": 0.25, "d": 3}  # a valid two-level setting
STUDY = {"x2": 2, **H}
ML_OK = {"rhos": [0.1, 0.25], "siblings": [3]}
ONE_CHAIN = xr.Dataset({"X1": (("chain", "draw"), np.zeros((1, 8), dtype=np.int64)),
                        "X2": (("chain", "draw"), np.ones((1, 8), dtype=np.int64))})
TWO_CHAINS = xr.Dataset({"X1": (("chain", "draw"), np.arange(16).reshape(2, 8) % 2),
                         "X2": (("chain", "draw"), np.arange(16).reshape(2, 8) % 3)})
NO_X2 = xr.Dataset({"X1": (("chain", "draw"), np.zeros((2, 8), dtype=np.int64))})
H_ARGV = ("--rho1", "0.1", "--rho2", "0.25", "--d", "3")
POST_H = ("posterior", *H_ARGV, "--x1-star", "1", "--x2-star", "2", "--y1-star", "1")
MARG_H = ("marginal", *H_ARGV, "--x2", "2")
SWEEP_ARGV = {"--rho1": "0.1", "--rho2": "0.25", "--d": "3", "--x2": "2",
              "--out": f"{TMP}/sweep.nc"}


def sweep_argv(**changes: str) -> tuple[str, ...]:
    """``dprisk sweep`` with valid options except ``changes`` (``rho1="0"`` -> ``--rho1 0``)."""
    options = dict(SWEEP_ARGV)
    options.update({"--" + k.replace("_", "-"): v for k, v in changes.items()})
    return ("sweep", *[item for pair in options.items() for item in pair])


def _rho_cases(target, *args, rho_key="rho", names=None, **kwargs) -> list[Case]:
    """zero, negative, NaN, inf rho (ValueError) and a string rho (TypeError)."""
    names = names or rho_key
    cases = [api(target, *args, **{rho_key: bad}, names=names, **kwargs)
             for bad in (0.0, -0.5, math.nan, math.inf)]
    cases.append(api(target, *args, **{rho_key: "abc"}, raises=(TypeError, ValueError),
                     names=names, **kwargs))
    return cases


def _p_cases(target, *args, **kwargs) -> list[Case]:
    return [api(target, *args, p=bad, names="p", **kwargs) for bad in (0.0, 1.0, 1.5, math.nan)]


def _mc_case(names: str, **changes) -> Case:
    """``simulate_p_correct`` on a valid small study (10 releases, seed 1) with ``changes``."""
    kwargs = {**STUDY, "datasets": 10, "random_seed": 1, "progress": False, **changes}
    return api(f"{MC}:simulate_p_correct", **kwargs, names=names)


# --------------------------------------------------------------------------- the table
CASES: list[Case] = [
    # ---- models.discrete_gaussian
    *_rho_cases(f"{DG}:log_normalizer"),
    api(f"{DG}:log_normalizer", None, raises=TypeError, names="rho"),
    *_rho_cases(f"{DG}:logpmf", 1, 0),
    *_rho_cases(f"{DG}:pmf", 1, 0),
    *_rho_cases(f"{DG}:cdf", 1, 0),
    *_rho_cases(f"{DG}:sf", 1, 0),
    api(f"{DG}:logcdf", 1, 0, -1.0, names="rho"),
    api(f"{DG}:logsf", 1, 0, math.inf, names="rho"),
    api(f"{DG}:pmf", 1.5, 0, 1.0, names="x"),
    api(f"{DG}:pmf", 1, 0.5, 1.0, names="mu"),
    api(f"{DG}:cdf", math.nan, 0, 1.0, names="x"),
    api(f"{DG}:logpmf", "one", 0, 1.0, raises=TypeError, names="x"),
    api(f"{DG}:log_tail", 0.5, 1.0, names="start"),
    api(f"{DG}:log_tail", 1, 0.0, names="rho"),
    api(f"{DG}:support_halfwidth", 0.0, names="rho"),
    api(f"{DG}:support_halfwidth", 1.0, tail_mass=0.0, names="tail_mass"),
    api(f"{DG}:support_halfwidth", 1.0, tail_mass=1.5, names="tail_mass"),
    api(f"{DG}:support_halfwidth", 1.0, tail_mass=math.nan, names="tail_mass"),
    *_rho_cases(f"{DG}:variance"),
    # ---- models.dg_sampling
    *_rho_cases(f"{SAMPLING}:sample", 0, size=3, random_seed=1),
    api(f"{SAMPLING}:sample", 0.5, 1.0, size=3, random_seed=1, names="mu"),
    api(f"{SAMPLING}:sample", 0, 1.0, size=-1, random_seed=1, names="size"),
    api(f"{SAMPLING}:sample", 0, 1.0, size=2.5, random_seed=1, raises=(TypeError, ValueError),
        names="size"),
    api(f"{SAMPLING}:sample", 0, 1.0, size=3, random_seed="seed", raises=TypeError,
        names="random_seed"),
    api(f"{SAMPLING}:sample_sum", 2, 1.0, size=3, random_seed=-1, names="random_seed"),
    api(f"{SAMPLING}:sample_exact", 0, 1.0, size=3, random_seed=1.5, raises=TypeError,
        names="random_seed"),
    api(f"{SAMPLING}:sample_exact", 0, 0.0, size=2, random_seed=1, names="rho"),
    api(f"{SAMPLING}:sample_exact", 0, math.nan, size=2, random_seed=1, names="rho"),
    api(f"{SAMPLING}:sample_exact", 1.5, 1.0, size=2, random_seed=1, names="mu"),
    api(f"{SAMPLING}:sample_sum", 0, 1.0, size=2, random_seed=1, names="n_terms"),
    api(f"{SAMPLING}:sample_sum", -3, 1.0, size=2, random_seed=1, names="n_terms"),
    api(f"{SAMPLING}:sample_sum", 2.5, 1.0, size=2, random_seed=1, names="n_terms"),
    api(f"{SAMPLING}:sample_sum", 3, -1.0, size=2, random_seed=1, names="rho"),
    # ---- models.dg_sums
    api(f"{SUMS}:sum_pmf", 0, 1.0, names="n"),
    api(f"{SUMS}:sum_pmf", -2, 1.0, names="n"),
    api(f"{SUMS}:sum_pmf", 1.5, 1.0, names="n"),
    api(f"{SUMS}:sum_pmf", 2, 0.0, names="rho"),
    api(f"{SUMS}:sum_pmf", 2, math.inf, names="rho"),
    api(f"{SUMS}:sum_pmf", 2, 1.0, tail_mass=0.0, names="tail_mass"),
    api(f"{SUMS}:sum_pmf", 2, 1.0, tail_mass=math.nan, names="tail_mass"),
    api(f"{SUMS}:approximation_pmf", [0, 1], 0, 1.0, names="n"),
    api(f"{SUMS}:approximation_pmf", [0, 1], 2, -1.0, names="rho"),
    api(f"{SUMS}:approximation_pmf", [0.5], 2, 1.0, names="values"),
    api(f"{SUMS}:total_variation", 0, 1.0, names="n"),
    api(f"{SUMS}:total_variation", 2, math.nan, names="rho"),
    # ---- models.privacy
    *_rho_cases(f"{PRIVACY}:zcdp_to_dp", delta=1e-10),
    api(f"{PRIVACY}:zcdp_to_dp", 1.0, 0.0, names="delta"),
    api(f"{PRIVACY}:zcdp_to_dp", 1.0, 1.0, names="delta"),
    api(f"{PRIVACY}:zcdp_to_dp", 1.0, math.nan, names="delta"),
    api(f"{PRIVACY}:zcdp_to_dp", 1.0, "tiny", raises=TypeError, names="delta"),
    api(f"{PRIVACY}:dp_to_zcdp", 0.0, 1e-10, names="epsilon"),
    api(f"{PRIVACY}:dp_to_zcdp", -1.0, 1e-10, names="epsilon"),
    api(f"{PRIVACY}:dp_to_zcdp", math.inf, 1e-10, names="epsilon"),
    api(f"{PRIVACY}:dp_to_zcdp", 1.0, 1.5, names="delta"),
    # ---- models.census
    *[api(f"{CENSUS}:parse_rho", bad, names="rho")
      for bad in ("census:nowhere", "abc", "nan", "-inf", "", 0)],
    api(f"{CENSUS}:parse_rho", -0.1, "rho1", names="rho1"),
    api(f"{CENSUS}:parse_rho", None, raises=TypeError, names="rho"),
    api(f"{CENSUS}:parse_rho", [0.1, 0.2], raises=(TypeError, ValueError), names="rho"),
    api(f"{CENSUS}:census_rhos", 0, names="levels"),
    api(f"{CENSUS}:census_rhos", 7, names="levels"),
    api(f"{CENSUS}:parse_rhos", "", names="rhos"),
    api(f"{CENSUS}:parse_rhos", "census:9", names="rhos"),
    api(f"{CENSUS}:parse_rhos", "census:1", min_levels=2, names="rhos"),
    api(f"{CENSUS}:parse_rhos", "0.1,-1", names="rhos"),
    api(f"{CENSUS}:parse_rhos", 0.1, names="rhos"),
    api(f"{CENSUS}:census_level", "nowhere", names="level"),
    # ---- models.priors
    *[api(f"{PRIORS}:parse_prior", bad, names=name) for bad, name in (
        ("truncated:-1", "U"), ("truncated:x", "U"), ("truncated:", "U"), ("point:1.5", "K"),
        ("point:-2", "K"), ("uniform", "prior"), ("", "prior"), (3, "prior"), (None, "prior"))],
    api(f"{PRIORS}:parse_prior", f"{TMP}/x.py:1bad", names="NAME"),
    *[api(f"{PRIORS}:parse_prior", bad, names="prior") for bad in BAD_PRIORS],
    api(f"{PRIORS}:TruncatedUniform", -1, names="upper"),
    api(f"{PRIORS}:TruncatedUniform", 2.5, names="upper"),
    api(f"{PRIORS}:TruncatedUniform", math.nan, names="upper"),
    api(f"{PRIORS}:TruncatedUniform", "ten", raises=TypeError, names="upper"),
    api(f"{PRIORS}:PointMass", -1, names="k"),
    api(f"{PRIORS}:PointMass", 0.5, names="k"),
    api(f"{PRIORS}:PointMass", None, raises=TypeError, names="k"),
    api(f"{PRIORS}:check_support", "truncated:0", 0, names="truncated:0"),
    api(f"{PRIORS}:check_support", "improper", -1, names="known"),
    # ---- models.pymc_dist
    *_rho_cases(f"{PYMC_DIST}:DiscreteGaussian.dist", mu=0),
    api(f"{PYMC_DIST}:DiscreteGaussian.dist", mu=0.5, rho=1.0, names="mu"),
    api(f"{PYMC_DIST}:DiscreteGaussian.dist", mu="zero", rho=1.0, raises=TypeError,
        names="mu"),
    # ---- models.single_level
    api(f"{SL_MODEL}:build_single_level_model", 1.5, 0.1, names="x1_star"),
    api(f"{SL_MODEL}:build_single_level_model", 1, 0.0, names="rho"),
    api(f"{SL_MODEL}:build_single_level_model", 1, 0.1, 1.0, names="p"),
    api(f"{SL_MODEL}:build_single_level_model", 1, 0.1, 0.5, -1, names="known"),
    api(f"{SL_MODEL}:build_single_level_model", [1, 2], 0.1, names="x1_star"),
    # ---- models.builders.two_level
    api(f"{H_MODEL}:build_two_level_model", 1, 2, 1, **{**H, "rho1": 0.0}, names="rho1"),
    api(f"{H_MODEL}:build_two_level_model", 1, 2, 1, **{**H, "rho2": math.nan},
        names="rho2"),
    api(f"{H_MODEL}:build_two_level_model", 1, 2, 1, **{**H, "d": 0}, names="d"),
    api(f"{H_MODEL}:build_two_level_model", 1, 2, 1, **{**H, "d": -2}, names="d"),
    api(f"{H_MODEL}:build_two_level_model", 1, 2, 1, **{**H, "d": 2.5}, names="d"),
    api(f"{H_MODEL}:build_two_level_model", 1.5, 2, 1, **H, names="x1_star"),
    api(f"{H_MODEL}:build_two_level_model", 1, 2, 1, **H, p=0.0, names="p"),
    api(f"{H_MODEL}:build_two_level_model", 1, 2, 1, **H, known=-1, names="known"),
    api(f"{H_MODEL}:build_two_level_model", 1, 2, 1, **H, prior="truncated:0",
        names="truncated:0"),
    api(f"{H_MODEL}:build_two_level_model", 1, 2, 1, **H, prior=BROKEN_PRIOR,
        names="prior"),
    api(f"{H_MODEL}:validated_spec", 1, 2, "y", **H, raises=TypeError, names="y1_star"),
    # ---- models.builders.nested
    api(f"{ML_MODEL}:build_nested_model", [1, 2], [1], rhos=[0.1, 0.0], siblings=[3],
        names="rho_2"),
    api(f"{ML_MODEL}:build_nested_model", [1, 2], [1], rhos=[0.1], siblings=[],
        names="rhos"),
    api(f"{ML_MODEL}:build_nested_model", [1, 2], [1], rhos=[0.1, 0.2], siblings=[0],
        names="d_2"),
    api(f"{ML_MODEL}:build_nested_model", [1, 2], [1], rhos=[0.1, 0.2], siblings=[3, 4],
        names="siblings"),
    api(f"{ML_MODEL}:build_nested_model", [1, 2.5], [1], **ML_OK, names="x_stars"),
    api(f"{ML_MODEL}:build_nested_model", [1, 2], [1], **ML_OK, p=1.0, names="p"),
    # ---- inference.single_level
    *_rho_cases(f"{SL}:posterior", 1),
    *_p_cases(f"{SL}:posterior", 1, 0.1),
    api(f"{SL}:posterior", 1.5, 0.1, names="x1_star"),
    api(f"{SL}:posterior", math.inf, 0.1, names="x1_star"),
    api(f"{SL}:posterior", "3", 0.1, raises=TypeError, names="x1_star"),
    api(f"{SL}:posterior", 1, 0.1, known=-1, names="known"),
    api(f"{SL}:posterior", 1, 0.1, known=0.5, names="known"),
    api(f"{SL}:log_posterior_odds", 1, -0.1, names="rho"),
    api(f"{SL}:log_posterior", 1, 0.1, p=-0.1, names="p"),
    api(f"{SL}:risk", 1, 0.1, p=1.0, names="p"),
    api(f"{SL}:log_risk", 1, math.nan, names="rho"),
    api(f"{SL}:release_pmf", 1, 0.0, names="rho"),
    api(f"{SL}:release_pmf", 1, 0.1, known=-2, names="known"),
    *_rho_cases(f"{SL}:marginal_posterior"),
    *_p_cases(f"{SL}:marginal_posterior", 0.1),
    api(f"{SL}:log_marginal_posterior", 0.1, known=1.5, names="known"),
    api(f"{SL}:marginal_risk", 0.1, p=0.0, names="p"),
    api(f"{SL}:decision_threshold", -0.1, names="rho"),
    api(f"{SL}:decision_threshold", 0.1, p=1.0, names="p"),
    api(f"{SL}:p_correct", 0.1, p=2.0, names="p"),
    api(f"{SL}:p_correct", math.inf, names="rho"),
    api(f"{SL}:p_correct", 0.1, known=-1, names="known"),
    api(f"{UL}:posterior_unique_levels", [1, 2], [0.1, 0.0], names="rhos"),
    api(f"{UL}:posterior_unique_levels", [1, 2], [0.1, 0.2], p=1.0, names="p"),
    api(f"{UL}:posterior_unique_levels", [1.5, 2], [0.1, 0.2], names="x_stars"),
    api(f"{UL}:posterior_unique_levels", [1, 2, 3], [0.1, 0.2], names="x_stars"),
    api(f"{UL}:log_posterior_odds_unique_levels", [1, 2], [0.1, math.nan], names="rhos"),
    api(f"{UL}:marginal_posterior_unique_levels", [], names="rhos"),
    api(f"{UL}:marginal_posterior_unique_levels", [0.1, -0.2], names="rhos"),
    api(f"{UL}:marginal_posterior_unique_levels", [0.1, 0.2], method="magic", names="method"),
    api(f"{UL}:log_marginal_posterior_unique_levels", [0.1, 0.2], p=0.0, names="p"),
    api(f"{UL}:marginal_risk_unique_levels", [0.1, 0.2], known=-1, names="known"),
    api(f"{UL}:p_correct_unique_levels", [], names="rhos"),
    api(f"{UL}:p_correct_unique_levels", [0.1, 0.0], names="rhos"),
    api(SEQUENTIAL, [1, 2], [0.1, 0.0], names="rhos"),
    api(SEQUENTIAL, [1, 2], [0.1], names="x1_stars"),
    api(SEQUENTIAL, [1.5], [0.1], names="x1_stars"),
    api("dprisk.inference.single_level.sequential:sequential_risk", [1], [0.1], p=1.0, names="p"),
    # ---- inference.exact
    *_rho_cases(f"{EXACT}:exact_posterior", 1, 2, 1, rho_key="rho1", rho2=0.25, d=3),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **{**H, "rho2": 0.0}, names="rho2"),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **{**H, "d": 0}, names="d"),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **{**H, "d": -1}, names="d"),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **{**H, "d": 1.5}, names="d"),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **{**H, "d": "3"}, raises=TypeError, names="d"),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **{**H, "d": 10**30}, raises=(TypeError, ValueError),
        names="d"),
    *_p_cases(f"{EXACT}:exact_posterior", 1, 2, 1, **H),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **H, known=-1, names="known"),
    api(f"{EXACT}:exact_posterior", 1, 2.5, 1, **H, names="x2_star"),
    api(f"{EXACT}:exact_posterior", 1, 2, math.nan, **H, names="y1_star"),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **H, tail_mass=0.0, names="tail_mass"),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **H, tail_mass=1.0, names="tail_mass"),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **H, halfwidth=-1, names="halfwidth"),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **H, halfwidth=1.5, names="halfwidth"),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **H, prior="truncated:0", names="truncated:0"),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **H, prior=NO_NAME_PRIOR, names="prior"),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **H, prior=7, raises=TypeError, names="prior"),
    api(f"{EXACT}:posterior_x1", 1, 2, 1, **H, p=1.0, names="p"),
    api(f"{EXACT}:joint_log_table", 1, 2, 1, **{**H, "d": 0}, names="d"),
    api(f"{EXACT}:exact_posterior", 1, 2, 1, **H, scenario="census", raises=TypeError,
        names="scenario"),
    # ---- inference.gibbs
    api(f"{GIBBS}:gibbs_sample", 1, 2, 1, **H, draws=0, random_seed=1, names="draws"),
    api(f"{GIBBS}:gibbs_sample", 1, 2, 1, **H, draws=10.5, random_seed=1, names="draws"),
    api(f"{GIBBS}:gibbs_sample", 1, 2, 1, **H, chains=0, random_seed=1, names="chains"),
    api(f"{GIBBS}:gibbs_sample", 1, 2, 1, **H, draws=10**30, random_seed=1,
        raises=(TypeError, ValueError), names="draws"),
    api(f"{GIBBS}:gibbs_sample", 1, 2, 1, **H, tune=-1, random_seed=1, names="tune"),
    api(f"{GIBBS}:gibbs_sample", 1, 2, 1, **{**H, "d": 0}, random_seed=1, names="d"),
    api(f"{GIBBS}:gibbs_sample", 1, 2, 1, **{**H, "rho1": -1.0}, random_seed=1, names="rho1"),
    api(f"{GIBBS}:gibbs_sample", 1, 2, 1, **H, p=1.0, random_seed=1, names="p"),
    api(f"{GIBBS}:gibbs_sample", 1, 2, 1, **H, random_seed="seed", raises=TypeError,
        names="random_seed"),
    api(f"{GIBBS}:gibbs_sample", 1, 2, 1, **H, random_seed=-1, names="random_seed"),
    api(f"{GIBBS}:gibbs_sample", 1, 2, 1, **H, prior=WRONG_TYPE_PRIOR, random_seed=1,
        names="prior"),
    api(f"{GIBBS}:ExactConditionals", 1, 2, 1, **{**H, "rho2": math.inf}, names="rho2"),
    api(f"{GIBBS}:ExactConditionals", 1, 2, 1.5, **H, names="y1_star"),
    api(f"{GIBBS}:alias_table", np.array([0.5, -0.1, 0.6]), names="prob"),
    api(f"{GIBBS}:alias_table", np.array([0.5, math.nan, 0.5]), names="prob"),
    # ---- inference.sampling
    api(f"{SAMPLE}:sample_posterior", 1, 2, 1, **H, method="nuts", names="method"),
    api(f"{SAMPLE}:sample_posterior", 1, 2, 1, **{**H, "d": 0}, names="d"),
    api(f"{SAMPLE}:sample_posterior", 1, 2, 1, **H, p=0.0, names="p"),
    api(f"{SAMPLE}:sample_posterior", 1, 2, 1, **H, prior=SYNTAX_PRIOR, names="prior"),
    api(f"{SAMPLE}:sample_posterior", 1, 2, 1, **H, method="gibbs", draws=0, names="draws"),
    api(f"{SAMPLE}:sample_posterior", 1, 2, 1, **H, method="gibbs", chains=1.5,
        names="chains"),
    api(f"{SAMPLE}:sample_posterior", 1, 2, 1, **H, method="gibbs", random_seed="x",
        raises=(TypeError, ValueError), names="random_seed"),
    api(f"{SAMPLE}:sample_posterior", 1, 2, 1, **H, method="pymc-gibbs", random_seed="x",
        raises=(TypeError, ValueError), names="random_seed"),
    api(f"{SAMPLE}:sample_posterior", 1, 2, 1, **H, method="pymc", random_seed=-1, draws=10,
        tune=0, chains=1, names="random_seed"),
    api(f"{SAMPLE}:sample_posterior", 1, 2, 1, **H, method="pymc", cores=0, names="cores"),
    api(f"{SAMPLE}:sample_posterior", 1, 2, 1, **H, method="pymc-gibbs", tune=-5,
        names="tune"),
    api(f"{SAMPLE}:posterior_summary", 1, 2, 1, **H, method="magic", names="method"),
    api(f"{SAMPLE}:posterior_summary", 1, 2, 1, **{**H, "rho2": -1.0}, names="rho2"),
    api(f"{SAMPLE}:posterior_summary", 1, 2, 1, **H, known=2.5, names="known"),
    api(f"{SAMPLE}:chain_diagnostics", [1, 2, 3], names="values"),
    # ---- inference.nested
    api(f"{ML}:exact_posterior", [1, 2], [1], rhos=[0.1, -1.0], siblings=[3], names="rho_2"),
    api(f"{ML}:exact_posterior", [1, 2], [1], rhos=[0.1, 0.2], siblings=[0], names="d_2"),
    api(f"{ML}:exact_posterior", [1, 2, 3], [1], **ML_OK, names="x_stars"),
    api(f"{ML}:exact_posterior", [1, 2], [1, 2], **ML_OK, names="y_stars"),
    api(f"{ML}:exact_posterior", [1, 2], [1], **ML_OK, p=0.0, names="p"),
    api(f"{ML}:exact_posterior", [1, 2], [1], **ML_OK, tail_mass=0.0, names="tail_mass"),
    api(f"{ML}:exact_posterior", [1, 2], [1], **ML_OK, prior=MISSING_PRIOR, names="prior"),
    api(f"{ML}:gibbs_sample", [1, 2], [1], **ML_OK, draws=0, random_seed=1, names="draws"),
    api(f"{ML}:gibbs_sample", [1, 2], [1], **ML_OK, chains=-1, random_seed=1, names="chains"),
    api(f"{ML}:gibbs_sample", [1, 2], [1], **ML_OK, random_seed="seed", raises=TypeError,
        names="random_seed"),
    api(f"{ML}:posterior_summary", **ML_OK, x_stars=[1, 2], y_stars=[1], method="gibbs",
        random_seed=-1, names="random_seed"),
    api(f"{ML}:posterior_summary", **ML_OK, x_stars=[1, 2], y_stars=[1], method="pymc",
        random_seed="x", raises=TypeError, names="random_seed"),
    api(f"{ML}:posterior_summary", **ML_OK, x_stars=[1, 2], y_stars=[1], method="magic",
        names="method"),
    api(f"{ML}:posterior_summary", **ML_OK, x_stars=[1, 2], y_stars=[1], known=-1,
        names="known"),
    api(f"{LEVELS}:parse_rhos", "0.1,abc", min_levels=2, names="rho_2"),
    api(f"{LEVELS}:parse_rhos", "0.1", min_levels=2, names="rhos"),
    api(f"{LEVELS}:parse_siblings", "0", 2, names="d_2"),
    api(f"{LEVELS}:parse_siblings", "1.5", 2, names="d_2"),
    api(f"{LEVELS}:parse_stars", "1,2", 2, names="stars"),
    api(f"{LEVELS}:parse_stars", "1,x,1", 2, names="x2*"),
    api(f"{LEVELS}:parse_rhos", "census:9", min_levels=2, names="rhos"),
    # ---- inference.unique_levels
    api(f"{UL}:marginal_posterior_sweep", [], names="rhos"),
    api(f"{UL}:marginal_unique_levels", [0.1, 0.2], method="mcmc", names="method"),
    api(f"{UL}:marginal_unique_levels", [0.1, 0.0], names="rhos"),
    api(f"{UL}:unique_levels_summary", [0.1, 0.2], p=1.0, names="p"),
    api(f"{UL}:unique_levels_summary", [0.1, 0.2], known=-1, names="known"),
    api(f"{UL}:marginal_posterior_sweep", [0.1, 0.0], names="rhos"),
    api(f"{UL}:marginal_posterior_sweep", [0.1, 0.2], p=1.0, names="p"),
    api(f"{UL}:marginal_posterior_sweep", [0.1, 0.2], known=-1, names="known"),
    api(f"{UL}:marginal_posterior_sweep", [0.1, 0.2], delta=0.0, names="delta"),
    api(f"{UL}:marginal_posterior_sweep", [0.1, 0.2], tail_relative=0.0,
        names="tail_relative"),
    api(f"{UL}:marginal_posterior_sweep", [0.1, 0.2], max_window_pairs=0,
        names="max_window_pairs"),
    # ---- inference.postprocessing
    api(f"{PP}:postprocess_block", 1, 1, 2, 0, names="d"),
    api(f"{PP}:postprocess_block", 1, 1, 2, -3, names="d"),
    api(f"{PP}:postprocess_block", 1, 1, -2, 3, names="x2_tilde"),
    api(f"{PP}:postprocess_block", 1.5, 1, 2, 3, names="x1_star"),
    api(f"{PP}:postprocess_block", 1, 1, 2, 3, ties="random", names="ties"),
    api(f"{PP}:thresholds", 1, 2, 0, names="d"),
    api(f"{PP}:thresholds", 1, 2.5, 3, names="x2_tilde"),
    api(f"{PP}:likelihood", 2, 0.0, 3, names="rho1"),
    api(f"{PP}:likelihood", 2, 0.1, 0, names="d"),
    api(f"{PP}:likelihood", -1, 0.1, 3, names="x2_tilde"),
    api(f"{PP}:likelihood", 2, 0.1, 3, known=-1, names="known"),
    api(f"{PP}:likelihood", 2, 0.1, 3, y_noise="gaussian", names="y_noise"),
    api(f"{PP}:likelihood", 2, 0.1, 3, tail_mass=0.0, names="tail_mass"),
    api(f"{PP}:posterior", 1, 2, 0.1, 3, p=1.0, names="p"),
    api(f"{PP}:posterior", 0.5, 2, 0.1, 3, names="x1_tilde"),
    api(f"{PP}:posterior", 3, 2, 0.1, 3, names="x1_tilde"),
    api(f"{PP}:marginal_posterior", 2, 0.1, 2.5, names="d"),
    api(f"{PP}:marginal_posterior", 2, math.nan, 3, names="rho1"),
    api(f"{PP}:marginal_risk", 2, 0.1, 3, p=0.0, names="p"),
    api(f"{PP}:marginal_posterior_before_postprocessing", 0.0, 3, names="rho1"),
    api(f"{PP}:marginal_posterior_before_postprocessing", 0.1, 0, names="d"),
    # ---- inference.sweeps
    api(f"{SWEEPS}:sweep", **{**STUDY, "rho1": []}, progress=False, names="rho1"),
    api(f"{SWEEPS}:sweep", **{**STUDY, "rho1": 0.0}, progress=False, names="rho1"),
    api(f"{SWEEPS}:sweep", **{**STUDY, "rho2": [0.1, -0.2]}, progress=False, names="rho2"),
    api(f"{SWEEPS}:sweep", **{**STUDY, "d": 0}, progress=False, names="d"),
    api(f"{SWEEPS}:sweep", **{**STUDY, "d": [-1, 2]}, progress=False, names="d"),
    api(f"{SWEEPS}:sweep", **{**STUDY, "d": 2.5}, progress=False, names="d"),
    api(f"{SWEEPS}:sweep", **{**STUDY, "d": 10**30}, progress=False, names="d"),
    api(f"{SWEEPS}:sweep", **{**STUDY, "x2": -1}, progress=False, names="x2"),
    api(f"{SWEEPS}:sweep", **{**STUDY, "x2": [[1, 2]]}, progress=False, names="x2"),
    api(f"{SWEEPS}:sweep", **STUDY, p=[0.5, 1.0], progress=False, names="p"),
    api(f"{SWEEPS}:sweep", **STUDY, known=-1, progress=False, names="known"),
    api(f"{SWEEPS}:sweep", **STUDY, prior="uniform", progress=False, names="prior"),
    api(f"{SWEEPS}:sweep", **STUDY, prior=["improper", BROKEN_PRIOR], progress=False,
        names="prior"),
    api(f"{SWEEPS}:sweep", **STUDY, method="bootstrap", progress=False, names="method"),
    api(f"{SWEEPS}:sweep", **STUDY, method="mc", progress=False, names="mc_options"),
    api(f"{SWEEPS}:sweep", **STUDY, method="mc", mc_options={"seed": -1}, progress=False,
        names="seed"),
    api(f"{SWEEPS}:sweep", **STUDY, chunk_size=0, progress=False, names="chunk_size"),
    api(f"{SWEEPS}:sweep", **{**STUDY, "d": [2, 2]}, progress=False, names="d"),
    api(f"{SWEEPS}:sweep", **STUDY, x1=5, progress=False, names="x1"),
    api(f"{SWEEPS}:sweep", **STUDY, out=f"{TMP}/s.txt", progress=False, names="out"),
    api(f"{SWEEPS}:sweep", **STUDY, out=f"{FILE}/s.nc", progress=False, names="out"),
    api(f"{SWEEPS}:sweep", **STUDY, quantity=3, progress=False, raises=TypeError,
        names="quantity"),
    api(f"{GRIDS}:parse_grid", "", "rho1", names="rho1"),
    api(f"{GRIDS}:parse_grid", "0.1,,0.2", "rho1", names="rho1"),
    api(f"{GRIDS}:parse_grid", "0", "rho1", names="rho1"),
    api(f"{GRIDS}:parse_grid", "nan", "rho1", names="rho1"),
    api(f"{GRIDS}:parse_grid", "1:0.5:0", "rho1", names="rho1"),
    api(f"{GRIDS}:parse_grid", "a,b", "d", kind=int, names="d"),
    api(f"{GRIDS}:parse_grid", "1.5", "d", kind=int, names="d"),
    api(f"{GRIDS}:parse_grid", "0", "d", kind=int, names="d"),
    api(f"{GRIDS}:parse_grid", "5:1", "x2", kind=int, names="x2"),
    api(f"{GRIDS}:parse_grid", "0.5,1", "p", names="p"),
    api(f"{GRIDS}:parse_grid", 0.5, "p", raises=TypeError, names="p"),
    # ---- inference.studies
    *_rho_cases(f"{STUDIES}:p_correct_two_level", rho_key="rho2", x2=2, rho1=0.1, d=3),
    api(f"{STUDIES}:p_correct_two_level", **{**STUDY, "d": 0}, names="d"),
    api(f"{STUDIES}:p_correct_two_level", **{**STUDY, "d": -4}, names="d"),
    api(f"{STUDIES}:p_correct_two_level", **{**STUDY, "x2": -1}, names="x2"),
    api(f"{STUDIES}:p_correct_two_level", **{**STUDY, "x2": 1.5}, names="x2"),
    *_p_cases(f"{STUDIES}:p_correct_two_level", **STUDY),
    api(f"{STUDIES}:p_correct_two_level", **STUDY, x1=4, names="x1"),
    api(f"{STUDIES}:p_correct_two_level", **STUDY, ties="coin", names="ties"),
    api(f"{STUDIES}:p_correct_two_level", **STUDY, tail_mass=0.0, names="tail_mass"),
    api(f"{STUDIES}:p_correct_two_level", **STUDY, prior=BROKEN_PRIOR, names="prior"),
    api(f"{STUDIES}:p_correct_variant", **{**STUDY, "d": 0}, names="d"),
    api("dprisk.inference.studies.setup:release_grid", x2=2, y1=-1, rho1=0.1, rho2=0.25, d=3,
        names="y1"),
    api("dprisk.inference.studies.thresholds:decision_thresholds", 2, 1, **H, model="other",
        names="model"),
    api(f"{STUDIES}:marginal_summary", **H, x2=2, method="magic", names="method"),
    api(f"{STUDIES}:marginal_summary", **H, x2=2, method="mc", datasets=0, random_seed=1,
        names="datasets"),
    api(f"{STUDIES}:marginal_summary", **H, x2=2, method="mc", datasets=10, random_seed=-1,
        names="random_seed"),
    # ---- inference.mc_studies, inference.finite_draws
    _mc_case("datasets", datasets=0),
    _mc_case("draws", draws=0),
    _mc_case("sampler", sampler="nuts"),
    _mc_case("random_seed", random_seed=-1),
    _mc_case("random_seed", random_seed=1.5),
    _mc_case("start", start=1.5),
    _mc_case("ties", ties="coin"),
    _mc_case("d", d=0),
    _mc_case("rho1", rho1=math.nan),
    api(FINITE + "finite_draws_p_correct", **STUDY, draws=0, names="draws"),
    api(FINITE + "finite_draws_p_correct", **STUDY, draws=10,
        method="exact", names="method"),
    api(FINITE + "decision_probability", 0.5, 0.5, 0.5, 10,
        method="magic", names="method"),
    api(FINITE + "decision_probability", 0.5, 0.5, 0.5, 0, names="draws"),
    api(FINITE + "decision_probability", 1.5, 0.5, 0.5, 10, names="a0"),
    # ---- validation.supplement
    api(f"{CENSUS}:parse_rhos", "0.1,abc", names="rhos"),
    api(f"{UL}:unique_levels_summary", [], names="rhos"),
    api(f"{UL}:unique_levels_summary", [0.1, 0.0], names="rhos"),
    # ---- validation.diagnostics
    api(f"{DIAG}:convergence_report", 3, raises=TypeError, names="idata"),
    api(f"{DIAG}:convergence_report", NO_X2, names="X2"),
    api(f"{DIAG}:convergence_report", ONE_CHAIN, names="chains"),
    api(f"{DIAG}:convergence_report", TWO_CHAINS, known=-1, names="known"),
    api(f"{DIAG}:convergence_report", TWO_CHAINS, known=1.5, names="known"),
    # ---- dprisk (in-process): argparse errors, then each subcommand's parameters
    cli(names="command"),
    cli("survey", names="survey"),
    cli("census", "--bogus", names="bogus"),
    cli("census", "extra", names="extra"),
    *[cli("posterior", "--rho1", bad, "--x1-star", "1", names="rho1")
      for bad in ("0", "-0.1", "nan", "inf", "abc", "census:nowhere", "")],
    cli("posterior", "--rho1", "0.1", "--x1-star", "1.5", names="x1-star"),
    cli("posterior", "--rho1", "0.1", "--x1-star", "one", names="x1-star"),
    cli("posterior", "--rho1", "0.1", names="x1-star"),
    cli("posterior", "--x1-star", "1", names="rho1"),
    *[cli("posterior", "--rho1", "0.1", "--x1-star", "1", "--p", bad, names="p")
      for bad in ("0", "1", "1.5", "-0.5", "nan", "1/0", "half")],
    cli("posterior", "--rho1", "0.1", "--x1-star", "1", "--known", "-1", names="known"),
    cli("posterior", "--rho1", "0.1", "--x1-star", "1", "--known", "0.5", names="known"),
    *[cli(*POST_H[:5], "--d", bad, *POST_H[7:], names="d") for bad in ("0", "-1", "1.5")],
    cli(*POST_H[:5], "--d", "1e30", *POST_H[7:], names="d"),
    cli(*POST_H, "--method", "gibbs", "--draws", "1e30", names="draws"),
    cli(*POST_H[:3], "--rho2", "0", *POST_H[5:], names="rho2"),
    cli(*POST_H[:11], names="y1-star"),
    cli(*POST_H, "--method", "nuts", names="method"),
    cli(*POST_H, "--method", "gibbs", "--draws", "0", names="draws"),
    cli(*POST_H, "--method", "gibbs", "--chains", "0", names="chains"),
    cli(*POST_H, "--method", "gibbs", "--seed", "-1", names="--seed"),
    cli(*POST_H, "--method", "pymc", "--draws", "10", "--chains", "1", "--seed", "-1",
        names="--seed"),
    cli(*POST_H, "--prior", "uniform", names="prior"),
    cli(*POST_H, "--prior", "truncated:0", names="truncated:0"),
    *[cli(*POST_H, "--prior", bad, names="prior") for bad in BAD_PRIORS],
    cli("posterior", "--rhos", "0.1,0", "--siblings", "3", "--stars", "1,2,1", names="rho_2"),
    cli("posterior", "--rhos", "0.1,0.2", "--siblings", "0", "--stars", "1,2,1", names="d_2"),
    cli("posterior", "--rhos", "0.1,0.2", "--siblings", "3", "--stars", "1,2", names="stars"),
    cli("posterior", "--rhos", "0.1,0.2", "--stars", "1,2,1", names="siblings"),
    cli("posterior", "--rhos", "0.1,0.2", "--siblings", "3", "--stars", "1,2,1", "--method",
        "magic", names="method"),
    cli("posterior", "--rhos", "0.1,0.2", "--siblings", "3", "--stars", "1,2,1", "--method",
        "gibbs", "--seed", "-1", names="--seed"),
    cli("marginal", names="rho1"),
    cli("marginal", "--rho1", "-1", names="rho1"),
    cli("marginal", "--rho1", "0.1", "--p", "-0.2", names="p"),
    cli("marginal", "--rho1", "0.1", "--known", "-3", names="known"),
    cli(*MARG_H[:5], "--d", "0", *MARG_H[7:], names="d"),
    cli(*MARG_H[:5], "--d", "-2", *MARG_H[7:], names="d"),
    cli(*MARG_H[:5], "--d", "1e30", *MARG_H[7:], names="d"),
    cli(*MARG_H[:7], names="x2"),
    cli(*MARG_H[:7], "--x2", "-1", names="x2"),
    cli(*MARG_H, "--x1", "5", names="x1"),
    cli(*MARG_H, "--method", "gibbs", names="method"),
    cli(*MARG_H, "--method", "mc", "--datasets", "0", names="datasets"),
    cli(*MARG_H, "--prior", WRONG_TYPE_PRIOR, names="prior"),
    cli("marginal", "--rhos", "", names="rhos"),
    cli("marginal", "--rhos", "census:9", names="rhos"),
    cli("marginal", "--rhos", "0.1,0", names="rhos"),
    cli("marginal", "--rhos", "0.1", "--p", "1", names="p"),
    cli("sweep", names="required"),
    *[cli(*sweep_argv(rho1=bad), names="rho1") for bad in ("", "0", "-1", "abc", "1:0.5:0")],
    cli(*sweep_argv(rho2="0.1,nan"), names="rho2"),
    *[cli(*sweep_argv(d=bad), names="d") for bad in ("0", "-1", "1.5", "0:3", "2,2")],
    cli(*sweep_argv(x2="-1"), names="x2"),
    cli(*sweep_argv(p="0.5,1"), names="p"),
    cli(*sweep_argv(known="-1"), names="known"),
    cli(*sweep_argv(prior="uniform"), names="prior"),
    cli(*sweep_argv(prior=","), names="prior"),
    *[cli(*sweep_argv(prior=bad), names="prior") for bad in BAD_PRIORS],
    cli(*sweep_argv(out=f"{TMP}/sweep.txt"), names="--out"),
    cli(*sweep_argv(out=f"{FILE}/sweep.nc"), names="--out"),
    cli(*sweep_argv(out=f"{FILE}/deeper/sweep.nc"), names="--out"),
    cli("reproduce", names="--out"),
    cli("reproduce", "--out", f"{FILE}/report", names="--out"),
    cli("reproduce", "--out", FILE, names="--out"),
    # ---- refused with --json too (in-process; these three rows ran the console script until
    # issue 36: its exit status and one line are checked by the row below, one process)
    cli(*POST_H, "--prior", BROKEN_PRIOR, "--json", names="prior"),
    cli(*sweep_argv(out=f"{FILE}/sweep.nc"), "--json", names="--out"),
    cli("marginal", "--rho1", "0.1", "--p", "1", "--json", names="p"),
    # ---- dprisk through the installed console script (a fresh process)
    script("posterior", "--rho1", "census:nowhere", "--x1-star", "1", names="rho1"),
]

#: Number of bad inputs tried (rows of :data:`CASES`).
N_CASES = len(CASES)


# --------------------------------------------------------------------------- running a row
@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A directory with ``file.txt`` (a regular file) and the broken prior model files, one for
    the module's rows (each checks that its run leaves the directory's tree as it found it; a
    directory per row was about a third of these tests' CPU)."""
    folder = tmp_path_factory.mktemp("bad-input")
    (folder / "file.txt").write_text("not a directory\n")
    for name, text in PRIOR_FILES.items():
        (folder / name).write_text(text)
    return folder


def _fill(value, tmp: Path):
    """Replace ``{tmp}`` in strings (also inside lists, tuples and dicts)."""
    if isinstance(value, str):
        return value.replace(TMP, str(tmp))
    if isinstance(value, list):
        return [_fill(v, tmp) for v in value]
    if isinstance(value, tuple):
        return tuple(_fill(v, tmp) for v in value)
    if isinstance(value, dict):
        return {k: _fill(v, tmp) for k, v in value.items()}
    return value


def _resolve(target: str):
    module_name, attr = target.split(":")
    obj = importlib.import_module(module_name)  # the package's own: a failure, not a skip
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _run_script(argv) -> tuple[int, str, str]:
    exe = Path(sys.executable).parent / "dprisk"
    assert exe.exists(), f"dprisk console script missing at {exe}"
    done = subprocess.run([str(exe), *argv], capture_output=True, text=True, timeout=120,
                          check=False)
    return done.returncode, done.stdout, done.stderr


def test_table_size():
    """The README quotes N_CASES; the table must cover API and CLI rows."""
    kinds = {case.target if case.target in ("cli", "script") else "api" for case in CASES}
    assert kinds == {"api", "cli", "script"}
    assert N_CASES == len(CASES) >= 300


def _param(case: Case):
    marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
    return pytest.param(case, marks=marks, id=case.id)


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_bad_input_is_refused(case: Case, workdir, capsys):
    args = _fill(case.args, workdir)
    files_before = tree(workdir)
    if case.target in ("cli", "script"):
        if case.target == "cli":
            status, out, err = run_cli(args, capsys)
        else:
            status, out, err = _run_script(args)
        assert status == 2, (status, err)
        check_contract(status, out, err, names=(case.names,), root=workdir, before=files_before)
        return
    func = _resolve(case.target)
    kwargs = _fill(case.kwargs, workdir)
    with pytest.raises(case.raises) as info:
        func(*args, **kwargs)
    message = str(info.value)
    assert names_option(case.names, message), f"message does not name {case.names!r}: {message}"
    assert "\n" not in message.strip(), f"message is not one line: {message!r}"
    assert tree(workdir) == files_before, "partial output left behind"
