"""The report's headline findings (validation.report.findings), read from the records."""

from dprisk.validation.report.findings import findings


def _record(id_, status, explanation, *, source="Section 4.3 text", published=0.5, mcse=None):
    return {"id": id_, "source": source, "published": published, "computed": 0.4,
            "mcse": mcse, "status": status, "explanation": explanation}


def test_the_sampler_finding_counts_only_the_records_compared_with_the_sampler():
    records = [
        _record("table4/k1=1/posterior", "differs", "exact 0.503; Variant: 0.578",
                source="Table 7", published=0.57, mcse=0.0058),
        _record("table5/k2=0/posterior", "within-mc-error", "exact 0.129; Variant: 0.110",
                source="Table 8", published=0.11, mcse=0.0039),
        _record("s4/uniform/p_correct", "differs", "constraint-dropping Gibbs variant 59.46%"),
        _record("fig5/x2>3/p_correct", "match", "the variant 58.98%"),
        # a number of its own finding (rho2 rounded twice) and a claim about the release
        # region: neither is compared with the sampler, both were counted (3 + 2 = 5)
        _record("fig5/caption/rho2", "differs", "rho2 = 0.246485 rounds to 0.246"),
        _record("fig4/region_mass", "does not hold", "the region holds 98.984%", published=None),
    ]
    (finding,) = [f for f in findings(records) if "k1 ≤ k2" in f.title]
    assert "(3 records of Tables 7–8, Figures 4–6 and supplement S4 compared with it are " \
           "not a match)" in finding.text


def test_finding_numbers_are_the_records():
    """The z of the sampler finding is (published - exact) / mcse with its sign; the S6
    finding quotes the LARGEST excess; rho2 is shown to the 3 decimals the paper prints."""
    records = [
        _record("table4/k1=1/posterior", "differs", "Variant: 0.578", source="Table 7",
                published=0.57, mcse=0.0058),  # computed 0.4: z = +29.3
        {**_record("s6/fig10_left/bounded_by_no_postprocessing", "does not hold", "x",
                   published=None), "computed": 3e-4},
        {**_record("s6/fig10_right/bounded_by_no_postprocessing", "does not hold", "x",
                   published=None), "computed": 2e-3},
        {**_record("fig5/caption/rho2", "differs", "x", published=0.247),
         "computed": 0.246485},
    ]
    by_title = {f.title: f.text for f in findings(records)}
    (sampler,) = [t for title, t in by_title.items() if "k1 ≤ k2" in title]
    assert "(+29.3 Monte Carlo standard errors away)" in sampler
    (s6,) = [t for title, t in by_title.items() if title.startswith("S6")]
    assert "exceeds it by up to 0.002" in s6
    assert by_title["ρ2 rounded twice"].endswith(
        "is 0.246485, which rounds to 0.246; the paper prints 0.247.")
