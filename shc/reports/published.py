"""Which files of a report folder are committed (:func:`is_published`): read by the checker, the index and the
runner alike, so it lives apart from all three (the checker reads the index's commit sentence: no import circle)."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path, PurePosixPath

__all__ = ["INDEX_FILE", "is_published", "published_files"]

#: A preset folder's index page (written by :func:`shc.reports.index.write_index`; its notes by
#: :func:`shc.reports.refresh.note_refreshed_pages_in_index`: both read the name here, so neither imports the other).
INDEX_FILE = "index.html"

#: Files under ``reports/`` that ``.gitignore`` keeps out of the repository (``tests/test_reports.py`` checks
#: that this agrees with ``git check-ignore``). Names relative to a preset folder.
_UNPUBLISHED = ("*.ipynb", "*.svg", "kernel.log", ".lock", ".*.lock", "*.tmp", "*.tmp.*")


def is_published(relative: str | os.PathLike, *, shared_root: bool = False) -> bool:
    """Whether a file of a preset's report folder is committed (reading pages, index, figures, tables, records).

    With ``shared_root``, ``relative`` is relative to the reports root instead, where only the shared ``_assets``
    folder (MathJax, the pages' stylesheet) and the preset folders are published."""
    path = PurePosixPath(Path(relative).as_posix())
    if shared_root:
        if not path.parts or path.parts[0] != "_assets":
            return False
        path = PurePosixPath(*path.parts[1:]) if len(path.parts) > 1 else path
    name = path.name
    if any(part.startswith(".") and part not in (".", "..") for part in path.parts[:-1]):
        return False  # building and old folders of an interrupted batch
    if any(fnmatch.fnmatch(name, pattern) for pattern in _UNPUBLISHED):
        return False
    if name.endswith(".html"):
        return name.endswith("-report.html") or (name == "index.html" and len(path.parts) == 1)
    return True


def published_files(folder: str | os.PathLike) -> list[Path]:
    """Every published file below ``folder`` (a preset's report folder), sorted; the vendored ``_assets`` too."""
    folder = Path(folder)
    return sorted(path for path in folder.rglob("*")
                  if path.is_file() and is_published(path.relative_to(folder)))
