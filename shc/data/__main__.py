"""Command line of :mod:`shc.data`: ``python -m shc.data export-images DATASET --split database --out FOLDER``
writes a split's images as PNG files, one sub-folder per class (a folder to try ``shc encode`` on).

The folder records the export in ``.shc-export.json`` (:data:`EXPORT_RECORD`): written before the first image
with ``"complete": false``, rewritten ``true`` after the last, so an interrupted export is known as one
(:func:`unfinished_export`; ``shc encode`` refuses it) and a rerun finishes it."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["EXPORT_RECORD", "export_images", "main", "run_dataset", "unfinished_export"]

#: The record of an ``export-images`` in its folder (what was exported, and whether the export completed).
EXPORT_RECORD = ".shc-export.json"


def _folder_name(name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", str(name)).strip("._") or "class"


def export_images(dataset: str, split: str, out: str | Path, seed: int = 0, root: str | None = None,
                  **options: Any) -> int:
    """Write split ``split`` of ``load_dataset(dataset, root, seed, **options)`` to ``out/<class>/<pos>.png``.

    ``<pos>`` is the image's 6-digit position in the split (its row in the pipeline's ``codes.npz``);
    multi-label images go to ``out/images/``. Returns the number of files written. ``out/.shc-export.json``
    says whether the export completed (:func:`unfinished_export`).
    """
    from PIL import Image

    from shc._io import atomic_path, write_json
    from shc.data import load_dataset

    data = load_dataset(dataset, root=root, seed=seed, **options)
    if split not in data.splits:
        raise ValueError(f"unknown split {split!r}; splits: {', '.join(data.splits)}.")
    part = data.splits[split]
    out = Path(out)
    record = {"dataset": dataset, "split": split, "seed": seed, "options": options, "count": len(part)}
    _refuse_foreign_files(out, record)
    write_json(out / EXPORT_RECORD, {**record, "complete": False})
    for position in range(len(part)):
        folder = "images" if data.multi_label else _folder_name(data.class_names[int(part.labels[position])])
        with atomic_path(out / folder / f"{position:06d}.png", suffix=".tmp.png") as temporary:
            Image.fromarray(part.raw_image(position)).save(temporary, format="PNG")
    write_json(out / EXPORT_RECORD, {**record, "complete": True})
    return len(part)


def _refuse_foreign_files(out: Path, record: dict) -> None:
    """Refuse a folder that holds files of something else: ``shc encode`` encodes every image below its folder, so a
    new export beside an older one (another split, seed or dataset) would mix their images. The folder of this
    very export (its record names the same dataset, split, seed, options and count) is allowed: rerunning finishes
    an interrupted export or rewrites a finished one, file for file."""
    if not out.is_dir() or not any(out.iterdir()):
        return
    try:
        found = json.loads((out / EXPORT_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        found = None
    if isinstance(found, dict) and {key: found.get(key) for key in record} == json.loads(json.dumps(record)):
        return
    # name what differs (the same dataset, split and seed with other options read as the values asked for)
    wanted = json.loads(json.dumps(record))
    differ = [key for key in record if isinstance(found, dict) and found.get(key) != wanted[key]]
    what = ("another export's images (" + ", ".join(f"{key} {found.get(key)!r} where this export's is "
                                                    f"{wanted[key]!r}" for key in differ) + ")"
            ) if isinstance(found, dict) else "files of its own"
    raise ValueError(f"{out} already holds {what}; exporting here would mix them with these, and shc encode reads "
                     f"every image below the folder. Pass a new or empty --out folder, or delete {out} first.")


def unfinished_export(folder: str | Path) -> Path | None:
    """The record of an ``export-images`` that did not complete in ``folder`` or a folder above it (a class
    folder of the export), or None: no export there, or a complete one."""
    folder = Path(folder).expanduser().resolve()
    for place in (folder, *folder.parents):
        record = place / EXPORT_RECORD
        if record.is_file():
            try:
                complete = json.loads(record.read_text(encoding="utf-8")).get("complete") is True
            except (ValueError, OSError, AttributeError):  # damaged: its export cannot be vouched for
                complete = False
            return None if complete else record
    return None


def run_dataset(run: str | Path) -> dict[str, Any]:
    """The dataset of a run folder (any stage's, e.g. ``stage3-shc-32bit-...``): ``dataset``, ``seed``, ``root`` and
    its ``options`` from the folder's ``config.json``, so an export holds the very images the run's splits hold.
    Every option counts: the splits are drawn per class one after the other, so a database of the same size after a
    larger training split holds other images."""
    path = Path(run) / "config.json"
    if not Path(run).is_dir():
        raise FileNotFoundError(f"--run {run} does not exist (or is not a folder); give a run's stage folder, e.g. "
                                "runs/quick/digits-composite/seed0/stage3-shc-32bit-<key>.")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
        found = {"dataset": config["dataset"], "seed": int(config["seed"]), "root": config.get("data_root"),
                 "options": dict(config.get("dataset_options") or {})}
    except FileNotFoundError:
        raise FileNotFoundError(f"--run {run} has no config.json; give a run's stage folder, e.g. "
                                "runs/quick/digits-composite/seed0/stage3-shc-32bit-<key>.") from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path} is damaged ({error!r}); compute the run again, or pass the dataset, --seed and "
                         "--option by hand.") from None
    return found


def _option(text: str) -> tuple[str, Any]:
    key, separator, value = text.partition("=")
    if not separator:
        raise argparse.ArgumentTypeError(f"--option takes KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m shc.data``; returns the exit status (2 for a user error, 130 after Ctrl-C)."""
    from shc.cli_common import run_cli

    return run_cli(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    from shc.cli_common import non_negative_int, output_folder

    parser = argparse.ArgumentParser(prog="python -m shc.data", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser("export-images", help="write a split's images as PNG files, a folder per class")
    export.add_argument("dataset", nargs="?", help="a name of shc.data.available_datasets(), e.g. digits-composite "
                        "(or --run)")
    export.add_argument("--run", help="a run's stage folder: export its dataset, seed and every dataset option "
                        "(the images its splits hold); not with DATASET, --seed, --root or --option")
    export.add_argument("--split", default="database", choices=("train", "val", "query", "database"))
    export.add_argument("--out", required=True, help="folder to write (created)")
    export.add_argument("--seed", type=non_negative_int, help="the seed of the splits (a run's seed; default 0)")
    export.add_argument("--root", help="dataset files folder (default: $SHC_DATA_ROOT or ~/shc-data)")
    export.add_argument("--option", type=_option, action="append", default=[], metavar="KEY=VALUE",
                        help="a dataset option, e.g. num_classes=10 (JSON values)")
    args = parser.parse_args(argv)
    given = [name for name, value in (("DATASET", args.dataset), ("--seed", args.seed), ("--root", args.root),
                                      ("--option", args.option)) if value not in (None, [])]
    if args.run is not None and given:
        export.error(f"--run takes the dataset, seed, root and options from the run; drop {', '.join(given)}.")
    if args.run is None and args.dataset is None:
        export.error("give a DATASET (e.g. digits-composite) or --run RUN (a run's stage folder).")
    source = (run_dataset(args.run) if args.run is not None else
              {"dataset": args.dataset, "seed": args.seed or 0, "root": args.root, "options": dict(args.option)})
    output_folder(args.out, "--out")
    count = export_images(source["dataset"], args.split, args.out, seed=source["seed"], root=source["root"],
                          **source["options"])
    print(f"wrote {count} images of {source['dataset']} ({args.split} split, seed {source['seed']}) to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
