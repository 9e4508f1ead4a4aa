"""The most a regeneration of each committed report set can add to the packed repository (issue 38).

A regeneration whose numbers move writes every figure, data file and page anew. What it adds to the pack is then at
most what the set's files take packed on their own: git may store a new file as a delta against its old version, which
only makes it smaller (and for PNG, gzip and zip files, whose bytes change throughout, it rarely can). So this packs
each preset folder's tracked files alone, in a fresh repository with one commit (``git gc``), and reads
``git count-objects -v``'s ``size-pack``: a measured upper bound of that preset's regeneration, and their sum the
bound of regenerating all of them against the issue's target of 8 MB.

Run: ``python benchmarks/regeneration_bound.py [--presets quick standard ...]`` (from the repository root; it reads
the committed files, ``git ls-files``, not untracked build leftovers).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

import pandas as pd

PRESETS = ("quick", "standard", "standard-pretrained", "standard-fine")
TARGET_BYTES = 8_000_000  # issue 38: regenerating the four presets adds at most 8 MB to the packed repository


def _git(folder: Path, *arguments: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *arguments], check=True, capture_output=True, text=True).stdout


def packed_alone(root: Path, preset: str) -> dict[str, object]:
    """``size-pack`` (bytes) of the tracked files of ``root/reports/<preset>`` committed alone into a new repository."""
    files = [line for line in _git(root, "ls-files", "-z", f"reports/{preset}").split("\0") if line]
    if not files:
        raise SystemExit(f"no committed files under reports/{preset}/; build and commit it first "
                         f"(python -m shc.reports --preset {preset}).")
    with tempfile.TemporaryDirectory() as scratch:
        repository = Path(scratch)
        _git(repository, "init", "-q")
        for name in files:
            target = repository / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / name, target)
        _git(repository, "add", "-A")
        _git(repository, "-c", "user.name=bound", "-c", "user.email=bound@localhost", "commit", "-q", "-m", "alone")
        _git(repository, "gc", "-q")
        counts = dict(line.split(": ") for line in _git(repository, "count-objects", "-v").splitlines())
    published = sum((root / name).stat().st_size for name in files)
    return {"preset": preset, "files": len(files), "published MB": published / 1e6,
            "packed alone MiB": int(counts["size-pack"]) / 1024}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    args = parser.parse_args(argv)
    root = Path(_git(Path.cwd(), "rev-parse", "--show-toplevel").strip())
    table = pd.DataFrame([packed_alone(root, preset) for preset in args.presets])
    total = table["packed alone MiB"].sum()
    table.loc[len(table)] = {"preset": "total", "files": table["files"].sum(),
                             "published MB": table["published MB"].sum(), "packed alone MiB": total}
    print("## each committed report set packed alone: the most its regeneration can add (git gc; size-pack)")
    print(table.to_string(index=False, float_format=lambda value: f"{value:.2f}"))
    verdict = "within" if total * 2**20 <= TARGET_BYTES else "over"
    print(f"sum {total:.2f} MiB = {total * 2**20 / 1e6:.2f} MB: {verdict} the target of {TARGET_BYTES / 1e6:.0f} MB "
          f"({TARGET_BYTES / 2**20:.2f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
