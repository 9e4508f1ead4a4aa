"""Stage 2: hash-center generators and their quality, against independent expectations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.linalg import hadamard

from shc.centers import (
    CENTER_METHODS,
    center_quality,
    csq_centers,
    generate_centers,
    gv_min_distance,
    hamming_distances,
    max_codes_upper_bound,
    optimize_semantic_centers,
)
from shc.similarity import planted_similarity

PAPER_GRID = [(C, q) for C in (100, 196, 555) for q in (16, 32, 64)]


def brute_force_distances(H: np.ndarray) -> np.ndarray:
    return np.array([[int(np.sum(a != b)) for b in H] for a in H])


def brute_force_d_min(H: np.ndarray) -> int:
    return min(int(np.sum(H[i] != H[j])) for i, j in itertools.combinations(range(len(H)), 2))


# ---------------------------------------------------------------------------------- GV bound
@pytest.mark.parametrize(
    "num_classes, num_bits, expected",
    [(100, 16, 4), (100, 32, 10), (100, 64, 24), (555, 16, 3), (555, 32, 9), (555, 64, 21)],
)
def test_gv_min_distance_paper_values(num_classes, num_bits, expected):
    assert gv_min_distance(num_classes, num_bits) == expected


@pytest.mark.parametrize("num_classes", [2, 10, 100, 196, 1000])
@pytest.mark.parametrize("num_bits", [10, 12, 16, 48])
def test_gv_min_distance_is_smallest_d_meeting_the_bound(num_classes, num_bits):
    d = gv_min_distance(num_classes, num_bits)
    partial_sum = lambda upto: sum(math.comb(num_bits, i) for i in range(upto))  # noqa: E731
    assert partial_sum(d) * num_classes >= 2**num_bits
    assert partial_sum(d - 1) * num_classes < 2**num_bits


def test_max_codes_upper_bound_known_values():
    assert max_codes_upper_bound(7, 3) == 16  # the Hamming code is perfect: A(7,3) = 16
    assert max_codes_upper_bound(8, 5) == 4  # Plotkin: A(8,5) = 4
    assert max_codes_upper_bound(16, 9) == 6  # Plotkin at A(17, 10) (odd d: one bit longer): 2 * floor(10 / 3)
    assert max_codes_upper_bound(8, 2) == 128  # even d: A(8, 2) = A(7, 1) = 2^7, the even-weight code
    assert max_codes_upper_bound(5, 3) == 4  # odd d: A(5, 3) = A(6, 4) <= Plotkin 2 * floor(4 / 2)
    assert max_codes_upper_bound(6, 3) == 8


def _lexicode(num_bits: int, min_distance: int) -> int:
    """The size of the lexicographic code (greedy over all words in order): a code that exists, so no valid bound
    is below it; for these lengths it is optimal (the Hamming and even-weight codes among them)."""
    words = ((np.arange(2 ** num_bits)[:, None] >> np.arange(num_bits)) & 1).astype(np.int8)
    kept = np.zeros((0, num_bits), np.int8)
    for word in words:
        if not len(kept) or (kept != word).sum(axis=1).min() >= min_distance:
            kept = np.vstack([kept, word])
    return len(kept)


@pytest.mark.parametrize("num_bits, min_distance", [(n, d) for n in range(3, 10) for d in range(1, n + 1)])
def test_max_codes_upper_bound_is_never_below_a_code_that_exists(num_bits, min_distance):
    assert max_codes_upper_bound(num_bits, min_distance) >= _lexicode(num_bits, min_distance)


def test_the_default_gv_distance_no_c_codes_reach_is_refused_at_once_with_the_fix():
    """The GV argument guarantees d - 1; at small q no C codes reach d, and MDS searched 500 restarts (14.5 s) before
    failing (an audit, 2026-12-02)."""
    with pytest.raises(ValueError, match=r"reach the Gilbert-Varshamov distance d = 2.*at most 128.*min_distance=1"):
        generate_centers("mds", 150, 8, seed=0)


# ---------------------------------------------------------------------------------- baselines
@pytest.mark.parametrize("num_classes, num_bits", [(10, 16), (16, 16), (32, 16), (100, 64)])
def test_csq_equals_hadamard_rows_up_to_2q(num_classes, num_bits):
    reference = hadamard(num_bits)
    expected = np.concatenate([reference, -reference])[:num_classes]
    np.testing.assert_array_equal(csq_centers(num_classes, num_bits), expected)


def test_csq_fills_rows_past_2q_with_half_negative_vectors():
    H = generate_centers("csq", 100, 32, seed=3)
    assert H.dtype == np.int8 and H.shape == (100, 32)
    np.testing.assert_array_equal(H[:64], np.concatenate([hadamard(32), -hadamard(32)]))
    assert np.all((H[64:] == -1).sum(axis=1) == 16)


def test_csq_refuses_bits_that_are_not_a_power_of_two():
    with pytest.raises(ValueError, match="power of two"):
        generate_centers("csq", 10, 24)


def test_random_centers_are_signs_and_roughly_balanced():
    H = generate_centers("random", 500, 64, seed=1)
    assert set(np.unique(H)) == {-1, 1} and H.dtype == np.int8
    assert abs(H.mean()) < 0.02  # 32,000 fair coins: standard deviation of the mean is 0.0056


# ---------------------------------------------------------------------------------- distance
def test_hamming_distances_match_brute_force():
    H = generate_centers("random", 30, 24, seed=0)
    np.testing.assert_array_equal(hamming_distances(H), brute_force_distances(H))


def test_center_quality_hand_computed():
    H = np.array([[1, 1, 1, 1], [1, 1, -1, -1], [-1, -1, -1, -1]])
    # Distances: d(0,1) = 2, d(0,2) = 4, d(1,2) = 2 -> d_min 2 (two pairs), mean 8/3.
    # Gram / q: off-diagonal (0,1) = 0, (0,2) = -1, (1,2) = 0; with S = identity the squared errors are
    # 0 on the diagonal and [0, 1, 0] twice off it: s_loss = 2 / 9.
    quality = center_quality(H, np.eye(3))
    assert quality["d_min"] == 2 and quality["num_at_d_min"] == 2
    assert quality["mean_distance"] == pytest.approx(8 / 3)
    assert quality["s_loss"] == pytest.approx(2 / 9)
    # S agreeing with the Gram ordering exactly gives Spearman 1.
    S = np.array([[1, 0.5, -0.5], [0.5, 1, 0.5], [-0.5, 0.5, 1]])
    assert center_quality(H, S)["spearman"] == pytest.approx(1.0)
    # a constant side has no rank order: S = identity (every off-diagonal 0), or centers all at one distance; NaN,
    # decided before scipy is asked (which would warn of constant input on every such table)
    import warnings

    hadamard = np.array([[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]])  # every pair at q/2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(center_quality(H, np.eye(3))["spearman"])
        assert np.isnan(center_quality(hadamard, np.array([[1, .9, .1, 0], [.9, 1, .2, 0], [.1, .2, 1, .3],
                                                           [0, 0, .3, 1]]))["spearman"])


@pytest.fixture(scope="module")
def paper_grid_centers():
    """MDS and SHC centers for the paper's nine (C, q) pairs, on a planted-structure S."""
    results = {}
    for C, q in PAPER_GRID:
        S = planted_similarity(C, num_groups=10, seed=0)
        mds = generate_centers("mds", C, q, seed=0)
        shc = optimize_semantic_centers(S, q, init=mds, seed=0)
        results[C, q] = (S, mds, shc)
    return results


