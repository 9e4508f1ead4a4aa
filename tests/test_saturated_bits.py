"""benchmarks/saturated_bits.py: where tanh saturates in each type (against the hand values of each type's spacing
below 1), its count of wrong bits on a hand-made example, and its pre-activation is what the network feeds tanh."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from saturated_bits import PreActivation, saturation_point, thresholds, wrong_bits  # noqa: E402


@pytest.mark.parametrize(("dtype", "mantissa_bits"), [(torch.bfloat16, 8), (torch.float16, 11),
                                                      (torch.float32, 24)])
def test_tanh_is_exactly_one_where_its_distance_to_one_is_under_half_a_spacing(dtype, mantissa_bits):
    """Below 1 a type with p significant bits is spaced 2^-p, so tanh(z) rounds to 1 once 1 - tanh(z), about
    2 exp(-2z), is under 2^-(p+1): z > (p + 2) ln(2) / 2. The input is rounded to the type first, which moves the
    point by at most one spacing of the type at z, and the search steps by 1e-4."""
    expected = (mantissa_bits + 2) * math.log(2) / 2
    spacing_at_z = 2.0 ** (math.floor(math.log2(expected)) - mantissa_bits + 1)
    assert saturation_point(dtype) == pytest.approx(expected, abs=max(spacing_at_z, 1e-4))


def test_the_clamp_limit_is_where_one_plus_hu_meets_eps():
    limits = thresholds()
    assert 1 - math.tanh(limits["clamp"]) == pytest.approx(1e-6, rel=1e-6)  # CenterLoss's default eps
    assert limits["bf16 tanh"] < limits["fp16 tanh"] < limits["clamp"] < limits["fp32 tanh"]


def test_wrong_bits_counted_by_hand():
    z = np.array([[0.5, -4.0, 0.0], [8.0, -10.0, -0.1]])
    targets = np.array([[1, 1, 1], [-1, -1, 1]])
    # wrong: (0, 1) at |z| 4, (1, 0) at 8, (1, 2) at 0.1; z = 0 is sign +1, so (0, 2) is right
    row = wrong_bits(z, targets, {"a": 3.5, "b": 7.25})
    assert row == {"values": 6, "wrong share": pytest.approx(0.5), "wrong >= a": 2, "wrong >= b": 1,
                   "max wrong |z|": 8.0}
    assert wrong_bits(z, np.where(z >= 0, 1, -1), {"a": 1.0})["max wrong |z|"] == 0.0


def test_the_pre_activation_is_what_the_network_feeds_its_tanh():
    from shc.models import build_hashing_network

    torch.manual_seed(0)
    network = build_hashing_network("composite3_cnn_mlp", 16, in_channels=3).eval()
    images = torch.randn(4, 3, 14, 42)
    with torch.no_grad():
        torch.testing.assert_close(torch.tanh(PreActivation(network)(images)), network(images))
