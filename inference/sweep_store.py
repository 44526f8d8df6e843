"""The resumable files of a sweep: a chunk store, atomic writes, the finished file.

With ``out="FILE.nc"`` every finished chunk is saved at once in a sidecar directory
``FILE.nc.chunks/`` (one ``.npy`` per chunk, written to a temporary name and moved into place
with :func:`os.replace`, so a chunk file is either complete or absent), next to a
``manifest.json`` of the sweep's parameters (:meth:`SweepPlan.manifest`).
A sweep run again with the same ``out`` and parameters finds its finished chunks here; a
different sweep is refused rather than mixed in. :meth:`ChunkStore.finish` writes the Dataset
to a temporary file beside ``FILE.nc``, moves it onto ``FILE.nc`` and removes the sidecar
directory. :func:`stored_manifest` reads the identity of a sweep stored at ``out``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xarray as xr

from dprisk.inference.sweep_plan import SweepPlan, canonical_json

__all__ = [
    "ENGINE",
    "MANIFEST",
    "ChunkStore",
    "check_out",
    "chunk_dir",
    "load_finished",
    "stored_manifest",
]

#: netCDF engine used for ``out`` files (the ``netCDF4`` package).
ENGINE = "netcdf4"
#: File name of the manifest in the sidecar directory.
MANIFEST = "manifest.json"


def chunk_dir(out: Path) -> Path:
    """The sidecar directory of the output file ``out``: ``out + ".chunks"``."""
    return out.with_name(out.name + ".chunks")


class ChunkStore:
    """The sidecar directory ``out + ".chunks"``: manifest and one ``.npy`` per chunk."""

    def __init__(self, out: Path, plan: SweepPlan):
        self.out = out
        self.dir = chunk_dir(out)
        self.plan = plan
        self.manifest = json.loads(json.dumps(plan.manifest()))

    def open(self) -> None:
        """Create the directory and manifest, or check an existing manifest matches."""
        path = self.dir / MANIFEST
        if path.exists():
            stored = json.loads(path.read_text())
            if stored != self.manifest:
                raise ValueError(
                    f"out: {self.dir} holds the chunks of a different sweep (other parameters,"
                    f" quantity or chunk_size); rerun it with its own parameters, or delete "
                    f"{self.dir} to start this one"
                )
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, lambda f: f.write(canonical_json(self.manifest).encode()))

    def chunk_path(self, chunk: int) -> Path:
        """File of chunk ``chunk``."""
        return self.dir / f"chunk_{chunk:07d}.npy"

    def load(self, chunk: int) -> np.ndarray | None:
        """Values of a finished chunk, or None when it is missing or unreadable."""
        path = self.chunk_path(chunk)
        if not path.exists():
            return None
        try:
            values = np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            return None
        expected = (len(self.plan.variables), len(self.plan.chunk_indices(chunk)))
        return values if values.shape == expected else None

    def save(self, chunk: int, values: np.ndarray) -> None:
        """Write a chunk atomically (temporary file, then :func:`os.replace`)."""
        _write_atomic(self.chunk_path(chunk), lambda f: np.save(f, values, allow_pickle=False))

    def finish(self, ds: xr.Dataset) -> xr.Dataset:
        """Write ``ds`` atomically onto the output file, remove the chunks, read it back."""
        with _atomic_path(self.out) as tmp:
            ds.to_netcdf(tmp, engine=ENGINE)
        self.remove()
        return xr.load_dataset(self.out, engine=ENGINE)

    def remove(self) -> None:
        """Delete the directory once the output file is in place."""
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def _atomic_path(path: Path):
    """Yield a temporary path beside ``path``; move it onto ``path`` if the block succeeds.

    On an exception the temporary file is deleted and ``path`` is left untouched.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_atomic(path: Path, write: Callable) -> None:
    """Write ``path`` with ``write(binary_file)`` through :func:`_atomic_path`."""
    with _atomic_path(path) as tmp, open(tmp, "wb") as f:
        write(f)


def check_out(out) -> Path:
    """The resolved ``out`` path: a ``.nc`` file whose nearest existing ancestor is writable.

    Raises
    ------
    TypeError
        ``out`` is not a path.
    ValueError
        Naming ``out``: it does not end in ``.nc`` or cannot be created.
    """
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a path ending in .nc, got {out!r}")
    path = Path(out)
    if path.suffix != ".nc":
        raise ValueError(f"out must be a path ending in .nc (a netCDF file), got {str(out)!r}")
    probe = path.resolve().parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"out {str(out)!r} cannot be created: {str(probe)!r} is not a "
                         "writable directory")
    return path.resolve()


def load_finished(out: Path, plan: SweepPlan) -> xr.Dataset:
    """The finished sweep stored at ``out``; ValueError if it holds a different sweep."""
    ds = xr.load_dataset(out, engine=ENGINE)
    stored = ds.attrs.get("sweep_manifest")
    if stored is None or json.loads(stored) != json.loads(canonical_json(plan.identity())):
        raise ValueError(
            f"out: {out} already holds the results of a different sweep; delete it or "
            "choose another path"
        )
    return ds


def stored_manifest(out) -> dict | None:
    """The identity of the sweep stored at ``out`` (interrupted or finished), or None.

    An interrupted sweep's ``manifest.json`` in the sidecar directory, else the
    ``sweep_manifest`` attribute of a finished file at ``out``; None when there is neither or
    it cannot be read. The command line uses it to resume a Monte Carlo sweep with the seed
    it was started with.
    """
    path = Path(out).resolve()
    try:
        manifest = chunk_dir(path) / MANIFEST
        if manifest.exists():
            return json.loads(manifest.read_text())
        if path.is_file():
            with xr.open_dataset(path, engine=ENGINE) as ds:
                return json.loads(ds.attrs["sweep_manifest"])
    except (OSError, ValueError, KeyError):
        return None
    return None
