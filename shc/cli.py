"""The ``shc`` command: hash a folder of images with a trained run, index the codes, search them.

::

    shc encode --run RUN_DIR --images FOLDER --out codes.npz [--allow-unfinished]
    shc index codes.npz --out images.shcidx
    shc search --index images.shcidx --run RUN_DIR --image query.png -k 10 [--html results.html] [--force]
    shc export images.shcidx --to faiss|milvus|usearch|npy --out FILE (milvus: --uri URI)
    shc import FILE --from faiss|npy --out images.shcidx

``RUN_DIR`` is a pipeline stage-3 folder, ``<run_dir>/<dataset>/seed<k>/stage3-<method>-<q>bit-<key>/``. The
codes file and the index record the run's identity and a digest of its weights; ``shc search`` refuses a run
whose identity or weights differ (``--force`` overrides), and ``shc encode`` refuses an unfinished run
(``--allow-unfinished`` overrides and is recorded). Every file is written atomically; errors are one line with
exit status 2 (130 after Ctrl-C). Also runnable as ``python -m shc``.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import mimetypes
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shc.cli_common import device_name, output_file, positive_int, refuse_overwriting, refuse_replacing, run_cli

__all__ = ["main"]

_SHOWN_FAILURES = 20


def _encode(args: argparse.Namespace) -> int:
    from shc._io import save_npz
    from shc.retrieval.encoder import encode_images, find_images, load_encoder

    out = output_file(args.out, "--out")
    if out.suffix.lower() != ".npz":  # an .shcidx name made a codes file that shc search then refused as an index
        raise ValueError(f"--out {args.out!r}: shc encode writes a codes file (.npz); name it e.g. "
                         f"{out.with_suffix('.npz').name}, then build the index with `shc index`.")
    root = Path(args.images).expanduser().resolve()
    if not root.is_dir():
        raise ValueError(f"--images {args.images!r} is not a folder; give the folder of images to encode.")
    _refuse_unfinished_export(root, args.images)
    encoder = load_encoder(args.run, device=args.device, allow_unfinished=args.allow_unfinished)
    paths = find_images(root)
    if not paths:
        raise ValueError(f"--images: no image files under {root} (looked for .png, .jpg, .jpeg, .bmp, .gif, .tif, "
                         ".webp); give a folder that holds some.")
    refuse_overwriting([out], [*paths, *(path for path in Path(args.run).expanduser().rglob("*") if path.is_file())],
                       "--out")  # an image it encodes, or a file of the network encoding them
    refuse_replacing([out], "--out", args.overwrite)
    codes, kept, failed = encode_images(encoder, paths, batch_size=args.batch_size, progress=not args.quiet)
    if not kept:
        raise ValueError(f"--images: none of the {len(paths)} image files under {root} could be read (the first: "
                         f"{failed[0][1]}); nothing was written.")
    relative = np.array([paths[i].relative_to(root).as_posix() for i in kept], dtype=str)
    save_npz(out, codes=codes, paths=relative, root=str(root), bits=encoder.num_bits,
             run=encoder.provenance["run"], provenance=json.dumps(encoder.provenance))
    print(f"encoded {len(kept)} images of {root} into {encoder.num_bits}-bit codes: {out}")
    if not encoder.provenance["finished"]:
        print(f"warning: {args.run} has not finished training; {out} records that (--allow-unfinished).",
              file=sys.stderr)
    if encoder.resize_warning():
        print(f"warning: {encoder.resize_warning()}", file=sys.stderr)
    if failed:
        print(f"skipped {len(failed)} unreadable file(s):", file=sys.stderr)
        for path, reason in failed[:_SHOWN_FAILURES]:
            print(f"  {path}: {reason}", file=sys.stderr)
        if len(failed) > _SHOWN_FAILURES:
            print(f"  ... and {len(failed) - _SHOWN_FAILURES} more", file=sys.stderr)
    return 0


def _refuse_unfinished_export(root: Path, given: str) -> None:
    """Refuse a folder that ``python -m shc.data export-images`` began and did not finish (its images are a part
    of the split, not the split)."""
    from shc.data.__main__ import unfinished_export

    record = unfinished_export(root)
    if record is not None:
        raise ValueError(f"--images {given!r} is an unfinished export ({record} says `python -m shc.data "
                         f"export-images` did not complete): rerun that command to finish it, or delete {record} "
                         "to encode the images that are there.")


def _read_codes(path: str) -> dict[str, Any]:
    """The arrays of a codes file written by ``shc encode``, and its ``provenance`` (None for an earlier shc's)."""
    import zipfile
    import zlib

    file = Path(path).expanduser()
    # a file that is there but not encode's (a pipeline run's codes.npz) is not the --out to suggest: encode refuses
    # to overwrite what it reads, and the user's file would be lost (a newcomer's probe)
    out = path if not file.exists() else str(Path(path).with_name(f"{Path(path).stem}-encoded.npz"))
    remedy = f"make {'it' if out == path else 'one'} with `shc encode --run RUN_DIR --images FOLDER --out {out}`"
    if file.is_dir():
        raise ValueError(f"codes file {path} is a folder; give the .npz file `shc encode` wrote.")
    if not file.is_file():
        raise FileNotFoundError(f"codes file {path} does not exist; {remedy}.")
    damaged = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error)
    with open(file, "rb") as handle:
        if handle.read(7) == b"SHCHIDX":  # numpy's own message spoke of pickled data, and the remedy overwrote it
            raise ValueError(f"{path} is already an index (`shc index` wrote it): pass it to `shc search --index` or "
                             "`shc export`; `shc index` takes the codes file of `shc encode`.")
    try:
        archive = np.load(file, allow_pickle=False)
    except damaged as error:
        raise ValueError(f"codes file {path} cannot be read ({type(error).__name__}: {error}): it is damaged or not "
                         f"written by `shc encode`; {remedy}.") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"codes file {path} holds a single array (.npy), not the archive `shc encode` writes; "
                         f"{remedy}.")
    with archive:
        missing = {"codes", "paths", "root", "bits"} - set(archive.files)
        if missing:
            raise ValueError(f"codes file {path} lacks {sorted(missing)}: it was not written by `shc encode`; "
                             f"{remedy}.")
        try:
            data: dict[str, Any] = {key: archive[key] for key in archive.files}
            data["provenance"] = json.loads(str(data["provenance"])) if "provenance" in data else None
        except damaged as error:
            raise ValueError(f"codes file {path} is damaged ({type(error).__name__}: {error}); {remedy}.") from None
    if data["codes"].ndim != 2 or len(data["codes"]) != len(data["paths"]):
        raise ValueError(f"codes file {path} is inconsistent ({data['codes'].shape} codes for {len(data['paths'])} "
                         f"paths); {remedy}.")
    if len(data["codes"]) == 0:
        raise ValueError(f"codes file {path} holds no codes (no readable image was encoded); run `shc encode` on a "
                         "folder with readable images.")
    return data


