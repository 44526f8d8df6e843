"""tests/deferred_modules.py: a test module's library imported by its first use, not at
collection (issue 36: each xdist worker collects every module; Panel's import is paid only by
the worker that runs the tests using it)."""

from __future__ import annotations

import sys

import pytest
from deferred_modules import deferred_module


@pytest.fixture
def library(tmp_path, monkeypatch):
    """A module ``deferred_probe_lib`` on the path, not imported yet."""
    source = "VALUE = 41\ndef answer():\n    return VALUE + 1\n"
    (tmp_path / "deferred_probe_lib.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "deferred_probe_lib", raising=False)
    yield "deferred_probe_lib"
    sys.modules.pop("deferred_probe_lib", None)


def test_not_imported_until_a_public_name_is_read(library):
    stand_in = deferred_module(library)
    assert library not in sys.modules
    assert "not imported yet" in repr(stand_in)
    for private in ("__test__", "_mock_name", "__wrapped__"):  # what pytest probes
        assert not hasattr(stand_in, private)
    assert library not in sys.modules
    assert stand_in.answer() == 42
    assert library in sys.modules and "(imported)" in repr(stand_in)


def test_writes_go_through_to_the_module(library, monkeypatch):
    stand_in = deferred_module(library)
    monkeypatch.setattr(stand_in, "VALUE", 1)
    assert sys.modules[library].VALUE == 1 and stand_in.answer() == 2
    monkeypatch.undo()
    assert sys.modules[library].VALUE == 41
    with pytest.raises(AttributeError):
        stand_in.missing  # read for its error
