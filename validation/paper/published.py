"""Every number published in Kazan & Reiter, in one place, as plain data.

Each :class:`PublishedValue` holds a number exactly as the paper prints it, converted to a
fraction in [0, 1] when it is a probability (``57.0%`` becomes ``0.570`` with
``decimals = 3``); risks, rho and epsilon stay as printed. ``decimals`` is the number of
decimal places of ``value`` (``None`` for exact numbers such as counts and fractions), so a
computed number *agrees* with the paper when it lies within half a unit of that last place
(:func:`agrees`). Values are compared against, never returned as results.

Tables and figures are named as printed in the compiled paper (:data:`PRINTED_NAMES`): the
x1* table is Table 4, the marginal table Table 5, the rho allocation Table 2, the MCMC
posteriors Tables 7 and 8, and the supplement's figures continue the main text's numbering
(Figures 7-12). ``source`` names the printed table, figure or section. Identifiers are keys
and keep the LaTeX labels they were first given: ``table1/...`` is the table labelled
``tab:tab1``, ``table2/...`` ``tab:tab2`` (``table2/census_rho/...`` and ``table2/*_share/...``
``tab:cen_rho``), ``table4``/``table5`` ``tab:tab4``/``tab:tab5``; ``s2/figure8`` and
``s6/fig10`` are ``fig:plot8`` and ``fig:plot10``. The LaTeX label of a record is reported
only in its ``latex_label`` field (:func:`latex_label`).

``relation`` is ``"="`` for a reported value, ``"<"``/``">"`` for a stated bound, and ``"≈"``
for a qualitative statement the paper makes about a number ("approximately one").
``kind`` says what the number is: ``probability``, ``risk``, ``rho``, ``epsilon``,
``threshold`` (a decision boundary in x1*), ``count``, ``bound``, ``claim``, ``input``
(data or parameters the paper states) or ``setting`` (Monte Carlo budgets). A ``bound`` or
``claim`` is a qualitative statement: its record is a claim (:mod:`dprisk.validation.paper.claims`)
with status ``holds`` / ``does not hold`` and the measured quantity, not a number compared
with ``value``.
``computed_by`` says which part of the suite reproduces it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

__all__ = ["PRINTED_NAMES", "PUBLISHED", "PublishedValue", "agrees", "get", "ids",
           "latex_label", "select"]

#: The paper's tables and figures, LaTeX label -> name as printed, in print order. LaTeX numbers
#: tables and figures in the order of their captions, and the supplement resets only its
#: sections and equations, so its figures continue the main text's sequence.
PRINTED_NAMES: dict[str, str] = {
    "tab:cen_tabs": "Table 1", "tab:cen_rho": "Table 2", "tab:28-21": "Table 3",
    "tab:tab1": "Table 4", "tab:tab2": "Table 5", "tab:tab3": "Table 6", "tab:tab4": "Table 7",
    "tab:tab5": "Table 8",
    **{f"fig:plot{k}": f"Figure {k}" for k in range(1, 7)},
    "fig:plot11": "Figure 7", "fig:plot7": "Figure 8", "fig:plot8": "Figure 9",
    "fig:plot9a": "Figure 10", "fig:plot9b": "Figure 11", "fig:plot10": "Figure 12",
}
_LABEL_OF = {printed: label for label, printed in PRINTED_NAMES.items()}


def latex_label(printed: str) -> str | None:
    """The LaTeX label of a table or figure named as printed (``"Table 4"`` -> ``"tab:tab1"``).

    None for a name that is not one of :data:`PRINTED_NAMES` (a section, the text).
    """
    return _LABEL_OF.get(printed)


@dataclass(frozen=True)
class PublishedValue:
    """One number published in the paper.

    Attributes
    ----------
    id : str
        Unique identifier, e.g. ``"table1/x1_star=3/p=1/2/posterior"``.
    source : str
        Where it is printed, e.g. ``"Table 4"`` or ``"Section 4.2 text"``.
    value : float
        The number as printed, probabilities as fractions in [0, 1].
    decimals : int or None
        Decimal places of ``value`` as printed (after converting a percentage);
        ``None`` for an exact number.
    quantity : str
        What the paper says the number is.
    printed : str
        The number exactly as it appears in the paper.
    kind : str
        See the module docstring.
    relation : str
        ``"="``, ``"<"``, ``">"`` or ``"≈"``.
    computed_by : str
        Which study reproduces it: ``single_level``, ``unique_levels``, ``hierarchical``,
        ``mcmc``, ``prior_sensitivity``, ``dg_sums``, ``census`` or ``input``.
    """

    id: str
    source: str
    value: float
    decimals: int | None
    quantity: str
    printed: str
    kind: str = "probability"
    relation: str = "="
    computed_by: str = "single_level"

    @property
    def half_unit(self) -> float:
        """Half a unit in the last printed place (0 for exact numbers)."""
        return 0.0 if self.decimals is None else 0.5 * 10.0 ** (-self.decimals)


def agrees(record: PublishedValue, computed: float, *, approx_rtol: float = 0.1) -> bool:
    """Whether ``computed`` agrees with the published number.

    ``"="``: within half a unit of the last printed place (plus 1e-12 relative slack for
    binary floating point), or equal for exact numbers. ``"<"``/``">"``: the bound holds.
    ``"≈"``: within ``approx_rtol`` relative (the paper gives no tolerance; 10 % is ours).
    """
    slack = 1e-12 * max(1.0, abs(record.value))
    if record.relation == "=":
        return abs(computed - record.value) <= record.half_unit + slack
    if record.relation == "<":
        return computed < record.value
    if record.relation == ">":
        return computed > record.value
    if record.relation == "≈":
        return abs(computed - record.value) <= approx_rtol * abs(record.value)
    raise ValueError(f"unknown relation {record.relation!r} in record {record.id!r}")


# --------------------------------------------------------------------------- builders
_T_HISTOGRAM = "Table 3"
_T4 = "Table 7"
_T5 = "Table 8"
_T1 = "Table 4"
_T2 = "Table 5"
_TRHO = "Table 2 (the Census ρ allocation)"
_S42 = "Section 4.2 text"
_S43 = "Section 4.3 text"

_TABLE1_MASS = {1: "0.161", 2: "0.119", 3: "0.073", 4: "0.036", 5: "0.015"}
_TABLE1_POSTERIOR = {  # x1* -> printed posteriors for p = 1/2, 1/5, 1/10, 1/50
    1: ("0.525", "0.216", "0.109", "0.022"),
    2: ("0.574", "0.252", "0.130", "0.027"),
    3: ("0.622", "0.291", "0.154", "0.032"),
    4: ("0.667", "0.334", "0.182", "0.039"),
    5: ("0.710", "0.379", "0.213", "0.047"),
}
_TABLE1_RISK = {  # x1* -> printed risks for p = 1/2, 1/5, 1/10, 1/50, 1/864
    1: ("1.05", "1.08", "1.09", "1.10", "1.10"),
    2: ("1.15", "1.26", "1.30", "1.34", "1.35"),
    3: ("1.24", "1.46", "1.54", "1.62", "1.64"),
    4: ("1.33", "1.67", "1.82", "1.96", "2.00"),
    5: ("1.42", "1.90", "2.13", "2.37", "2.44"),
}
_TABLE2 = {  # p -> (printed marginal posterior, printed R)
    "1/2": ("0.524", "1.05"),
    "1/5": ("0.225", "1.13"),
    "1/10": ("0.117", "1.17"),
    "1/50": ("0.024", "1.21"),
    "1/864": ("0.0014", "1.22"),
}
_PRIORS_POSTERIOR = ("1/2", "1/5", "1/10", "1/50")
_PRIORS = ("1/2", "1/5", "1/10", "1/50", "1/864")
#: Table 2 (the rho allocation): level -> (geolevel share, GVHR share, printed rho).
_CENSUS_ROWS = {
    "us": ("104/4,099", "189/241", "0.0509"),
    "state": ("1,440/4,099", "230/4,097", "0.0505"),
    "county": ("447/4,099", "754/4,097", "0.0514"),
    "tract": ("687/4,099", "241/2,051", "0.0504"),
    "block-group": ("1,256/4,099", "1,288/4,099", "0.2465"),
    "block": ("165/4,099", "3,945/4,097", "0.0992"),
}


def _decimals(printed: str) -> int:
    text = printed.rstrip("%")
    return len(text.split(".")[1]) if "." in text else 0


def _number(printed: str, **kw) -> PublishedValue:
    """A record from the printed text; ``%`` is converted to a fraction (2 more decimals)."""
    if printed.endswith("%"):
        value = round(float(printed[:-1]) / 100.0, _decimals(printed) + 2)
        decimals = _decimals(printed) + 2
    else:
        value = float(printed)
        decimals = _decimals(printed)
    kw.setdefault("decimals", decimals)
    return PublishedValue(value=value, printed=printed, **kw)


def _fraction(printed: str) -> Fraction:
    num, den = printed.replace(",", "").split("/")
    return Fraction(int(num), int(den))


def _table1() -> list[PublishedValue]:
    out = []
    for x, mass in _TABLE1_MASS.items():
        out.append(_number(
            mass, id=f"table1/x1_star={x}/mass", source=_T1,
            quantity=f"probability mass P[X1* = {x} | X1 = 1] at rho1 = 0.099 (caption)",
        ))
        posterior = zip(_PRIORS_POSTERIOR, _TABLE1_POSTERIOR[x], strict=True)
        risk = zip(_PRIORS, _TABLE1_RISK[x], strict=True)
        out += [_number(printed, id=f"table1/x1_star={x}/p={label}/posterior", source=_T1,
                        quantity=f"posterior P[X1 = 1 | X1* = {x}], prior p = {label}, "
                        "rho1 = 0.099") for label, printed in posterior]
        out += [_number(printed, id=f"table1/x1_star={x}/p={label}/risk", source=_T1,
                        kind="risk", quantity=f"disclosure risk R'({x}) = posterior / p, "
                        f"p = {label}, rho1 = 0.099") for label, printed in risk]
    return out


def _table2() -> list[PublishedValue]:
    quantities = {
        "posterior": ("marginal posterior probability of the correct decision (eq. 3.3)", {}),
        "risk": ("implied risk R (eq. 3.4)", {"kind": "risk"}),
    }
    return [
        _number(printed, id=f"table2/p={label}/{name}", source=_T2,
                quantity=f"{quantities[name][0]}, p = {label}, rho1 = 0.099",
                **quantities[name][1])
        for label, values in _TABLE2.items()
        for name, printed in zip(quantities, values, strict=True)
    ]


def _census_table() -> list[PublishedValue]:
    out = []
    for level, (geo, query, rho) in _CENSUS_ROWS.items():
        out.append(PublishedValue(
            id=f"table2/geolevel_share/{level}", source=_TRHO,
            value=float(_fraction(geo)), decimals=None, printed=geo, kind="input",
            quantity=f"proportion of the global rho allocated to level {level}",
            computed_by="census",
        ))
        out.append(PublishedValue(
            id=f"table2/query_share/{level}", source=_TRHO,
            value=float(_fraction(query)), decimals=None, printed=query, kind="input",
            quantity=f"proportion of level {level}'s rho allocated to the GVHR query",
            computed_by="census",
        ))
        out.append(_number(
            rho, id=f"table2/census_rho/{level}", source=_TRHO, kind="rho",
            quantity=f"approximate GVHR rho at level {level} = 2.56 x geolevel x query share",
            computed_by="census",
        ))
    return out


def _section2_and_intro() -> list[PublishedValue]:
    return [
        _number("2.56", id="text2.3/rho_total", source="Section 2.3 text", kind="input",
                quantity="global zCDP rho of the 2020 Census", computed_by="input"),
        PublishedValue(id="text2.3/delta", source="Section 2.1 and 2.3 text", value=1e-10,
                       decimals=None, printed="10^{-10}", kind="input",
                       quantity="delta used to state the (epsilon, delta)-DP guarantee",
                       computed_by="input"),
        _number("0.103", id="text2.3/rho_block_total", source="Section 2.3 text", kind="rho",
                quantity="rho allocated to each census block, 2.56 x 165/4099",
                computed_by="census"),
        _number("0.099", id="text2.3/rho_block", source="Section 2.3 text", kind="rho",
                quantity="GVHR rho of a census block, 0.103 x 3945/4097 (also rho1 in "
                "Section 4 and every single-level caption)", computed_by="census"),
        _number("17.91", id="text2.3/epsilon", source="Section 2.3 text (also Sections 1, 5)",
                kind="epsilon", quantity="epsilon of the global rho = 2.56 at delta = 1e-10 "
                "via Theorem 1, eps = rho + 2 sqrt(rho log(1/delta))", computed_by="census"),
        _number("1.10", id="text1/epsilon_dwork", source="Section 1 text", kind="epsilon",
                quantity="ln(3), the epsilon bound recommended by Dwork (2008)",
                computed_by="census"),
        PublishedValue(id="text4.1/gvhr_levels_2020", source="Section 4.1 text", value=2016,
                       decimals=None, printed="2,016", kind="count",
                       quantity="cells of the 2020 GVHR histogram = 2 x 2 x 8 x 63",
                       computed_by="input"),
        PublishedValue(id="text4.1/gvhr_levels_1940", source="Section 4.1 text", value=864,
                       decimals=None, printed="864", kind="count",
                       quantity="cells of the 1940 GVHR histogram = 2 x 6 x 8 x 9 (also the "
                       "least informative prior p = 1/864)", computed_by="input"),
    ]


def _table3_and_data() -> list[PublishedValue]:
    rows = [
        ("table3/count/household_voting_white", "34",
         "household, of voting age, not Hispanic, White"),
        ("table3/count/household_nonvoting_white", "10",
         "household, not of voting age, not Hispanic, White"),
        ("table3/count/household_voting_black", "1",
         "household, of voting age, not Hispanic, Black (the target)"),
    ]
    out = [
        PublishedValue(id=id_, source=_T_HISTOGRAM, value=float(v), decimals=None,
                       printed=v, kind="input", computed_by="input",
                       quantity=f"1940 GVHR count in enumeration district 28-21: {what}")
        for id_, v, what in rows
    ]
    out.append(PublishedValue(
        id="text4.2/district_28-21/size", source=_S42, value=45, decimals=None, printed="45",
        kind="count", computed_by="input",
        quantity="non-Hispanic household residents of district 28-21 (sum of Table 3)",
    ))
    truth = [("x1", "1"), ("x1_star", "2"), ("x2", "1"), ("x2_star", "1"), ("y1", "0"),
             ("y1_star", "-1")]
    out += [
        PublishedValue(id=f"table3_release/{name}", source="Table 6",
                       value=float(v), decimals=None, printed=v, kind="input",
                       computed_by="input",
                       quantity=f"{name} of the one sampled release D used in Tables 7-8")
        for name, v in truth
    ]
    out += [
        PublishedValue(id="text4.3/district_39-14/size", source=_S43, value=209,
                       decimals=None, printed="209", kind="input", computed_by="input",
                       quantity="people in enumeration district 39-14"),
        PublishedValue(id="text4.3/granville_county/size", source=_S43, value=29364,
                       decimals=None, printed="29,364", kind="input", computed_by="input",
                       quantity="people in Granville County"),
        PublishedValue(id="text4.3/districts_in_county", source=_S43, value=28,
                       decimals=None, printed="28", kind="input", computed_by="input",
                       quantity="enumeration districts in Granville County (so d = 27)"),
        PublishedValue(id="fig4/caption/d", source="Figures 4-6, 10-11 captions", value=27,
                       decimals=None, printed="27", kind="input", computed_by="input",
                       quantity="number of other lowest-level groups d in the block group"),
    ]
    return out


def _section42_text() -> list[PublishedValue]:
    out = [
        _number("0.59", id="text4.2/p=1/2/p_correct", source=_S42,
                quantity="probability of a correct 0-1-loss decision, p = 1/2, rho1 = 0.099"),
        _number("0.30", id="text4.2/p=1/5/rho=0.5/p_correct", source=_S42,
                quantity="P[X1* >= 2 | X1 = 1], the probability of a correct decision, "
                "p = 1/5, rho1 = 0.5"),
        _number("0.28", id="text4.2/p=1/5/rho=0.6/p_correct", source=_S42,
                quantity="P[X1* >= 2 | X1 = 1], the probability of a correct decision, "
                "p = 1/5, rho1 = 0.6"),
        _number("2", id="text4.2/p=1/5/rho=0.5/threshold", source=_S42, kind="threshold",
                quantity="smallest x1* with posterior > 0.5, p = 1/5, rho1 = 0.5"),
        _number("2", id="text4.2/p=1/5/rho=0.6/threshold", source=_S42, kind="threshold",
                quantity="smallest x1* with posterior > 0.5, p = 1/5, rho1 = 0.6"),
        _number("1", id="text4.2/p=1/2/threshold", source=_S42, kind="threshold",
                quantity="for p = 1/2 any x1* >= 1 (and no smaller x1*) gives posterior > 0.5, "
                "whatever rho1"),
        _number("1", id="text4.2/risk_above_one_from", source=_S42, kind="threshold",
                quantity="the posterior exceeds p (R' > 1) iff x1* >= 1, for every prior "
                "(Figure 1 discussion, rho1 = 0.099)"),
        _number("3.6%", id="text4.2/x1_star=4/mass", source=_S42,
                quantity="'A statistic of x1* = 4 will occur only 3.6% of the time' "
                "(x1 = 1, rho1 = 0.099)"),
        _number("1.5%", id="text4.2/x1_star=5/mass", source=_S42,
                quantity="'... and a statistic of x1* = 5 only 1.5% of the time'"),
        _number("1.05", id="text4.2/table2_risk_range/min", source=_S42, kind="risk",
                quantity="'the risks are between 1.05 and 1.21' (Table 5), smallest"),
        _number("1.21", id="text4.2/table2_risk_range/max", source=_S42, kind="risk",
                quantity="'the risks are between 1.05 and 1.21' (Table 5), largest"),
    ]
    for label in _PRIORS[1:]:
        out.append(_number(
            "0.01", id=f"text4.2/p={label}/p_correct_bound", source=_S42, kind="bound",
            relation="<", quantity=f"'for p <= 1/5 the probability of a correct decision is a "
            f"fraction of a percent' (p = {label}, rho1 = 0.099)",
        ))
    for label in _PRIORS:
        out.append(_number(
            "1", id=f"text4.2/fig2/rho=0.25/p={label}/risk", source=_S42, kind="claim",
            relation="≈", quantity=f"'for rho1 < 0.25 ... the risk is approximately one' "
            f"(evaluated at the boundary rho1 = 0.25, p = {label})",
        ))
        out.append(_number(
            "1", id=f"text4.2/fig2/rho=5/p={label}/posterior", source=_S42, kind="claim",
            relation="≈", quantity=f"'for rho1 > 5, the posterior probability is approximately "
            f"one' (evaluated at the boundary rho1 = 5, p = {label})",
        ))
    return out


def _section43() -> list[PublishedValue]:
    hier = "hierarchical"
    out = [
        _number("0.246", id="text4.3/rho2", source=_S43 + " (Table 6 paragraph)", kind="rho",
                quantity="rho2 of the block group, 'rho2 ≈ 0.246'", computed_by="census"),
        _number("0.247", id="fig5/caption/rho2", source="Figures 5, 6 captions; Section 4.3 "
                "text (Figure 4 paragraph)", kind="rho",
                quantity="rho2 of the block group, 'rho2 = 0.247'", computed_by="census"),
        _number("43.0%", id="table4/k1=0/posterior", source=_T4,
                quantity="MCMC posterior P[X1 = 0 | D], D = (2, 1, -1), p = 1/2, 1e4 draws",
                computed_by="mcmc"),
        _number("57.0%", id="table4/k1=1/posterior", source=_T4,
                quantity="MCMC posterior P[X1 = 1 | D], D = (2, 1, -1), p = 1/2, 1e4 draws",
                computed_by="mcmc"),
        _number("57.4%", id="text4.3/no_hierarchy/posterior", source=_S43,
                quantity="posterior P[X1 = 1 | x1* = 2] ignoring the hierarchy, p = 1/2, "
                "rho1 = 0.099"),
        _number("2.48%", id="fig4/gain", source=_S43 + " (Figure 4)", computed_by=hier,
                quantity="probability mass of the (x1*, x2*, y1*) tiles where the hierarchy "
                "changes the decision to the correct one"),
        _number("1.83%", id="fig4/loss", source=_S43 + " (Figure 4)", computed_by=hier,
                quantity="probability mass of the tiles where the hierarchy changes the "
                "decision to the wrong one"),
        _number("0.65%", id="fig4/net", source=_S43 + " (Figure 4)", computed_by=hier,
                quantity="net increase of the probability of a correct decision from the "
                "hierarchy (gain - loss)"),
        _number("99%", id="fig4/region_mass", source=_S43 + " (Figure 4)", relation=">",
                kind="bound", computed_by=hier,
                quantity="probability mass of -3 <= x2* <= 5, -30 <= y1* <= 30 ('over 99%')"),
        _number("59.05%", id="fig5/x2>3/p_correct", source=_S43 + " (Figure 5)",
                computed_by=hier, quantity="probability of a correct decision with the "
                "hierarchy, centre of the x2 > 3 points (MC, 1e6 draws each)"),
        _number("58.89%", id="fig6/no_hierarchy/p_correct", source=_S43 + " (Figure 6)",
                quantity="probability of a correct decision ignoring the hierarchy, p = 1/2, "
                "rho1 = 0.099 (dashed black line of Figures 5 and 6)"),
        _number("59.2%", id="fig6/rho2=100/p_correct", source=_S43 + " (Figure 6)",
                computed_by=hier, quantity="probability of a correct decision with the "
                "hierarchy at rho2 = 100"),
    ]
    for k2, printed in enumerate(("11%", "40%", "30%", "14%", "4.6%", "0.7%", "0.08%",
                                  "0.01%")):
        out.append(_number(
            printed, id=f"table5/k2={k2}/posterior", source=_T5,
            computed_by="mcmc",
            quantity=f"MCMC posterior P[X2 = {k2} | D], D = (2, 1, -1), p = 1/2, 1e4 draws",
        ))
    settings = [
        ("table4/draws", 1e4, "10^4", "Tables 7-8 captions", "MCMC draws behind Tables 7 and 8"),
        ("fig4/draws", 1e3, "10^3", "Figure 4 caption",
         "MCMC draws per (x1*, x2*, y1*) tile in Figure 4"),
        ("fig4/draws_near_half", 2.5e5, "2.5 x 10^5", "Figure 4 caption (also Figure 10)",
         "MCMC draws for tiles with posterior close to 0.5 (Figure 4, Figure 10 top)"),
        ("fig5/datasets", 1e6, "10^6", "Figure 5 caption", "random draws of D per x2 in Figure 5"),
        ("fig5/draws", 1e3, "10^3", "Figures 5-6 captions", "MCMC draws per D in Figures 5 and 6"),
        ("fig6/datasets", 5e5, "5 x 10^5", "Figure 6 caption",
         "random draws of D per point in Figure 6"),
        ("s4/fig_point_mass/draws_near_half", 1e6, "10^6", "Figure 11 caption (supplement S4)",
         "MCMC draws near posterior 0.5 for the point-mass priors (Figure 11, supplement S4)"),
    ]
    out += [
        PublishedValue(id=id_, source=source, value=v, decimals=None, printed=printed,
                       kind="setting", quantity=what, computed_by=hier)
        for id_, v, printed, source, what in settings
    ]
    return out


#: Supplement S4's probabilities of a correct decision: (printed, id key, quantity).
_S4_P_CORRECT = (
    ("59%", "uniform", "probability of a correct decision, improper uniform prior on X2 "
     "(Figure 4 / top of Figure 10)"),
    ("59%", "truncated_uniform",
     "probability of a correct decision, X2 | X1 ~ Unif{k1, ..., 10}"),
    ("59%", "point_mass_x2=1",
     "probability of a correct decision, prior point mass at X2 = 1"),
    ("74%", "point_mass_x2=25", "probability of a correct decision, prior point mass at "
     "X2 = 25 (misspecified), truth x1 = x2 = 1"),
    ("42%", "point_mass_x2=25/counterfactual", "same prior, counterfactual truth x1 = x2 = 0"),
)


def _supplement() -> list[PublishedValue]:
    return [
        _number("0.05", id="s1.3/rho_levels_3_6", source="Supplement S1.3 text", kind="rho",
                relation="=", computed_by="census",
                quantity="'levels 3-6 all have rho_i ≈ 0.05' (tract, county, state, US)"),
        _number("2", id="s1.3/largest_increase_level", source="Supplement S1.3 text",
                kind="claim", computed_by="unique_levels",
                quantity="the marginal posterior and risk increase most between ell = 1 and "
                "ell = 2 (value: the ell reached by the largest step), for all priors"),
        _number("0.002", id="s2/variance_gap/s>0.5", source="Supplement S2 text", kind="bound",
                relation="<", computed_by="dg_sums",
                quantity="|sigma^2 - s| < 0.002 for all s > 0.5 (rho < 1), sigma^2 the "
                "variance of DG(0, s)"),
        PublishedValue(id="s2/variance_gap/s>1", source="Supplement S2 text", value=1e-6,
                       decimals=None, printed="10^{-6}", kind="bound", relation="<",
                       computed_by="dg_sums",
                       quantity="|sigma^2 - s| < 1e-6 for all s > 1 (rho < 1/2)"),
        *(_number(printed, id=f"s4/{key}/p_correct", source="Supplement S4 text",
                  computed_by="prior_sensitivity", quantity=quantity)
          for printed, key, quantity in _S4_P_CORRECT),
        PublishedValue(id="s4/truncated_uniform/upper", source="Supplement S4 text", value=10,
                       decimals=None, printed="10", kind="input",
                       computed_by="prior_sensitivity",
                       quantity="upper end of the truncated uniform prior on X2"),
        PublishedValue(id="s4/point_mass_misspecified/x2", source="Supplement S4 text",
                       value=25, decimals=None, printed="25", kind="input",
                       computed_by="prior_sensitivity",
                       quantity="location of the misspecified point-mass prior on X2"),
    ]


def _build() -> tuple[PublishedValue, ...]:
    records = (
        _table1() + _table2() + _census_table() + _section2_and_intro() + _table3_and_data()
        + _section42_text() + _section43() + _supplement()
    )
    seen: set[str] = set()
    for record in records:
        if record.id in seen:  # pragma: no cover - guarded by a test
            raise RuntimeError(f"duplicate published id {record.id!r}")
        seen.add(record.id)
    return tuple(records)


#: All published numbers, in the order of the paper.
PUBLISHED: tuple[PublishedValue, ...] = _build()
_BY_ID = {record.id: record for record in PUBLISHED}


def get(id_: str) -> PublishedValue:
    """The published number with identifier ``id_``.

    Raises
    ------
    KeyError
        Naming the identifier and a few known ones with the same first component.
    """
    try:
        return _BY_ID[id_]
    except KeyError:
        head = id_.split("/", 1)[0]
        near = [k for k in _BY_ID if k.startswith(head)][:5]
        raise KeyError(f"no published value {id_!r}; known ids starting {head!r}: {near}") from None


def select(prefix: str) -> list[PublishedValue]:
    """All published numbers whose identifier starts with ``prefix``, in paper order."""
    return [record for record in PUBLISHED if record.id.startswith(prefix)]


def ids() -> list[str]:
    """All identifiers, in paper order."""
    return [record.id for record in PUBLISHED]
