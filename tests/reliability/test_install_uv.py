"""tools/install_uv.py: ``make setup``'s first step, uv from its index's wheel (issue 36).

It must pick the wheel pip would (newest final, non-yanked version this interpreter may run
with a wheel for its platform, the best-ranked tag of that version), install nothing when the
wheel's sha256 is not the index's, and say why it failed (the Makefile then falls back to pip).
Served here by a local HTTP server from a folder: no network.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import importlib.util
import io
import json
import sys
import threading
import zipfile
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "install_uv.py"
#: A stand-in for uv's binary: it writes the arguments it was run with to ``$FAKE_UV_ARGS``.
FAKE_UV = '#!/bin/sh\nprintf "%s\\n" "$@" > "$FAKE_UV_ARGS"\n'


@pytest.fixture(autouse=True)
def _cache_of_the_test(tmp_path, monkeypatch):
    """Wheels kept under the test's folder, not the user's cache."""
    monkeypatch.delenv("DPRISK_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _load():
    spec = importlib.util.spec_from_file_location("install_uv_under_test", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tags(tool) -> list:
    (tags,) = tool._packaging("tags")
    return list(tags.sys_tags())


def _wheel(version: str) -> bytes:
    payload = io.BytesIO()
    with zipfile.ZipFile(payload, "w") as archive:
        archive.writestr("uv/__init__.py", "")
        archive.writestr(f"uv-{version}.data/scripts/uv", FAKE_UV)
    return payload.getvalue()


def _entry(filename: str, payload: bytes = b"", **extra) -> dict:
    return {"filename": filename, "url": f"../files/{filename}",
            "hashes": {"sha256": hashlib.sha256(payload).hexdigest()}, **extra}


def _page(tool) -> tuple[dict, str, dict[str, bytes]]:
    """A project page whose right answer is uv 9.0.0's wheel for this interpreter's best tag."""
    tags = _tags(tool)
    best, lower = str(tags[0]), str(tags[min(5, len(tags) - 1)])
    wheels = {f"uv-9.0.0-{best}.whl": _wheel("9.0.0"), f"uv-9.0.0-{lower}.whl": _wheel("9.0.0")}
    files = [
        _entry("uv-9.0.0.tar.gz"),  # not a wheel
        *(_entry(name, payload) for name, payload in wheels.items()),
        _entry("uv-9.1.0-py3-none-win_arm64.whl"),  # newer, no wheel for this platform
        _entry(f"uv-9.2.0-{best}.whl", yanked="broken"),  # newer, yanked
        _entry(f"uv-10.0.0rc1-{best}.whl"),  # newer, a pre-release
        _entry(f"uv-9.0.5-{best}.whl", **{"requires-python": ">=4"}),  # newer, not this Python
        _entry("uv-8.0.0-py3-none-any.whl"),  # older
    ]
    return {"name": "uv", "files": files}, f"uv-9.0.0-{best}.whl", wheels


def test_chooses_the_wheel_pip_would():
    tool = _load()
    page, expected, _ = _page(tool)
    python_version = ".".join(map(str, sys.version_info[:3]))

    def chosen(files):
        entry = tool.choose_wheel({"files": files}, _tags(tool), python_version)
        return None if entry is None else entry["filename"]

    files = page["files"]
    assert chosen(files) == expected
    assert chosen(files[:1] + files[2:]) == files[2]["filename"]  # the next-best tag
    assert chosen(files[:1] + files[3:]) == "uv-8.0.0-py3-none-any.whl"  # the older version
    assert chosen(files[:1] + files[3:-1]) is None


@contextlib.contextmanager
def _served(root: Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def _index(tool, root: Path, *, tamper: bool = False) -> str:
    page, expected, wheels = _page(tool)
    (root / "simple" / "uv").mkdir(parents=True)
    (root / "simple" / "files").mkdir()
    for name, payload in wheels.items():
        (root / "simple" / "files" / name).write_bytes(payload + (b"x" if tamper else b""))
    (root / "simple" / "uv" / "index.html").write_text(json.dumps(page))
    return expected


def test_installs_the_chosen_wheel_with_its_own_uv(tmp_path, monkeypatch):
    tool = _load()
    expected = _index(tool, tmp_path)
    monkeypatch.setenv("FAKE_UV_ARGS", str(tmp_path / "args.txt"))
    with _served(tmp_path) as index:
        assert tool.install("/venv/bin/python", index) == 0
        args = (tmp_path / "args.txt").read_text().splitlines()
        assert args[:-1] == ["pip", "install", "--quiet", "--offline", "--no-deps", "--python",
                             "/venv/bin/python"]
        assert Path(args[-1]).name == expected
        assert (tool.wheel_cache() / expected).is_file()  # kept for the next set-up
        for served in (tmp_path / "simple" / "files").iterdir():
            served.unlink()  # the next install reads the index's page, then the kept wheel
        (tmp_path / "args.txt").unlink()
        assert tool.install("/venv/bin/python", index) == 0
        assert Path((tmp_path / "args.txt").read_text().splitlines()[-1]).name == expected


@pytest.mark.parametrize("case", ["tampered wheel", "no such index"])
def test_refuses_and_installs_nothing(tmp_path, monkeypatch, capsys, case):
    tool = _load()
    expected = _index(tool, tmp_path, tamper=case == "tampered wheel")
    monkeypatch.setenv("FAKE_UV_ARGS", str(tmp_path / "args.txt"))
    if case == "tampered wheel":  # a kept copy that is not the index's is not used either
        tool.wheel_cache().mkdir(parents=True)
        (tool.wheel_cache() / expected).write_bytes(b"not the wheel")
    with _served(tmp_path) as index:
        if case == "no such index":
            index += "nowhere/"
        assert tool.install("/venv/bin/python", index) == 1
    assert not (tmp_path / "args.txt").exists()
    assert [path.name for path in tool.wheel_cache().glob("*") if path.name != expected] == []
    said = capsys.readouterr().err
    assert said.startswith("install_uv: ") and (
        "sha256 does not match" in said if case == "tampered wheel" else "404" in said)


def test_wheels_are_kept_where_dprisk_keeps_its_cache(tmp_path, monkeypatch):
    """``uv/`` below :func:`dprisk.runtime.cache.cache_root`, however that is set."""
    from dprisk.runtime.cache import cache_root

    tool = _load()
    assert tool.wheel_cache() == cache_root() / "uv" == tmp_path / "cache" / "dprisk" / "uv"
    monkeypatch.setenv("DPRISK_CACHE_DIR", str(tmp_path / "chosen"))
    assert tool.wheel_cache() == cache_root() / "uv" == tmp_path / "chosen" / "uv"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("DPRISK_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert tool.wheel_cache() == cache_root() / "uv" == tmp_path / "home" / ".cache/dprisk/uv"


def test_usage_without_a_venv(capsys):
    assert _load().main([]) == 2
    assert "usage: python tools/install_uv.py VENV_PYTHON" in capsys.readouterr().err
