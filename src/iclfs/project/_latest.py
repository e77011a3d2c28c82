"""A stable latest: ``data/latest/<data source>/<method>/`` holds the newest complete run's published files.

Downstream tools read one path that never changes, whatever the number of runs:
``data/latest/expr/iclfs/feature_list.csv``. When a run completes, its files
are hard-linked (copied where the disk cannot link) into a folder of their
own, ``data/latest/expr/.iclfs/<version>/``, and the link
``data/latest/expr/iclfs`` is switched to it in one rename: a reader sees the
last complete run or the new one, never a mix, a half-written file or a
failed run's. A run that completes after a newer one never moves the link
back. The three newest folders are kept.

The switch trusts only what it made, and deletes only what it wrote:

- the link is the project's when it reads ``.<method>/<version>`` and that
  folder is a real one; any other link there (planted, or pointing outside)
  is never followed: it is replaced by the project's, its target untouched,
  and a WARNING names both;
- each version folder lists the files placed in it (``.published``); pruning
  removes those files only, so a file a user put there is kept, and named;
- a real folder at ``<method>`` that the project did not make (no
  ``.version``) and that holds files is refused before the run starts
  (:func:`latest_problem`), naming the file, so nothing of it is deleted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

LOGGER = logging.getLogger(__name__)
FOLDER = "latest"
KEEP = 3
COPIED = ".version"  # in a folder of copies (no symbolic links): the version it holds
PUBLISHED = ".published"  # in every folder the project fills: the names of the files it placed there


class LatestError(RuntimeError):
    """The latest list cannot be published; the message names the path under ``data/latest`` and the fix."""


def latest_folder(data: Path, source: str, method: str) -> Path:
    """Where a data source's latest files of ``method`` are read: ``data/latest/<source>/<method>``."""
    return data / FOLDER / source / method


def _own_target(link: Path, method: str) -> str | None:
    """The version the link at ``link`` points to, when the project made it; else None."""
    if not link.is_symlink():
        return None
    target = Path(os.readlink(link))
    if target.is_absolute() or len(target.parts) != 2 or target.parts[0] != f".{method}":
        return None
    folder = link.parent / target
    if target.parts[1].startswith(".") or folder.is_symlink() or not folder.is_dir():
        return None
    return target.parts[1]


def _placed(folder: Path) -> set[str]:
    """The files the project placed in ``folder`` (its ``.published`` list); empty if it lists none."""
    with contextlib.suppress(OSError):
        return {name for name in (folder / PUBLISHED).read_text().splitlines() if name}
    return set()


def _foreign(folder: Path) -> list[str]:
    """The files in a folder the project fills that it did not place there, sorted."""
    mine = _placed(folder) | {PUBLISHED, COPIED}
    return sorted(p.name for p in folder.iterdir() if p.name not in mine and not p.name.endswith(".partial"))


def current_version(link: Path, method: str) -> str | None:
    """The version the latest holds, from the project's own link or folder of copies; None when there is none."""
    if link.is_symlink():
        return _own_target(link, method)
    if link.is_dir():
        with contextlib.suppress(OSError):
            return (link / COPIED).read_text().strip() or None
    return None


