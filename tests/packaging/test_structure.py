"""The package's structure (docs/architecture.md): layers, cycles, private names, module size.

Read from the source with ``ast`` (nothing is imported), so a violation names the file and line.
"""

import ast
import functools
import subprocess
import sys
from pathlib import Path

from fresh_python import packages_loaded_by

REPO = Path(__file__).resolve().parents[2]
#: Folder of each subpackage (the package-dir mapping of pyproject.toml).
FOLDERS = {
    "dprisk.models": REPO / "models",
    "dprisk.inference": REPO / "inference",
    "dprisk.validation": REPO / "validation",
    "dprisk.cli": REPO / "dprisk" / "cli",
    "dprisk.runtime": REPO / "dprisk" / "runtime",
}
#: "About 500 lines at most" per module (issue 10): the hard limit allows a little slack.
MAX_LINES = 550


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in FOLDERS.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


MODULES = _modules()


@functools.cache  # parsed once for the module's tests (private names, cycles)
def _imports(path: Path) -> tuple:
    """``(line, imported module, names)`` of every import of a dprisk module in ``path``."""
    return tuple(_find_imports(path))


def _find_imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("dprisk"):
                names = [alias.name for alias in node.names]
                # ``from dprisk.models import priors`` imports the module
                # dprisk.models.priors.library
                submodules = [f"{node.module}.{n}" for n in names
                              if f"{node.module}.{n}" in MODULES]
                if submodules:
                    for sub in submodules:
                        yield node.lineno, sub, []
                else:
                    yield node.lineno, node.module, names
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("dprisk"):
                    yield node.lineno, alias.name, []


def test_modules_found():
    assert len(MODULES) > 30
    assert "dprisk.inference.two_level.exact" in MODULES


def test_import_contracts_hold():
    """The import-linter contracts of pyproject.toml (layers, forbidden heavy imports, no cycles
    between rooms) hold; a broken contract's report names the import that broke it."""
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_no_private_names_across_modules():
    wrong = []
    for module, path in MODULES.items():
        for line, target, names in _imports(path):
            if target != module:
                wrong += [f"{path.relative_to(REPO)}:{line} {target}.{n}" for n in names
                          if n.startswith("_") and not n.endswith("__")]
    assert not wrong, "private names imported from another module:\n" + "\n".join(wrong)


def test_no_import_cycles():
    graph = {m: {t for _, t, _ in _imports(p) if t in MODULES and t != m}
             for m, p in MODULES.items()}
    # packages' __init__ modules re-export; an edge into a package is an edge into its __init__
    state: dict[str, int] = {}
    cycles = []

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*stack[stack.index(nxt):], nxt]))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_module_size():
    """Every module (one test for all: a test per module was 240 tests' overhead)."""
    sizes = {module: len(path.read_text().splitlines()) for module, path in MODULES.items()}
    too_long = [f"{module} has {lines} lines" for module, lines in sorted(sizes.items())
                if lines > MAX_LINES]
    assert not too_long, "one job, about 500 lines at most:\n" + "\n".join(too_long)


def test_exact_paths_import_no_pymc():
    """The closed-form and exact paths import no PyMC, PyTensor, ArviZ or Dask (architecture)."""
    loaded = packages_loaded_by(
        "import dprisk.inference.single_level.closed_form, dprisk.inference.two_level.exact\n")
    assert sorted(loaded & {"pymc", "pytensor", "arviz", "dask", "distributed"}) == []
