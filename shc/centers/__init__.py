"""Stage 2: hash centers (paper Sec. 3.2, Algorithm 1) and their quality.

Conventions used throughout (the paper writes ``H`` as q x C columns; we store rows). Equation
numbers count the paper's numbered equations in order (GV bound Eq. 13, objective Eq. 22):

- ``centers`` / ``H``: an (C, q) array of +-1 (int8 on output), row ``i`` is the center of class ``i``.
- Hamming distance and inner product are related by ``D(h_i, h_j) = (q - h_i . h_j) / 2`` (Theorem 2, Eq. 17).
- ``S``: a (C, C) class-similarity matrix with entries in [-1, 1] (stage 1).

Generators, all through :func:`generate_centers`:

``"random"``   Bernoulli(0.5) signs (CSQ's random centers).
``"csq"``      Hadamard rows, then rows of ``-H``, then random rows with exactly q/2 entries of -1 (CSQ).
``"mds"``      every pairwise distance >= d (Gilbert-Varshamov, Eq. 13), pushed apart beyond that by a
               vectorised greedy bit-flip search (our algorithm; Wang et al.'s goal).
``"shc"``      the paper's semantic hash centers (Eq. 22-38, Algorithm 1), initialised by ``"mds"``.
``"semantic"`` the ablation without the distance term (Sec. 4.6.1, Eq. 46-49, Table 7 "S only").
``"shc-ls"``   SHC's semantic loss under the same distance constraint, without Eq. 22's spreading term (mu = 0),
               solved by exact feasible local search from several starts (our algorithm, :mod:`shc.centers.search`;
               ``docs/centers.md``).

Modules, each importing only those listed before it:

``distance``   sizes, Hamming distances, the Gilbert-Varshamov distance, bounds on codes at a distance
``_kernels``   the compiled (numba) kernels: packed bits, the local search's moves, the greedy code
``quality``    :func:`center_quality` (Table 3), :func:`geometry_lesson`, :func:`packed_min_distance`, lower bounds
               on S_loss (:func:`relaxation_bound`, :func:`unit_diagonal_bound`,
               :func:`distance_cap_bound`, :func:`psd_cap_bound`, :func:`rank_cap_bound`) and the
               continuous relaxation's local optimum (:func:`spherical_relaxation`)
``baselines``  ``"random"``, ``"csq"``
``mds``        ``"mds"`` (and :func:`greedy_code` above :data:`DENSE_MDS_LIMIT` classes)
``semantic``   ``"shc"`` (Algorithm 1) and ``"semantic"``; :class:`CenterOptimisation`
``search``     ``"shc-ls"``: :func:`local_search_centers`, :func:`steepest_descent`, :func:`distance_tradeoff`
               (at the distances of :func:`distance_grid`)
``registry``   :data:`CENTER_GENERATORS`, :func:`run_center_method`, :func:`generate_centers`

This package re-exports their public names; a module of the package imports its siblings, never the package.
"""

from shc.centers.baselines import csq_centers, hadamard_capacity_table, random_centers
from shc.centers.distance import distance_table, gv_min_distance, hamming_distances, max_codes_upper_bound
from shc.centers.mds import DENSE_MDS_LIMIT, MDS_DEFAULTS, greedy_code, mds_centers
from shc.centers.quality import (
    center_quality,
    distance_cap_bound,
    geometry_lesson,
    packed_min_distance,
    psd_cap_bound,
    quality_table,
    rank_cap_bound,
    relaxation_bound,
    spherical_relaxation,
    unit_diagonal_bound,
)
from shc.centers.registry import (
    CENTER_GENERATORS,
    CENTER_METHODS,
    SEMANTIC_METHODS,
    CenterGenerator,
    generate_centers,
    run_center_method,
)
from shc.centers.search import LS_DEFAULTS, distance_grid, distance_tradeoff, local_search_centers, steepest_descent
from shc.centers.semantic import (
    SEMANTIC_DEFAULTS,
    SHC_DEFAULTS,
    CenterOptimisation,
    optimize_semantic_centers,
    semantic_only_centers,
    shc_objective,
)
from shc.similarity import validate_similarity

__all__ = [
    "CENTER_GENERATORS",
    "CENTER_METHODS",
    "DENSE_MDS_LIMIT",
    "LS_DEFAULTS",
    "MDS_DEFAULTS",
    "SEMANTIC_DEFAULTS",
    "SEMANTIC_METHODS",
    "SHC_DEFAULTS",
    "CenterGenerator",
    "CenterOptimisation",
    "center_quality",
    "csq_centers",
    "distance_cap_bound",
    "distance_grid",
    "distance_tradeoff",
    "generate_centers",
    "geometry_lesson",
    "greedy_code",
    "gv_min_distance",
    "hadamard_capacity_table",
    "distance_table",
    "hamming_distances",
    "local_search_centers",
    "max_codes_upper_bound",
    "mds_centers",
    "optimize_semantic_centers",
    "packed_min_distance",
    "psd_cap_bound",
    "quality_table",
    "random_centers",
    "rank_cap_bound",
    "relaxation_bound",
    "run_center_method",
    "semantic_only_centers",
    "shc_objective",
    "spherical_relaxation",
    "steepest_descent",
    "unit_diagonal_bound",
    "validate_similarity",
]
