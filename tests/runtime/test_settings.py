"""Every ``DPRISK_*`` variable is read and validated in one place (dprisk/runtime/settings.py).

Table: every variable (and the old names of the limits) x malformed values x every
subcommand. Each is refused before the command runs: exit status 2, nothing on stdout, one
stderr line naming the variable as set, in the form of an option's refusal
(``VARIABLE must be FORM, got 'TEXT'``). The cases run in this process (the check comes
before any computation, so every command line below would otherwise run).
"""

from __future__ import annotations

import pytest
from cli_helpers import run_cli

from dprisk.runtime import settings
from dprisk.runtime.memory_limit import memory_limit
from dprisk.runtime.work_limit import work_limit

#: One quick, valid command line per subcommand.
COMMANDS = {
    "census": ["census"],
    "posterior": ["posterior", "--rho1", "0.5", "--x1-star", "1"],
    "marginal": ["marginal", "--rho1", "0.5"],
    "sweep": ["sweep", "--rho1", "0.5", "--rho2", "0.5", "--d", "3", "--x2", "2",
              "--out", "s.nc"],
    "reproduce": ["reproduce", "--out", "report"],
    "epsilon": ["epsilon", "--rho", "0.5"],
    "budget": ["budget", "--measure", "marginal-risk", "--target", "1.5"],
    "attribute": ["attribute", "--rho1", "0.5", "--cells", "3"],
}
VARIABLES = ["DPRISK_MEMORY_LIMIT", "DPRISK_MEMORY_BUDGET", "DPRISK_WORK_LIMIT",
             "DPRISK_WORK_BUDGET", "DPRISK_KERNELS", "DPRISK_CACHE_DIR",
             "DPRISK_SCHEDULER_TIMEOUT", "DPRISK_LIVE"]
BAD = ["0", "-1", "abc", "nan", "bogus"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """One empty working directory for the module's tests (those that check it stays empty
    do so after each run): a ``tmp_path`` per test was about a third of their CPU."""
    return tmp_path_factory.mktemp("settings")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, workdir):
    for name, spec in settings.SETTINGS.items():
        for variable in (name, *spec.aliases):
            monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(workdir)


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize("variable", VARIABLES)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_malformed_variable_is_refused_by_every_command(command, variable, value,
                                                        monkeypatch, capsys, workdir):
    monkeypatch.setenv(variable, value)
    status, out, err = run_cli(COMMANDS[command], capsys)
    assert status == 2, err
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"dprisk {command}: error: {variable} must be "), err
    assert err.rstrip().endswith(f"got {value!r}"), err
    assert not list(workdir.iterdir())  # nothing written


@pytest.mark.parametrize(("variable", "value", "expected"), [
    ("DPRISK_MEMORY_LIMIT", "1MiB", 1024**2),
    ("DPRISK_MEMORY_BUDGET", "1MiB", 1024**2),
    ("DPRISK_WORK_LIMIT", "1e3", 1e3),
    ("DPRISK_WORK_BUDGET", "1e3", 1e3),
])
def test_new_names_and_old_aliases_set_the_limits(variable, value, expected, monkeypatch):
    monkeypatch.setenv(variable, value)
    got = memory_limit() if "MEMORY" in variable else work_limit()
    assert got == expected


def test_a_limit_refusal_names_the_variable_the_user_set(monkeypatch, capsys):
    monkeypatch.setenv("DPRISK_WORK_BUDGET", "10")
    status, _, err = run_cli(["marginal", "--rho1", "0.5", "--rho2", "0.5", "--d", "3",
                              "--x2", "3", "--method", "mc", "--datasets", "1000",
                              "--seed", "1"], capsys)
    assert status == 2
    assert "work limit of 10 steps" in err and "DPRISK_WORK_BUDGET=100" in err, err


def test_new_name_and_old_name_must_agree(monkeypatch, capsys):
    monkeypatch.setenv("DPRISK_MEMORY_LIMIT", "1GiB")
    monkeypatch.setenv("DPRISK_MEMORY_BUDGET", "1024MiB")  # the same size: fine
    assert memory_limit() == 1024**3
    monkeypatch.setenv("DPRISK_MEMORY_BUDGET", "2GiB")
    status, _, err = run_cli(COMMANDS["epsilon"], capsys)
    assert status == 2
    assert "DPRISK_MEMORY_LIMIT" in err and "DPRISK_MEMORY_BUDGET" in err, err