@pytest.mark.parametrize("num_classes, num_bits", PAPER_GRID)
def test_mds_and_shc_reach_the_gv_distance(paper_grid_centers, num_classes, num_bits):
    S, mds, shc = paper_grid_centers[num_classes, num_bits]
    d = gv_min_distance(num_classes, num_bits)
    assert brute_force_d_min(mds) >= d
    assert brute_force_d_min(shc.centers) >= d
    assert all(record["violation"] == 0 for record in shc.history)
    assert shc.centers.dtype == np.int8 and set(np.unique(shc.centers)) == {-1, 1}


def test_mds_keeps_hadamard_where_it_meets_the_bound():
    H = generate_centers("mds", 100, 64)
    np.testing.assert_array_equal(H, csq_centers(100, 64))
    assert center_quality(H)["d_min"] == 32  # the paper's Table 3, CIFAR-100 at 64 bits


def test_mds_works_without_a_hadamard_matrix():
    H = generate_centers("mds", 40, 20, seed=0)
    assert brute_force_d_min(H) >= gv_min_distance(40, 20)


def test_mds_pushes_distances_beyond_random():
    random = center_quality(generate_centers("random", 196, 32, seed=0))
    mds = center_quality(generate_centers("mds", 196, 32, seed=0))
    assert mds["d_min"] > random["d_min"]
    assert mds["mean_distance"] >= random["mean_distance"] - 0.1


