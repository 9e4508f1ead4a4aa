"""CRH's multi-head codebook and its center reassignment (Yin et al., AAAI 2026, arXiv 2511.12162).

Pure numpy: the codebook, the per-class mean sub-codes, the cost of giving a class a candidate sub-code
(Eqs. 5-7) and the two assignments the paper offers (greedy, its default, and the exact Hungarian one).
:class:`shc.losses.CRHLoss` trains with them; ``docs/baselines.md`` has the equations and what differs
from the paper.

Shapes: ``H`` heads of ``d`` bits (``K = H d`` code bits), ``M`` candidate sub-codes per head, ``C``
classes, ``N`` training samples.
"""

from __future__ import annotations

from collections.abc import Callable
import numpy as np

from shc.registry import Registry
from shc.validation import sign_pm1

__all__ = ["ASSIGNMENTS", "assignment_costs", "class_assignment_costs", "class_code_sums", "class_mean_codes",
           "greedy_assignment", "head_width", "hungarian_assignment", "reassign", "reassignment_pressure",
           "sample_codebook", "semantic_codebook", "semantic_greedy_assignment"]


def head_width(num_bits: int, codebook_size: int) -> int:
    """``d``: the smallest divisor of ``num_bits`` with ``2^d >= codebook_size``, so that each of the
    ``H = K / d`` heads can hold ``codebook_size`` distinct ``d``-bit sub-codes (the paper's
    ``H <= K / log2 M``, Sec. "Multi-head codebook").

    Raises
    ------
    ValueError
        When even ``d = K`` cannot hold that many distinct codes.
    """
    if isinstance(num_bits, bool) or int(num_bits) != num_bits or num_bits < 1:
        raise ValueError(f"num_bits must be a positive integer, got {num_bits!r}.")
    if isinstance(codebook_size, bool) or int(codebook_size) != codebook_size or codebook_size < 1:
        raise ValueError(f"codebook_size must be a positive integer, got {codebook_size!r}.")
    for width in range(1, int(num_bits) + 1):
        if num_bits % width == 0 and 2**width >= codebook_size:
            return width
    raise ValueError(f"{num_bits} bits hold at most {2**num_bits} distinct codes, fewer than the {codebook_size} "
                     "candidates asked for; use more bits or a smaller codebook_multiple.")


def sample_codebook(num_heads: int, size: int, width: int, rng: np.random.Generator) -> np.ndarray:
    """``(H, M, d)`` int8 +-1: per head, ``M`` distinct ``d``-bit vectors drawn uniformly without replacement.

    Rows are drawn uniformly and duplicates drawn again (first occurrences kept, in drawing order), which
    is sampling without replacement; vectorised over rows, a loop only over rounds of redrawing.
    """
    if size > 2**width:
        raise ValueError(f"{size} distinct {width}-bit codes do not exist (at most {2**width}); see head_width.")
    return np.stack([_top_up(np.empty((0, width), dtype=np.int8), size, rng) for _ in range(num_heads)])