@pytest.mark.parametrize(("variable", "value"), [
    ("DPRISK_MEMORY_LIMIT", "16GiB"), ("DPRISK_WORK_LIMIT", "1e13"),
    ("DPRISK_KERNELS", "numpy"), ("DPRISK_SCHEDULER_TIMEOUT", "2.5"), ("DPRISK_KERNELS", ""),
])
def test_valid_values_are_accepted(variable, value, monkeypatch, capsys):
    monkeypatch.setenv(variable, value)
    status, out, err = run_cli([*COMMANDS["epsilon"], "--json"], capsys)
    assert status == 0, err
    assert out.startswith("{")


def test_cache_dir_must_be_a_directory(monkeypatch, capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("DPRISK_CACHE_DIR", str(blocker))
    status, _, err = run_cli(COMMANDS["epsilon"], capsys)
    assert status == 2
    assert "DPRISK_CACHE_DIR must be an absolute directory path" in err, err
    monkeypatch.setenv("DPRISK_CACHE_DIR", str(tmp_path / "new"))
    assert run_cli(COMMANDS["epsilon"], capsys)[0] == 0


def test_every_dprisk_variable_of_the_package_is_in_the_table():
    """A grep of the package: every DPRISK_* name it mentions is a setting or an alias."""
    import re
    from pathlib import Path

    root = Path(settings.__file__).resolve().parents[2]
    known = set(settings.known_variables())
    found = set()
    for folder in ("dprisk", "inference", "models", "validation"):
        for path in (root / folder).rglob("*.py"):
            found |= set(re.findall(r"DPRISK_[A-Z_]+[A-Z]", path.read_text()))
    assert found <= known, found - known


@pytest.mark.parametrize("argv", [["census", "--help"], ["help", "census"], ["--version"],
                                  ["--help"], ["census"]])
def test_a_malformed_variable_is_refused_before_help_and_version(argv, monkeypatch, capsys):
    """``--help`` and ``--version`` exit inside argparse: the check comes before parsing (it
    once came after, and ``DPRISK_MEMORY_LIMIT=nan dprisk census --help`` exited 0)."""
    monkeypatch.setenv("DPRISK_MEMORY_LIMIT", "nan")
    status, out, err = run_cli(argv, capsys)
    assert status == 2 and out == "" and err.count("\n") == 1, (status, err)
    assert "error: DPRISK_MEMORY_LIMIT must be " in err, err


@pytest.mark.parametrize(("variable", "suggested"), [  # spelled in two parts: not in the grep
    ("DPRISK_" "MEMORY_LIMT", "DPRISK_MEMORY_LIMIT"), ("DPRISK_" "KERNEL", "DPRISK_KERNELS"),
    ("DPRISK_" "WORK_BUDGT", "DPRISK_WORK_BUDGET"), ("DPRISK_" "FOO", None),
])
@pytest.mark.parametrize("argv", [COMMANDS["epsilon"], ["census", "--help"]])
def test_an_unknown_variable_is_refused_with_the_nearest_name(variable, suggested, argv,
                                                              monkeypatch, capsys):
    monkeypatch.setenv(variable, "16GiB")
    status, out, err = run_cli(argv, capsys)
    assert status == 2 and out == "" and err.count("\n") == 1, (status, err)
    assert f"error: {variable} is not a dprisk setting" in err, err
    if suggested:
        assert f"did you mean {suggested}?" in err, err
    else:
        assert "did you mean" not in err, err


def test_every_dprisk_variable_the_project_sets_is_known(monkeypatch, capsys):
    """A grep of the whole repository (tests, Makefile, benchmarks, tools, docs, .ci): every
    DPRISK_* name is a setting, an old name or one the tooling reads; each set is accepted."""
    import re
    from pathlib import Path

    root = Path(settings.__file__).resolve().parents[2]
    found = set()
    for folder in ("dprisk", "inference", "models", "validation", "tests", "benchmarks",
                   "tools", "docs", "notebooks", ".ci"):
        for path in (root / folder).rglob("*"):
            if path.is_file() and path.suffix in ("", ".py", ".md", ".toml", ".ipynb", ".sh",
                                                  ".yml", ".yaml", ".txt", ".cfg"):
                found |= set(re.findall(r"DPRISK_[A-Z_]+[A-Z]", path.read_text(errors="ignore")))
    for name in ("Makefile", "pyproject.toml", "README.md"):
        found |= set(re.findall(r"DPRISK_[A-Z_]+[A-Z]", (root / name).read_text()))
    assert found <= set(settings.known_variables()), found - set(settings.known_variables())
    for name in settings.TOOLING_VARIABLES:
        monkeypatch.setenv(name, "1")
    assert run_cli(COMMANDS["epsilon"], capsys)[0] == 0