@pytest.mark.parametrize("num_classes, num_bits", [(100, 32), (100, 64), (196, 32), (196, 64), (555, 64)])
def test_shc_follows_planted_semantics_better_than_mds(paper_grid_centers, num_classes, num_bits):
    S, mds, shc = paper_grid_centers[num_classes, num_bits]
    before, after = center_quality(mds, S), center_quality(shc.centers, S)
    # The paper reports 40-60% lower S_loss at 32/64 bits on real data; we require a clear 20%.
    assert after["s_loss"] < 0.8 * before["s_loss"]
    assert after["spearman"] > before["spearman"] + 0.2


def test_shc_best_h_is_the_lowest_objective_in_its_history(paper_grid_centers):
    _, _, shc = paper_grid_centers[100, 32]
    objectives = [record["objective"] for record in shc.history]
    assert shc.history[0]["cycle"] == 0 and len(shc.history) == 21
    assert objectives[shc.best_cycle] == min(objectives)


def test_a_projected_step_too_close_is_rejected_whole_or_shrunk_to_its_feasible_prefix():
    """Eq. 36 by hand: h_0 = (1, 1, 1, 1), h_1 = (-1, -1, -1, 1) at distance 3, d = 2. The gradient asks h_0 to flip
    bits 0 and 1 (strengths 3 and 2 > eta = 1): both flips put it at distance 1 from h_1, bit 0 alone at 2. Without
    backtracking (the authors' release) the step is rejected whole; with it, it shrinks to bit 0."""
    from shc.centers.semantic import _projected_step

    H = np.array([[1, 1, 1, 1], [-1, -1, -1, 1]], dtype=np.float64)
    gradient = np.array([3.0, 2.0, 0.0, 0.0])  # h_0k * g_k = strengths 3, 2, 0, 0
    assert _projected_step(H, 0, gradient, 1.0, 2, backtrack=False) is None
    np.testing.assert_array_equal(_projected_step(H, 0, gradient, 1.0, 2, backtrack=True), [0])
    np.testing.assert_array_equal(_projected_step(H, 0, gradient, 1.0, 1, backtrack=False), [0, 1])  # d = 1: whole


def test_shc_without_backtracking_still_feasible_and_rejects_more_steps():
    S = planted_similarity(100, num_groups=10, seed=1)
    result = optimize_semantic_centers(S, 32, backtrack=False, cycles=5)
    assert brute_force_d_min(result.centers) >= 10
    shrunk = optimize_semantic_centers(S, 32, backtrack=True, cycles=5)
    rejected = [sum(row["rejected_updates"] for row in run.history) for run in (result, shrunk)]
    assert rejected[0] > rejected[1]  # a step backtracking shrinks is one the release rejects


def test_semantic_only_ablation_lowers_s_loss_without_distance_guarantee():
    S = planted_similarity(196, num_groups=14, seed=0)
    mds = generate_centers("mds", 196, 16, seed=0)
    semantic = generate_centers("semantic", 196, 16, similarity=S, init=mds)
    assert center_quality(semantic, S)["s_loss"] < 0.8 * center_quality(mds, S)["s_loss"]


