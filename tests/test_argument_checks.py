"""Arguments that used to pass silently and give garbage, each now refused with a message naming it and the fix.

Each row below was found by calling the function on a small bad input (a read-only audit, 2026-12-03): before the
check, every one of them returned a number or an object without complaint (an MDS start returned unchanged, a
NaN assignment cost, a slice of eigenvalues, a mAP over "class -1").
"""

from __future__ import annotations

import numpy as np
import pytest

from shc.centers import mds_centers, optimize_semantic_centers
from shc.centers.distance import max_codes_upper_bound
from shc.centers.quality import relaxation_bound, unit_diagonal_bound
from shc.centers.search import local_search_centers
from shc.codebook import _semantic_term, _semantic_terms, class_mean_codes, semantic_greedy_assignment
from shc.losses import CenterLoss, CRHLoss, SemanticCRHLoss
from shc.metrics import mean_average_precision
from shc.similarity import hierarchical_similarity
from shc.stages.definitions import classifier_codes
from shc.validation import finite_number, whole_number

S6 = hierarchical_similarity(6, num_groups=2, noise=0.1, seed=0)
CENTERS6 = mds_centers(6, 16, seed=0)


def _asymmetric_out_of_range() -> np.ndarray:
    S = np.eye(6)
    S[0, 1] = 7.0
    return S


CASES = [
    # (id, call, error, words)
    ("semantic mu nan", lambda: optimize_semantic_centers(S6, 16, mu=np.nan), ValueError, "mu must be finite"),
    ("semantic lambda0 nan", lambda: optimize_semantic_centers(S6, 16, lambda0=np.nan), ValueError, "lambda0"),
    ("semantic alpha0 inf", lambda: optimize_semantic_centers(S6, 16, alpha0=np.inf), ValueError, "alpha0"),
    ("semantic cycles -1", lambda: optimize_semantic_centers(S6, 16, cycles=-1), ValueError, "cycles must be an"),
    ("semantic inner 1.5", lambda: optimize_semantic_centers(S6, 16, inner_steps=1.5), ValueError, "inner_steps"),
    ("semantic scale -1", lambda: optimize_semantic_centers(S6, 16, distance_scale=-1.0), ValueError,
     "distance_scale must be >= 0"),
    ("mds max_sweeps 0", lambda: mds_centers(40, 16, max_sweeps=0), ValueError, "max_sweeps must be an integer >= 1"),
    ("mds restarts -1", lambda: mds_centers(40, 16, restarts=-1), ValueError, "restarts must be an integer >= 0"),
    ("mds min_distance 2.5", lambda: mds_centers(40, 16, min_distance=2.5), ValueError, "min_distance must be an"),
    ("local search anneal -1", lambda: local_search_centers(S6, 16, anneal_sweeps=-1), ValueError, "anneal_sweeps"),
    ("relaxation bits -1", lambda: relaxation_bound(S6, -1), ValueError, "num_bits must be an integer >= 1"),
    ("relaxation bits 2.7", lambda: relaxation_bound(S6, 2.7), ValueError, "num_bits must be an integer"),
    ("unit-diagonal bits 2.7", lambda: unit_diagonal_bound(S6, 2.7), ValueError, "num_bits must be an integer"),
    ("code bound bits -3", lambda: max_codes_upper_bound(-3, 2), ValueError, "num_bits must be an integer >= 1"),
    ("code bound bits 8.7", lambda: max_codes_upper_bound(8.7, 3), ValueError, "num_bits must be an integer"),
    ("center loss gamma nan", lambda: CenterLoss(CENTERS6, gamma=np.nan), ValueError, "gamma must be finite"),
    ("scrh S out of range", lambda: SemanticCRHLoss(6, 16, np.arange(12) % 6, centers=CENTERS6,
                                                    similarity=_asymmetric_out_of_range()), ValueError, r"\[-1, 1\]"),
    ("crh unlabelled row", lambda: CRHLoss(3, 16, np.array([[1, 0, 0], [0, 0, 0], [0, 1, 1]])), ValueError,
     "1 multi-hot rows without a class"),
    ("class means unlabelled row", lambda: class_mean_codes(np.ones((2, 4)), np.array([[1, 0], [0, 0]]), 2),
     ValueError, "1 multi-hot label rows have no class"),
    ("metrics label -1", lambda: mean_average_precision(np.ones((1, 8)), [-1], np.ones((3, 8)), [-1, -1, 0], None),
     ValueError, "class indices >= 0"),
    ("classifier codes nan", lambda: classifier_codes(np.array([[np.nan, 0.0]]), np.ones((2, 4)), "soft"),
     ValueError, r"logits finite \(NaN: stage 1 diverged\)"),
]


