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
    from dprisk.inference.privacy import worst_case
    from dprisk.inference.product import histogram_tree, monte_carlo_risk

    assert dr.product.risk_mc is monte_carlo_risk.product_risk_mc
    assert dr.product.regular_tree is histogram_tree.regular_tree
    assert dr.product.simulate_measurements is histogram_tree.simulate_measurements
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
