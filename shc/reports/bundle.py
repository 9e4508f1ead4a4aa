"""``reports/<preset>/bundle.zip``: every table and record of a preset's reports, for download.

Written on request (``python -m shc.reports --preset P --bundle``, or ``python -m shc.reports.bundle reports/P`` for a
folder already built), and not for the committed report sets: it is a second copy of every table, and a committed one
doubled the tables' weight in the repository's history at every regeneration (issue 38: 0.09-0.22 MB a preset). A
build without ``--bundle`` removes the zip of an earlier build, which would describe other pages; the reading pages do
not link it, the index does when it is there.

The figure data (``figures/*.csv.xz``, the numbers each figure draws) stay beside their figures, linked from their
page and the index, and are not repeated in the bundle: at 333 classes they weigh 23 MB, and a second copy would
push a preset's committed reports past 20 MB."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterator
from pathlib import Path

from shc._io import atomic_path
from shc.reports.execute import BUNDLE_FILE
from shc.reports.problem import Problem
from shc.reports.published import published_files

__all__ = ["bundle_members", "bundle_problems", "write_bundle"]

_MEMBERS = (".csv", ".csv.xz", ".csv.gz", "run.json", "summary.json", "findings.json")
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


def bundle_problems(preset_dir: str | os.PathLike) -> Iterator[Problem]:
    """A ``bundle.zip`` that is not what :func:`write_bundle` would write today: a member whose bytes differ from
    the published file (a summary or findings list derived again after the build, and the bundle left as it was), a
    member no longer published, or a published table or record missing from it. A problem is ``bundle-stale``."""
    preset_dir = Path(preset_dir)
    with zipfile.ZipFile(preset_dir / BUNDLE_FILE) as archive:
        held = {name.split("/", 1)[1]: archive.read(name) for name in archive.namelist() if "/" in name}
    members = bundle_members(preset_dir)
    differ = [name for name in members if name in held and held[name] != (preset_dir / name).read_bytes()]
    for names, words in ((differ, "differs from the published file"),
                         ([n for n in members if n not in held], "is published but not in the bundle"),
                         ([n for n in held if n not in members], "is in the bundle but not published")):
        for one in names:
            yield Problem(BUNDLE_FILE, "bundle-stale", f"{one} {words}; write the bundle again (python -m "
                          "shc.reports.bundle FOLDER) or remove it and its line in the index")


def main(argv: list[str] | None = None) -> int:
    """``python -m shc.reports.bundle FOLDER...``: write ``bundle.zip`` in each built preset folder."""
    from shc.cli_common import run_cli

    return run_cli(_main, argv)


def _main(argv: list[str] | None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m shc.reports.bundle", description=main.__doc__)
    parser.add_argument("folders", nargs="+", metavar="FOLDER", help="a built preset folder, e.g. reports/standard")
    for folder in parser.parse_args(argv).folders:
        if not (Path(folder) / "index.html").is_file():
            raise FileNotFoundError(f"{folder} is not a built report folder (no index.html); build it with "
                                    "python -m shc.reports --preset NAME, or pass reports/NAME.")
        print(write_bundle(folder))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
