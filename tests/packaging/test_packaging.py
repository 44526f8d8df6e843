"""Packaging: one top-level import package, ``dprisk``, that works beside the user's own modules.

The distribution used to install ``models``, ``inference`` and ``validation`` as top-level
packages; a user's ``models.py`` then shadowed ours. These tests build the wheel and run the
installed command and package from a folder that holds such files.
"""

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DPRISK = Path(sys.executable).with_name("dprisk")


#: What the wheel is built from (copied, so that the build writes nothing into the checkout).
SOURCES = ("pyproject.toml", "README.md", "dprisk", "models", "inference", "validation")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    # the build backend's PEP 517 hook, with the environment's setuptools (what pip does with
    # --no-build-isolation; the venv has no pip): an isolated build environment would install
    # the build requirements again, and what is tested is what goes into the wheel
    subprocess.run(
        [sys.executable, "-c", "import sys; from setuptools import build_meta; "
         "build_meta.build_wheel(sys.argv[1])", str(out)],
        cwd=source, check=True, capture_output=True,
    )
    (path,) = out.glob("*.whl")
    return path


def test_wheel_installs_only_dprisk(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"dprisk"}
    for package in ("models", "inference", "validation", "cli"):
        assert f"dprisk/{package}/__init__.py" in names
    # the shipped example prior travels with the package (found with importlib.resources)
    assert "dprisk/models/examples/negative_binomial_prior.py" in names


@pytest.fixture
def shadowing_folder(tmp_path) -> Path:
    """A working folder with the user's own ``models.py``, ``inference.py``, ``validation.py``."""
    for name in ("models", "inference", "validation"):
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('the user module {name}')\n")
    return tmp_path


def test_cli_works_beside_user_modules(shadowing_folder):
    done = subprocess.run(
        [str(DPRISK), "posterior", "--rho1", "census:block", "--x1-star", "3", "--json"],
        cwd=shadowing_folder, capture_output=True, text=True, check=True,
    )
    # closed form: P[X1 = 1 | x1* = 3] at the Census block rho, p = 1/2 (README example)
    assert json.loads(done.stdout)["posterior"] == pytest.approx(0.6215498533708959, rel=1e-12)


def test_api_imports_beside_user_modules(shadowing_folder):
    code = (
        "import dprisk.inference, dprisk.models, dprisk.validation\n"
        "from dprisk.models.priors.library import parse_prior\n"
        "print(type(parse_prior('models/examples/negative_binomial_prior.py:prior')).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=shadowing_folder, capture_output=True, text=True,
        check=True,
    )
    assert done.stdout.strip() == "UserPrior"