def _index(args: argparse.Namespace) -> int:
    from shc.retrieval import HashIndex

    out = output_file(args.out, "--out")
    refuse_overwriting([out], [args.codes], "--out")
    data = _read_codes(args.codes)
    refuse_replacing([out], "--out", args.overwrite)  # after the codes' own errors: those are the first to fix
    index = HashIndex(int(data["bits"])).add(data["codes"])
    index.metadata = {"paths": data["paths"].tolist(), "root": str(data["root"]),
                      "run": str(data["run"]) if "run" in data else None, "provenance": data["provenance"]}
    index.save(out)
    print(f"indexed {len(index)} codes of {index.num_bits} bits ({index.nbytes / 2**20:.1f} MiB): {out}")
    if data["provenance"] is None:
        print(f"warning: {args.codes} does not record which network made its codes (an earlier shc); "
              "`shc search` will ask for --force. Re-encode the images to record it.", file=sys.stderr)
    return 0


def _data_uri(path: Path) -> str:
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode()}"


def _gallery(query: Path, rows: list[tuple[int, int, Path]], title: str, root: Path) -> str:
    """A self-contained HTML page: the query, then the results with rank, distance and their path under the
    index's ``root`` (as the terminal prints them: a class folder is part of it; images inlined)."""
    def figure(path: Path, caption: str, name: str) -> str:
        return (f'<figure><img src="{_data_uri(path)}" alt="{html.escape(name)}">'
                f"<figcaption>{caption}</figcaption></figure>")

    cells = "\n".join(figure(path, f"#{rank} &middot; d={distance}<br>{html.escape(name)}", name)
                      for rank, distance, path in rows for name in [path.relative_to(root).as_posix()])
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:1em}} figure{{display:inline-block;margin:4px;text-align:center;
font-size:11px;vertical-align:top}} img{{height:96px;image-rendering:pixelated;border:1px solid #ccc}}
.query img{{border:2px solid #c33}}</style></head><body>
<h3>{html.escape(title)}</h3>
<div class="query">{figure(query, "query<br>" + html.escape(query.name), query.name)}</div>
<div>{cells}</div>
</body></html>
"""


def _search(args: argparse.Namespace) -> int:
    from shc._io import write_text
    from shc.retrieval import HashIndex
    from shc.retrieval.encoder import arithmetic_note, encode_images, load_encoder, verify_provenance

    gallery = output_file(args.html, "--html") if args.html else None
    if gallery is not None:
        refuse_overwriting([gallery], [args.index, args.image], "--html")
    query = Path(args.image).expanduser()
    if not query.is_file():
        what = "is a folder" if query.is_dir() else "does not exist"
        raise FileNotFoundError(f"--image {args.image!r} {what}; give the query image's path.")
    run = args.run
    if run is None:  # the run whose network encoded the indexed images, as the index records it
        run = HashIndex.load(args.index).metadata.get("run")
        if run is None or not Path(run).is_dir():
            recorded = "records no run" if run is None else f"records the run {run}, which is not on this machine"
            raise ValueError(f"--index {args.index} {recorded}; pass --run with the stage-3 folder that encoded it.")
    encoder = load_encoder(run, device=args.device, allow_unfinished=True)  # provenance decides below
    index = HashIndex.load(args.index, num_bits=encoder.num_bits)
    warning = verify_provenance(index.metadata.get("provenance"), encoder, f"index {args.index}", force=args.force)
    if warning:
        print(f"warning: {warning}; searching anyway (--force).", file=sys.stderr)
    note = arithmetic_note(index.metadata.get("provenance"), encoder, f"index {args.index}")
    if note:
        print(f"note: {note}.", file=sys.stderr)
    paths, root = index.metadata.get("paths"), Path(index.metadata.get("root") or ".")
    if paths is None:
        raise ValueError(f"{args.index} holds no file paths: build it with `shc index codes.npz`.")
    codes, _, failed = encode_images(encoder, [query], batch_size=1)
    if failed:
        raise ValueError(f"--image: cannot read the query image: {failed[0][1]}")
    if encoder.resize_warning():
        print(f"warning: the query: {encoder.resize_warning()}", file=sys.stderr)
    distances, ids = index.search(codes, args.k)
    rows = [(rank, int(d), root / paths[int(i)]) for rank, (d, i) in enumerate(zip(distances[0], ids[0]), 1)]
    print(f"query {query} ({encoder.num_bits} bits), {len(index)} indexed images under {root}")
    print(f"{'rank':>4}  {'distance':>8}  path")
    for rank, distance, path in rows:
        shown = path.relative_to(root).as_posix().encode("utf-8", "replace").decode("utf-8")  # any bytes of a name
        print(f"{rank:>4}  {distance:>8}  {shown}")
    if gallery is not None:
        inside = gallery.resolve().is_relative_to(root.resolve())
        if inside and gallery.resolve().relative_to(root.resolve()).as_posix() in set(paths):
            raise ValueError(f"--html would overwrite {gallery}, an image of the index; choose another --html.")
        missing = [str(path) for _, _, path in rows if not path.is_file()]
        if missing:
            raise ValueError(f"--html: cannot write the gallery: indexed images moved or deleted ({missing[0]} ...); "
                             "rebuild the index from the images where they are now.")
        page = _gallery(query, rows, f"top {len(rows)} of {len(index)} for {query.name}", root)
        # a file name that is not UTF-8 (Linux allows any bytes) shows with a replacement character, not a crash
        write_text(gallery, page.encode("utf-8", "replace").decode("utf-8"))
        print(f"gallery: {gallery}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shc", description="Hash your own images with a trained SHC run, "
                                     "index the codes and search them by Hamming distance.",
                                     epilog="--debug (anywhere) shows the traceback of an error.")
    commands = parser.add_subparsers(dest="command", required=True)
    run_help = "a pipeline stage-3 folder: <run_dir>/<dataset>/seed<k>/stage3-<method>-<q>bit-<key>"
    device_help = "auto (CUDA when available), cpu, cuda, cuda:1, ..."

    encode = commands.add_parser("encode", help="hash every image under a folder (recursively)")
    encode.add_argument("--run", required=True, help=run_help)
    encode.add_argument("--images", required=True, help="folder of images (.png .jpg .jpeg .bmp .gif .tif .webp)")
    encode.add_argument("--out", required=True, help="codes file to write (.npz: codes, relative paths, provenance)")
    encode.add_argument("--batch-size", type=positive_int, default=512)
    encode.add_argument("--device", type=device_name, default="auto", help=device_help)
    encode.add_argument("--allow-unfinished", action="store_true",
                        help="encode with a run whose training has not finished (recorded in the codes file)")
    encode.add_argument("--quiet", action="store_true", help="no progress bar")
    encode.add_argument("--overwrite", action="store_true", help="replace --out if it is there")
    encode.set_defaults(handler=_encode)

    index = commands.add_parser("index", help="build and save a search index from `shc encode` codes")
    index.add_argument("codes", help="codes file written by `shc encode`")
    index.add_argument("--out", required=True, help="index file to write")
    index.add_argument("--overwrite", action="store_true", help="replace --out if it is there")
    index.set_defaults(handler=_index)

    search = commands.add_parser("search", help="the nearest indexed images of a query image")
    search.add_argument("--index", required=True, help="index file written by `shc index`")
    search.add_argument("--run", default=None, help=run_help + " (the one that encoded the indexed images; default: "
                        "the run the index records)")
    search.add_argument("--image", required=True, help="query image file")
    search.add_argument("-k", type=positive_int, default=10, help="results to show (default 10)")
    search.add_argument("--html", help="also write an offline HTML gallery of the query and its results")
    search.add_argument("--device", type=device_name, default="auto", help=device_help)
    search.add_argument("--force", action="store_true",
                        help="search even when the index was encoded by another run or other weights")
    search.set_defaults(handler=_search)

    from shc.retrieval.cli import add_commands

    add_commands(commands)  # export, import (shc.retrieval.stores)
    return parser


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``shc`` command; returns the exit status (2 for a user error, 130 after Ctrl-C)."""
    return run_cli(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
