"""Every reference to an object of ``dprisk`` in the repository's text names an existing one.

The site's build (``-W``, ``nitpicky``) checks the references of the pages it renders: the
docs and the public names' docstrings. The other modules' docstrings are read in editors,
``help()`` and the source; a Sphinx role there (``dprisk/cli/draws_output.py`` named the
function ``dprisk.inference.mcmc.arviz_tree``, which is in ``arviz_groups``) was never
checked. This test resolves each role's ``dprisk.`` target statically: the module by its file (the
subpackages are committed links under ``dprisk/``), then each attribute among the names the
file defines at its top level (functions, classes, assignments, imports, a namespace's
``_LAZY`` table) and a class's body (methods, fields), without importing anything.
"""

from __future__ import annotations

import ast
import re
import subprocess
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: A Sphinx role whose target is an object of this package.
ROLE = re.compile(r":(?:func|mod|class|data|attr|meth|obj|exc):`~?(dprisk\.[\w.]+)`")


def _names(body: list[ast.stmt]) -> dict[str, ast.AST | None]:
    """Names a module or class body defines: each with its node (a class's, to look inside)."""
    found: dict[str, ast.AST | None] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found |= {name.id: None for target in targets for name in ast.walk(target)
                      if isinstance(name, ast.Name)}
            if isinstance(node.value, ast.Dict) and "_LAZY" in found:  # a namespace's names
                found |= {key.value: None for key in node.value.keys
                          if isinstance(key, ast.Constant)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {(alias.asname or alias.name).split(".")[0]: None for alias in node.names}
        elif isinstance(node, (ast.If, ast.Try)):
            found |= _names(node.body)
    return found


@cache
def _module_names(path: Path) -> dict[str, ast.AST | None]:
    return _names(ast.parse(path.read_text()).body)


def _module_file(parts: list[str]) -> Path | None:
    """The file of module ``dprisk.<parts>``, or None."""
    base = REPO.joinpath("dprisk", *parts)
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def resolves(target: str) -> bool:
    """Whether the dotted ``dprisk.`` name ``target`` names a module or something in one."""
    parts = target.split(".")[1:]
    for cut in range(len(parts), -1, -1):  # the longest module prefix
        path = _module_file(parts[:cut])
        if path is None:
            continue
        scope = _module_names(path)
        for name in parts[cut:]:
            if name not in scope:
                return False
            node = scope[name]
            if not isinstance(node, ast.ClassDef):
                return True  # an attribute of a function or constant: not followed
            scope = _names(node.body)
        return True
    return False


def test_the_resolver_sees_a_wrong_module_path():
    assert resolves("dprisk.inference.mcmc.arviz_groups.arviz_tree")
    assert resolves("dprisk.two_level.p_correct")  # a namespace's lazy name
    assert resolves("dprisk.explore.results.WhatIf.draw")  # a dataclass field
    assert not resolves("dprisk.inference.mcmc.arviz_tree")
    assert not resolves("dprisk.inference.no_such_module.name")


def test_every_dprisk_role_in_the_repository_resolves():
    tracked = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.rst", "*.pyi"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.split()
    broken = [f"{path}: {match.group(1)}" for path in tracked if (REPO / path).is_file()
              for match in ROLE.finditer((REPO / path).read_text(errors="replace"))
              if not resolves(match.group(1))]
    assert broken == []


#: A dotted name of this package in a page's or notebook's text, written in full
#: (``dprisk.models.priors.library``) or from a subpackage (``models.census.histogram_1940``).
DOTTED = re.compile(r"(?<![\w/.-])((?:dprisk|models|inference|validation)(?:\.[A-Za-z_]\w*)+)")
#: A file name's suffix, not an attribute (``models.census.strategy`` is, ``notes.md`` not).
SUFFIXES = {"py", "pyi", "md", "nc", "json", "html", "png", "csv", "parquet"}


def test_every_dotted_name_the_pages_and_notebooks_show_resolves():
    """The pages and notebooks name modules and functions in plain text and code spans, read
    by the user (no Sphinx role checks them): the notebooks' parameters cells sent the reader
    to ``models.priors.parse_prior``, which is ``models.priors.library.parse_prior``
    (``dr.parse_prior``)."""
    pages = subprocess.run(["git", "ls-files", "README.md", "docs/*.md", "notebooks/*.py",
                            "notebooks/*.md"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    names = [(path, match.group(1)) for path in pages
             for match in DOTTED.finditer((REPO / path).read_text())
             if match.group(1).rsplit(".", 1)[1] not in SUFFIXES]
    assert len(names) >= 100
    broken = [f"{path}: {name}" for path, name in names
              if not resolves(name if name.startswith("dprisk.") else f"dprisk.{name}")]
    assert broken == []
