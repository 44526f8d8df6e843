"""The flat public API (``import dprisk as dr``): lazy, complete, visible to static tools."""

import ast
import re
import sys
from pathlib import Path

import pytest
from fresh_python import modules_loaded_by

import dprisk as dr

REPO = Path(__file__).resolve().parents[2]
STUB = REPO / "dprisk" / "__init__.pyi"


def _stub_names(stub: Path = STUB) -> dict[str, str]:
    """``{public name: "dprisk.module:attribute"}`` read from a ``.pyi`` stub."""
    names = {}
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}:{alias.name}"
    return names


def test_every_public_name_resolves_to_its_room():
    for name in dr.__all__:
        value = getattr(dr, name)
        if name in dr.NAMESPACES:
            for inner in value.__all__:
                assert callable(getattr(value, inner)), f"{name}.{inner}"
        elif name != "__version__":
            assert callable(value), name


def test_stub_lists_exactly_the_lazy_names():
    lazy = {name: f"dprisk.{module}:{attribute}"
            for name, (module, attribute) in dr._LAZY.items()}
    lazy |= {name: f"dprisk:{name}" for name in dr.NAMESPACES}
    assert _stub_names() == lazy


@pytest.mark.parametrize("space", sorted(dr.NAMESPACES))
def test_namespace_stub_lists_exactly_its_names(space):
    import importlib

    module = importlib.import_module(f"dprisk.{space}")
    lazy = {name: f"dprisk.{room}:{attribute}" for name, (room, attribute) in module._LAZY.items()}
    assert _stub_names(REPO / "dprisk" / f"{space}.pyi") == lazy
    assert dir(module) == sorted(lazy)


def test_the_verbs_the_issue_names_are_there():
    for path in ("Scenario", "census_level", "exact_posterior", "two_level.posterior_x1",
                 "sample_posterior", "convergence_report", "two_level.p_correct",
                 "UserPrior", "ImproperUniform", "p_correct", "studies.simulate_p_correct",
                 "sweep", "privacy.epsilon_pld", "privacy.rho_for_target",
                 "attribute.cell_posterior", "unknown_others.p_correct", "nested.exact_posterior",
                 "single_level.build_model", "two_level.build_model", "nested.build_model"):
        value = dr
        for part in path.split("."):
            value = getattr(value, part)
        assert callable(value), path


def test_what_the_guide_pages_teach_has_a_public_name():
    """A capability the guide shows (docs/guide/product.md: the Monte Carlo product risk of
    ``dprisk product --method mc`` and the K-cell tree's builders; docs/guide/worst-case.md:
    the Bayes accuracy of a target unique at several levels, beside the one- and two-level
    ones) is reachable from ``dr`` and listed in the API reference, not only by module path."""
    from dprisk.inference.attribute import strategy
    from dprisk.inference.population import kernels
    from dprisk.inference.privacy import worst_case
    from dprisk.inference.product import histogram_attribute, histogram_tree, monte_carlo_risk

    assert dr.product.risk_mc is monte_carlo_risk.product_risk_mc
    assert dr.product.regular_tree is histogram_tree.regular_tree
    assert dr.product.simulate_measurements is histogram_tree.simulate_measurements
    # what a public function takes, built by public names: the tables of
    # dr.product.kcell_map_correct_exact, the design and block group of
    # dr.attribute.strategy_measures, the logits of dr.population.*_posteriors
    assert dr.product.cell_tables is histogram_attribute.cell_tables
    assert dr.attribute.census_block_design is strategy.census_block_design
    assert dr.attribute.BlockGroup is strategy.BlockGroup
    assert dr.population.informed_logits is kernels.informed_logits
    assert dr.population.outsider_logits is kernels.outsider_logits
    assert dr.nested.bayes_accuracy_unique_levels is worst_case.bayes_accuracy_levels
    assert dr.single_level.bayes_accuracy is worst_case.bayes_accuracy
    assert dr.two_level.bayes_accuracy is worst_case.bayes_accuracy_two_level


#: A numpydoc parameter entry's name(s): identifiers, comma-separated, each optionally starred.
PARAMETER_ENTRY = re.compile(r"\*{0,2}[A-Za-z_]\w*(\s*,\s*\*{0,2}[A-Za-z_]\w*)*")


def _public_objects() -> list[tuple[str, object]]:
    import importlib

    names = [(f"dr.{name}", getattr(dr, name)) for name in sorted(dr._LAZY)]
    for space in dr.NAMESPACES:
        module = importlib.import_module(f"dprisk.{space}")
        names += [(f"dr.{space}.{name}", getattr(module, name)) for name in module.__all__]
    return names


