"""Stage 2's front door: every center method by name (:data:`CENTER_GENERATORS`), and
:func:`generate_centers` / :func:`run_center_method`, which check the sizes, the seed, the options and S
and run one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from shc.centers.baselines import csq_centers, random_centers
from shc.centers.distance import _check_sizes
from shc.centers.mds import MDS_DEFAULTS, mds_centers
from shc.centers.search import LS_DEFAULTS, local_search_centers
from shc.centers.semantic import SEMANTIC_DEFAULTS, SHC_DEFAULTS, optimize_semantic_centers, semantic_only_centers
from shc.registry import Registry
from shc.similarity import validate_similarity
from shc.validation import seed_value

__all__ = ["CENTER_GENERATORS", "CENTER_METHODS", "SEMANTIC_METHODS", "CenterGenerator", "generate_centers",
           "run_center_method"]


@dataclass(frozen=True)
class CenterGenerator:
    """One center method: ``run(C, q, S, seed, **options) -> (centers, history)``, its options, whether it needs S."""

    name: str
    run: Any
    options: tuple[str, ...]
    needs_similarity: bool
    #: Raised when the algorithm's output changes for the same inputs; a version above 1 enters the stage-2
    #: identity (``shc.stages.Centers``), so centers cached by an older version are recomputed, not reused.
    version: int = 1


def _without_history(function):
    return lambda C, q, S, seed, **options: (function(C, q, seed=seed, **options), [])


def _with_history(function):
    def run(C, q, S, seed, **options):
        result = function(S, q, seed=seed, **options)
        return result.centers, result.history

    return run


#: Every center method by name; a new one is one ``CENTER_GENERATORS.register(name, CenterGenerator(...))``.
CENTER_GENERATORS: Registry[CenterGenerator] = Registry("center method")
for _generator in (
    CenterGenerator("random", _without_history(random_centers), (), False),
    CenterGenerator("csq", _without_history(csq_centers), (), False),
    CenterGenerator("mds", _without_history(mds_centers), ("min_distance", *MDS_DEFAULTS), False),
    CenterGenerator("shc", _with_history(optimize_semantic_centers), ("min_distance", "init", *SHC_DEFAULTS), True),
    CenterGenerator("semantic", _with_history(semantic_only_centers), ("init", *SEMANTIC_DEFAULTS), True),
    CenterGenerator("shc-ls", _with_history(local_search_centers),
                    ("min_distance", "init", *LS_DEFAULTS), True,
                    version=2),  # 2: the closing descent over single and double flips (pair_moves, 2026-11-24)
):
    CENTER_GENERATORS.register(_generator.name, _generator)
CENTER_METHODS = tuple(CENTER_GENERATORS.names())  # the built-in names; checks read CENTER_GENERATORS itself
SEMANTIC_METHODS = tuple(name for name, g in CENTER_GENERATORS.items() if g.needs_similarity)


def run_center_method(method: str, num_classes: int, num_bits: int, similarity: Any | None = None, seed: int = 0,
                      **options: Any) -> tuple[np.ndarray, list[dict[str, float]]]:
    """:func:`generate_centers` plus the optimiser's record (one dict per iteration; empty for the
    generators without iterations): what stage 2 stores."""
    generator = CENTER_GENERATORS.get(method)
    C, q = _check_sizes(num_classes, num_bits)
    seed = seed_value(seed)
    unknown = sorted(set(options) - set(generator.options))
    if unknown:
        allowed = ", ".join(generator.options) or "none"
        raise TypeError(f"Unknown option(s) {unknown} for method {method!r}; allowed: {allowed}.")
    if generator.needs_similarity:
        if similarity is None:
            raise ValueError(
                f"method {method!r} needs a similarity matrix (stage 1); pass similarity=S of shape ({C}, {C})."
            )
        validate_similarity(similarity, num_classes=C)
    return generator.run(C, q, similarity, seed, **options)


def generate_centers(method: str, num_classes: int, num_bits: int, similarity: Any | None = None, seed: int = 0,
                     **options: Any) -> np.ndarray:
    """Generate C hash centers of q bits with one of :data:`CENTER_METHODS`.

    Parameters
    ----------
    method : {"random", "csq", "mds", "shc", "semantic", "shc-ls"}
    num_classes, num_bits : int
        C >= 2 and q >= 2 with C <= 2^q.
    similarity : (C, C) array, required for "shc", "semantic" and "shc-ls"
        The stage-1 similarity S (entries in [-1, 1], symmetric).
    seed : int
        Same inputs and seed give the same centers on every run.
    **options
        Method options: ``min_distance`` and ``max_sweeps`` for "mds"; ``min_distance``, ``init`` and
        the Algorithm 1 parameters of :data:`SHC_DEFAULTS` for "shc"; ``mu``, ``cycles``, ``init`` for
        "semantic"; those of :func:`shc.centers.search.local_search_centers` for "shc-ls".

    Returns
    -------
    (C, q) int8 array with entries in {-1, +1}.
    """
    return run_center_method(method, num_classes, num_bits, similarity, seed, **options)[0]
