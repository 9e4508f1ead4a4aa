"""``reports/<preset>/bundle.zip``: every table and record of a preset's reports, for download.

The figure data (``figures/*.csv.gz``, the numbers each figure draws) stay beside their figures, linked from their
page and the index, and are not repeated in the bundle: at 333 classes they weigh 23 MB, and a second copy would
push a preset's committed reports past 20 MB."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from shc._io import atomic_path
from shc.reports.check import published_files
from shc.reports.execute import BUNDLE_FILE

__all__ = ["bundle_members", "write_bundle"]

_MEMBERS = (".csv", ".csv.gz", "run.json", "summary.json", "findings.json")
_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed member times: the same files give the same bytes (clean diffs)


def bundle_members(preset_dir: str | os.PathLike) -> list[str]:
    """The published table CSVs and ``run.json``/``summary.json``/``findings.json`` records below ``preset_dir`` (not the figure
    data in ``figures/`` folders), as sorted relative POSIX paths."""
    preset_dir = Path(preset_dir)
    relative = (path.relative_to(preset_dir) for path in published_files(preset_dir))
    return [path.as_posix() for path in relative
            if path.name.endswith(_MEMBERS) and not path.parts[0].startswith("_") and "figures" not in path.parts[:-1]]


def write_bundle(preset_dir: str | os.PathLike) -> Path:
    """(Re)write ``<preset_dir>/bundle.zip`` (atomically, deterministic bytes) and return its path."""
    preset_dir = Path(preset_dir)
    target = preset_dir / BUNDLE_FILE
    with atomic_path(target) as temporary:
        with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name in bundle_members(preset_dir):
                info = zipfile.ZipInfo(f"{preset_dir.name}/{name}", date_time=_EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                archive.writestr(info, (preset_dir / name).read_bytes())
    return target