def _not_parameters(obj) -> list[str]:
    """Entries of ``obj``'s numpydoc ``Parameters`` section that name no parameter."""
    import inspect

    from numpydoc.docscrape import ClassDoc, FunctionDoc

    parsed = ClassDoc(obj) if inspect.isclass(obj) else FunctionDoc(obj)
    return [entry.name for entry in parsed["Parameters"]
            if not PARAMETER_ENTRY.fullmatch(entry.name.strip())]


def test_a_paragraph_inside_parameters_is_seen():
    def example(rho, delta):
        """Example.

        Parameters
        ----------
        rho : float
        delta : float

        Results are cached on disk, keyed by ``rho``.
        """

    assert _not_parameters(example) == ["Results are cached on disk, keyed by ``rho``."]


def test_every_parameters_entry_of_the_reference_names_parameters():
    """numpydoc reads each unindented line of a ``Parameters`` section as an entry: a paragraph
    written there (epsilon_cks' "Results are cached on disk ...") was rendered in the API
    reference as a parameter named by its words, its markup raw."""
    bad = {name: found for name, obj in _public_objects() if (found := _not_parameters(obj))}
    assert bad == {}


def _entry_names(entries) -> list[str]:
    """The parameter names of numpydoc entries (``rho1, rho2`` and ``**parameters`` split)."""
    return [part.strip().lstrip("*") for entry in entries for part in entry.name.split(",")
            if part.strip()]


def _signature_mismatch(obj) -> list[str]:
    """How ``obj``'s numpydoc sections disagree with its signature (empty when they agree).

    Every parameter of the signature has an entry in ``Parameters`` (or ``Other
    Parameters``; a class's fields may be its ``Attributes``), and every entry names a
    parameter. A ``**parameters`` catch-all may instead be documented by its keywords, which
    must then be those of a scenario (:meth:`dprisk.models.scenario.Scenario.two_level` or
    ``nested``, which receive them). Every entry says what the parameter is (its range alone,
    in the type, left the page without its meaning: 15 entries). A function says what it
    returns (``Returns`` or ``Yields``) unless it returns None.
    """
    import inspect

    from numpydoc.docscrape import ClassDoc, FunctionDoc

    from dprisk.models.scenario import Scenario

    is_class = inspect.isclass(obj)
    parsed = ClassDoc(obj) if is_class else FunctionDoc(obj)
    signature = inspect.signature(obj)
    params = [p for p in signature.parameters.values() if p.name not in ("self", "cls")]
    documented = _entry_names(parsed["Parameters"]) + _entry_names(parsed["Other Parameters"])
    fields = _entry_names(parsed["Attributes"]) if is_class else []
    names = [p.name for p in params]
    catch_all = [p.name for p in params if p.kind is p.VAR_KEYWORD]
    extra = [name for name in documented if name not in names]
    scenario_keywords = [sorted(set(inspect.signature(build).parameters) - {"cls"})
                         for build in (Scenario.two_level, Scenario.nested)]
    by_keywords = bool(catch_all) and sorted(extra) in scenario_keywords
    problems = []
    if extra and not by_keywords:
        problems.append(f"documented but not parameters: {extra}")
    missing = [name for name in names if name not in documented + fields
               and not (name in catch_all and by_keywords)]
    if missing:
        problems.append(f"parameters not documented: {missing}")
    if len(documented) != len(set(documented)):
        problems.append(f"documented twice: {documented}")
    bare = [entry.name for entry in parsed["Parameters"] if not "".join(entry.desc).strip()]
    if bare:
        problems.append(f"entries without a description: {bare}")
    returns_none = signature.return_annotation in (None, "None")
    if not is_class and not returns_none and not (parsed["Returns"] or parsed["Yields"]):
        problems.append("no Returns section")
    return problems


def test_a_docstring_that_disagrees_with_its_signature_is_seen():
    def documented(x1_star, rho, p=0.5, *, scenario=None, **parameters) -> float:
        """Example.

        Parameters
        ----------
        x1_star, rho : float
            Release and budget.
        p : float
            Prior.
        scenario : Scenario, optional
            Scenario.
        **parameters
            Keywords.

        Returns
        -------
        float
        """

    def by_keywords(x1_star, *, scenario=None, **parameters) -> float:
        """Example.

        Parameters
        ----------
        x1_star : int
            Release.
        scenario : Scenario, optional
            Scenario.
        rho1, rho2, d, p, known, prior
            The scenario's keywords.

        Returns
        -------
        float
        """

    def wrong(x1_star, rho, known=0, **parameters):
        """Example.

        Parameters
        ----------
        x1_star : int
            Release.
        rho1 : float
        """

    assert _signature_mismatch(documented) == []
    assert _signature_mismatch(by_keywords) == []
    assert _signature_mismatch(wrong) == [
        "documented but not parameters: ['rho1']",
        "parameters not documented: ['rho', 'known', 'parameters']",
        "entries without a description: ['rho1']", "no Returns section"]


