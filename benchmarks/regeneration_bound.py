"""The most a regeneration of each committed report set can add to the packed repository (issue 38).

A regeneration whose numbers move writes every figure, data file and page anew. What it adds to the pack is then at
most what the set's files take packed on their own: git may store a new file as a delta against its old version, which
only makes it smaller (and for PNG, gzip and zip files, whose bytes change throughout, it rarely can). So this packs
each preset folder's tracked files alone, in a fresh repository with one commit (``git gc``), and reads
``git count-objects -v``'s ``size-pack``: a measured upper bound of that preset's regeneration. The bound of
regenerating all of them, against the issue's target of 8 MB, is their files packed together the same way: git keeps
a file that two sets share byte for byte (``00_center_geometry/figures/gv_bound.png`` of three sets) once, and may
store one set's file as a delta against another's, so it is at most the sum of the four (also printed).

Run: ``python benchmarks/regeneration_bound.py [--presets quick standard ...]`` (from the repository root; it reads
the committed files, ``git ls-files``, not untracked build leftovers).

``--built OUTPUT`` weighs the four in today's format as far as it has been built: each preset's pages found under
``OUTPUT/PRESET`` (a ``python -m shc.reports --output OUTPUT`` build, all pages or ``--only`` some) replace its
committed pages of the same names (their published files, what a commit would hold; the folder's own files too when
the build wrote an index), the rest stay as committed; the sets are then packed alone and together as above. Pages
still in an older format keep their older weight, so a preset not rebuilt counts as it is.

A build that is not committed (a trial of today's format on some pages of a set whose full grid is elsewhere) is
weighed the same way beside the committed pages it would replace: ``--folder OUTPUT/PRESET --pages 00 01 02`` packs
that folder's published files (``shc.reports.check.published_files``: what a commit of it would hold) of the pages
whose names start with those prefixes, and the committed ``reports/PRESET`` pages of the same prefixes; ``--pages``
alone weighs those pages of each committed set.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

PRESETS = ("quick", "standard", "standard-pretrained", "standard-fine")
TARGET_BYTES = 8_000_000  # issue 38: regenerating the four presets adds at most 8 MB to the packed repository


def _git(folder: Path, *arguments: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *arguments], check=True, capture_output=True, text=True).stdout


def _size_pack(files: Sequence[tuple[Path, str]]) -> int:
    """``size-pack`` (bytes) of ``files`` (source path, name in the repository) committed alone into a new repository."""
    with tempfile.TemporaryDirectory() as scratch:
        repository = Path(scratch)
        _git(repository, "init", "-q")
        for source, name in files:
            target = repository / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        _git(repository, "add", "-A")
        _git(repository, "-c", "user.name=bound", "-c", "user.email=bound@localhost", "commit", "-q", "-m", "alone")
        _git(repository, "gc", "-q")
        counts = dict(line.split(": ") for line in _git(repository, "count-objects", "-v").splitlines())
    return int(counts["size-pack"]) * 1024


def _on_pages(relative: str, pages: Sequence[str] | None) -> bool:
    """Whether a file (its path inside the preset folder) belongs to a page named by one of the ``pages`` prefixes;
    every file when ``pages`` is None (the folder's own files, index and bundle, belong to no page)."""
    parts = Path(relative).parts
    return pages is None or (len(parts) > 1 and parts[0].startswith(tuple(pages)))


def _row(label: str, files: Sequence[tuple[Path, str]]) -> dict[str, object]:
    return {"preset": label, "files": len(files), "published MB": sum(path.stat().st_size for path, _ in files) / 1e6,
            "packed alone MiB": _size_pack(files) / 2**20}


def committed_files(root: Path, preset: str, pages: Sequence[str] | None = None) -> list[tuple[Path, str]]:
    """The tracked files of ``root/reports/<preset>`` (only those of ``pages``, prefixes of page names, when given):
    (path, name in the repository)."""
    prefix = f"reports/{preset}/"
    files = [(root / name, name) for name in _git(root, "ls-files", "-z", f"reports/{preset}").split("\0")
             if name and _on_pages(name[len(prefix):], pages)]
    if not files:
        raise SystemExit(f"no committed files under reports/{preset}/" + (f" of the pages {' '.join(pages)}" if pages
                         else "") + f"; build and commit it first (python -m shc.reports --preset {preset}).")
    return files


def packed_alone(root: Path, preset: str, pages: Sequence[str] | None = None) -> dict[str, object]:
    """``size-pack`` of the tracked files of ``root/reports/<preset>`` (only those of ``pages`` when given)
    committed alone into a new repository."""
    return _row(preset, committed_files(root, preset, pages))


def packed_folder(folder: Path, pages: Sequence[str] | None = None) -> dict[str, object]:
    """The same for a built, uncommitted preset folder: its published files (what a commit of it would hold)."""
    from shc.reports.check import published_files

    files = [(path, path.relative_to(folder.parent).as_posix()) for path in published_files(folder)
             if _on_pages(path.relative_to(folder).as_posix(), pages)]
    if not files:
        raise SystemExit(f"no published files under {folder}" + (f" of the pages {' '.join(pages)}" if pages else "")
                         + "; pass a preset's report folder (OUTPUT/PRESET of python -m shc.reports --output OUTPUT).")
    return _row("built (--folder)", files)


def today_files(root: Path, preset: str, built: Path) -> list[tuple[Path, str]]:
    """``preset``'s committed files with every page built under ``built/<preset>`` (and the folder's own files, when
    it has an index) replaced by the build's published files, named as a commit of them would be."""
    from shc.reports.check import published_files

    folder = built / preset
    fresh = [(path, f"reports/{preset}/{path.relative_to(folder).as_posix()}")
             for path in (published_files(folder) if folder.is_dir() else [])]
    pages = {Path(name).parts[2] for _, name in fresh if len(Path(name).parts) > 3}
    own = (folder / "index.html").is_file()  # the build wrote the folder's index, so its own files replace these
    kept = [(path, name) for path, name in committed_files(root, preset)
            if (Path(name).parts[2] not in pages if len(Path(name).parts) > 3 else not own)]
    return kept + [(path, name) for path, name in fresh if len(Path(name).parts) > 3 or own]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    parser.add_argument("--folder", type=Path, help="a built preset folder to weigh beside its committed pages")
    parser.add_argument("--pages", nargs="+", help="only the pages whose names start so (00 01 ...)")
    parser.add_argument("--built", type=Path, help="a build root whose pages replace the committed ones")
    args = parser.parse_args(argv)
    root = Path(_git(Path.cwd(), "rev-parse", "--show-toplevel").strip())
    if args.built is not None:
        if not args.built.is_dir():
            raise SystemExit(f"--built {args.built}: no such folder; pass the --output of a python -m shc.reports "
                             "build.")
        sets = {preset: today_files(root, preset, args.built.resolve()) for preset in args.presets}
        table = pd.DataFrame([{**_row(preset, files), "pages built": sum(
            1 for page in {Path(name).parts[2] for path, name in files if len(Path(name).parts) > 3
                           and args.built.resolve() in path.resolve().parents})}
            for preset, files in sets.items()])
        together = _size_pack([file for files in sets.values() for file in files]) / 2**20
        verdict = "within" if together * 2**20 <= TARGET_BYTES else "over"
        print(f"## each set with the pages built under {args.built} in place of its committed ones, packed alone "
              "(git gc; size-pack)")
        print(table.to_string(index=False, float_format=lambda value: f"{value:.2f}"))
        print(f"packed together: {together:.2f} MiB = {together * 2**20 / 1e6:.2f} MB (sum "
              f"{table['packed alone MiB'].sum():.2f} MiB); {verdict} the target of {TARGET_BYTES / 1e6:.0f} MB "
              f"({TARGET_BYTES / 2**20:.2f} MiB)")
        return 0
    if args.folder is not None:
        folder = args.folder.resolve()
        table = pd.DataFrame([packed_alone(root, folder.name, args.pages), packed_folder(folder, args.pages)])
        table.loc[0, "preset"] = f"committed reports/{folder.name}"
        print(f"## pages {' '.join(args.pages) if args.pages else '(all)'} packed alone: committed, and built in "
              "today's format (git gc; size-pack)")
        print(table.to_string(index=False, float_format=lambda value: f"{value:.2f}"))
        return 0
    table = pd.DataFrame([packed_alone(root, preset, args.pages) for preset in args.presets])
    total = table["packed alone MiB"].sum()
    together = _row("together", [file for preset in args.presets
                                 for file in committed_files(root, preset, args.pages)])
    table.loc[len(table)] = {"preset": "sum", "files": table["files"].sum(),
                             "published MB": table["published MB"].sum(), "packed alone MiB": total}
    print("## each committed report set packed alone: the most its regeneration can add (git gc; size-pack)"
          + (f"; pages {' '.join(args.pages)} only" if args.pages else ""))
    print(table.to_string(index=False, float_format=lambda value: f"{value:.2f}"))
    packed = together["packed alone MiB"]
    verdict = "within" if packed * 2**20 <= TARGET_BYTES else "over"
    print(f"the {len(args.presets)} sets packed together: {packed:.2f} MiB = {packed * 2**20 / 1e6:.2f} MB, the most "
          f"one regeneration of all of them can add (the sum counts the files they share once a set: {total:.2f} MiB)"
          + ("" if args.pages else f"; {verdict} the target of {TARGET_BYTES / 1e6:.0f} MB "
                                  f"({TARGET_BYTES / 2**20:.2f} MiB)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
