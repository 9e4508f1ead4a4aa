"""What stage 3 measures on the query set, from the stored codes alone.

A finished stage 3 keeps its codes (``codes.npz``: query and database codes and labels, in split order), so
a new metric or a new evaluation never needs a retraining: :func:`evaluate_codes` turns the codes into every
number ``metrics.json`` holds, and :func:`shc.pipeline.reevaluate` rewrites a run's ``metrics.json`` from its
codes when its :data:`EVALUATION_VERSION` is older than this module's.

Two rankings of the same codes are reported (docs/evaluation.md):

- **tie-aware** (primary, keys ``tie_aware_*``): the expectation over a uniformly random order within every
  Hamming-distance tie (He et al., CVPR 2018): mAP@K, precision@K, recall@K and the rank-based PR curve, in
  closed form. It does not depend on how the database is stored, and it is what a user who breaks ties at
  random sees on average. Center methods put many items on one code, so their rankings are full of ties:
  only this number compares them fairly with methods whose codes spread out.
- **ties by database index** (keys without prefix): the protocol of the DeepHash-pytorch family that the
  paper follows. On a database stored in a seeded random order (:func:`shc.data.evaluation_order`) it is
  one random draw of the tie order, so it scatters around the tie-aware value.

The Hamming-radius PR curve (``pr_*``) retrieves whole tie groups and needs neither.

Where the codes include the training set's (``train_codes``, ``train_labels``: every run since evaluation
version 4), :func:`evaluate_codes` also measures **reachability** (:mod:`shc.reachability`) on the training and
query sets: whether the network reached the targets it was trained towards (``target_codes``, else the classes'
majority codes).

Where the codes come from a run under the unseen-class protocol (``seen_classes`` in ``codes.npz``:
:mod:`shc.data.unseen`), it also measures the three pairings of DSH_Analysis, seen@seen, unseen@unseen and
unseen@all (:data:`UNSEEN_KEYS`), and reachability on the query set counts the queries of seen classes only (a
held-out class has no target).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from shc._io import jsonable

__all__ = ["EVALUATION_VERSION", "MAP_KEYS", "PAIRINGS", "PRIMARY_METRIC", "TARGET_KINDS", "TIE_AWARE_MAP_KEYS",
           "UNSEEN_KEYS", "evaluate_codes", "measured", "pairing_masks", "reachability_scores", "selection_scores",
           "unseen_scores"]

#: Version of what :func:`evaluate_codes` measures (3: + tie-aware mAP, expected P@K/R@K and rank curve; 4: +
#: reachability on the training and query sets, where the codes include the training set's).
EVALUATION_VERSION = 4
MAP_KEYS = ("mAP@100", "mAP@1000", "mAP@ALL")
TIE_AWARE_MAP_KEYS = tuple(f"tie_aware_{key}" for key in MAP_KEYS)
#: The number that model selection maximises and that the comparisons of methods use.
PRIMARY_METRIC = "tie_aware_mAP@ALL"
#: The evaluations of the unseen-class protocol (:mod:`shc.data.unseen`): queries of one kind against a database of
#: another (DSH_Analysis), as ``"<queries>@<database>"``.
PAIRINGS = ("seen@seen", "unseen@unseen", "unseen@all")
#: Each pairing with mAP@100 and mAP@ALL in both rankings: ``"<pairing>_<key>"``, e.g. ``"unseen@all_tie_aware_mAP@ALL"``.
UNSEEN_KEYS = tuple(f"{pairing}_{key}" for pairing in PAIRINGS
                    for key in ("tie_aware_mAP@ALL", "tie_aware_mAP@100", "mAP@ALL", "mAP@100"))

_CURVES = ("k", "precision@k", "recall@k", "tie_aware_precision@k", "tie_aware_recall@k", "pr_radius",
           "pr_precision", "pr_recall", "rank_k", "rank_precision", "rank_recall", "tie_aware_rank_precision",
           "tie_aware_rank_recall")


def measured(metrics: Mapping[str, Any]) -> bool:
    """Whether a run's ``metrics.json`` holds today's evaluation: :data:`EVALUATION_VERSION` or later and every mAP
    it reports. A record that lost one (a hand edit, a damaged copy) is measured again from its stored codes: an
    audit found it crashed every later pipeline and ``shc.results`` call with a ``KeyError``."""
    return metrics.get("evaluation", 0) >= EVALUATION_VERSION and all(key in metrics for key in
                                                                      (*MAP_KEYS, *TIE_AWARE_MAP_KEYS))


def evaluate_codes(codes: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Every stage-3 number of the query set from its codes: the evaluation part of ``metrics.json``.

    Parameters
    ----------
    codes : mapping
        ``query_codes``, ``query_labels``, ``database_codes``, ``database_labels`` (a ``codes.npz``).

    Returns
    -------
    dict (JSON-ready)
        mAP@100/1000/ALL in both rankings (:data:`MAP_KEYS`, :data:`TIE_AWARE_MAP_KEYS`), the precision@K and
        recall@K curves (K = 1, 5, ..., 500) and the rank-based PR curve in both rankings, the Hamming-radius PR
        curve, every query's AP@ALL in both (``query_AP@ALL``, ``query_tie_aware_AP@ALL``) and ``evaluation``:
        :data:`EVALUATION_VERSION`.
    """
    from shc.metrics import DEFAULT_RANK_POINTS, evaluate

    missing = sorted({"query_codes", "query_labels", "database_codes", "database_labels"} - set(codes))
    if missing:
        raise ValueError(f"the codes lack {missing}; they must come from a stage 3's codes.npz (recompute the run).")
    scores = evaluate(codes["query_codes"], codes["query_labels"], codes["database_codes"], codes["database_labels"],
                      tie_aware=True, rank_points=DEFAULT_RANK_POINTS, per_query=True)
    return jsonable({
        **{key: scores[key] for key in (*MAP_KEYS, *TIE_AWARE_MAP_KEYS, *_CURVES)},
        "query_AP@ALL": scores["AP@ALL"], "query_tie_aware_AP@ALL": scores["tie_aware_AP@ALL"],
        **reachability_scores(codes),
        **unseen_scores(codes),
        "evaluation": EVALUATION_VERSION,
    })


