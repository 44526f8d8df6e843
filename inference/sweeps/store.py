"""The resumable files of a sweep: a chunk store, atomic writes, the finished file.

With ``out="FILE.nc"`` every finished chunk is saved at once in a sidecar directory
``FILE.nc.chunks/`` (one ``.npy`` per chunk, written to a temporary name and moved into place
with :func:`os.replace`, so a chunk file is either complete or absent), next to a
``manifest.json`` of the sweep's parameters (:meth:`SweepPlan.manifest`).
A sweep run again with the same ``out`` and parameters finds its finished chunks here; a
different sweep is refused rather than mixed in. :meth:`ChunkStore.finish` writes the sweep's
table (:mod:`dprisk.inference.sweeps.netcdf`: the netCDF file ``to_netcdf`` would write, without
xarray) to a temporary file beside ``FILE.nc``, moves it onto ``FILE.nc`` and removes the
sidecar directory's own files (:data:`OWNED`; the directory only once empty: a sidecar
directory holding anything else, the user's, is refused at the start and never removed).
:func:`stored_manifest` reads the identity of a sweep stored at ``out``.

One writer at a time: the store is locked (:data:`LOCK`, holding the pid) while a sweep runs,
so a second run on the same ``out`` is refused; the lock of a killed run is taken over, and
the temporaries it left (``.FILE.nc.PID.XXXXXXXX.tmp`` of a process that is gone,
:func:`dprisk.runtime.output_files.remove_stale_temporaries`) are removed. The finished file
is created exclusively when ``out`` did not exist at the start: a file that appeared there
during the sweep is never replaced. :func:`check_out` refuses an ``out``
that is a symbolic link, a directory, a device or a file that is not a sweep written by this
tool; a run that
fails before finishing any chunk removes its sidecar directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dprisk.inference.sweeps.netcdf import SweepTable, read_attrs, read_table, write_table
from dprisk.inference.sweeps.plan import SweepPlan, canonical_json
from dprisk.runtime.output_files import (
    NotRegularFile,
    OutputError,
    atomic_path,
    check_creatable,
    make_parents,
    read_regular_text,
    remove_leftovers,
    remove_made_parents,
    remove_stale_temporaries,
)
from dprisk.runtime.output_lock import OutputLock
from dprisk.runtime.writers import Owned, foreign_entries, mark_committed, remove_owned

__all__ = [
    "ENGINE",
    "LOCK",
    "MANIFEST",
    "ChunkStore",
    "check_out",
    "chunk_dir",
    "is_sweep_file",
    "load_finished",
    "stored_manifest",
]

#: xarray's netCDF engine reading ``out`` files (written with the ``netCDF4`` package).
ENGINE = "netcdf4"
#: File name of the manifest in the sidecar directory.
MANIFEST = "manifest.json"
#: File name of the lock (holding the running sweep's pid) in the sidecar directory.
LOCK = "lock"
#: The files a sweep writes in its sidecar directory (nothing else there is ever deleted).
OWNED = Owned(patterns=(MANIFEST, LOCK, "chunk_*.npy", ".*.tmp"))


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
        self.lock: OutputLock | None = None
        #: Whether ``out`` existed (a sweep file) when the store was opened.
        self.existed = False
        #: The directories :meth:`open` made (the store and its missing parents, top first).
        self._made: list[Path] = []

    def open(self) -> bool:
        """Lock the directory; create its manifest or check that the stored one matches.

        Creates the directory, takes its :class:`~dprisk.runtime.output_lock.OutputLock`
        (file :data:`LOCK`, refused while another process runs this sweep), removes the
        temporaries of a killed run (``.FILE.nc.PID.XXXXXXXX.tmp`` of a gone process beside
        ``out``, ``.*.tmp`` in the directory) and writes or checks the manifest. A stored
        manifest of another sweep is replaced when no chunk of it is finished (a rejected
        run), and refused otherwise.
        Returns False (and holds no lock) when another run finished this output meanwhile.
        """
        if self.dir.exists() and not self.dir.is_dir():
            raise OutputError(f"out: {str(self.dir)!r} (the chunk store of {str(self.out)!r}) "
                              "exists and is not a directory; remove it or choose another path")
        if self.dir.is_dir():
            self._check_foreign()
            self._check_manifest()  # a different sweep is refused whether it runs or not
        self._made = make_parents(self.dir)  # removed again by a failed run's close
        self.lock = OutputLock(self.dir / LOCK, self.out)
        try:
            self.lock.acquire()
        except FileNotFoundError:  # the directory was removed by a run that just finished
            if self.out.exists():
                return False
            raise
        except OSError:  # e.g. a full disk: the lock file is gone, and what open made with it
            self.lock = None
            remove_made_parents(self._made)
            self._made = []
            raise
        try:
            remove_stale_temporaries(self.out)  # .FILE.nc.PID.XXXXXXXX.tmp of a gone pid
            remove_leftovers(self.dir, ".*.tmp")  # the store's own directory: all ours
            self.existed = self.out.exists() or self.out.is_symlink()
            if not self._check_manifest():
                path = self.dir / MANIFEST
                _write_atomic(path, lambda f: f.write(canonical_json(self.manifest).encode()))
        except BaseException:
            self.close(failed=True)
            raise
        return True

    def _check_foreign(self) -> None:
        """Refuse a sidecar directory holding anything a sweep does not write (the user's)."""
        foreign = foreign_entries(self.dir, OWNED)
        if foreign or self.dir.is_symlink():
            shown = ", ".join(foreign[:3]) + (", …" if len(foreign) > 3 else "")
            raise OutputError(
                f"out: {str(self.dir)!r} (the chunk store of {str(self.out)!r}) exists and "
                f"holds files a sweep did not write ({shown or 'a symbolic link'}); move them "
                "or choose another path"
            )

    def _check_manifest(self) -> bool:
        """True when the stored manifest is this sweep's; ValueError when another sweep's.

        False when there is no manifest, or one of a sweep without finished chunks (to be
        replaced). A manifest that is not a regular file (a FIFO would block the read) is
        refused: :class:`OutputError` naming ``out``.
        """
        path = self.dir / MANIFEST
        refusal = OutputError(
            f"out: {str(path)!r} (the manifest of the chunk store of {str(self.out)!r}) exists "
            "and is not a regular file (a FIFO, say); not one a sweep wrote: remove it or "
            "choose another path")
        if os.path.lexists(path) and not path.is_file():  # never opened: a FIFO would block
            raise refusal
        if not path.exists() or not self.finished_chunks():
            return False
        try:
            stored = json.loads(read_regular_text(path))
        except NotRegularFile:  # replaced by one since the check above
            raise refusal from None
        if stored != self.manifest:
            raise ValueError(
                f"out: {self.dir} holds the chunks of a different sweep (other parameters, "
                f"prior file contents, quantity or chunk_size); rerun it with its own "
                f"parameters, or delete "
                f"{self.dir} to start this one"
            )
        return True

    def finished_chunks(self) -> list[Path]:
        """The chunk files present (finished chunks of this or an interrupted run)."""
        return sorted(self.dir.glob("chunk_*.npy"))

    def close(self, *, failed: bool = False) -> None:
        """Release the lock; after a failure, remove a directory that holds no finished chunk.

        A run rejected before finishing any chunk therefore leaves nothing behind (neither
        the directory nor the missing parents :meth:`open` made for it, each removed only
        while empty), and a corrected rerun starts afresh; finished chunks are kept for the
        rerun to resume.
        """
        if failed and self.dir.is_dir() and not self.finished_chunks():
            remove_owned(self.dir, OWNED)
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        if failed:
            remove_made_parents(self._made)
        self._made = []

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

    def finish(self, table: SweepTable) -> SweepTable:
        """Write ``table`` atomically onto the output file, remove the chunks, read it back.

        An output file missing when the store was opened is created exclusively: a file that
        appeared there during the sweep is never replaced (``OutputAppeared``, naming
        ``out``; the chunks are kept). One that was there (a sweep file of this tool) is
        replaced only while it is still a sweep file.
        """
        replace = self.existed and is_sweep_file(self.out)
        with atomic_path(self.out, replace=replace) as tmp:
            write_table(tmp, table)
        mark_committed(self.out)
        self.remove()
        return read_table(self.out)

    def remove(self) -> None:
        """Delete the sweep's files of the directory once the output file is in place.

        The directory goes only when that leaves it empty (:data:`OWNED`: nothing of the
        user's is deleted).
        """
        remove_owned(self.dir, OWNED)


def _write_atomic(path: Path, write: Callable) -> None:
    """Write ``path`` with ``write(binary_file)`` through ``output_files.atomic_path``."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        write(f)


def check_out(out) -> Path:
    """The resolved ``out`` path: a ``.nc`` file this tool may write.

    ``out`` must end in ``.nc``, its nearest existing ancestor must be a writable directory,
    and an existing ``out`` must be a sweep file written by this tool (:func:`is_sweep_file`;
    it is then resumed, read back or refused as a different sweep) -- never a directory, a
    device or another file, which would be replaced, nor a symbolic link (dangling, to a
    sweep or to anything else: it is never followed). The directory holding ``out`` is
    resolved (its symbolic links and ``..``); ``out``'s own name is kept.

    Raises
    ------
    TypeError
        ``out`` is not a path.
    OutputError
        A ``ValueError`` naming ``out``: it does not end in ``.nc``, cannot be created, or
        names something else.
    """
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a path ending in .nc, got {out!r}")
    path = Path(out)
    if path.suffix != ".nc":
        raise OutputError(f"out must be a path ending in .nc (a netCDF file), got {str(out)!r}")
    if path.is_symlink():  # a dangling link would create its target; a link to a sweep, read it
        raise OutputError(f"out {str(out)!r} is a symbolic link; refusing to replace it (delete "
                          "it or choose another path)")
    resolved = path.parent.resolve() / path.name  # the directory's links resolved, not out's
    check_creatable(resolved)
    if resolved.is_dir():
        raise OutputError(f"out {str(out)!r} is a directory; name a .nc file to write")
    if resolved.exists() and not resolved.is_file():
        raise OutputError(f"out {str(out)!r} exists and is not a regular file")
    if resolved.exists() and not is_sweep_file(resolved):
        raise OutputError(f"out {str(out)!r} exists and is not a sweep file written by dprisk; "
                          "refusing to replace it (delete it or choose another path)")
    return resolved


def is_sweep_file(path) -> bool:
    """Whether ``path`` is a netCDF file holding a sweep (its ``sweep_manifest`` attribute)."""
    try:
        return isinstance(read_attrs(path).get("sweep_manifest"), str)
    except Exception:  # any unreadable file is "not a sweep file"
        return False


def load_finished(out: Path, plan: SweepPlan) -> SweepTable:
    """The finished sweep stored at ``out``; ValueError if it holds a different sweep."""
    table = read_table(out)
    stored = table.attrs.get("sweep_manifest")
    if stored is None or json.loads(stored) != json.loads(canonical_json(plan.identity())):
        raise ValueError(
            f"out: {out} already holds the results of a different sweep (other parameters "
            "or prior file contents); delete it or choose another path"
        )
    return table


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
        if manifest.exists():  # a FIFO there is not read (NotRegularFile): None
            return json.loads(read_regular_text(manifest))
        if path.is_file():
            return json.loads(read_attrs(path)["sweep_manifest"])
    except (OSError, ValueError, KeyError):
        return None
    return None
