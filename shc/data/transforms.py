"""Image transforms: the batched grey-composite transform and the paper's natural-image pipeline."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "CompositeTransform", "convert_image", "natural_image_transform"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: Integer grey modes holding 16-bit samples (PIL's ``convert`` clips them at 255 instead of scaling).
_WIDE_GREY_MODES = ("I;16", "I;16L", "I;16B", "I;16N", "I")


def convert_image(image, mode: str):
    """A PIL image of any mode PIL opens, as ``mode`` ("RGB" or "L"), converted faithfully.

    - 16-bit grey (``I;16*``, and ``I``, which holds 16-bit samples in the files PIL reads as such) is scaled
      from 0..65535 to 0..255 (``round(v / 257)``); PIL's own conversion clips every value above 255 to white;
    - transparency (``RGBA``, ``LA``, ``PA``, a palette's transparent index) is composited over white, rather
      than dropped (which shows whatever colour the transparent pixels happen to hold);
    - palette, ``1``, ``CMYK``, ``YCbCr``, grey and colour otherwise go through PIL's conversion (palette
      colours exactly; CMYK as ``(255 - K)(1 - C / 255)``, ...; colour to grey with ITU-R 601-2 luma).

    Used wherever an image file becomes network input: the file-backed splits and ``shc encode``. Always a new
    image (safe to use after the file is closed).
    """
    from PIL import Image

    if mode not in ("RGB", "L"):
        raise ValueError(f"mode must be 'RGB' or 'L', got {mode!r}.")
    if image.mode in _WIDE_GREY_MODES:
        wide = np.asarray(image, dtype=np.float64)
        grey = Image.fromarray(np.clip(np.rint(wide / 257.0), 0, 255).astype(np.uint8), "L")
        return grey.convert(mode)
    if "A" in image.getbands() or "transparency" in image.info:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert(mode)
    return image.convert(mode)


def _random_translate(images: np.ndarray, max_shift: int) -> np.ndarray:
    """Shift each ``(B, H, W)`` image by its own random ``(dy, dx)`` in ``[-max_shift, max_shift]``,
    filling with zeros (the background).

    The shifts come from torch's generator (seeded by ``torch.manual_seed`` and per DataLoader
    worker); the gather runs in numpy, which never starts threads: on small batches torch's
    threaded indexing was 3-20x slower on a busy 2-core machine.
    """
    batch, height, width = images.shape
    padded = np.pad(images, ((0, 0), (max_shift, max_shift), (max_shift, max_shift)))
    dy, dx = torch.randint(0, 2 * max_shift + 1, (2, batch, 1, 1)).numpy()
    rows = dy + np.arange(height)[:, None]  # (B, H, 1)
    cols = dx + np.arange(width)  # (B, 1, W)
    return padded[np.arange(batch)[:, None, None], rows, cols]


class CompositeTransform:
    """Grey uint8 composites to normalised float ``(3, H, W)`` tensors, one image or a whole batch.

    Optionally shifts each image by up to ``max_shift`` pixels (training augmentation; zero fill),
    normalises with ``(x / 255 - mean) / std``, optionally resizes (bilinear, which commutes with
    the normalisation) and replicates the grey channel to 3 channels so that every backbone
    accepts it. Everything but the resize runs in numpy: it never starts threads, which keeps small
    batches fast on a busy CPU (torch's threaded copy of a 64x3x8x24 batch took milliseconds there).

    Parameters
    ----------
    mean, std : float
        Pixel statistics of the base images (on the [0, 1] scale).
    train : bool
        Apply the random translation.
    image_size : int or (int, int), optional
        Output size: an int sets the height and keeps the aspect ratio (8x16 -> 32x64 for 32), a
        pair is ``(H, W)``. Default: native size.
    max_shift : int
        Largest translation in native pixels (default 1).
    """

    batched = True  # accepts (B, H, W) stacks: see HashingSplit

    def __init__(
        self,
        mean: float,
        std: float,
        train: bool = False,
        image_size: int | tuple[int, int] | None = None,
        max_shift: int = 1,
    ) -> None:
        if std <= 0:
            raise ValueError(f"std must be positive, got {std}")
        if max_shift < 0:
            raise ValueError(f"max_shift must be >= 0 pixels, got {max_shift}")
        if image_size is not None and np.min(image_size) < 1:
            raise ValueError(f"image_size must be positive, got {image_size}")
        self.mean, self.std, self.train = float(mean), float(std), bool(train)
        self.image_size, self.max_shift = image_size, int(max_shift)

    def __repr__(self) -> str:
        mode = f"train, max_shift={self.max_shift}" if self.train else "eval"
        return f"CompositeTransform({mode}, image_size={self.image_size})"

    def _output_size(self, height: int, width: int) -> tuple[int, int] | None:
        if self.image_size is None:
            return None
        if isinstance(self.image_size, int):
            return self.image_size, max(1, round(width * self.image_size / height))
        return tuple(int(side) for side in self.image_size)

    def __call__(self, images: np.ndarray | torch.Tensor) -> torch.Tensor:
        """``(H, W)`` or ``(B, H, W)`` uint8 (numpy or CPU tensor) to ``(3, H', W')`` / ``(B, 3, H', W')``."""
        x = np.asarray(images)
        single = x.ndim == 2
        if single:
            x = x[None]
        if x.ndim != 3:
            raise ValueError(f"expected a grey (H, W) image or (B, H, W) stack, got {x.shape}")
        if self.train and self.max_shift:
            x = _random_translate(x, self.max_shift)
        x = x.astype(np.float32) * np.float32(1 / (255 * self.std)) - np.float32(self.mean / self.std)
        size = self._output_size(*x.shape[-2:])
        if size is not None and size != x.shape[-2:]:
            resized = F.interpolate(
                torch.from_numpy(x)[:, None], size=size, mode="bilinear", align_corners=False
            )
            x = resized[:, 0].numpy()
        x = torch.from_numpy(np.ascontiguousarray(np.broadcast_to(x[:, None], (len(x), 3, *x.shape[1:]))))
        return x[0] if single else x


def natural_image_transform(train: bool, image_size: int = 224) -> Callable:
    """The paper's transform for natural images (PIL image, HWC uint8 array or CHW tensor in).

    Train: resize the shorter side to ``256/224 * image_size``, random crop ``image_size``, random
    horizontal flip; eval: same resize, center crop. Then ImageNet normalisation.
    """
    from shc._compat import torchvision  # noqa: F401 (repairs the import before the submodule loads)

    v2 = importlib.import_module("torchvision.transforms.v2")
    crop = v2.RandomCrop(image_size) if train else v2.CenterCrop(image_size)
    steps = [v2.ToImage(), v2.Resize(round(image_size * 256 / 224)), crop]
    if train:
        steps.append(v2.RandomHorizontalFlip())
    steps += [v2.ToDtype(torch.float32, scale=True), v2.Normalize(IMAGENET_MEAN, IMAGENET_STD)]
    return v2.Compose(steps)