@pytest.mark.parametrize("method", CENTER_METHODS)
def test_same_seed_same_centers(method):
    S = planted_similarity(150, num_groups=10, seed=0)
    first = generate_centers(method, 150, 32, similarity=S, seed=7)
    second = generate_centers(method, 150, 32, similarity=S, seed=7)
    np.testing.assert_array_equal(first, second)
    if method in ("random", "csq", "mds"):  # these depend on the seed for C > 2q
        assert not np.array_equal(first, generate_centers(method, 150, 32, similarity=S, seed=8))


# ---------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "similarity, message",
    [
        (np.ones((4, 3)), "square"),
        (np.full((4, 4), np.nan), "NaN"),
        (np.full((4, 4), 2.0), r"\[-1, 1\]"),
        (np.triu(np.full((4, 4), 0.5)), "symmetric"),
        (np.eye(5), "num_classes=4"),
    ],
)
def test_bad_similarity_is_refused(similarity, message):
    with pytest.raises(ValueError, match=message):
        generate_centers("shc", 4, 16, similarity=similarity)


@pytest.mark.parametrize(
    "num_classes, num_bits, message",
    [(1, 16, "num_classes must be >= 2"), (10, 1, "num_bits must be >= 2"), (20, 4, "at most 2\\^4")],
)
def test_bad_sizes_are_refused(num_classes, num_bits, message):
    with pytest.raises(ValueError, match=message):
        generate_centers("random", num_classes, num_bits)


def test_infeasible_min_distance_is_refused():
    with pytest.raises(ValueError, match="No 100 codes of length 16 .* at most 6"):  # A(16, 9) = A(17, 10) <= 6
        generate_centers("mds", 100, 16, min_distance=9)


def test_unknown_method_lists_the_known_ones():
    with pytest.raises(ValueError, match="random, csq, mds, shc, semantic, shc-ls"):
        generate_centers("hadamard", 10, 16)


def test_semantic_methods_need_a_similarity():
    with pytest.raises(ValueError, match="needs a similarity matrix"):
        generate_centers("shc", 10, 16)


def test_unknown_option_is_refused():
    with pytest.raises(TypeError, match="allowed: min_distance"):
        generate_centers("mds", 10, 16, eta=0.5)


# ---------------------------------------------------------------------------------- Eq. 36 step
def test_projected_step_flips_exactly_where_the_sign_of_eq_36_changes():
    from shc.centers.semantic import _projected_step

    eta = 0.5
    H = np.array([[1, -1, 1, -1, 1, -1], [-1, 1, -1, 1, -1, 1]], dtype=np.float64)  # distance 6
    gradient = np.array([0.2, -0.3, 0.6, -0.7, -0.9, 0.5])
    # Hand computation of h - g / eta for h = [1, -1, 1, -1, 1, -1]:
    # [1 - 0.4, -1 + 0.6, 1 - 1.2, -1 + 1.4, 1 + 1.8, -1 - 1.0] = [0.6, -0.4, -0.2, 0.4, 2.8, -2.0]:
    # its sign differs from h at bits 2 and 3 only. h * g = [0.2, 0.3, 0.6, 0.7, -0.9, -0.5]: bits 0 and 1
    # lie between eta / 2 and eta and must keep their sign (the old rule flipped them).
    expected = np.sign(H[0] - gradient / eta)
    assert np.flatnonzero(expected != H[0]).tolist() == [2, 3]
    assert sorted(_projected_step(H, 0, gradient, eta, min_distance=0, backtrack=True).tolist()) == [2, 3]
    assert sorted(_projected_step(H, 0, gradient, eta, min_distance=0, backtrack=False).tolist()) == [2, 3]
    # h * g == eta exactly: h - g / eta = 0, sign 0 keeps the bit: nothing to flip.
    assert _projected_step(H, 0, np.array([0.5, 0, 0, 0, 0, 0]), eta, 0, True).size == 0
    # Both flips together bring the distance from 6 to 4; with d = 5 backtracking keeps the stronger flip
    # (bit 3, h * g = 0.7: distance 5) and the whole step is refused without it.
    assert _projected_step(H, 0, gradient, eta, min_distance=5, backtrack=True).tolist() == [3]
    assert _projected_step(H, 0, gradient, eta, min_distance=5, backtrack=False) is None