def test_every_public_callable_documents_its_signature():
    """Each page of the API reference (numpydoc, generated from the docstrings) lists exactly
    the parameters the function takes and what it returns: 48 of the 100 public objects
    disagreed, 27 with parameters not documented (``dr.sweep``,
    ``dr.privacy.census_rho_for_target``: none at all), 41 with no ``Returns`` section."""
    seen, bad = set(), {}
    for name, obj in _public_objects():
        if id(obj) not in seen and (found := _signature_mismatch(obj)):
            bad[name] = found
        seen.add(id(obj))
    assert bad == {}


def test_parameters_documented_elsewhere_point_to_a_public_page():
    """An entry "As in :func:`other`" sends the reader to ``other``'s page, so ``other`` must
    have one: dr.unknown_others.posterior, risk and marginal_posterior pointed at the internal
    log_posterior_odds, shown in the reference as code without a link or a page."""
    import importlib
    import inspect

    from numpydoc.docscrape import ClassDoc, FunctionDoc

    objects = _public_objects()
    public = {id(obj) for _, obj in objects}
    unlinked = []
    for name, obj in objects:
        parsed = ClassDoc(obj) if inspect.isclass(obj) else FunctionDoc(obj)
        for entry in parsed["Parameters"]:
            for target in re.findall(r"[Aa]s in :(?:func|meth|class):`~?([\w.]+)`",
                                     " ".join(entry.desc)):
                module, _, attribute = (target if target.startswith("dprisk.")
                                        else f"{obj.__module__}.{target}").rpartition(".")
                found = getattr(importlib.import_module(module), attribute, None)
                if id(found) not in public:
                    unlinked.append(f"{name}: {entry.name} -> {target}")
    assert unlinked == []


@pytest.mark.parametrize("old", sorted(dr.RENAMED))
def test_every_old_name_works_and_warns_once_naming_the_new(old):
    import warnings

    space, new = dr.RENAMED[old].split(".")
    dr._warned.discard(old)
    with pytest.warns(FutureWarning, match=rf"dprisk\.{old} is deprecated; use "
                                           rf"dprisk\.{space}\.{new}$"):
        value = getattr(dr, old)
    assert value is getattr(getattr(dr, space), new)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(dr, old) is value  # once per process
    assert old not in dr.__all__ and old not in dir(dr)


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        dr.nothing_here


def test_import_dprisk_loads_nothing_heavy():
    loaded = modules_loaded_by("import dprisk")
    heavy = {"numpy", "scipy", "pymc", "pytensor", "arviz", "xarray", "dask"}
    assert sorted({name.split(".")[0] for name in loaded} & heavy) == []
    # Only the standard-library-only hook that keeps xarray from importing Dask
    # (dprisk.runtime.deferred_dask): no room is loaded.
    assert sorted(name for name in loaded if name.startswith("dprisk.")) == [
        "dprisk.runtime", "dprisk.runtime.deferred_dask"]
    new = {name.split(".")[0] for name in loaded - modules_loaded_by("pass")}
    assert new <= {"dprisk", *sys.stdlib_module_names}


def test_module_docstring_example_runs():
    example = re.search(r"::\n\n((?:    .*\n|\n)+)", dr.__doc__).group(1)
    code = "\n".join(line[4:] for line in example.splitlines())
    exec(compile(code, "dprisk.__doc__", "exec"), {})


def test_static_analysis_follows_dprisk_modules_to_their_files():
    """An editor's go-to-definition (jedi, with the project's venv) finds each room's file."""
    jedi = pytest.importorskip("jedi")
    project = jedi.Project(REPO, environment_path=sys.prefix)
    cases = {
        "import dprisk.inference.two_level.exact\ndprisk.inference.two_level.exact":
            REPO / "inference" / "two_level" / "exact.py",
        "from dprisk.validation.report import page\npage":
            REPO / "validation" / "report" / "page.py",
        "from dprisk.models.scenario import Scenario\nScenario": REPO / "models" / "scenario.py",
    }
    for source, expected in cases.items():
        script = jedi.Script(source, path=REPO / "scratch.py", project=project)
        lines = source.splitlines()
        found = script.goto(len(lines), len(lines[-1]) - 1, follow_imports=True)
        assert found, source
        assert Path(found[0].module_path).resolve() == expected.resolve(), source


def test_the_repository_uses_no_old_flat_name():
    """Docs, notebooks, tests and code call the namespaced names (the old ones warn)."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.rst"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.split()
    old = "|".join(sorted(dr.RENAMED, key=len, reverse=True))
    pattern = re.compile(rf"\b(?:dr|dprisk)\.({old})\b")
    uses = [f"{path}: {match.group(0)}" for path in tracked if path != "dprisk/__init__.py"
            and (REPO / path).is_file()
            for match in pattern.finditer((REPO / path).read_text(errors="replace"))]
    assert not uses, uses
