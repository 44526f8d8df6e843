"""Install uv into a new virtual environment from its index's files: ``make setup``'s first step.

::

    python tools/install_uv.py VENV_PYTHON

The venv has no installer of its own yet (``make setup`` makes it ``--without-pip``). pip
installing uv into it took 4.6 s of wall and 3.8 s of CPU on the 2-core machine, most of it
not installing: pip re-runs itself under the venv's interpreter (``--python``), then builds and
checks a ``Link`` for each of the 6,000 files that uv's index page lists, one at a time (2.8 s).
This reads the same page as JSON (the simple API of PEP 691) and picks the same wheel by pip's
own rules (``pip._vendor.packaging``: the newest final, non-yanked version whose
``Requires-Python`` this interpreter meets and which has a wheel for one of this interpreter's
tags, the best-ranked tag first), downloads it (or takes the copy an earlier set-up kept,
:func:`wheel_cache`), checks its sha256 against the index's, and has the uv inside it install
that wheel into the venv (``uv pip install --no-deps``, so the venv holds a whole ``uv``
distribution, as pip would have left it): about 1.5 s.

The index is the one pip is configured with (``PIP_INDEX_URL`` or pip's configuration files'
``index-url``), else PyPI. Any failure (no network, an index without the JSON API, no wheel for
this platform, a hash that does not match, uv failing) exits with status 1 having installed
nothing, and ``make setup`` falls back to pip.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import stat
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
if str(TOOLS) not in sys.path:  # loaded from its file (the tests), not run as a script
    sys.path.insert(0, str(TOOLS))

from cache_root import dprisk_cache_root, write_whole  # noqa: E402  (tools/cache_root.py)

#: The index when pip has none configured.
PYPI_SIMPLE = "https://pypi.org/simple/"
#: The simple API's JSON form (PEP 691).
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"
#: Seconds each request may take before the fallback is taken.
TIMEOUT_S = 30


def configured_index() -> str:
    """The index URL pip would read: ``PIP_INDEX_URL``, its configuration files', or PyPI."""
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"]
    try:
        from pip._internal.configuration import Configuration

        configuration = Configuration(isolated=False)
        configuration.load()
        settings = dict(configuration.items())
        for key in ("install.index-url", "global.index-url"):  # pip install's precedence
            if settings.get(key):
                return settings[key]
    except Exception:  # pip's internals moved, or a file it cannot read: PyPI, pip's default
        pass
    return PYPI_SIMPLE


def _packaging(*names: str) -> list:
    """``packaging``'s submodules ``names``: pip's own copy (pip's rules), else ``packaging``."""
    import importlib

    try:
        return [importlib.import_module(f"pip._vendor.packaging.{name}") for name in names]
    except ImportError:
        return [importlib.import_module(f"packaging.{name}") for name in names]


def choose_wheel(page: dict, tags: list, python_version: str) -> dict | None:
    """The file entry of ``page`` (a PEP 691 project page) pip would install, or None.

    The newest final, non-yanked version that allows ``python_version`` and has a wheel with a
    tag in ``tags`` (best first, as ``packaging.tags.sys_tags`` gives them); among that
    version's wheels, the one with the best-ranked tag. Versions are tried newest first, so
    only their wheels' names and ``Requires-Python`` are parsed (all 6,000 of uv's files: 1.6 s).
    """
    specifiers, utils, version_module = _packaging("specifiers", "utils", "version")
    InvalidSpecifier, SpecifierSet = specifiers.InvalidSpecifier, specifiers.SpecifierSet
    InvalidWheelFilename = utils.InvalidWheelFilename
    InvalidVersion, Version = version_module.InvalidVersion, version_module.Version

    rank = {tag: index for index, tag in enumerate(tags)}
    by_version: dict[str, list[dict]] = {}
    for entry in page.get("files", []):
        name = entry.get("filename", "")
        if name.endswith(".whl") and not entry.get("yanked") and name.count("-") >= 4:
            by_version.setdefault(name.split("-")[1], []).append(entry)
    versions = []
    for text in by_version:
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not (version.is_prerelease or version.is_devrelease):
            versions.append((version, text))
    allowed: dict[str, bool] = {}
    for _, text in sorted(versions, reverse=True):
        best = None
        for entry in by_version[text]:
            requires = entry.get("requires-python") or ""
            if requires not in allowed:
                try:
                    allowed[requires] = python_version in SpecifierSet(requires)
                except InvalidSpecifier:
                    allowed[requires] = False
            try:
                wheel_tags = utils.parse_wheel_filename(entry["filename"])[3]
            except InvalidWheelFilename:
                continue
            tag_rank = min((rank[tag] for tag in wheel_tags if tag in rank), default=None)
            if allowed[requires] and tag_rank is not None and (best is None
                                                                or tag_rank < best[0]):
                best = (tag_rank, entry)
        if best is not None:
            return best[1]
    return None