def test_algorithm_1_counts_only_the_updates_that_move_a_center():
    """At a stationary point of Algorithm 1 no step flips a bit, so no update is accepted and H stays. With S =
    H H^T / q, Lambda = 0 and mu = 0, Eq. 29 gives M = H, and the semantic part of Eq. 35, (2/q^2) H^T H h_i -
    (2/q) (S M)_i, is 0; what is left is the alpha/beta term scaled by 1e-4, far below eta. (The counter once took
    every no-op step for an accepted update: C * inner_steps a cycle here.)"""
    from shc.centers.semantic import optimize_semantic_centers

    from scipy.linalg import hadamard

    H = hadamard(16)[:12].astype(np.int8)  # 12 centers at distance 8
    result = optimize_semantic_centers(H @ H.T / 16.0, 16, min_distance=8, init=H, mu=0.0, lambda0=0.0, cycles=3)
    assert [record["accepted_updates"] for record in result.history] == [0, 0, 0, 0]
    assert [record["rejected_updates"] for record in result.history] == [0, 0, 0, 0]
    np.testing.assert_array_equal(result.centers, H)


def test_shc_ls_is_registered_and_needs_a_similarity():
    assert "shc-ls" in CENTER_METHODS
    with pytest.raises(ValueError, match="needs a similarity matrix"):
        generate_centers("shc-ls", 10, 16)
    with pytest.raises(TypeError, match="allowed: min_distance, init, starts"):
        generate_centers("shc-ls", 10, 16, similarity=np.eye(10), eta=0.5)


def test_geometry_lesson_counts_collisions_oscillation_and_movement_by_hand():
    from shc.centers import geometry_lesson

    semantic = np.array([[1, 1], [1, 1], [-1, 1]])  # pairs at 0, 1, 1
    s_loss = [5.0, 3.0, 4.0, 2.0, 2.0, 3.0]  # steps - + - 0 +: three changes of direction, two rises
    mds = np.array([[1, 1, 1, 1], [1, -1, 1, -1]])
    shc = np.array([[1, 1, 1, 1], [-1, 1, 1, -1]])  # 0 and 2 bits moved
    assert geometry_lesson(semantic=semantic, shc=shc, mds=mds, shc_s_loss=s_loss) == {
        "semantic colliding pairs": 1, "semantic d_min": 0, "shc cycles": 5, "shc S_loss reversals": 3,
        "shc S_loss rises": 2, "shc S_loss start": 5.0, "shc bits moved from mds": 1.0,
        "shc share of bits moved": 0.25, "shc centers unchanged": 1}
    assert geometry_lesson() == {}
    with pytest.raises(ValueError, match="one shape"):
        geometry_lesson(shc=shc, mds=mds[:, :2])


def test_a_generator_version_above_one_enters_the_stage2_identity_and_version_one_does_not():
    """Centers cached by an older shc-ls (before its double flips, version 2) are recomputed, not reused; the
    identities of the generators still at version 1 are as they were (their caches stay valid)."""
    from shc.centers import CENTER_GENERATORS
    from shc.runs import RunConfig
    from shc.stages import stage_identities

    for name in ("shc", "shc-ls", "mds"):
        identity = stage_identities(RunConfig(method=name, bits=16))["stage2"]
        version = CENTER_GENERATORS.get(name).version
        assert identity.get("generator_version", 1) == version
        assert ("generator_version" in identity) == (version != 1)
    assert CENTER_GENERATORS.get("shc-ls").version >= 2


