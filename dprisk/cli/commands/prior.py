"""``dprisk prior SPEC [--plot FILE.png] [--json]``: check an X2 prior before using it.

SPEC is a model file ``PATH.py:NAME`` (or a built-in spec). Prints the support and prior mass
of each branch X1 = 0, 1, whether the prior is proper (as labelled, and as found), and how
much it moves the Census-scenario posterior against the default prior
(:func:`dprisk.inference.two_level.prior_check.check_prior`). ``--plot`` writes a PNG of the
prior's weights and of the X2 posteriors: the path is checked and locked before the prior is
loaded (:class:`dprisk.runtime.new_outputs.NewOutput`), the PNG is drawn into a temporary beside
it and created there exclusively at the end -- a file that appeared at the path meanwhile
(made by the user, or by the prior's own file) is never replaced: the run is refused with
exit status 2 naming ``--plot``, and its temporary removed.
"""

from __future__ import annotations

from pathlib import Path

from dprisk.cli import common
from dprisk.cli.common import fmt

__all__ = ["add_parser", "run"]

DESCRIPTION = (
    "Check an adversary prior for X2 given X1: SPEC is PATH.py:NAME (a model file, see "
    "docs/priors.md) or improper | truncated:U | point:K. Reports the support and prior mass "
    "of each branch X1 = 0, 1 (proper as labelled and as found), and P[X1 = 1 | D] and "
    "E[X2 | D] at the 2020 Census block / block-group rho (d = 27, p = 1/2, m = 0) for a few "
    "releases D, under the default improper uniform prior and under SPEC."
)


def add_parser(subs) -> None:
    """Register ``dprisk prior``."""
    sub = subs.add_parser("prior", help=common.SUBCOMMAND_HELP["prior"],
                          description=DESCRIPTION)
    sub.add_argument("spec", metavar="SPEC", help="PATH.py:NAME, improper, truncated:U or point:K")
    sub.add_argument("--plot", default=None, metavar="FILE.png",
                     help="write the prior's weights and the X2 posteriors as a PNG (a new "
                     "file: an existing one is never replaced)")
    common.add_json(sub)
    sub.set_defaults(func=run)


def run(args) -> int:
    """Check the prior, optionally plot it, print."""
    import contextlib

    from dprisk.inference.two_level.prior_check import check_prior

    plot = _plot_output(args.plot) if args.plot is not None else None
    with plot if plot is not None else contextlib.nullcontext():
        check = check_prior(args.spec)
        payload = check.to_json()
        if plot is not None:
            _write_plot(check, plot)
            payload["plot"] = str(Path(args.plot).expanduser())
    common.emit(args, payload, _lines(payload))
    return common.EXIT_OK


def _plot_output(text: str):
    """The checked :class:`~dprisk.runtime.new_outputs.NewOutput` of ``--plot`` (a new .png)."""
    from dprisk.runtime.new_outputs import NewOutput

    path = Path(text).expanduser()
    if path.suffix.lower() != ".png":
        raise ValueError(f"--plot must name a .png file, got {text!r}")
    output = NewOutput(path, "--plot")
    output.check()  # a file of the user's is never replaced
    return output


def _lines(payload: dict) -> list[str]:
    labelled = "proper" if payload["labelled_proper"] else "improper"
    found = "proper" if payload["proper"] else "not proper"
    lines = [f"prior {payload['spec']}: {payload['description']}",
             f"  labelled {labelled}; found {found}; log_weight_max = "
             f"{fmt(payload['log_weight_max'])}"]
    for k1, row in payload["branches"].items():
        if row["mass_upto"] is None:
            lines.append(f"  X1 = {k1}: no possible X2 (empty support)")
            continue
        upper = "inf" if row["upper"] is None else row["upper"]
        settled = "" if row["mass_settled"] else ", still growing"
        mass = ("above the largest double (undefined)" if row["mass"] is None
                else f"{row['mass']:.12g}")
        lines.append(f"  X1 = {k1}: support [{row['lower']}, {upper}], mass "
                     f"{mass} over X2 <= {row['mass_upto']}{settled}")
    census = payload["census"]
    lines.append(f"  Census scenario (rho1 = {fmt(census['rho1'])}, rho2 = "
                 f"{fmt(census['rho2'])}, d = {census['d']}, p = 1/2, m = 0):")
    lines.append("    release (x1*, x2*, y1*)   P[X1=1|D] default -> this   "
                 "E[X2|D] default -> this")
    for i, release in enumerate(census["releases"]):
        lines.append(f"    {tuple(release)!s:<25} {fmt(census['posterior_default'][i]):>9} -> "
                     f"{fmt(census['posterior_prior'][i]):<9}      "
                     f"{fmt(census['x2_mean_default'][i]):>8} -> "
                     f"{fmt(census['x2_mean_prior'][i])}")
    lines.append(f"  largest change of P[X1=1|D]: {fmt(payload['max_posterior_shift'])}")
    if "plot" in payload:
        lines.append(f"  plot written to {payload['plot']}")
    return lines


def _write_plot(check, output) -> None:
    """Prior weights per branch (left) and the X2 posteriors of the largest release (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from dprisk.inference.two_level.exact import exact_posterior
    from dprisk.models.priors.library import ImproperUniform, parse_prior
    from dprisk.runtime.new_outputs import publish

    prior = parse_prior(check.spec)
    top = max(r[1] for r in check.releases) * 2 + 20
    k2 = np.arange(0, top + 1)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for k1 in (0, 1):
        weights = np.exp(prior.log_weight(k2, np.full_like(k2, k1)))
        left.step(k2, weights, where="mid", label=f"X1 = {k1}")
    left.set(xlabel="k2", ylabel="prior weight w(k2 | k1)", title=check.spec[-50:])
    left.legend()
    release = check.releases[-1]
    for label, each in (("default (improper uniform)", ImproperUniform()), ("this prior", prior)):
        post = exact_posterior(*release, rho1=check.rho1, rho2=check.rho2, d=27, prior=each)
        right.step(post.k2_values, post.x2_pmf, where="mid", label=label)
    right.set(xlabel="k2", ylabel="P[X2 = k2 | D]",
              title=f"Census scenario, D = {tuple(release)}")
    right.legend()
    fig.tight_layout()
    tmp = output.temporary()
    try:
        fig.savefig(tmp, format="png")
    finally:
        plt.close(fig)
    publish((output, tmp))  # exclusive: refused if a file appeared at the path meanwhile
