"""Every image mode PIL opens becomes network input faithfully (issue 24): a hand-made image of each mode
against the values it must give, and the same picture in several modes hashed to the same code."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from shc.data.transforms import convert_image


def _pixels(image, mode: str) -> np.ndarray:
    return np.asarray(convert_image(image, mode)).astype(int)


def test_16_bit_grey_is_scaled_not_clipped():
    wide = np.array([[0, 257, 257 * 100, 65535]], np.uint16)
    for image in (Image.fromarray(wide), Image.fromarray(wide.astype(np.int32), "I")):
        np.testing.assert_array_equal(_pixels(image, "L"), [[0, 1, 100, 255]])
        np.testing.assert_array_equal(_pixels(image, "RGB"), np.repeat([[0, 1, 100, 255]], 3).reshape(1, 4, 3))


def test_palette_colours_are_kept_and_its_transparent_index_is_white():
    image = Image.new("P", (3, 1))
    image.putpalette([200, 10, 20, 0, 90, 180, 7, 7, 7] + [0] * (256 * 3 - 9))
    image.putdata([0, 1, 2])
    np.testing.assert_array_equal(_pixels(image, "RGB"), [[[200, 10, 20], [0, 90, 180], [7, 7, 7]]])
    image.info["transparency"] = 2
    np.testing.assert_array_equal(_pixels(image, "RGB"), [[[200, 10, 20], [0, 90, 180], [255, 255, 255]]])


def test_cmyk_follows_the_ink_formula():
    image = Image.new("CMYK", (5, 1))
    image.putdata([(0, 0, 0, 0), (255, 0, 0, 0), (0, 255, 0, 0), (0, 0, 0, 255), (0, 0, 255, 0)])
    np.testing.assert_array_equal(_pixels(image, "RGB"),
                                  [[[255, 255, 255], [0, 255, 255], [255, 0, 255], [0, 0, 0], [255, 255, 0]]])


@pytest.mark.parametrize("mode", ["RGBA", "LA"])
def test_alpha_is_composited_over_white(mode):
    colour = (10, 20, 30) if mode == "RGBA" else (40,)
    image = Image.new(mode, (3, 1))
    image.putdata([(*colour, 255), (*colour, 0), (*colour, 128)])
    got = _pixels(image, "RGB" if mode == "RGBA" else "L").reshape(3, -1)
    np.testing.assert_array_equal(got[0], colour)
    np.testing.assert_array_equal(got[1], [255] * len(colour))
    expected = [c * 128 / 255 + 255 * 127 / 255 for c in colour]  # the "over" operator
    assert np.abs(got[2] - expected).max() <= 1


def test_bilevel_and_grey_to_colour():
    image = Image.new("1", (2, 1))
    image.putdata([0, 1])
    np.testing.assert_array_equal(_pixels(image, "L"), [[0, 255]])
    grey = Image.fromarray(np.array([[3, 250]], np.uint8))
    np.testing.assert_array_equal(_pixels(grey, "RGB"), [[[3, 3, 3], [250, 250, 250]]])


def test_an_unknown_target_mode_is_refused():
    with pytest.raises(ValueError, match="mode must be 'RGB' or 'L'"):
        convert_image(Image.new("L", (1, 1)), "CMYK")


@pytest.mark.parametrize("save_as", ["16-bit grey", "grey with alpha", "palette"])
def test_the_same_picture_in_another_mode_gives_the_same_network_input(tmp_path, save_as):
    """What ``shc encode`` and the file-backed splits read: a 16-bit PNG of an 8-bit picture (x 257), the picture
    with an opaque alpha channel, or an exact palette image load as the 8-bit picture itself."""
    from shc.data.splits import HashingSplit

    rng = np.random.default_rng(0)
    grey = rng.integers(0, 256, (6, 5), dtype=np.uint8)
    reference, other = tmp_path / "reference.png", tmp_path / "other.png"
    Image.fromarray(np.repeat(grey[..., None], 3, axis=2)).save(reference)
    if save_as == "16-bit grey":
        Image.fromarray(grey.astype(np.uint16) * 257).save(other)
    elif save_as == "grey with alpha":
        Image.fromarray(np.stack([grey, np.full_like(grey, 255)], axis=2), "LA").save(other)
    else:
        Image.fromarray(grey).convert("P").save(other)  # <= 256 distinct greys: an exact palette
    assert Image.open(other).mode != "RGB"
    split = HashingSplit(np.zeros(2, np.int64), paths=[str(reference), str(other)])
    np.testing.assert_array_equal(split.raw_image(1), split.raw_image(0))
