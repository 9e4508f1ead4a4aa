"""A trained hashing network of a pipeline run, ready to hash image files (what ``shc encode`` runs).

``shc.pipeline.run_hashing`` writes ``encoder.json`` into each stage-3 folder
(``<run_dir>/<dataset>/seed<k>/stage3-<method>-<q>bit/``): the network (backbone, bits, head options), the
evaluation transform that turns an image file into the network input, the dataset and its class names. With
the weights in ``train/best.pt`` (or ``train/last.pt``) that is everything :func:`load_encoder` needs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ENCODER_FILE", "Encoder", "encode_images", "find_images", "load_encoder", "write_encoder_record"]

ENCODER_FILE = "encoder.json"
ENCODER_FORMAT = 1
WEIGHT_FILES = ("train/best.pt", "train/last.pt")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp")


def _input_record(data: Any, config: Any) -> dict[str, Any]:
    """How a file image becomes the network input: the evaluation transform of ``data`` as plain values."""
    from shc.data.transforms import IMAGENET_MEAN, IMAGENET_STD, CompositeTransform

    transform = data.database.transform
    if isinstance(transform, CompositeTransform):
        image = data.database.raw_image(0)
        return {"kind": "composite", "channels": "L", "mean": transform.mean, "std": transform.std,
                "image_size": transform.image_size, "native_size": list(image.shape[:2])}
    return {"kind": "natural", "channels": "RGB", "mean": list(IMAGENET_MEAN), "std": list(IMAGENET_STD),
            "image_size": int(dict(config.dataset_options).get("image_size") or 224)}


def write_encoder_record(config: Any, directory: str | Path) -> Path:
    """Write ``encoder.json`` for the stage-3 folder ``directory`` of the :class:`shc.pipeline.RunConfig`
    ``config`` (nothing is done when it exists). Called by :func:`shc.pipeline.run_hashing`."""
    from shc._io import write_json
    from shc.runs import load_data, method_spec

    path = Path(directory) / ENCODER_FILE
    if path.exists():
        return path
    data = load_data(config)
    write_json(path, {
        "format": ENCODER_FORMAT, "dataset": config.dataset, "dataset_options": dict(config.dataset_options),
        "class_names": list(data.class_names), "method": config.method, "bits": config.bits,
        "backbone": config.backbone, "pretrained": config.pretrained, "head": dict(method_spec(config).head),
        "precision": config.precision, "input": _input_record(data, config),
    })
    return path


def _missing(run_dir: Path, what: str) -> FileNotFoundError:
    stage3 = sorted(p for p in run_dir.glob("**/stage3-*") if p.is_dir()) if run_dir.is_dir() else []
    hint = ("; stage-3 folders found under it:\n  " + "\n  ".join(map(str, stage3[:20]))) if stage3 else (
        "; pass one stage-3 folder of a pipeline run, <run_dir>/<dataset>/seed<k>/stage3-<method>-<q>bit-<key> "
        "(train one with `python -m shc.pipeline --preset quick`)")
    return FileNotFoundError(f"{run_dir} has no {what}: it is not a trained stage-3 folder{hint}")


@dataclass
class Encoder:
    """A hashing network with the transform and metadata of its run (see :func:`load_encoder`)."""

    model: Any  #: shc.models.HashingNetwork, eval mode, on ``device``
    transform: Any  #: file image (PIL, after ``convert(record["input"]["channels"])``) -> network input
    record: dict[str, Any]  #: the run's encoder.json
    run_dir: Path
    device: Any

    @property
    def num_bits(self) -> int:
        return int(self.record["bits"])

    @property
    def class_names(self) -> list[str]:
        return list(self.record["class_names"])

    def load_image(self, path: str | Path) -> Any:
        """The network input of one image file (PIL errors propagate for unreadable files)."""
        from PIL import Image

        spec = self.record["input"]
        with Image.open(path) as image:
            image = image.convert(spec["channels"])
            if spec["kind"] == "composite":
                height, width = spec["native_size"]
                if image.size != (width, height):
                    image = image.resize((width, height), Image.BILINEAR)
                return self.transform(np.asarray(image, dtype=np.uint8))
            return self.transform(image)

    def encode(self, inputs: Any, batch_size: int = 512) -> np.ndarray:
        """+-1 int8 codes ``(n, q)`` of a stack of network inputs, through :func:`shc.train.predict`."""
        import torch
        from torch.utils.data import TensorDataset

        from shc.models import hash_codes
        from shc.train import predict

        outputs = predict(self.model, TensorDataset(torch.as_tensor(inputs)), batch_size=batch_size,
                          precision=self.record.get("precision", "auto"))
        return np.asarray(hash_codes(outputs))


def load_encoder(run_dir: str | Path, device: str = "auto") -> Encoder:
    """The trained hashing network of a pipeline stage-3 folder, its input transform and class names.

    Parameters
    ----------
    run_dir : str or Path
        ``<run_dir>/<dataset>/seed<k>/stage3-<method>-<q>bit/``, holding ``encoder.json`` and
        ``train/best.pt`` (or ``train/last.pt``).
    device : str
        "auto" (CUDA when available), "cpu", "cuda", ...

    Raises
    ------
    FileNotFoundError
        ``encoder.json`` or the weights are missing; the message lists the stage-3 folders found under
        ``run_dir`` (when it is a run root) or says how to make one.
    """
    import torch

    from shc.data.transforms import CompositeTransform, natural_image_transform
    from shc.models import build_hashing_network
    from shc.train import resolve_device

    run_dir = Path(run_dir).expanduser()
    record_path = run_dir / ENCODER_FILE
    if not record_path.is_file():
        if (run_dir / "codes.npz").is_file():
            raise FileNotFoundError(
                f"{run_dir} was trained before runs recorded {ENCODER_FILE}: call shc.pipeline.run(config) with "
                "its configuration once more (it writes the file without retraining), or train a new run.")
        raise _missing(run_dir, ENCODER_FILE)
    record = json.loads(record_path.read_text())
    if record.get("format", 0) > ENCODER_FORMAT:
        raise ValueError(f"{record_path} has format {record['format']}; this shc reads up to {ENCODER_FORMAT}.")
    weights = next((run_dir / name for name in WEIGHT_FILES if (run_dir / name).is_file()), None)
    if weights is None:
        raise _missing(run_dir, " or ".join(WEIGHT_FILES) + " (network weights)")
    model = build_hashing_network(record["backbone"], int(record["bits"]), pretrained=False, **record["head"])
    checkpoint = torch.load(weights, map_location="cpu", weights_only=True)
    model.load_state_dict(checkpoint["model"])
    device = resolve_device(device)
    model = model.to(device).eval()
    spec = record["input"]
    if spec["kind"] == "composite":
        size = spec["image_size"]
        transform = CompositeTransform(spec["mean"], spec["std"], train=False,
                                       image_size=tuple(size) if isinstance(size, list) else size)
    else:
        transform = natural_image_transform(False, int(spec["image_size"]))
    return Encoder(model, transform, record, run_dir, device)


def find_images(folder: str | Path, suffixes: Sequence[str] = IMAGE_SUFFIXES) -> list[Path]:
    """Image files under ``folder`` (recursively, by suffix, case-insensitive), sorted by relative path."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of images.")
    wanted = {s.lower() for s in suffixes}
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in wanted and p.is_file())