class Refused(Exception):
    """Why uv was not installed here (``make setup`` then falls back to pip)."""


def _get(url: str, accept: str | None = None) -> bytes:
    """The body at ``url``; :class:`Refused` naming the URL on any failure to get it whole."""
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return response.read()
    except (OSError, http.client.HTTPException, ValueError) as error:
        raise Refused(f"{url}: {error}") from error


def wheel_cache() -> Path:
    """Where downloaded uv wheels are kept: ``uv/`` below dprisk's cache directory.

    That directory is :func:`cache_root.dprisk_cache_root`'s, by
    :func:`dprisk.runtime.cache.cache_root`'s rule.
    """
    return dprisk_cache_root() / "uv"


def _cached_wheel(entry: dict) -> bytes | None:
    """The kept copy of ``entry``'s wheel when its sha256 is the index's, else None."""
    try:
        payload = (wheel_cache() / entry["filename"]).read_bytes()
    except OSError:
        return None
    return payload if hashlib.sha256(payload).hexdigest() == entry["hashes"]["sha256"] else None


def _keep_wheel(entry: dict, payload: bytes) -> None:
    """Keep the checked wheel for the next set-up (replaced whole; nothing when unwritable)."""
    kept = wheel_cache() / entry["filename"]
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        write_whole(kept, payload)
    except OSError:
        pass


def _install(venv_python: str, index: str) -> None:
    (tags,) = _packaging("tags")
    page_url = urllib.parse.urljoin(index.rstrip("/") + "/", "uv/")
    try:
        page = json.loads(_get(page_url, JSON_ACCEPT))
    except ValueError as error:  # not the JSON API's answer
        raise Refused(f"{page_url}: {error}") from error
    python_version = ".".join(map(str, sys.version_info[:3]))
    entry = choose_wheel(page, list(tags.sys_tags()), python_version)
    if entry is None or "sha256" not in entry.get("hashes", {}):
        raise Refused(f"no wheel with a sha256 for this platform at {page_url}")
    payload = _cached_wheel(entry)  # checked already
    if payload is None:
        payload = _get(urllib.parse.urljoin(page_url, entry["url"]))
        if hashlib.sha256(payload).hexdigest() != entry["hashes"]["sha256"]:
            raise Refused(f"{entry['filename']}: sha256 does not match the index's")
        _keep_wheel(entry, payload)
    with tempfile.TemporaryDirectory(prefix="dprisk-uv-") as folder:
        wheel = os.path.join(folder, entry["filename"])
        with open(wheel, "wb") as out:
            out.write(payload)
        try:
            with zipfile.ZipFile(wheel) as archive:
                (member,) = [name for name in archive.namelist()
                             if name.endswith((".data/scripts/uv", ".data/scripts/uv.exe"))]
                uv = archive.extract(member, folder)
        except (zipfile.BadZipFile, ValueError, OSError) as error:
            raise Refused(f"{entry['filename']}: {error}") from error
        os.chmod(uv, os.stat(uv).st_mode | stat.S_IXUSR)
        done = subprocess.run([uv, "pip", "install", "--quiet", "--offline", "--no-deps",
                               "--python", venv_python, wheel], check=False)
        if done.returncode != 0:
            raise Refused(f"{entry['filename']}: its uv exited with status {done.returncode}")


def install(venv_python: str, index: str | None = None) -> int:
    """Install uv into the venv of ``venv_python``; exit status 0, else 1 saying why.

    From ``index`` (default: pip's, see the module's docstring); the reason goes to standard
    error.
    """
    try:
        _install(venv_python, index or configured_index())
    except (Refused, ImportError) as refusal:  # ImportError: neither pip nor packaging here
        print(f"install_uv: {refusal}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    """``install_uv.py VENV_PYTHON``: 2 with the usage when it is not given."""
    if len(argv) != 1:
        print("usage: python tools/install_uv.py VENV_PYTHON", file=sys.stderr)
        return 2
    return install(argv[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