def _top_up(rows: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``rows`` (distinct, kept first and in order) followed by distinct uniform +-1 draws up to ``size`` rows."""
    while len(rows) < size:
        drawn = np.where(rng.random((size - len(rows), rows.shape[1])) < 0.5, -1, 1).astype(np.int8)
        rows = np.concatenate([rows, drawn])
        _, first = np.unique(rows, axis=0, return_index=True)
        rows = rows[np.sort(first)]
    return rows


def class_code_sums(codes: np.ndarray, labels: np.ndarray, num_classes: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-class weighted sums of the codes and of their squared norms, and the classes' total weights, in float64.

    Every sample counts for each of its classes with weight ``1 / |y|_1`` (1 for class indices): the sums are
    ``W^T B`` and ``W^T ||b||^2`` and the weights ``W^T 1``, with ``W`` the (N, C) weights (a bincount for class
    indices), no loop over samples. For +-1 codes and class indices every entry is an integer, exact in float64.

    Parameters
    ----------
    codes : array, shape (N, K)
        The training samples' codes (+-1, or any reals).
    labels : array, shape (N,) or (N, C)
        Class indices or multi-hot rows.
    num_classes : int

    Returns
    -------
    sums : (C, K) float64
    squared_sums : (C,) float64
    weight : (C,) float64
        The number of samples of each class (0 for a class without any), fractional for multi-hot rows.
    """
    codes = np.asarray(codes, dtype=np.float64)
    labels = np.asarray(labels)
    squared = np.einsum("nk,nk->n", codes, codes)
    if labels.ndim == 1:
        weight = np.bincount(labels, minlength=num_classes).astype(np.float64)
        sums = np.zeros((num_classes, codes.shape[1]))
        np.add.at(sums, labels, codes)
        squared_sums = np.bincount(labels, weights=squared, minlength=num_classes)
    else:
        weights = labels.astype(np.float64)
        row_sums = weights.sum(axis=1, keepdims=True)
        if not (row_sums > 0).all():
            raise ValueError(f"{int((row_sums <= 0).sum())} multi-hot label rows have no class; drop unlabelled "
                             "samples.")
        weights = weights / row_sums
        weight = weights.sum(axis=0)
        sums = weights.T @ codes
        squared_sums = weights.T @ squared
    return sums, squared_sums, weight


def class_mean_codes(codes: np.ndarray, labels: np.ndarray, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-class weighted means of the codes (Eq. 6) and of their squared norms, in float64:
    :func:`class_code_sums` divided by the classes' weights.

    Returns
    -------
    means : (C, K) float64
        A class without training samples gets zeros.
    mean_squared_norms : (C,) float64
        ``mean ||b||^2`` over the class's samples (``K`` for +-1 codes); 0 for an empty class.
    """
    sums, squared_sums, weight = class_code_sums(codes, labels, num_classes)
    safe = np.where(weight > 0, weight, 1.0)
    return sums / safe[:, None], squared_sums / safe


def assignment_costs(means: np.ndarray, mean_squared_norms: np.ndarray, codebook: np.ndarray) -> np.ndarray:
    """``(C, M)`` cost of giving class c candidate z of one head (Eq. 7):
    ``mean_i ||b_i - z||^2 = mean_i ||b_i||^2 + ||z||^2 - 2 <mean_i b_i, z>``.

    ``means`` (C, d) and ``mean_squared_norms`` (C,) are the class's sub-code statistics for this head
    (:func:`class_mean_codes` on the head's columns); ``codebook`` is the head's (M, d) candidates. The
    reassignment reads :func:`class_assignment_costs` instead, whose costs do not depend on the summation order.
    """
    codebook = np.asarray(codebook, dtype=np.float64)
    return mean_squared_norms[:, None] + (codebook**2).sum(axis=1)[None, :] - 2.0 * means @ codebook.T


def class_assignment_costs(codes: np.ndarray, labels: np.ndarray, num_classes: int, codebook: np.ndarray
                           ) -> np.ndarray:
    """``(C, M)`` Eq. 7 costs of one head from the samples' sub-codes ``codes`` (N, d) and the head's candidates
    ``codebook`` (M, d), as ``(sum_i ||b_i||^2 + n_c ||z||^2 - 2 <sum_i b_i, z>) / n_c`` (``||z||^2`` for a class
    without samples, as :func:`assignment_costs` gives it).

    For +-1 codes and class indices every term of the numerator is an integer, exact in float64 whatever order a
    BLAS kernel sums it in, and one division rounds it: the costs are the same bits on every machine, and costs
    equal in exact arithmetic are equal, so the greedy pass's ties go to the lowest candidate index as it says.
    Through the means (:func:`assignment_costs`) they were rounded per term and summed in the kernel's order:
    numpy's OpenBLAS on its SkylakeX and Haswell kernels broke ties of a 333-class run differently at epoch 12,
    and the run ended 0.0075 apart (docs/baselines.md, "CRH's ties"). Multi-hot rows weigh samples by
    ``1 / |y|_1``, which is not exact; their costs still depend on the order.
    """
    sums, squared_sums, weight = class_code_sums(codes, labels, num_classes)
    codebook = np.asarray(codebook, dtype=np.float64)
    norms = (codebook**2).sum(axis=1)
    numerator = squared_sums[:, None] + weight[:, None] * norms[None, :] - 2.0 * sums @ codebook.T
    safe = np.where(weight > 0, weight, 1.0)
    return np.where(weight[:, None] > 0, numerator / safe[:, None], norms[None, :])


def greedy_assignment(costs: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The paper's greedy pass: classes in ``order`` each take their cheapest candidate still free
    (ties: the lowest candidate index). Returns the (C,) candidate index of each class.

    A loop over classes (C steps of an (M,) arg-min), never over samples.
    """
    num_classes, size = costs.shape
    if size < num_classes:
        raise ValueError(f"{size} candidates cannot give {num_classes} classes one each; use a larger codebook.")
    order = np.asarray(order)
    if sorted(order.tolist()) != list(range(num_classes)):
        raise ValueError(f"order must be a permutation of the {num_classes} class indices.")
    taken = np.zeros(size, dtype=bool)
    chosen = np.empty(num_classes, dtype=np.int64)
    for c in order:
        candidate = int(np.argmin(np.where(taken, np.inf, costs[c])))
        chosen[c] = candidate
        taken[candidate] = True
    return chosen


def hungarian_assignment(costs: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """The exact minimum-cost assignment of one distinct candidate per class
    (``scipy.optimize.linear_sum_assignment``, rectangular C x M); ``order`` is ignored."""
    from scipy.optimize import linear_sum_assignment

    num_classes, size = np.shape(costs)
    if size < num_classes:  # linear_sum_assignment would leave classes without a candidate (and us uninitialised)
        raise ValueError(f"{size} candidates cannot give {num_classes} classes one each; use a larger codebook.")
    rows, columns = linear_sum_assignment(costs)
    chosen = np.empty(costs.shape[0], dtype=np.int64)
    chosen[rows] = columns
    return chosen


#: The assignment algorithms by name: ``assign(costs (C, M), order (C,)) -> (C,) candidate indices``.
ASSIGNMENTS: Registry[Callable[[np.ndarray, np.ndarray], np.ndarray]] = Registry("assignment")
ASSIGNMENTS.register("greedy", greedy_assignment)
ASSIGNMENTS.register("hungarian", hungarian_assignment)


def semantic_codebook(centers: np.ndarray, num_heads: int, size: int, rng: np.random.Generator
                      ) -> tuple[np.ndarray, np.ndarray]:
    """SCRH's codebook and first assignment (docs/baselines.md, "SCRH"): per head, the distinct sub-codes of the
    semantic ``centers`` (C, K) in class order, then distinct uniform draws up to ``size`` candidates; each class
    first takes, in class order, the free candidate nearest its own sub-code (its own when the classes' sub-codes
    of that head differ, so the first centers are ``centers`` exactly).

    Returns ``(codebooks (H, M, d) int8, assignment (H, C) int64)``."""
    centers = np.asarray(centers, dtype=np.int8)
    num_classes, num_bits = centers.shape
    width = num_bits // num_heads
    if width * num_heads != num_bits or size > 2**width or size < num_classes:
        raise ValueError(f"{num_heads} heads of {num_bits} bits cannot hold {size} distinct candidates for "
                         f"{num_classes} classes; see head_width.")
    codebooks, assignment = [], []
    for head in range(num_heads):
        chunks = centers[:, head * width:(head + 1) * width]
        _, first = np.unique(chunks, axis=0, return_index=True)
        rows = _top_up(chunks[np.sort(first)], size, rng)
        codebooks.append(rows)
        distances = assignment_costs(chunks.astype(np.float64), np.full(num_classes, float(width)), rows)
        assignment.append(greedy_assignment(distances, np.arange(num_classes)))
    return np.stack(codebooks), np.stack(assignment)


def semantic_greedy_assignment(costs: np.ndarray, codebook: np.ndarray, chunks: np.ndarray, others: np.ndarray,
                               similarity: np.ndarray, num_bits: int, weight: float, order: np.ndarray) -> np.ndarray:
    """The greedy pass of SCRH: classes in ``order`` each take the free candidate minimising Eq. 7's cost plus the
    semantic fit of the center it makes (docs/baselines.md, "SCRH", Eq. S2):

    ``costs[c, j] + weight * d * mean_{c' != c} (S[c, c'] - (others[c, c'] + <z_j, a_c'>) / K)^2``

    with ``z_j`` candidate j of this head (``codebook`` (M, d)), ``a_c'`` the sub-code class c' holds in this head
    (``chunks`` (C, d): already this pass's choice for the classes before c in ``order``), ``others`` (C, C) the
    inner products of the classes' centers over the other heads and K = ``num_bits``. ``d`` puts the semantic
    term, a squared difference of normalised inner products, on the per-bit scale of Eq. 7. A loop over classes
    (each an (M, C - 1) update of the candidates' inner products with the held sub-codes, kept as one (M, C)
    array and refreshed one column per pick), never over samples. ``weight`` 0 is CRH's :func:`greedy_assignment`."""
    num_classes, size = costs.shape
    if size < num_classes:
        raise ValueError(f"{size} candidates cannot give {num_classes} classes one each; use a larger codebook.")
    codebook = np.asarray(codebook, dtype=np.float64)
    products = codebook @ np.asarray(chunks, dtype=np.float64).T  # (M, C): <z_j, a_c'>
    width = codebook.shape[1]
    taken = np.zeros(size, dtype=bool)
    chosen = np.empty(num_classes, dtype=np.int64)
    for c in np.asarray(order):
        semantic = _semantic_term(c, products, others, similarity, num_bits)
        candidate = int(np.argmin(np.where(taken, np.inf, costs[c] + weight * width * semantic)))
        chosen[c], taken[candidate] = candidate, True
        products[:, c] = codebook @ codebook[candidate]
    return chosen


def _semantic_term(c: int, products: np.ndarray, others: np.ndarray, similarity: np.ndarray,
                   num_bits: int) -> np.ndarray:
    """(M,): Eq. S2's fit of class ``c``'s center with each candidate of the head, unweighted:
    ``mean_{c' != c} (S[c, c'] - (others[c, c'] + products[j, c']) / K)^2``, ``products`` (M, C) the candidates'
    inner products with the sub-codes the classes hold (arguments as :func:`semantic_greedy_assignment`)."""
    mates = np.arange(products.shape[1]) != c
    fit = (others[c, mates][None, :] + products[:, mates]) / num_bits
    return ((similarity[c, mates][None, :] - fit) ** 2).mean(axis=1)


def _semantic_terms(products: np.ndarray, others: np.ndarray, similarity: np.ndarray, num_bits: int) -> np.ndarray:
    """(C, M): :func:`_semantic_term` of every class at once, the held sub-codes fixed, by expanding the square:
    ``sum_{c' != c} (R[c, c'] - P[j, c'] / K)^2 = sum R^2 - 2 / K (R P^T)[c, j] + sum P^2 / K^2`` with
    ``R = S - others / K`` (diagonal left out) and ``P = products``."""
    num_classes = products.shape[1]
    residual = similarity - others / num_bits
    np.fill_diagonal(residual, 0.0)
    squares = products**2
    total = ((residual**2).sum(axis=1)[:, None] - 2 / num_bits * residual @ products.T
             + (squares.sum(axis=1)[None, :] - squares.T) / num_bits**2)
    return total / (num_classes - 1)


def reassignment_pressure(codes: np.ndarray, labels: np.ndarray, num_classes: int, codebooks: np.ndarray,
                          current: np.ndarray, similarity: np.ndarray | None = None,
                          semantic_weight: float = 0.0) -> dict[str, np.ndarray]:
    """Why a reassignment moves a class (issue 37's open question, docs/unseen.md): per head and class, with every
    other class left on the candidate it holds, the cost of keeping its own candidate against the cheapest other one.

    The cost is Eq. 7's (:func:`class_assignment_costs`) plus, with a (C, C) ``similarity`` and ``semantic_weight`` > 0,
    SCRH's weighted semantic term (Eq. S2, :func:`semantic_greedy_assignment`), every head's other classes held at
    ``current`` (H, C). A class whose keeping cost is above its best alternative's leaves in any order of the greedy
    pass that reaches it before its alternative is taken; one whose keeping cost is lowest leaves only when another
    class takes its candidate first (a cascade).

    Returns (H, C) arrays: ``"data_gap"`` and ``"semantic_gap"`` (Eq. 7 and the weighted semantic term of keeping
    minus those of the cheapest other candidate by total cost: their sum > 0 is ``"prefers_other"``), ``"hamming"``
    (bits between the held sub-code and that candidate) and ``"majority_held"`` (the class's majority sub-code,
    the sign of its samples' mean with sign(0) = +1, is the held one). A class without training samples is compared
    like the others (its Eq. 7 term is a constant).
    """
    codebooks = np.asarray(codebooks, dtype=np.float64)
    num_heads, size, width = codebooks.shape
    codes, current = np.asarray(codes, dtype=np.float64), np.asarray(current)
    if codes.ndim != 2 or codes.shape[1] != num_heads * width:
        raise ValueError(f"codes must be (N, {num_heads * width}): the codebook has {num_heads} heads of {width} bits.")
    if current.shape != (num_heads, num_classes) or current.min() < 0 or current.max() >= size:
        raise ValueError(f"current must be ({num_heads}, {num_classes}) candidate indices below {size}: the "
                         f"assignment (CRHLoss.assignment), got shape {current.shape}.")
    semantic = similarity is not None and semantic_weight > 0
    held = codebooks[np.arange(num_heads)[:, None], current]  # (H, C, d)
    gram = np.einsum("hcd,hed->ce", held, held)
    rows = np.arange(num_classes)
    out = {key: np.empty((num_heads, num_classes)) for key in ("data_gap", "semantic_gap", "hamming")}
    majority_held = np.empty((num_heads, num_classes), dtype=bool)
    for head in range(num_heads):
        sub_codes = codes[:, head * width:(head + 1) * width]
        data = class_assignment_costs(sub_codes, labels, num_classes, codebooks[head])  # (C, M)
        if semantic:
            others = gram - held[head] @ held[head].T
            fit = semantic_weight * width * _semantic_terms(codebooks[head] @ held[head].T, others,
                                                            np.asarray(similarity, np.float64), num_heads * width)
        else:
            fit = np.zeros_like(data)
        total = data + fit
        own = current[head]
        alternatives = total.copy()
        alternatives[rows, own] = np.inf
        best = alternatives.argmin(axis=1)
        out["data_gap"][head] = data[rows, own] - data[rows, best]
        out["semantic_gap"][head] = fit[rows, own] - fit[rows, best]
        out["hamming"][head] = (codebooks[head, own] != codebooks[head, best]).sum(axis=1)
        majority = sign_pm1(class_mean_codes(sub_codes, labels, num_classes)[0], np.float64)
        majority_held[head] = (majority == codebooks[head, own]).all(axis=1)
    out["prefers_other"] = out["data_gap"] + out["semantic_gap"] > 0
    out["majority_held"] = majority_held
    return out


def reassign(codes: np.ndarray, labels: np.ndarray, num_classes: int, codebooks: np.ndarray, assignment: str,
             rng: np.random.Generator, similarity: np.ndarray | None = None, semantic_weight: float = 0.0,
             current: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """CRH's center reassignment (Eqs. 5-7), head by head.

    Parameters
    ----------
    codes : (N, K) array
        The training samples' binary codes ``sign(u)`` (sign(0) = +1).
    labels : (N,) or (N, C) array
    num_classes : int
    codebooks : (H, M, d) array
        The candidate sub-codes of each head (``K = H d``).
    assignment : {"greedy", "hungarian"}
    rng : numpy Generator
        Draws the greedy pass's class order (one permutation per head).
    similarity, semantic_weight, current : optional
        SCRH (docs/baselines.md): with a (C, C) ``similarity`` S and ``semantic_weight`` > 0, each head's greedy
        pass adds the semantic fit of the centers (:func:`semantic_greedy_assignment`), given the assignment
        ``current`` (H, C) of the heads not yet reassigned; heads are reassigned in order, each seeing the ones
        before it anew. Greedy only (the semantic term couples the classes).

    Returns
    -------
    chosen : (H, C) int64
        The candidate of each class in each head.
    costs : (H,) float64
        The total cost (Eq. 7 summed over classes) of each head's new assignment.
    """
    assign = ASSIGNMENTS.get(assignment)
    num_heads, _, width = codebooks.shape
    codes = np.asarray(codes, dtype=np.float64)
    if codes.shape[1] != num_heads * width:
        raise ValueError(f"codes have {codes.shape[1]} bits, the codebook {num_heads} heads of {width}.")
    labels = np.asarray(labels)
    semantic = similarity is not None and semantic_weight > 0
    if semantic and (assignment != "greedy" or current is None):
        raise ValueError("the semantic reassignment is greedy and needs the current assignment: pass "
                         "assignment='greedy' and current=.")
    chosen = np.empty((num_heads, num_classes), dtype=np.int64) if current is None else np.array(current)
    totals = np.empty(num_heads)
    for head in range(num_heads):
        sub_codes = codes[:, head * width:(head + 1) * width]
        costs = class_assignment_costs(sub_codes, labels, num_classes, codebooks[head])
        order = rng.permutation(num_classes)
        if semantic:
            held = codebooks[np.arange(num_heads)[:, None], chosen].astype(np.float64)  # (H, C, d)
            others = np.einsum("hcd,hed->ce", held, held) - held[head] @ held[head].T
            chosen[head] = semantic_greedy_assignment(costs, codebooks[head], held[head], others,
                                                      np.asarray(similarity, np.float64), num_heads * width,
                                                      semantic_weight, order)
        else:
            chosen[head] = assign(costs, order)
        totals[head] = costs[np.arange(num_classes), chosen[head]].sum()
    return chosen, totals

