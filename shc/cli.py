"""The ``shc`` command: hash a folder of images with a trained run, index the codes, search them.

::

    shc encode --run RUN_DIR --images FOLDER --out codes.npz
    shc index codes.npz --out images.shcidx
    shc search --index images.shcidx --run RUN_DIR --image query.png -k 10 [--html results.html]

``RUN_DIR`` is a pipeline stage-3 folder, ``<run_dir>/<dataset>/seed<k>/stage3-<method>-<q>bit/``. Also
runnable as ``python -m shc``.
"""

from __future__ import annotations

import argparse
import base64
import html
import mimetypes
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["main"]

_SHOWN_FAILURES = 20


def _encode(args: argparse.Namespace) -> int:
    from shc.retrieval.encoder import encode_images, find_images, load_encoder

    encoder = load_encoder(args.run, device=args.device)
    root = Path(args.images).expanduser().resolve()
    paths = find_images(root)
    if not paths:
        raise SystemExit(f"error: no image files under {root} (looked for .png, .jpg, .jpeg, .bmp, .gif, .tif, .webp).")
    codes, kept, failed = encode_images(encoder, paths, batch_size=args.batch_size, progress=not args.quiet)
    relative = np.array([paths[i].relative_to(root).as_posix() for i in kept], dtype=str)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as handle:  # an explicit handle: np.savez would append .npz to other names
        np.savez_compressed(handle, codes=codes, paths=relative, root=str(root), bits=encoder.num_bits,
                            run=str(Path(args.run).resolve()))
    print(f"encoded {len(kept)} images of {root} into {encoder.num_bits}-bit codes: {out}")
    if failed:
        print(f"skipped {len(failed)} unreadable file(s):", file=sys.stderr)
        for path, reason in failed[:_SHOWN_FAILURES]:
            print(f"  {path}: {reason}", file=sys.stderr)
        if len(failed) > _SHOWN_FAILURES:
            print(f"  ... and {len(failed) - _SHOWN_FAILURES} more", file=sys.stderr)
    return 0


def _read_codes(path: str) -> dict[str, np.ndarray]:
    if not Path(path).is_file():
        raise SystemExit(f"error: {path} does not exist; make it with `shc encode --run RUN_DIR --images FOLDER "
                         f"--out {path}`.")
    with np.load(path) as archive:
        missing = {"codes", "paths", "root", "bits"} - set(archive.files)
        if missing:
            raise SystemExit(f"error: {path} lacks {sorted(missing)}: it was not written by `shc encode`.")
        return {key: archive[key] for key in archive.files}


def _index(args: argparse.Namespace) -> int:
    from shc.retrieval import HashIndex

    data = _read_codes(args.codes)
    index = HashIndex(int(data["bits"])).add(data["codes"])
    index.metadata = {"paths": data["paths"].tolist(), "root": str(data["root"]),
                      "run": str(data["run"]) if "run" in data else None}
    index.save(args.out)
    print(f"indexed {len(index)} codes of {index.num_bits} bits ({index.nbytes / 2**20:.1f} MiB): {args.out}")
    return 0


def _data_uri(path: Path) -> str:
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode()}"


def _gallery(query: Path, rows: list[tuple[int, int, Path]], title: str) -> str:
    """A self-contained HTML page: the query, then the results with rank and distance (images inlined)."""
    def figure(path: Path, caption: str) -> str:
        return (f'<figure><img src="{_data_uri(path)}" alt="{html.escape(path.name)}">'
                f"<figcaption>{caption}</figcaption></figure>")

    cells = "\n".join(figure(path, f"#{rank} &middot; d={distance}<br>{html.escape(str(path.name))}")
                      for rank, distance, path in rows)
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:1em}} figure{{display:inline-block;margin:4px;text-align:center;
font-size:11px;vertical-align:top}} img{{height:96px;image-rendering:pixelated;border:1px solid #ccc}}
.query img{{border:2px solid #c33}}</style></head><body>
<h3>{html.escape(title)}</h3>
<div class="query">{figure(query, "query<br>" + html.escape(query.name))}</div>
<div>{cells}</div>
</body></html>
"""


def _search(args: argparse.Namespace) -> int:
    from shc.retrieval import HashIndex
    from shc.retrieval.encoder import encode_images, load_encoder

    encoder = load_encoder(args.run, device=args.device)
    index = HashIndex.load(args.index, num_bits=encoder.num_bits)
    query = Path(args.image).expanduser()
    if not query.is_file():
        raise SystemExit(f"error: query image {query} does not exist.")
    codes, _, failed = encode_images(encoder, [query], batch_size=1)
    if failed:
        raise SystemExit(f"error: cannot read the query image: {failed[0][1]}")
    distances, ids = index.search(codes, args.k)
    paths, root = index.metadata.get("paths"), Path(index.metadata.get("root") or ".")
    if paths is None:
        raise SystemExit(f"error: {args.index} holds no file paths: build it with `shc index codes.npz`.")
    rows = [(rank, int(d), root / paths[int(i)]) for rank, (d, i) in enumerate(zip(distances[0], ids[0]), 1)]
    print(f"query {query} ({encoder.num_bits} bits), {len(index)} indexed images under {root}")
    print(f"{'rank':>4}  {'distance':>8}  path")
    for rank, distance, path in rows:
        print(f"{rank:>4}  {distance:>8}  {path.relative_to(root).as_posix()}")
    if args.html:
        missing = [str(path) for _, _, path in rows if not path.is_file()]
        if missing:
            raise SystemExit(f"error: cannot write the gallery: indexed images moved or deleted ({missing[0]} ...).")
        page = _gallery(query, rows, f"top {len(rows)} of {len(index)} for {query.name}")
        Path(args.html).write_text(page, encoding="utf-8")
        print(f"gallery: {args.html}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shc", description="Hash your own images with a trained SHC run, "
                                     "index the codes and search them by Hamming distance.")
    commands = parser.add_subparsers(dest="command", required=True)
    run_help = "a pipeline stage-3 folder: <run_dir>/<dataset>/seed<k>/stage3-<method>-<q>bit"

    encode = commands.add_parser("encode", help="hash every image under a folder (recursively)")
    encode.add_argument("--run", required=True, help=run_help)
    encode.add_argument("--images", required=True, help="folder of images (.png .jpg .jpeg .bmp .gif .tif .webp)")
    encode.add_argument("--out", required=True, help="codes file to write (.npz: codes + relative paths)")
    encode.add_argument("--batch-size", type=int, default=512)
    encode.add_argument("--device", default="auto", help="auto (CUDA when available), cpu, cuda, cuda:1, ...")
    encode.add_argument("--quiet", action="store_true", help="no progress bar")
    encode.set_defaults(handler=_encode)

    index = commands.add_parser("index", help="build and save a search index from `shc encode` codes")
    index.add_argument("codes", help="codes file written by `shc encode`")
    index.add_argument("--out", required=True, help="index file to write")
    index.set_defaults(handler=_index)

    search = commands.add_parser("search", help="the nearest indexed images of a query image")
    search.add_argument("--index", required=True, help="index file written by `shc index`")
    search.add_argument("--run", required=True, help=run_help + " (the one that encoded the indexed images)")
    search.add_argument("--image", required=True, help="query image file")
    search.add_argument("-k", type=int, default=10, help="results to show (default 10)")
    search.add_argument("--html", help="also write an offline HTML gallery of the query and its results")
    search.add_argument("--device", default="auto")
    search.set_defaults(handler=_search)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
