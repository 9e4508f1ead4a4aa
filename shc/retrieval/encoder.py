"""A trained hashing network of a pipeline run, ready to hash image files (what ``shc encode`` runs).

Stage 3 (:class:`shc.stages.Hashing`) writes ``encoder.json`` into each stage-3 folder
(``<run_dir>/<dataset>/seed<k>/stage3-<method>-<q>bit/``): the network (backbone, bits, head options), the
evaluation transform that turns an image file into the network input, the dataset and its class names. With
the weights in ``train/best.pt`` (or ``train/last.pt``) that is everything :func:`load_encoder` needs.

Codes know where they came from: :attr:`Encoder.provenance` names the run (its stage-3 identity) and a SHA-256 of
the exact weights; ``shc encode`` stores it with the codes, ``shc index`` in the index, and
:func:`verify_provenance` refuses to search codes with another run's (or another training state's) network.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# the stage-3 record this module reads is written by the stage (shc.stages.Hashing); its format lives there
from shc.stages import ENCODER_FILE, ENCODER_FORMAT, write_encoder_record

__all__ = ["ENCODER_FILE", "Encoder", "arithmetic_note", "encode_images", "find_images", "load_encoder", "verify_provenance",
           "weights_digest", "write_encoder_record"]

WEIGHT_FILES = ("train/best.pt", "train/last.pt")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp")


def _missing(run_dir: Path, what: str) -> FileNotFoundError:
    if not run_dir.exists():
        nearby = sorted(p.name for p in run_dir.parent.glob("stage3-*") if p.is_dir()) if run_dir.parent.is_dir() else []
        return FileNotFoundError(f"{run_dir} does not exist" + (f"; stage-3 folders beside it: {', '.join(nearby[:5])}"
                                                                 if nearby else "") + ".")
    if run_dir.is_file():
        folder = next((parent for parent in run_dir.parents if parent.name.startswith("stage3-")), None)
        return FileNotFoundError(f"{run_dir} is a file; pass a stage-3 folder"
                                 + (f": {folder}" if folder else " (<run_dir>/<dataset>/seed<k>/stage3-...)") + ".")
    stage3 = sorted(p for p in run_dir.glob("**/stage3-*") if p.is_dir()) if run_dir.is_dir() else []
    more = f", ... ({len(stage3)} in all)" if len(stage3) > 5 else ""
    hint = ("; stage-3 folders found under it: " + ", ".join(map(str, stage3[:5])) + more) if stage3 else (
        "; pass one stage-3 folder of a pipeline run, <run_dir>/<dataset>/seed<k>/stage3-<method>-<q>bit-<key> "
        "(train one in a minute with `python -m shc.pipeline --preset tiny`)")
    return FileNotFoundError(f"{run_dir} has no {what}: it is not a trained stage-3 folder{hint}")


@dataclass
class Encoder:
    """A hashing network with the transform and metadata of its run (see :func:`load_encoder`)."""

    model: Any  #: shc.models.HashingNetwork, eval mode, on ``device``
    transform: Any  #: file image (PIL, after :func:`shc.data.transforms.convert_image`) -> network input
    record: dict[str, Any]  #: the run's encoder.json
    run_dir: Path
    device: Any
    #: where the codes come from: ``run`` (folder), ``identity`` (the stage-3 identity key), ``weights`` (file),
    #: ``weights_sha256`` (:func:`weights_digest`), ``finished`` (the run's metrics.json exists)
    provenance: dict[str, Any]
    #: how many images :meth:`load_image` resized to the network's input, by their own (width, height)
    resized: Counter = field(default_factory=Counter, repr=False)

    def resize_warning(self) -> str | None:
        """A sentence on the images :meth:`load_image` stretched to the network's native input size (None: none):
        their count and sizes, and whether their aspect ratio changed. Codes of such images can mean little."""
        if not self.resized:
            return None
        height, width = self.record["input"]["native_size"]
        sizes = ", ".join(f"{w}x{h} ({n})" for (w, h), n in self.resized.most_common(4))
        more = ", ..." if len(self.resized) > 4 else ""
        stretched = sum(n for (w, h), n in self.resized.items() if w * height != h * width)
        ratio = (f"; {stretched} of them were stretched to another aspect ratio" if stretched else "")
        return (f"{sum(self.resized.values())} image(s) were not {width}x{height} pixels, the size the network was "
                f"trained on, and were resized to it (sizes met, width x height: {sizes}{more}){ratio}. Their codes "
                "mean something only if they show what the training images showed at that scale.")

    @property
    def num_bits(self) -> int:
        return int(self.record["bits"])

    @property
    def class_names(self) -> list[str]:
        return list(self.record["class_names"])

    def load_image(self, path: str | Path) -> Any:
        """The network input of one image file (PIL errors propagate for unreadable files)."""
        from PIL import Image

        from shc.data.transforms import convert_image

        spec = self.record["input"]
        with Image.open(path) as image:
            image = convert_image(image, spec["channels"])
            if spec["kind"] == "composite":
                height, width = spec["native_size"]
                if image.size != (width, height):
                    self.resized[image.size] += 1
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
                          precision=self.provenance["precision"],
                          num_workers=0)  # tensors already in memory: worker processes would only copy them
        return np.asarray(hash_codes(outputs))


def weights_digest(state: Mapping[str, Any]) -> str:
    """SHA-256 of a network's weights (a ``state_dict``): each tensor's name, dtype, shape and bytes, in name
    order. Equal digests, equal networks: what :func:`verify_provenance` compares."""
    import torch

    digest = hashlib.sha256()
    for name in sorted(state):
        tensor = torch.as_tensor(state[name]).detach().cpu().contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy())
    return digest.hexdigest()


def _run_identity(run_dir: Path) -> str | None:
    """The identity key of a stage-3 folder (the 8 hex digits its name ends with when nobody renamed it), from
    its ``config.json``; None when that is missing or damaged."""
    from shc.stages import identity_key, read_identity

    identity = read_identity(run_dir)
    return None if identity is None else identity_key(identity)


def load_encoder(run_dir: str | Path, device: str = "auto", allow_unfinished: bool = False) -> Encoder:
    """The trained hashing network of a pipeline stage-3 folder, its input transform and class names.

    Parameters
    ----------
    run_dir : str or Path
        ``<run_dir>/<dataset>/seed<k>/stage3-<method>-<q>bit/``, holding ``encoder.json`` and
        ``train/best.pt`` (or ``train/last.pt``).
    device : str
        "auto" (CUDA when available), "cpu", "cuda", "cuda:N".
    allow_unfinished : bool
        Accept a run whose training has not finished (no ``metrics.json``: interrupted, or still running). Its
        weights change when it is resumed, so by default it is refused; :attr:`Encoder.provenance` records
        ``finished: False``. Also accepts a finished run whose ``train/best.pt`` (the selected epoch's weights) is
        gone, encoding with ``train/last.pt`` (the last epoch's; recorded as the weights).

    Raises
    ------
    FileNotFoundError
        ``encoder.json`` or the weights are missing; the message lists the stage-3 folders found under
        ``run_dir`` (when it is a run root) or says how to make one.
    ValueError
        An unfinished run without ``allow_unfinished``; a damaged ``encoder.json`` or checkpoint; a bad
        ``device``.
    """
    from shc.data.transforms import CompositeTransform, natural_image_transform
    from shc.models import build_hashing_network
    from shc.train import resolve_device
    from shc.train.checkpoint import load_checkpoint

    run_dir = Path(run_dir).expanduser()
    record_path = run_dir / ENCODER_FILE
    if not record_path.is_file():
        if (run_dir / "codes.npz").is_file():
            raise FileNotFoundError(
                f"{run_dir} was trained before runs recorded {ENCODER_FILE}: call shc.pipeline.run(config) with "
                "its configuration once more (it writes the file without retraining), or train a new run.")
        raise _missing(run_dir, ENCODER_FILE)
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        _ = record["input"]["kind"], int(record["bits"])  # the keys every use reads
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{record_path} is damaged ({type(error).__name__}: {error}); delete it and call "
                         "shc.pipeline.run(config) with the run's configuration to write it again.") from None
    if record.get("format", 0) > ENCODER_FORMAT:
        raise ValueError(f"{record_path} has format {record['format']}; this shc reads up to {ENCODER_FORMAT}.")
    if not isinstance(allow_unfinished, bool):
        raise ValueError(f"allow_unfinished must be True or False, got {allow_unfinished!r}.")
    finished = (run_dir / "metrics.json").is_file()
    if not finished and not allow_unfinished:
        raise ValueError(
            f"run {run_dir} has not finished training (no metrics.json: it was interrupted or is still running); "
            "its weights change when it is resumed, so codes made now would not match it later. Finish it first "
            "(rerun the same pipeline command), or pass --allow-unfinished (allow_unfinished=True) to encode with "
            "its current weights (recorded with the codes).")
    weights = next((run_dir / name for name in WEIGHT_FILES if (run_dir / name).is_file()), None)
    if finished and weights is not None and weights.name != "best.pt" and not allow_unfinished:
        # last.pt holds the last epoch's weights, not the selected model's that the run's codes and metrics come from
        epoch = ""
        with contextlib.suppress(ValueError, KeyError, TypeError):
            epoch = f" {json.loads((run_dir / 'metrics.json').read_text(encoding='utf-8'))['selected_epoch']}"
        raise FileNotFoundError(
            f"{run_dir / WEIGHT_FILES[0]} (the weights of the selected epoch{epoch}) is missing, and {weights.name} "
            "holds the last epoch's, whose codes differ from the run's. Put back a copy of best.pt, or train the run "
            "again (delete its folder and rerun its pipeline command), or pass --allow-unfinished "
            "(allow_unfinished=True) to encode with the last epoch's weights (recorded with the codes).")
    if weights is None:
        raise _missing(run_dir, " or ".join(WEIGHT_FILES) + " (network weights)")
    device = resolve_device(device)
    model = build_hashing_network(record["backbone"], int(record["bits"]), pretrained=False, **record["head"])
    state = load_checkpoint(weights).get("model")
    try:
        model.load_state_dict(state)
    except (RuntimeError, TypeError, AttributeError) as error:
        raise ValueError(f"{weights} does not hold the weights of the network {record_path} describes "
                         f"({str(error).splitlines()[0][:160]}); delete the run folder and train it again.") from None
    model = model.to(device).eval()
    spec = record["input"]
    if spec["kind"] == "composite":
        size = spec["image_size"]
        transform = CompositeTransform(spec["mean"], spec["std"], train=False,
                                       image_size=tuple(size) if isinstance(size, list) else size)
    else:
        transform = natural_image_transform(False, int(spec["image_size"]))
    from shc.devices import resolve_precision

    trained_in = record.get("precision", "auto")  # fp16 has no CPU arithmetic: a GPU's run encodes there as auto
    precision = resolve_precision("auto" if trained_in == "fp16" and device.type == "cpu" else trained_in, device)
    provenance = {"run": str(run_dir.resolve()), "identity": _run_identity(run_dir),
                  "weights": weights.relative_to(run_dir).as_posix(), "weights_sha256": weights_digest(state),
                  "finished": finished, "device": device.type,  # the arithmetic the codes are made in: another
                  "precision": precision}  # may flip a near-0 bit (arithmetic_note says so)
    return Encoder(model, transform, record, run_dir, device, provenance)


def arithmetic_note(recorded: Mapping[str, Any] | None, encoder: Encoder, source: str) -> str | None:
    """A note when ``encoder`` makes its codes in another arithmetic (device type or precision) than the one
    ``recorded`` (codes' provenance) says its codes were made in: the same weights then give the same codes but
    for outputs near 0, whose sign another rounding may flip, so a distance may differ by a bit. None when they
    match, or when ``recorded`` predates the record of the arithmetic."""
    if not recorded or "precision" not in recorded:
        return None
    made = (recorded.get("device"), recorded.get("precision"))
    now = (encoder.provenance["device"], encoder.provenance["precision"])
    if made == now:
        return None
    return (f"{source}'s codes were made on {made[0]} in {made[1]}, this one is encoded on {now[0]} in {now[1]}: "
            "a bit whose network output is near 0 may come out the other way, so a distance may differ by one or "
            "two (pass --device to match)")


def _describe_provenance(provenance: Mapping[str, Any]) -> str:
    state = "" if provenance.get("finished", True) else ", unfinished"
    return (f"run {provenance.get('run')} (identity {provenance.get('identity')}, {provenance.get('weights')} "
            f"sha256 {str(provenance.get('weights_sha256'))[:12]}{state})")


def verify_provenance(recorded: Mapping[str, Any] | None, encoder: Encoder, source: str,
                      force: bool = False) -> str | None:
    """Check that codes recorded as made by ``recorded`` (the :attr:`Encoder.provenance` stored with them) are
    comparable with the codes ``encoder`` makes: same run identity and the same weights.

    For a :class:`~shc.retrieval.HashIndex` built by ``shc index``, ``recorded`` is
    ``index.metadata.get("provenance")``. ``source`` names the codes in the message (e.g. the index file).

    Returns
    -------
    str or None
        None when they match; with ``force``, the description of the difference (a warning to show).

    Raises
    ------
    ValueError
        They differ (or ``recorded`` is None: codes of an earlier shc), naming both and what to do, unless
        ``force``.
    """
    current = encoder.provenance
    if recorded is None:
        problem = (f"{source} does not record which network made its codes (written by an earlier shc, or by `shc "
                   "import`, which brings codes and ids only), so "
                   f"nothing shows they are comparable with {_describe_provenance(current)}")
    elif (recorded.get("identity"), recorded.get("weights_sha256")) != (current["identity"],
                                                                        current["weights_sha256"]):
        what = "another run" if recorded.get("identity") != current["identity"] else "other weights of the run"
        problem = (f"{source} was encoded by {_describe_provenance(recorded)}, but the network given is {what}: "
                   f"{_describe_provenance(current)}; codes of different weights are not comparable")
    else:
        return None
    if force:
        return problem
    raise ValueError(f"{problem}. Search with the run that encoded it, re-encode the images with this one "
                     "(`shc encode`), or pass --force (force=True) to search anyway.")
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
