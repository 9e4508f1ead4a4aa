"""Training objectives (shc.losses): CenterLoss against direct formulas, multi-label targets, registry."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import shc.losses
from shc.losses import LOSSES, CenterLoss, ClassificationLoss, build_loss, register_loss

CENTERS = torch.tensor(
    [
        [1.0, 1.0, -1.0, -1.0],
        [1.0, -1.0, 1.0, -1.0],
        [-1.0, -1.0, -1.0, 1.0],
    ]
)


def test_center_loss_equals_bce_plus_quantisation_formula():
    generator = torch.Generator().manual_seed(0)
    centers = torch.randint(0, 2, (5, 12), generator=generator).float() * 2 - 1
    u = torch.tanh(torch.randn(9, 12, generator=generator) * 2)
    labels = torch.randint(0, 5, (9,), generator=generator)
    gamma = 0.3
    loss = CenterLoss(centers, gamma=gamma)(u, labels, torch.arange(9))

    # Reference in float64: float32 BCE on (u + 1) / 2 loses digits for bits near -1.
    u64 = u.double()
    target_bits = (centers[labels].double() + 1) / 2
    central = F.binary_cross_entropy((u64 + 1) / 2, target_bits)  # mean over samples and bits
    quantisation = ((u64.abs() - 1) ** 2).mean()
    assert loss.item() == pytest.approx((central + gamma * quantisation).item(), rel=1e-6)


def test_center_loss_by_hand_on_one_sample():
    # u = [0.5, -0.5], center [+1, +1]: BCE bits -log(0.75), -log(0.25); (|u| - 1)^2 = 0.25 each.
    centers = torch.tensor([[1.0, 1.0], [-1.0, 1.0]])
    loss = CenterLoss(centers, gamma=2.0)(torch.tensor([[0.5, -0.5]]), torch.tensor([0]))
    expected = (-math.log(0.75) - math.log(0.25)) / 2 + 2.0 * 0.25
    assert loss.item() == pytest.approx(expected, rel=1e-6)


def test_multi_label_targets_take_the_sign_of_the_mean_center_and_break_ties_with_the_seeded_signs():
    loss = CenterLoss(CENTERS, seed=3)
    labels = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
    # centers 0+1 sum to [2, 0, 0, -2]: bits 1 and 2 tie; all three sum to [1, -1, -1, -1].
    tie_1, tie_2 = loss.tie_signs[1].item(), loss.tie_signs[2].item()
    expected = torch.tensor([[1.0, tie_1, tie_2, -1.0], [1.0, -1.0, -1.0, -1.0], [-1.0, -1.0, -1.0, 1.0]])
    torch.testing.assert_close(loss.targets(labels), expected)
    assert set(loss.tie_signs.tolist()) <= {-1.0, 1.0}


def test_tie_signs_are_deterministic_per_seed():
    centers = torch.ones(2, 64)
    torch.testing.assert_close(CenterLoss(centers, seed=7).tie_signs, CenterLoss(centers, seed=7).tie_signs)
    assert not torch.equal(CenterLoss(centers, seed=7).tie_signs, CenterLoss(centers, seed=8).tie_signs)


def test_single_label_indices_and_one_hot_rows_give_the_same_loss():
    u = torch.tanh(torch.randn(3, 4))
    loss = CenterLoss(CENTERS)
    torch.testing.assert_close(loss(u, torch.tensor([2, 0, 1]), None), loss(u, torch.eye(3)[[2, 0, 1]], None))


def test_gradients_flow_and_point_towards_the_center():
    logits = torch.randn(6, 4, requires_grad=True)
    labels = torch.tensor([0, 1, 2, 0, 1, 2])
    u = torch.tanh(logits)
    u.retain_grad()
    CenterLoss(CENTERS, gamma=0.0)(u, labels, None).backward()
    assert torch.isfinite(logits.grad).all() and (logits.grad != 0).all()
    # Descending the BCE moves every bit towards its center's sign.
    np.testing.assert_array_equal(torch.sign(-u.grad).numpy(), CENTERS[labels].numpy())


def test_saturated_wrong_bits_stay_finite():
    u = torch.tensor([[-1.0, -1.0, 1.0, 1.0]], requires_grad=True)  # exactly opposite to center 0
    loss = CenterLoss(CENTERS, eps=1e-6)(u, torch.tensor([0]), None)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(u.grad).all()
    assert loss.item() == pytest.approx(-math.log(1e-6 / 2), rel=1e-3)
    perfect = CenterLoss(CENTERS)(CENTERS[[0]], torch.tensor([0]), None)
    assert perfect.item() == pytest.approx(0.0, abs=1e-7)


def test_centers_are_a_buffer_that_follows_the_module():
    loss = CenterLoss(CENTERS.numpy())  # numpy input accepted
    assert {name for name, _ in loss.named_buffers()} == {"centers", "tie_signs"}
    assert loss.to(torch.float64).centers.dtype == torch.float64
    assert "centers" in loss.state_dict()


@pytest.mark.parametrize(
    ("centers", "message"),
    [(torch.tensor([[1.0, 0.0]]), "only -1 and \\+1"), (torch.ones(4), "must be a 2-D")],
)
def test_center_loss_rejects_bad_centers(centers, message):
    with pytest.raises(ValueError, match=message):
        CenterLoss(centers)


def test_center_loss_rejects_bad_batches():
    loss = CenterLoss(CENTERS)
    with pytest.raises(ValueError, match=r"\(B, 4\) codes"):
        loss(torch.zeros(2, 3), torch.tensor([0, 1]), None)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\]"):
        loss(torch.zeros(2, 4), torch.tensor([0, 3]), None)
    with pytest.raises(ValueError, match="labels has 1 rows but outputs has 2"):
        loss(torch.zeros(2, 4), torch.tensor([0]), None)
    with pytest.raises(ValueError, match="needs a positive class"):
        loss(torch.zeros(2, 4), torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), None)
    with pytest.raises(TypeError, match="labels.long"):
        loss(torch.zeros(2, 4), torch.tensor([0.0, 1.0]), None)


# ----------------------------------------------------------------------------------------------
def test_classification_loss_is_the_negative_log_softmax_of_the_target():
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.5, 0.5, 3.0]])
    by_hand = [
        -(2.0 - math.log(math.exp(2.0) + 1 + math.exp(-1.0))),
        -(3.0 - math.log(2 * math.exp(0.5) + math.exp(3.0))),
    ]
    loss = ClassificationLoss()(logits, torch.tensor([0, 2]), torch.arange(2))
    assert loss.item() == pytest.approx(sum(by_hand) / 2, rel=1e-6)


def test_classification_loss_multi_hot_is_soft_label_cross_entropy():
    logits = torch.tensor([[2.0, 0.0, -1.0]])
    log_z = math.log(math.exp(2.0) + 1 + math.exp(-1.0))
    expected = -((2.0 - log_z) + (0.0 - log_z)) / 2  # targets 1/2 on classes 0 and 1
    loss = ClassificationLoss()(logits, torch.tensor([[1.0, 1.0, 0.0]]), None)
    assert loss.item() == pytest.approx(expected, rel=1e-6)


# ----------------------------------------------------------------------------------------------
def test_registry_builds_known_losses():
    assert {"center", "cross_entropy"} <= set(LOSSES)
    assert isinstance(build_loss("center", centers=CENTERS, gamma=1e-4), CenterLoss)
    assert isinstance(build_loss("cross_entropy"), ClassificationLoss)


def test_registry_unknown_name_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown loss 'csq'.*Known losses: center, cross_entropy"):
        build_loss("csq")


def test_registry_is_open_and_refuses_duplicates(monkeypatch):
    monkeypatch.setattr(LOSSES, "_entries", dict(LOSSES._entries))  # undone after the test

    @register_loss("zero")
    class ZeroLoss(torch.nn.Module):
        def forward(self, outputs, labels, indices):
            return outputs.sum() * 0

    assert isinstance(build_loss("zero"), ZeroLoss)
    with pytest.raises(ValueError, match="already registered"):
        register_loss("center")(ZeroLoss)
    assert "zero" in LOSSES