def _probe(folder: Path) -> str | None:
    """Why no file can be made in ``folder`` (an existing one), or None: a real file made and removed."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".iclfs-probe-"):
            pass
    except OSError as err:
        return f"{folder} is not writable ({err.strerror})"
    return None


def existing_folder(path: Path) -> Path | str:
    """The nearest of ``path`` and its parents that exists, or why there is none (no parent, or a file in the way)."""
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            return f"no existing parent folder of {path}"
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, not a folder"
    return probe


def latest_problem(data: Path, source: str, method: str) -> str | None:
    """Why the latest of ``source`` and ``method`` could not be published, checked before a run starts; None if it
    can. Names the path and the fix in one line."""
    link = latest_folder(data, source, method)
    store = link.parent / f".{method}"
    if store.is_symlink():  # never followed: the versions' folders would be written wherever it points
        return (f"{store} is a symbolic link (to {os.readlink(store)}) that iclfs did not make: remove it (rm "
                f"{store}); iclfs keeps the latest lists' folders there")
    for made in (store, link):
        if made.exists() and not made.is_symlink() and not made.is_dir():
            return f"{made} is a file, not a folder: move it away; iclfs publishes the latest list there"
    if link.is_dir() and not link.is_symlink() and not (link / COPIED).exists():
        files = sorted(p.name for p in link.iterdir())
        if files:
            return (f"{link} is a folder iclfs did not make, and it holds {files[0]!r}"
                    f"{f' and {len(files) - 1} more' if len(files) > 1 else ''}: move it out of {link.parent} "
                    "(iclfs publishes each run's list there, and deletes nothing it did not write)")
    probe = existing_folder(link.parent)
    if isinstance(probe, str):
        return f"{probe}: iclfs publishes the latest list under {link.parent}"
    for folder in (probe, store, link if link.is_dir() and not link.is_symlink() else None):
        if folder is not None and folder.is_dir():
            problem = _probe(folder)
            if problem:
                return f"{problem}: iclfs publishes the latest list under {link.parent}; make it writable"
    return None


def _place(file: Path, target: Path) -> None:
    try:
        os.link(file, target)
    except OSError:  # another disk, or a file system without hard links
        try:
            shutil.copy2(file, target)
        except OSError as err:  # named by the file written, not the one read (shutil names both)
            raise OSError(err.errno, err.strerror, str(target)) from err


def _fill(folder: Path, files: Mapping[str, Path]) -> None:
    placed = []
    for file in files.values():
        if file.is_file():
            _place(file, folder / file.name)
            placed.append(file.name)
    (folder / PUBLISHED).write_text("".join(f"{name}\n" for name in placed))


def _remove_own(folder: Path) -> list[str]:
    """Remove the files the project placed in ``folder``, and the folder if nothing else is left; the files it
    kept (a user's)."""
    for name in _placed(folder) | {PUBLISHED, COPIED}:
        with contextlib.suppress(FileNotFoundError):
            (folder / name).unlink()
    for partial in folder.glob(".*.partial"):
        partial.unlink(missing_ok=True)
    kept = sorted(p.name for p in folder.iterdir())
    if not kept:
        folder.rmdir()
    return kept


def _copies(link: Path, folder: Path, version: str) -> None:
    """No symbolic links here (some Windows setups): the latest is a folder of copies, replaced file by file."""
    link.mkdir(parents=True, exist_ok=True)
    before = _placed(link)
    now = _placed(folder)
    for name in sorted(now):
        partial = link / f".{name}.partial"
        shutil.copy2(folder / name, partial)
        os.replace(partial, link / name)
    for stale in sorted(before - now):  # the previous run's file this run did not publish: no mix of two runs
        (link / stale).unlink(missing_ok=True)
    for name, text in ((PUBLISHED, "".join(f"{n}\n" for n in sorted(now))), (COPIED, version)):
        (link / f".{name}.partial").write_text(text)
        os.replace(link / f".{name}.partial", link / name)


def _switch(link: Path, folder: Path, method: str, version: str) -> None:
    """Point the latest at ``folder``: one rename of a new link, or a folder of copies."""
    relative = os.path.relpath(folder, link.parent)
    swap = link.parent / f".{method}.{os.getpid()}.link"
    swap.unlink(missing_ok=True)
    if link.is_symlink() and _own_target(link, method) is None:
        LOGGER.warning("%s was a symbolic link iclfs did not make (to %s): it was never followed, and is replaced by "
                       "the latest list's link; what it pointed to is untouched", link, os.readlink(link))
    try:
        os.symlink(relative, swap, target_is_directory=True)
    except OSError:
        if link.is_symlink():  # a link, the project's or not, is removed, never written through
            link.unlink()
        _copies(link, folder, version)
        return
    if link.is_dir() and not link.is_symlink():  # a folder of copies, left where links could not be made
        kept = _remove_own(link)
        if kept:  # a user's file in it: the latest stays a folder of copies, the file kept
            swap.unlink()
            _copies(link, folder, version)
            return
    os.replace(swap, link)  # the switch: one rename


def publish(data: Path, source: str, method: str, version: str, files: Mapping[str, Path],
            before_switch: Callable[[], None] | None = None) -> Path | None:
    """Make ``files`` (``{artifact: the file this run wrote}``) the latest of ``source`` and ``method``.

    ``before_switch`` is called once the files are in place, just before the
    switch; what it raises stops the publication, and what was placed is
    removed (the run stopped by a signal meanwhile). Returns the latest
    folder, or None when a newer run is there already.

    Raises
    ------
    LatestError
        A file under ``data/latest`` could not be written (a full disk, a
        read-only folder); nothing of this publication is left, and the latest
        stays on the previous run.
    """
    link = latest_folder(data, source, method)
    problem = latest_problem(data, source, method)
    if problem:
        raise LatestError(problem)
    store = link.parent / f".{method}"
    current = current_version(link, method)
    if current is not None and current > version:
        return None  # a newer run completed first: it stays the latest
    folder, staging = store / version, store / f".{version}.partial"
    switched = False
    try:
        store.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        _fill(staging, files)
        if folder.is_dir():  # the same version published before (a rerun of its record): the project's files go
            _remove_own(folder)
        staging.rename(folder)
        if before_switch is not None:
            before_switch()
        _switch(link, folder, method, version)
        switched = True
    except OSError as err:
        where = err.filename or staging
        reason = "the disk is full" if err.errno == 28 else (err.strerror or type(err).__name__)
        raise LatestError(f"{reason} writing {where} (under {link.parent}); the latest list stays on the previous "
                          "run") from err
    finally:
        if not switched:
            shutil.rmtree(staging, ignore_errors=True)
            if folder.is_dir() and current_version(link, method) != version:
                _remove_own(folder)
    _prune(store)
    return link


def _prune(store: Path) -> None:
    """Keep the :data:`KEEP` newest version folders; of older ones remove only the files the project placed."""
    # only folders that list what the project placed: one left with a user's file lists nothing, so it is named
    # once and then left alone
    folders = sorted(p for p in store.iterdir() if not p.is_symlink() and (p / PUBLISHED).is_file()
                     and not p.name.startswith("."))
    for old in folders[:-KEEP]:
        try:
            kept = _remove_own(old)
        except OSError as err:  # pruning is housekeeping: the run is published already
            LOGGER.warning("could not remove the old latest folder %s (%s)", old, err.strerror)
            continue
        if kept:
            LOGGER.warning("kept %s: it holds %s, which iclfs did not write", old, ", ".join(kept))
