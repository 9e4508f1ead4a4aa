"""What commits add to the packed repository: issue 38's measure of a report regeneration ("``git count-objects
-vH`` before and after a regeneration commit").

The working repository's own pack depends on its history of repacks, loose objects and other branches, so each
revision is measured alone: its history is fetched into a new, empty repository (``git fetch`` of that revision to a
branch), packed with ``git gc``, and ``git count-objects -v``'s ``size-pack`` read. The difference between two
revisions is what the commits between them add to a clone, with git's deltas against the history before them.

Run: ``python benchmarks/pack_growth.py [REV ...]`` (default ``HEAD~1 HEAD``; from the repository), e.g. the commit
before a report set's regeneration and the regeneration commit.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

import pandas as pd


def _git(folder: Path, *arguments: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *arguments], check=True, capture_output=True, text=True).stdout


def packed_size(repository: Path, revision: str) -> int:
    """``size-pack`` in bytes of ``revision``'s history alone: fetched into an empty repository and ``git gc``-ed."""
    commit = _git(repository, "rev-parse", "--verify", f"{revision}^{{commit}}").strip()
    with tempfile.TemporaryDirectory() as scratch:
        alone = Path(scratch)
        _git(alone, "init", "-q")
        _git(alone, "fetch", "-q", "--no-tags", str(repository.resolve()), f"{commit}:refs/heads/measured")
        _git(alone, "gc", "-q")
        counts = dict(line.split(": ") for line in _git(alone, "count-objects", "-v").splitlines())
    return int(counts["size-pack"]) * 1024


def growth(repository: Path, revisions: list[str]) -> pd.DataFrame:
    """One row per revision: its commit, subject and packed size, and what it adds to the revision before it."""
    rows = []
    for revision in revisions:
        commit, subject = _git(repository, "log", "-1", "--format=%h%x00%s", revision).strip().split("\0", 1)
        rows.append({"revision": revision, "commit": commit, "subject": subject[:60],
                     "size-pack KiB": packed_size(repository, revision) // 1024})
    table = pd.DataFrame(rows)
    table["added MiB"] = table["size-pack KiB"].diff() / 1024
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("revisions", nargs="*", default=["HEAD~1", "HEAD"],
                        help="revisions in order, e.g. the commit before a regeneration and the regeneration")
    args = parser.parse_args(argv)
    root = Path(_git(Path.cwd(), "rev-parse", "--show-toplevel").strip())
    table = growth(root, args.revisions)
    print("## each revision's history packed alone (git fetch into an empty repository, git gc; size-pack)")
    print(table.to_string(index=False, float_format=lambda value: f"{value:+.2f}", na_rep=""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