def encode_images(encoder: Encoder, paths: Sequence[str | Path], batch_size: int = 512,
                  progress: bool = False) -> tuple[np.ndarray, list[int], list[tuple[str, str]]]:
    """Codes of image files, skipping the unreadable ones.

    Returns
    -------
    codes : (n_ok, q) int8 +-1
    kept : list of int
        Positions in ``paths`` of the encoded files (rows of ``codes``).
    failed : list of (path, reason)
        Files that could not be read or decoded.
    """
    import torch

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
    chunks, kept, failed = [], [], []
    starts = range(0, len(paths), batch_size)
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(paths), unit="image", desc="encode")
    for start in starts:
        inputs = []
        for position in range(start, min(start + batch_size, len(paths))):
            try:
                inputs.append(encoder.load_image(paths[position]))
                kept.append(position)
            except Exception as error:  # PIL raises several types for broken files  # noqa: BLE001
                failed.append((str(paths[position]), f"{type(error).__name__}: {error}"))
        if inputs:
            chunks.append(encoder.encode(torch.stack(inputs), batch_size))
        if progress:
            bar.update(min(batch_size, len(paths) - start))
    if progress:
        bar.close()
    codes = np.concatenate(chunks) if chunks else np.zeros((0, encoder.num_bits), np.int8)
    return codes, kept, failed