@pytest.mark.parametrize("distance_scale", [1.0, 1e-4])
def test_algorithm_1_steps_h_along_the_exact_gradient_of_its_subproblem(distance_scale):
    """Eq. 35 is printed with two typos (a mu on the alpha term; (q - 2d - k_ij h_j) for (q - 2d - k_ij) h_j): the
    step uses the derivative of Eq. 34's L itself, computed here by autograd from a transcription of Eq. 34 (pair
    terms over ordered pairs, alpha and K symmetric), its pair terms scaled by ``distance_scale``."""
    import torch

    from shc.centers.semantic import _h_gradient

    rng = np.random.default_rng(3)
    C, q, d, i = 5, 8, 2, 2
    mu, rho, beta = 0.7, 0.4, 0.3
    H = rng.choice([-1.0, 1.0], (C, q))
    M = rng.normal(size=(C, q))
    S = rng.uniform(-1, 1, (C, C))
    S = (S + S.T) / 2
    Lambda = rng.normal(size=(C, q))
    alpha = rng.uniform(0, 1, (C, C))
    alpha = (alpha + alpha.T) / 2
    np.fill_diagonal(alpha, 0)
    K = rng.uniform(0, 3, (C, C))
    K = (K + K.T) / 2
    np.fill_diagonal(K, 0)

    h_i = torch.tensor(H[i], requires_grad=True)
    others = torch.tensor(H)
    rows = [h_i if c == i else others[c] for c in range(C)]
    Mt, St = torch.tensor(M), torch.tensor(S)
    semantic = sum(torch.sum((St[c] - Mt @ rows[c] / q) ** 2) for c in range(C)) \
        + sum(torch.tensor(Lambda[c]) @ (rows[c] - Mt[c]) + rho / 2 * torch.sum((rows[c] - Mt[c]) ** 2)
              for c in range(C))
    pairs = sum(mu * rows[a] @ rows[b] + alpha[a, b] * (q - 2 * d - rows[a] @ rows[b] - K[a, b])
                + beta / 2 * (q - 2 * d - rows[a] @ rows[b] - K[a, b]) ** 2
                for a in range(C) for b in range(C) if a != b)
    (semantic + distance_scale * pairs).backward()

    got = _h_gradient(H, i, M, M.T @ M, S @ M, Lambda, alpha, q - 2 * d - K[i], H.sum(axis=0), mu, rho, beta,
                      distance_scale)
    np.testing.assert_allclose(got, h_i.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_hadamard_capacity_table_by_hand():
    """q = 16: Hadamard rows and their negations give 2q = 32 centers at distance q / 2 = 8; past 2q CSQ fills at
    random, so d_min falls below q / 2. The GV distance at C = 100 is 4 (the paper's Table 3)."""
    from shc.centers import hadamard_capacity_table

    table = hadamard_capacity_table(16, classes=[100])
    assert table.index.tolist() == [16, 32, 33, 64, 100]
    assert table["C <= 2q"].tolist() == ["yes", "yes", "no", "no", "no"]
    assert table.loc[[16, 32], "d_min of CSQ centers"].tolist() == [8, 8]
    assert (table.loc[[33, 64, 100], "d_min of CSQ centers"] < 8).all()
    assert table.loc[100, "GV distance d"] == 4 and set(table["q / 2"]) == {8}


def test_quality_table_rows_are_each_sets_center_quality():
    from shc.centers import center_quality, quality_table

    sets = {"random": generate_centers("random", 12, 16, seed=1), "csq": generate_centers("csq", 12, 16)}
    S = np.eye(12)
    table = quality_table(sets, S, min_distance=5)
    assert table.index.tolist() == ["random", "csq"] and table.columns[0] == "GV distance d"
    assert (table["GV distance d"] == 5).all()
    for name, codes in sets.items():
        assert table.loc[name].drop("GV distance d").to_dict() == pytest.approx(center_quality(codes, S), nan_ok=True)


def test_an_optimisation_says_whether_every_cycle_kept_the_minimum_distance():
    from shc.centers import CenterOptimisation

    kept = CenterOptimisation(np.ones((2, 8)), [{"d_min": 4}, {"d_min": 5}], min_distance=4)
    lost = CenterOptimisation(np.ones((2, 8)), [{"d_min": 4}, {"d_min": 3}], min_distance=4)
    assert kept.kept_min_distance() and not lost.kept_min_distance()
