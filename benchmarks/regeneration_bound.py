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

``--reencode`` (with ``--built``) weighs the committed pages that were not built stored as today's writers store the
same pictures and tables, where that follows from their files alone (what a figure draws is as committed, so a page
built by older code keeps that code's drawing): every PNG recompressed losslessly as
``shc.plots.compact_png`` now does (oxipng, libdeflate at ``OXIPNG_DEFLATE``; the same pixels), and the training
histories (``tables/training_history.csv*``) with their timings at ``shc.results.reading.TIMING_DIGITS`` significant
digits, written back by ``shc.plots.save_table``. What needs the runs (a heatmap drawn as a triangle) stays as
committed; the table's column "pages re-encoded" counts those pages.

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


def reencoded(source: Path, name: str, scratch: Path) -> Path:
    """``source`` (a committed report file, ``name`` in the repository) stored as today's writers store it, in
    ``scratch``: a PNG recompressed by oxipng with :func:`shc.plots.compact_png`'s settings (lossless), a training
    history with its timings rounded to :data:`shc.results.reading.TIMING_DIGITS` significant digits and saved by
    :func:`shc.plots.save_table` as before (plain or xz); any other file is returned as it is."""
    import io

    import oxipng

    from shc.plots import save_table
    from shc.plots.style import OXIPNG_DEFLATE, OXIPNG_LEVEL, read_table_text
    from shc.results.reading import TIMING_DIGITS, round_significant

    target = scratch / name
    if name.endswith(".png"):
        data = source.read_bytes()
        smaller = oxipng.optimize_from_memory(data, level=OXIPNG_LEVEL,
                                              deflate=oxipng.Deflaters.libdeflater(OXIPNG_DEFLATE))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(smaller if len(smaller) < len(data) else data)
        return target
    stem, _, suffix = Path(name).name.partition(".")
    if Path(name).parent.name == "tables" and stem == "training_history" and suffix in ("csv", "csv.xz"):
        table = pd.read_csv(io.StringIO(read_table_text(source)))
        for column in ("seconds", "eval_seconds"):
            if column in table:
                table[column] = round_significant(table[column].to_numpy(dtype=float), TIMING_DIGITS)
        target.parent.mkdir(parents=True, exist_ok=True)
        return save_table(table, target.parent / stem, compress=suffix == "csv.xz")
    return source


def _verdict(packed_mib: float) -> str:
    """Whether ``packed_mib`` (MiB) is within issue 38's target, in words."""
    return (f"{'within' if packed_mib * 2**20 <= TARGET_BYTES else 'over'} the target of {TARGET_BYTES / 1e6:.0f} MB "
            f"({TARGET_BYTES / 2**20:.2f} MiB)")


def _page_kinds(built: Path, reencode: bool):
    """The page counts of the ``--built`` table: (column, whether a file's path makes its page count)."""
    def is_built(path: Path) -> bool:
        return built in path.resolve().parents

    kinds = [("pages built", is_built)]
    if reencode:
        kinds.append(("pages re-encoded", lambda path: not is_built(path)))
    return kinds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    parser.add_argument("--folder", type=Path, help="a built preset folder to weigh beside its committed pages")
    parser.add_argument("--pages", nargs="+", help="only the pages whose names start so (00 01 ...)")
    parser.add_argument("--built", type=Path, help="a build root whose pages replace the committed ones")
    parser.add_argument("--reencode", action="store_true",
                        help="with --built: the committed pages not built, recompressed and rounded as today's "
                             "writers store them")
    args = parser.parse_args(argv)
    if args.reencode and args.built is None:
        raise SystemExit("--reencode weighs the pages that --built leaves as committed; pass --built OUTPUT too.")
    root = Path(_git(Path.cwd(), "rev-parse", "--show-toplevel").strip())
    if args.built is not None:
        if not args.built.is_dir():
            raise SystemExit(f"--built {args.built}: no such folder; pass the --output of a python -m shc.reports "
                             "build.")
        built = args.built.resolve()
        with tempfile.TemporaryDirectory() as scratch:
            sets = {preset: today_files(root, preset, built) for preset in args.presets}
            if args.reencode:
                sets = {preset: [(path if built in path.resolve().parents else reencoded(path, name, Path(scratch)),
                                  name) for path, name in files] for preset, files in sets.items()}
            table = pd.DataFrame([{**_row(preset, files), **{label: len({Path(name).parts[2] for path, name in files
                                                                         if len(Path(name).parts) > 3 and kind(path)})
                                                             for label, kind in _page_kinds(built, args.reencode)}}
                                  for preset, files in sets.items()])
            together = _size_pack([file for files in sets.values() for file in files]) / 2**20
        print(f"## each set with the pages built under {args.built} in place of its committed ones"
              + (", the others stored as today's writers store them" if args.reencode else "")
              + ", packed alone (git gc; size-pack)")
        print(table.to_string(index=False, float_format=lambda value: f"{value:.2f}"))
        print(f"packed together: {together:.2f} MiB = {together * 2**20 / 1e6:.2f} MB (sum "
              f"{table['packed alone MiB'].sum():.2f} MiB); {_verdict(together)}")
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
    print(f"the {len(args.presets)} sets packed together: {packed:.2f} MiB = {packed * 2**20 / 1e6:.2f} MB, the most "
          f"one regeneration of all of them can add (the sum counts the files they share once a set: {total:.2f} MiB)"
          + ("" if args.pages else f"; {_verdict(packed)}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