#: What ``target_codes`` of a ``codes.npz`` are, by its ``target_kind`` entry (absent: no targets stored).
TARGET_KINDS = ("centers", "learned class codes")


def reachability_scores(codes: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Reachability on the training and query sets (:mod:`shc.reachability`), empty when the codes hold no
    training set (runs older than evaluation version 4) or carry multi-hot labels.

    Returns ``reach_targets`` (``"centers"`` or ``"learned class codes"`` when ``target_codes`` are there, as
    ``target_kind`` says; else ``"majority codes"``) and ``train_`` / ``query_`` + each of
    :data:`shc.reachability.REACHABILITY_KEYS`. The majority codes are always the training codes' own.
    """
    from shc.reachability import majority_codes, reachability

    if "train_codes" not in codes or np.ndim(codes["train_labels"]) != 1:
        return {}
    query_codes, query_labels = codes["query_codes"], codes["query_labels"]
    if "seen_classes" in codes:  # the unseen-class protocol: a held-out class has no target, so seen queries only
        seen = query_labels < int(codes["seen_classes"])
        query_codes, query_labels = query_codes[seen], query_labels[seen]
    labels = np.concatenate([codes["train_labels"], query_labels])
    num_classes = len(codes["target_codes"]) if "target_codes" in codes else int(labels.max()) + 1
    majority = majority_codes(codes["train_codes"], codes["train_labels"], num_classes)
    if "target_codes" in codes:
        targets, kind = codes["target_codes"], str(codes.get("target_kind", "centers"))
    else:
        targets, kind = majority, "majority codes"
    scores: dict[str, Any] = {"reach_targets": kind}
    for split, (split_codes, split_labels) in (("train", (codes["train_codes"], codes["train_labels"])),
                                               ("query", (query_codes, query_labels))):
        for key, value in reachability(split_codes, split_labels, targets, majority).items():
            scores[f"{split}_{key}"] = value
    return scores


def unseen_scores(codes: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The pairings of the unseen-class protocol (:data:`UNSEEN_KEYS`), empty for a run without held-out classes.

    ``codes["seen_classes"]`` is the number of seen classes C_s: labels below it are seen, the others held out
    (:func:`pairing_masks`). seen@seen ranks the database images of seen classes for the queries
    of seen classes; unseen@unseen those of held-out classes for the held-out queries; unseen@all the whole
    database for the held-out queries (Sablayrolles et al., ICASSP 2017; DSH_Analysis). A pairing with no query or
    no database image is left out (the protocol's splits always hold images of every class).
    """
    if "seen_classes" not in codes:
        return {}
    from shc.metrics import evaluate

    scores: dict[str, float] = {}
    masks = pairing_masks(codes["query_labels"], codes["database_labels"], int(codes["seen_classes"]))
    for pairing, (queries, database) in masks.items():
        if not queries.any() or not database.any():  # e.g. a database without held-out images: nothing to rank
            continue
        found = evaluate(codes["query_codes"][queries], codes["query_labels"][queries],
                         codes["database_codes"][database], codes["database_labels"][database],
                         ks=(), pr=False, tie_aware=True)
        for key in ("tie_aware_mAP@ALL", "tie_aware_mAP@100", "mAP@ALL", "mAP@100"):
            scores[f"{pairing}_{key}"] = float(found[key])
    return scores


def pairing_masks(query_labels: Any, database_labels: Any, seen_classes: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """For each of :data:`PAIRINGS`, the boolean masks ``(queries, database)`` it evaluates: labels below
    ``seen_classes`` are seen classes, the others held out (the numbering of :func:`shc.data.unseen.hold_out_classes`)."""
    query_seen = np.asarray(query_labels) < seen_classes
    database_seen = np.asarray(database_labels) < seen_classes
    return {"seen@seen": (query_seen, database_seen),
            "unseen@unseen": (~query_seen, ~database_seen),
            "unseen@all": (~query_seen, np.ones_like(database_seen))}


def selection_scores(query_codes: Any, query_labels: Any, db_codes: Any, db_labels: Any) -> dict[str, float]:
    """The validation numbers of model selection: mAP@100/1000/ALL in both rankings (selection maximises
    :data:`PRIMARY_METRIC`, which does not depend on the database's order)."""
    from shc.metrics import evaluate

    scores = evaluate(query_codes, query_labels, db_codes, db_labels, ks=(), pr=False, tie_aware=True)
    return {key: scores[key] for key in (*MAP_KEYS, *TIE_AWARE_MAP_KEYS)}