@pytest.mark.parametrize("call, error, words", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_a_bad_argument_is_refused_by_name(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_the_good_neighbours_of_the_refused_arguments_still_run():
    # the same calls one step inside the boundary: zero is allowed where it means something
    assert optimize_semantic_centers(S6, 16, cycles=0, distance_scale=0.0).best_cycle == 0
    assert mds_centers(6, 16, restarts=0, max_sweeps=1).shape == (6, 16)
    assert local_search_centers(S6, 16, anneal_sweeps=0).centers.shape == (6, 16)
    assert relaxation_bound(S6, 2) >= 0 and max_codes_upper_bound(np.int64(8), 3.0) == max_codes_upper_bound(8, 3)
    assert CenterLoss(CENTERS6, gamma=0).gamma == 0.0
    assert finite_number(np.float32(0.5), "x", minimum=0, strict=True) == 0.5
    assert whole_number(4.0, "n", minimum=1) == 4
    for value in (True, "3", None):
        with pytest.raises((TypeError, ValueError), match="n must be an integer"):
            whole_number(value, "n")


def test_crh_refuses_the_nan_codes_of_a_diverged_network():
    loss = CRHLoss(3, 16, np.arange(6) % 3, scale=1.0)
    codes = np.ones((6, 16))
    codes[2, 5] = np.nan  # binarised as -1 before: a reassignment from a diverged network
    with pytest.raises(ValueError, match="NaN; the network diverged"):
        loss.reassign(codes, epoch=1)


def test_the_semantic_terms_of_all_classes_at_once_equal_the_term_of_each():
    rng = np.random.default_rng(7)
    classes, size, width, bits = 9, 12, 3, 12
    codebook = rng.choice([-1.0, 1.0], (size, width))
    held = codebook[rng.permutation(size)[:classes]]
    others = rng.integers(-9, 10, (classes, classes)).astype(float)
    others = (others + others.T) / 2
    similarity = rng.uniform(-1, 1, (classes, classes))
    products = codebook @ held.T
    each = np.stack([_semantic_term(c, products, others, similarity, bits) for c in range(classes)])
    # by hand for one class and candidate: the mean over the other classes of the squared misfit
    c, j = 4, 7
    mates = [k for k in range(classes) if k != c]
    by_hand = np.mean([(similarity[c, k] - (others[c, k] + codebook[j] @ held[k]) / bits) ** 2 for k in mates])
    assert each[c, j] == pytest.approx(by_hand, abs=1e-12)
    np.testing.assert_allclose(_semantic_terms(products, others, similarity, bits), each, atol=1e-12)


def test_the_greedy_pass_sees_each_earlier_pick_of_the_same_pass():
    # S says the two classes are opposite. Class 0 picks first, by cost alone, [1, 1]; class 1 then fits it with
    # [-1, -1] (semantic term 0, cost 0.1) rather than [1, -1] (term 2, cost 0). Against class 0's sub-code from
    # before the pass, [-1, 1], it would take [1, -1]: only the updated inner products give [0, 1].
    codebook = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]])
    costs = np.array([[0.0, 5.0, 5.0], [0.0, 0.1, 0.0]])
    similarity = np.array([[1.0, -1.0], [-1.0, 1.0]])
    chunks = np.array([[-1.0, 1.0], [1.0, -1.0]])
    chosen = semantic_greedy_assignment(costs, codebook, chunks, np.zeros((2, 2)), similarity, 2, 1.0,
                                        np.array([0, 1]))
    np.testing.assert_array_equal(chosen, [0, 1])


# a typo in method_options / center_options surfaced only after stages 0-2 had trained, and --list accepted it
# (a reliability audit, 2026-12-03): RunConfig now refuses it when it is built, naming the field and the method
@pytest.mark.parametrize("fields, words", [
    ({"method": "shc", "method_options": {"gama": 1.0}}, r"method_options: .*\['gama'\].*'shc'; allowed: gamma"),
    ({"method": "greedyhash", "center_options": {"min_distance": 3}},
     r"center_options: method 'greedyhash' uses no hash centers"),
    ({"method": "shc", "center_options": {"nope": 1}}, r"center_options: .*\['nope'\].*'shc' centers.*min_distance"),
    ({"method": "random", "center_options": {"min_distance": 3}}, r"center_options: .*'random' centers.*none"),
])
def test_a_config_refuses_option_names_its_method_does_not_take(fields, words):
    from shc.runs import RunConfig

    with pytest.raises(ValueError, match=words):
        RunConfig(**fields)


def test_a_grid_names_the_method_that_refuses_an_option_and_accepts_it_where_every_method_takes_it():
    from shc.pipeline import preset
    from shc.runs import RunConfig

    assert RunConfig(method="shc", method_options={"gamma": 0.5}, center_options={"min_distance": 3})  # good names
    with pytest.raises(ValueError, match=r"method 'greedyhash' uses no hash centers"):  # not the base config's 'shc'
        preset("tiny", methods=["greedyhash"], center_options={"min_distance": 3})
    configs = preset("tiny", methods=["mds", "shc"], center_options={"min_distance": 3})
    assert [dict(c.center_options) for c in configs] == [{"min_distance": 3}] * 2
