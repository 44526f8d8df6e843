"""Captions and alt text of the report's figures.

A caption says what is plotted, at which parameters and which paper figure it mirrors: the
figure's own title (which carries the parameters the study used, e.g. ρ1, ρ2, d, p) followed by
:data:`DESCRIPTIONS`. The alt text describes every panel from the figure itself: its title and
what is plotted against what (the axis labels), with the legend entries, so it follows the
figure when a study changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from matplotlib.figure import Figure

from dprisk.validation.figures.decisions_captions import DESCRIPTIONS as _DECISIONS_DESCRIPTIONS

__all__ = ["DESCRIPTIONS", "FigureText", "alt_text", "caption", "figure_text"]

#: Legend entries an alt text names for one panel; more are counted ("and N more").
LEGEND_ENTRIES_SHOWN = 6

#: Figure stem -> (paper figure it mirrors, what is plotted).
DESCRIPTIONS: dict[str, tuple[str, str]] = {
    "figure1": ("paper Figure 1",
                "Posterior probability that the target has the characteristic and the risk "
                "R'(x1*) = posterior / prior against the released block count x1*, one line "
                "per adversary prior p, at the 2020 Census block ρ1."),
    "figure2": ("paper Figure 2",
                "Marginal posterior and marginal risk R (averaged over releases, true x1 = 1) "
                "against ρ1, one line per prior p; the dashed line marks the Census block ρ1."),
    "figure3": ("paper Figure 3",
                "Probability of a correct decision under 0-1 loss against ρ1, one line per "
                "prior p; the dashed line marks the Census block ρ1."),
    "table4_table5": ("paper Tables 7–8",
                      "Posterior of X1 and of X2 for the release D = (2, 1, −1): exact "
                      "enumeration, the Gibbs and PyMC samplers, the paper's printed values and "
                      "the constraint-dropping variant, with the single-level ('no hierarchy') "
                      "value for comparison."),
    "figure4": ("paper Figure 4",
                "Decision maps over the releases (y1*, x2*), one panel per released block "
                "count x1*: the adversary's decision under 0-1 loss with the exact posterior, "
                "and where the two-level release changes it compared with the block alone."),
    "figure4_variant": ("paper Figure 4, as the paper's sampler draws it",
                        "The same decision map computed with the Gibbs sampler that drops the "
                        "support constraint k1 ≤ k2."),
    "figure5": ("paper Figure 5",
                "Probability of a correct decision against the true block-group count x2: "
                "exact model (blue), constraint-dropping variant (orange; dotted with "
                "crosses: decided from 10³ draws per release with 'estimate ≥ 1/2', the "
                "paper's procedure, expected), without the hierarchy (black dashed), the "
                "exact mean over 4 ≤ x2 ≤ 10 (red dashed), Monte Carlo points with ±2 MCSE "
                "bars; right: zoom on the paper's range."),
    "figure6": ("paper Figure 6",
                "Probability of a correct decision against the block-group ρ2 (log scale), one "
                "colour per true x2: exact (solid) and variant (dotted); the black dashed "
                "line is the value without the block group, the purple dashed line marks "
                "the Census block-group ρ2; right: zoom on the paper's range."),
    "figure7": ("supplement Figure 8 (S2)",
                "Variance σ² of the discrete Gaussian DG(0, s) and its gap s − σ² to the "
                "continuous Gaussian's variance, against the scale s = 1/(2ρ)."),
    "figure8": ("supplement Figure 9 (S2)",
                "Probability mass of a sum of n independent DG(0, 1/(2ρ)) noises against the "
                "single DG(0, n/(2ρ)) that approximates it, with their total-variation distance."),
    "figure9a": ("supplement Figure 10 (S4)",
                 "Decision maps as in Figure 4, one block of four panels (x1* = −1…2) per prior "
                 "of X2 given X1: improper (top, = Figure 4) and uniform on {k1, …, 10} "
                 "(bottom); colour: the decision, and where the two-level release makes it "
                 "correct (gain) or wrong (loss)."),
    "figure9b": ("supplement Figure 11 (S4)",
                 "Decision maps as in Figure 4 under a point-mass prior of X2 given X1: at "
                 "X2 = 1 (top) and at X2 = 25 (bottom)."),
    "s4_summary": ("the numbers in the supplement S4 text",
                   "Probability of a correct decision for each S4 scenario (prior of X2 given "
                   "X1 and truth): exact posterior with the range over the tie rule, the "
                   "constraint-dropping Gibbs variant, the single-level value and the paper's "
                   "printed values."),
    "figure10": ("supplement Figure 12 (S6)",
                 "Marginal posterior after post-processing: left against the post-processed "
                 "block-group count x̃2 at the Census block ρ1, right against ρ1 for three x̃2; "
                 "the purple line is the single-level value, the grey dotted line the value "
                 "before post-processing."),
    "figure11": ("supplement Figure 7 (S1.3)",
                 "Marginal posterior and risk when the target is unique at several levels of "
                 "the hierarchy, each level released with its Census ρ, one line per prior p."),
    "sbc_rank_histograms": ("simulation-based calibration (Talts et al. 2018), not in the paper",
                            "Histograms of the rank of the true value among posterior draws, "
                            "one panel per sampler and prior; uniform ranks mean a calibrated "
                            "sampler (band: 99% range under uniformity)."),
    "unknown_others": ("no paper figure: the adversary of the paper's future work (issue 15 §2)",
                       "Marginal risk R (top), P[correct decision | target has c] (middle, the "
                       "paper's eq. 3.6) and the decision's accuracy averaged over the prior "
                       "(bottom) against n, the people besides the target whom the adversary "
                       "does not know, one column per ρ1, one line per q (at p = 1/2, q and "
                       "1 − q coincide in R; dashed: q = 0.9); dotted: the paper's single "
                       "level (n = 0)."),
    "product": ("no paper figure: the post-processed product of the paper's future work "
                "(§6, issue 21)",
                "Marginal posterior (left) and P[correct decision | target has c] (right) of "
                "the noisy measurements, the post-processed product and the product with the "
                "block-group total held exact (an invariant: confidential data, which reveals "
                "the target when the other blocks are known), against ρ1 (top; the Census "
                "block ρ1 marked) and against the number d of other blocks (bottom)."),
    "product_kcell": ("no paper figure: the K-cell product of the paper's future work (§6, "
                      "issue 21 §2)",
                      "P[MAP cell = the target's cell] on the paper's 1940 histogram (ED 28-21, "
                      "864 cells; a block group with a second block of the same counts; "
                      "everyone but the target known; uniform prior over the cells) from the "
                      "K-cell post-processed product and from the noisy cells of block and "
                      "block group: exact (bars, the value reported) and its Monte Carlo "
                      "check through the top-down K-cell product (circles: the MAP's share; "
                      "squares: the same releases with the target's cell integrated exactly, "
                      "a tenth of the error; ±2 MCSE); dotted: the prior guess 1/864."),
    "population_by_band": (
        "no paper figure: every person of a population (issue 34); compare the shapes with "
        "the Census Bureau's 2010 reconstruction study, not the levels",
        "Left: the share of non-modal persons (category different from their block's most "
        "common) whose category the Bayes MAP guess gets right, informed and outsider "
        "adversary, beside the block-modal guess (MDG) and the proportional random guess "
        "(PRG) from the same noisy cells, by the block's true population. Right: persons and "
        "non-modal persons per band, with the number of blocks (a band of few blocks gives "
        "jumpy shares). Dash-dotted, in reds: the Census Bureau's published precision for "
        "non-modal persons in the same bands (Abowd et al. 2023, Tables 13 and 16; its "
        "best-informed attacker): reconstruction of the real 2010 tables, reconstruction "
        "of the 2020 system run on the 2010 data, and its block-modal and proportional "
        "guesses on the 2010 data. Another attack on other data (a synthetic state, the "
        "2020 noisy measurements), not a replication of the Census Bureau's."),
    "decision_summary_accuracy": (
        "no paper figure: the decision summary (issue 22)",
        "Bayes: accuracy of the paper's two-level adversary (§4.3, Figures 5–6: block and "
        "block-group counts, improper prior on X2), one line per true block-group count x2. "
        "Red: the best accuracy of any test on the same two queries (exact). Dotted: the block "
        "alone, where the two coincide."),
    "sbc_broken_sampler": ("simulation-based calibration, not in the paper",
                           "The same rank histograms for a deliberately broken sampler: the "
                           "test detects it."),
}


DESCRIPTIONS.update(_DECISIONS_DESCRIPTIONS)  # the accounting and budget figures


#: Mathtext commands of the figures' labels and their plain-text characters (:func:`_plain`);
#: a command not listed is dropped, so a symbol a label uses must be here.
_SYMBOLS = ((r"\varepsilon", "ε"), (r"\epsilon", "ε"), (r"\rho", "ρ"), (r"\sigma", "σ"),
            (r"\eta", "η"), (r"\ell", "ℓ"), (r"\tau", "τ"), (r"\mid", "|"),
            (r"\tilde x", "x̃"), (r"\hat X", "X̂"), (r"\approx", "≈"), (r"\leq", "≤"),
            (r"\geq", "≥"), (r"\le", "≤"), (r"\ge", "≥"), (r"\sum", "Σ"))


def _plain(text: str) -> str:
    r"""Matplotlib text with mathtext to plain text: ``$\rho_1$`` -> ``ρ1``.

    Only the math between ``$`` signs is converted (as matplotlib renders it): symbols by
    :data:`_SYMBOLS`, a sum with limits as ``Σ(i=1…n)`` (``$\sum_{i=1}^n Z_i$`` ->
    ``Σ(i=1…n) Zi``), spacing commands (``\,``) as a space, other commands (``\mathrm``)
    dropped, then the braces, sub- and superscript marks. Text outside it is kept as drawn
    (``user:negative_binomial_prior``).
    """
    parts = re.split(r"(?<!\\)\$", text)
    if len(parts) % 2 == 0:  # an unpaired $ is drawn as a $
        parts[-2:] = ["$".join(parts[-2:])]
    return "".join(_plain_math(part) if i % 2 else part.replace("\\$", "$")
                   for i, part in enumerate(parts)).strip()


def _plain_math(text: str) -> str:
    """The plain text of one mathtext segment (:func:`_plain`)."""
    text = re.sub(r"\\sum_\{?([^{}^\s]*)\}?\^\{?([^{}\s]*)\}?", r"Σ(\1…\2)", text)
    for tex, char in _SYMBOLS:
        text = re.sub(re.escape(tex) + r"(?![a-zA-Z])", char, text)
    text = re.sub(r"\\[,;:! ]", " ", text)
    text = re.sub(r"\\[a-zA-Z]+", "", text)
    return re.sub(r"[{}^_]", "", text)


def _title(fig: Figure) -> str:
    """The figure's title, or its sub-figures' titles (e.g. one per prior) joined by " / "."""
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None:
        return _plain(suptitle.get_text()).replace("\n", " ")
    return " / ".join(t for t in (_title(sub) for sub in getattr(fig, "subfigs", [])) if t)


@dataclass(frozen=True)
class FigureText:
    """The caption and alt text of a figure, without the figure (:func:`figure_text`).

    What the report's page reads of a figure drawn in another process: sending these two
    strings back instead of the figure spares pickling the figure there and unpickling it
    here (every tick, text and transform of it: about 6 s of CPU over the report's 28 figures).
    :func:`caption` and :func:`alt_text` return them as they are.
    """

    caption: str
    alt: str


def figure_text(fig: Figure, stem: str) -> FigureText:
    """:func:`caption` and :func:`alt_text` of ``fig``, computed now."""
    return FigureText(caption=caption(fig, stem), alt=alt_text(fig, stem))


def caption(fig: Figure | FigureText, stem: str) -> str:
    """Caption of figure ``stem``: its title (with parameters), what it plots, what it mirrors."""
    if isinstance(fig, FigureText):
        return fig.caption
    mirrors, what = DESCRIPTIONS.get(stem, ("", ""))
    title = _title(fig)
    parts = [f"{title}." if title and not title.endswith(".") else title, what,
             f"Mirrors {mirrors}." if mirrors else ""]
    text = " ".join(p for p in parts if p)
    return text or f"{stem}: {alt_text(fig, stem)}"


def _axis_label(ax, axis: str) -> str:
    """The panel's ``axis`` ("x" or "y") label, or that of an axes sharing the axis with it.

    A panel of a shared grid shows its label only on the outer row or column
    (``Axes.label_outer`` empties the inner ones); the quantity is the shared one.
    """
    label = _plain(getattr(ax, f"get_{axis}label")())
    if label:
        return label
    shared = getattr(ax, f"get_shared_{axis}_axes")().get_siblings(ax)
    return next((text for text in (_plain(getattr(other, f"get_{axis}label")())
                                   for other in shared) if text), "")


def _figure_legend(fig) -> list[str]:
    """The entries of the legends of the figure and its sub-figures (not of a panel).

    Each entry once: the sub-figures of Figures 10-11 repeat the same legend.
    """
    entries = [_plain(text.get_text()) for legend in getattr(fig, "legends", [])
               for text in legend.get_texts()]
    for sub in getattr(fig, "subfigs", []):
        entries.extend(_figure_legend(sub))
    return list(dict.fromkeys(entries))


def alt_text(fig: Figure | FigureText, stem: str) -> str:
    """Alt text: the figure's title, per panel what is plotted against what, then the legend.

    A panel's own legend follows it in parentheses; a legend drawn for the whole figure
    (below the panels, as Figures 4-6 and 10-11 have) ends the text.
    """
    if isinstance(fig, FigureText):
        return fig.alt
    panels = []
    for ax in fig.axes:
        if not ax.has_data():
            continue
        y, x = _axis_label(ax, "y"), _axis_label(ax, "x")
        desc = f"{y} against {x}" if y and x else (y or x)
        if ax.get_title():
            desc = f"{_plain(ax.get_title())}: {desc}" if desc else _plain(ax.get_title())
        legend = ax.get_legend()
        if legend is not None:
            labels = [_plain(t.get_text()) for t in legend.get_texts()]
            shown = labels[:LEGEND_ENTRIES_SHOWN]
            if len(labels) > len(shown):  # say what is left out, not cut silently
                shown.append(f"and {len(labels) - len(shown)} more")
            desc += " (" + "; ".join(shown) + ")"
        panels.append(desc)
    title = _title(fig) or DESCRIPTIONS.get(stem, (stem, ""))[0]
    n = len(panels)
    head = f"{title}. {n} panel{'s' if n != 1 else ''}" if n else title
    legend = _figure_legend(fig)
    return (head + (": " + " | ".join(panels) if panels else "") + "."
            + (f" Legend: {'; '.join(legend)}." if legend else ""))
