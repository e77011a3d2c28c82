"""A stable latest: ``data/latest/<data source>/<method>/`` holds the newest complete run's published files.

Downstream tools read one path that never changes, whatever the number of runs:
``data/latest/expr/iclfs/feature_list.csv``. When a run completes (its run
record written), its files are hard-linked (copied where the disk cannot
link) into a folder of their own, ``data/latest/expr/.iclfs/<version>/``, and
the link ``data/latest/expr/iclfs`` is switched to it in one rename: a
reader sees the last complete run or the new one, never a mix, a half-written
file or a failed run's. A run that completes after a newer one never moves
the link back. The three newest folders are kept.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

LOGGER = logging.getLogger(__name__)
FOLDER = "latest"
KEEP = 3
COPIED = ".version"  # in a folder of copies (no symbolic links): the version it holds


def latest_folder(data: Path, source: str, method: str) -> Path:
    """Where a data source's latest files of ``method`` are read: ``data/latest/<source>/<method>``."""
    return data / FOLDER / source / method


def _place(file: Path, target: Path) -> None:
    try:
        os.link(file, target)
    except OSError:  # another disk, or a file system without hard links
        shutil.copy2(file, target)


def _current(link: Path) -> str | None:
    """The version the latest holds: its link's target, or a folder of copies' record; None when there is none."""
    if link.is_symlink():
        return Path(os.readlink(link)).name
    with contextlib.suppress(OSError):
        return (link / COPIED).read_text().strip() or None
    return None


def publish(data: Path, source: str, method: str, version: str, files: Mapping[str, Path]) -> Path | None:
    """Make ``files`` (``{artifact: the file this run wrote}``) the latest of ``source`` and ``method``.

    Returns the latest folder, or None when a newer run is there already.
    """
    link = latest_folder(data, source, method)
    store = link.parent / f".{method}"
    store.mkdir(parents=True, exist_ok=True)
    current = _current(link)
    if current is not None and current > version:
        return None  # a newer run completed first: it stays the latest
    folder = store / version
    staging = store / f".{version}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    for file in files.values():
        if file.is_file():
            _place(file, staging / file.name)
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    relative = os.path.relpath(folder, link.parent)
    swap = link.parent / f".{method}.{os.getpid()}.link"
    with contextlib.suppress(FileNotFoundError):
        swap.unlink()
    try:
        os.symlink(relative, swap, target_is_directory=True)
        if link.exists() and not link.is_symlink():
            shutil.rmtree(link)  # a folder of copies, left where links could not be made
        os.replace(swap, link)  # the switch: one rename
    except OSError:  # no symbolic links here (some Windows setups): a folder of copies, file by file
        swap.unlink(missing_ok=True)
        link.mkdir(parents=True, exist_ok=True)
        for file in folder.iterdir():
            partial = link / f".{file.name}.partial"
            shutil.copy2(file, partial)
            os.replace(partial, link / file.name)
        kept = {file.name for file in folder.iterdir()}
        for stale in [file for file in link.iterdir() if file.name not in kept and file.name != COPIED]:
            stale.unlink()  # the previous run's file this run did not publish: no mix of two runs
        (link / f".{COPIED}.partial").write_text(version)
        os.replace(link / f".{COPIED}.partial", link / COPIED)
    for old in sorted(p for p in store.iterdir() if p.is_dir() and not p.name.startswith("."))[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return link
