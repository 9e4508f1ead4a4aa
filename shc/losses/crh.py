"""CRH's loss: a margin cosine cross-entropy towards centers drawn from a multi-head codebook and reassigned
between epochs (:mod:`shc.codebook`). The only loss whose targets are learned, so the only one with state
beyond its weights (the assignment and its log) and with ``fit``'s epoch hook.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from shc.losses.registry import (
    _check_codes,
    _check_labels,
    _label_tensor,
    _positive_number,
    _target_matrix,
    register_loss,
)
from shc.models import hash_codes
from shc.similarity import validate_similarity

__all__ = ["CRHLoss", "SemanticCRHLoss"]


@register_loss("crh")
class CRHLoss(nn.Module):
    """CRH: margin cosine cross-entropy to centers reassigned from a multi-head codebook during training
    (Yin et al., "Codebook-Centric Deep Hashing", AAAI 2026, arXiv 2511.12162; Eqs. 1-8).

    **Codebook (Eq. 8).** ``M = codebook_multiple * C`` candidate sub-codes per head; the ``K`` bits are
    split into ``H = K / d`` heads of ``d`` bits, ``d`` the smallest divisor of ``K`` with ``2^d >= M``
    (:func:`shc.codebook.head_width`); each head's candidates are ``M`` distinct +-1 vectors drawn
    uniformly (seeded). Class ``c``'s center ``h_c`` concatenates its assigned sub-code of every head; the
    initial assignment is a random one (distinct candidates per head, seeded).

    **Loss (Eqs. 1-4).** ``cos_c = <u / |u|, h_c / |h_c|>``, logits ``s (cos_c - m y_c)``, cross-entropy
    against ``y / |y|_1`` (class indices: the usual one), plus ``lambda mean((|tanh u| - 1)^2)``. The network
    output ``u`` is linear (head option ``activation="identity"``).

    **Reassignment (Eqs. 5-7).** :meth:`on_epoch_end`, which :func:`shc.train.fit` calls after every
    epoch, re-encodes the training set when the schedule says so (after each of the first
    ``reassign_until`` epochs, then after every ``reassign_every``-th) and gives every class, head by head,
    the distinct candidate minimising the mean squared distance to its samples' sub-codes
    (:func:`shc.codebook.reassign`: greedy in a random class order, the paper's default, or Hungarian).

    State: the codebooks and the assignment are buffers and the log of reassignments (epoch, classes
    whose sub-code changed, mean cost per class) is the module's extra state, so ``fit``'s checkpoints
    carry them and an interrupted run resumes bit-identically. The greedy order after epoch ``e`` is drawn
    from a generator seeded by ``(seed, e)``: no random state to save.

    **Version 2** (2026-12-05): the reassignment's costs are computed exactly
    (:func:`shc.codebook.class_assignment_costs`), so a run no longer depends on the summation order of numpy's BLAS
    kernel; runs of version 1 are not reused (the version enters the stage-3 identity).

    Parameters
    ----------
    num_classes, num_bits : int
        C (at least 2) and K.
    train_labels : array-like
        The training split's labels in dataset order (the reassignment's class statistics).
    seed : int
        Seeds the codebook, the initial assignment and the greedy orders.
    scale : float, optional
        ``s``; default ``sqrt(2) ln(C - 1)`` (the paper's; needs C >= 3).
    margin : float
        ``m = 0.2``.
    quantization_weight : float, optional
        ``lambda``; default 0.1 on class-index labels, 0 on multi-hot ones (the paper's two settings).
    codebook_multiple : int
        ``M / C`` (2: the paper's M = 2C).
    assignment : {"greedy", "hungarian"}
        Greedy is the paper's default; Hungarian is the exact minimum of Eq. 7's total cost.
    reassign_until, reassign_every : int
        The schedule: reassign after epochs 1..20, then after every 5th (the paper's).
    reassign_from : int
        The first epoch after which the schedule may reassign (default 1: the paper's). A later start lets the
        network first fit the starting centers (SCRH's delayed variant, issue 37: its semantic start is kept until
        then).
    """

    #: Raised when the loss gives other numbers for the same inputs; a version above 1 enters the stage-3 identity
    #: (``shc.stages.Hashing``), so runs trained by an older version are trained again, not reused.
    version: int = 2

    def __init__(self, num_classes: int, num_bits: int, train_labels: Any, seed: int = 0,
                 scale: float | None = None, margin: float = 0.2, quantization_weight: float | None = None,
                 codebook_multiple: int = 2, assignment: str = "greedy", reassign_until: int = 20,
                 reassign_every: int = 5, reassign_from: int = 1) -> None:
        from shc.codebook import ASSIGNMENTS, head_width, sample_codebook

        super().__init__()
        self.num_classes, self.num_bits, self.seed = int(num_classes), int(num_bits), int(seed)
        if self.num_classes < 2:
            raise ValueError(f"CRH needs at least 2 classes, got {num_classes}.")
        labels = _label_tensor(train_labels, self.num_classes)
        self.register_buffer("labels", labels, persistent=False)
        if scale is None:
            if self.num_classes < 3:
                raise ValueError("the default scale sqrt(2) ln(C - 1) is 0 for C = 2 classes; pass scale=.")
            scale = math.sqrt(2.0) * math.log(self.num_classes - 1)
        self.scale = _positive_number(scale, "scale")
        self.margin = _positive_number(margin, "margin", allow_zero=True)
        if quantization_weight is None:
            quantization_weight = 0.1 if labels.ndim == 1 else 0.0
        self.quantization_weight = _positive_number(quantization_weight, "quantization_weight", allow_zero=True)
        ASSIGNMENTS.get(assignment)  # an unknown name lists the known ones
        self.assignment_method = assignment
        for name, value in (("codebook_multiple", codebook_multiple), ("reassign_until", reassign_until),
                            ("reassign_every", reassign_every), ("reassign_from", reassign_from)):
            if isinstance(value, bool) or int(value) != value or value < (0 if name == "reassign_until" else 1):
                raise ValueError(f"{name} must be a {'non-negative' if name == 'reassign_until' else 'positive'} "
                                 f"integer, got {value!r}.")
        self.codebook_multiple, self.reassign_until = int(codebook_multiple), int(reassign_until)
        self.reassign_every, self.reassign_from = int(reassign_every), int(reassign_from)
        size = self.codebook_multiple * self.num_classes
        width = head_width(self.num_bits, size)
        rng = np.random.default_rng(self.seed)
        codebooks = sample_codebook(self.num_bits // width, size, width, rng)
        initial = np.stack([rng.permutation(size)[: self.num_classes] for _ in range(len(codebooks))])
        self.register_buffer("codebooks", torch.from_numpy(codebooks.astype(np.float32)))
        self.register_buffer("assignment", torch.from_numpy(initial))
        self.reassignments: list[dict[str, float]] = []

    @property
    def num_heads(self) -> int:
        return self.codebooks.shape[0]

    def centers(self) -> torch.Tensor:
        """(C, K) +-1 float: each class's assigned sub-code of every head, concatenated (Eq. 8)."""
        heads = torch.arange(self.num_heads, device=self.codebooks.device)[:, None]
        return self.codebooks[heads, self.assignment].permute(1, 0, 2).reshape(self.num_classes, self.num_bits)

    def forward(self, outputs: torch.Tensor, labels: torch.Tensor, indices: torch.Tensor | None = None) -> torch.Tensor:
        _check_codes(outputs, self.num_bits)
        _check_labels(labels, outputs.shape[0], self.num_classes)
        cosine = F.normalize(outputs, dim=1) @ self.centers().T / math.sqrt(self.num_bits)  # |h_c| = sqrt(K)
        targets = _target_matrix(labels, self.num_classes)
        logits = self.scale * (cosine - self.margin * targets)
        soft_targets = targets / targets.sum(dim=1, keepdim=True)
        loss = -(soft_targets * F.log_softmax(logits, dim=1)).sum(dim=1).mean()
        if self.quantization_weight:
            loss = loss + self.quantization_weight * (torch.tanh(outputs).abs() - 1).pow(2).mean()
        return loss

    def reassigns_after(self, epoch: int) -> bool:
        """Whether the schedule reassigns after (1-based) ``epoch``: from ``reassign_from`` on, after every epoch up to
        ``reassign_until`` and after every ``reassign_every``-th."""
        return epoch >= self.reassign_from and (epoch <= self.reassign_until or epoch % self.reassign_every == 0)

    @torch.no_grad()
    def reassign(self, codes: torch.Tensor | np.ndarray, epoch: int) -> dict[str, float]:
        """Reassign the centers from the training set's codes (N, K) (Eqs. 5-7); returns the history entry
        ``{"reassigned": (head, class) pairs whose sub-code changed, "assignment_cost": Eq. 7's total cost
        over the heads, divided by C}``."""
        from shc.codebook import reassign

        codes = np.asarray(codes.cpu() if isinstance(codes, torch.Tensor) else codes, dtype=np.float64)
        if codes.shape != (len(self.labels), self.num_bits):
            raise ValueError(f"codes must be ({len(self.labels)}, {self.num_bits}): one code per training sample "
                             f"of the split the loss was built for, got {codes.shape}.")
        binary = hash_codes(codes).astype(np.float64)  # refuses NaN codes (a diverged network)
        rng = np.random.default_rng([self.seed, int(epoch)])
        chosen, costs = reassign(binary, self.labels.cpu().numpy(), self.num_classes,
                                 self.codebooks.cpu().numpy(), self.assignment_method, rng, **self._semantic_options())
        chosen = torch.from_numpy(chosen).to(self.assignment.device)
        changed = int((chosen != self.assignment).sum())
        self.assignment.copy_(chosen)
        entry = {"epoch": int(epoch), "reassigned": changed, "assignment_cost": float(costs.sum() / self.num_classes)}
        self.reassignments.append(entry)
        return {key: entry[key] for key in ("reassigned", "assignment_cost")}

    def _semantic_options(self) -> dict[str, Any]:
        """Extra arguments of :func:`shc.codebook.reassign` (SCRH's semantic term); none for CRH."""
        return {}

    def on_epoch_end(self, model: nn.Module, train_set: Any, epoch: int, precision: str = "auto"
                     ) -> dict[str, float] | None:
        """``fit``'s epoch hook: on scheduled epochs, encode ``train_set`` (in dataset order, with the model in
        eval mode, through :func:`shc.train.predict` in the run's ``precision``) and :meth:`reassign`.

        ``train_set`` is the training split as ``fit`` trains on it, so its codes are those of augmented images
        (on the composites a shift of at most one pixel), as the codes of a training epoch are ("every training
        sample's code", CRH's reassignment); the augmentation draws from the global random state, which
        ``last.pt`` saves after this hook, so a resumed run stays bit-identical."""
        if not self.reassigns_after(epoch):
            return None
        import torch.distributed as dist

        from shc.train import predict

        entry = self.reassign(predict(model, train_set, batch_size=512, precision=precision), epoch)
        if dist.is_available() and dist.is_initialized():  # every rank trains towards rank 0's centers
            dist.broadcast(self.assignment, src=0)
        return entry

    def get_extra_state(self) -> dict[str, Any]:
        return {"reassignments": [dict(entry) for entry in self.reassignments]}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        self.reassignments = [dict(entry) for entry in state["reassignments"]]

    def learned_targets(self) -> np.ndarray:
        """(C, K) int8: the centers the classes hold now (the final assignment after training), the targets whose
        reachability stage 3 measures (:mod:`shc.reachability`)."""
        return self.centers().cpu().numpy().astype(np.int8)

    def artifacts(self) -> dict[str, Any]:
        """Files for the run's stage folder: ``codebook.npy`` (H, M, d), ``class_centers.npy`` (C, K), the
        final centers, and ``reassignments.json`` (the log, one entry per reassignment)."""
        return {"codebook.npy": self.codebooks.cpu().numpy().astype(np.int8),
                "class_centers.npy": self.learned_targets(),
                "reassignments.json": {"assignment": self.assignment_method, "heads": self.num_heads,
                                       "head_bits": self.codebooks.shape[2], "log": self.reassignments}}

    def extra_repr(self) -> str:
        return (f"num_classes={self.num_classes}, num_bits={self.num_bits}, heads={self.num_heads}, "
                f"codebook={tuple(self.codebooks.shape[1:])}, scale={self.scale:.4g}, margin={self.margin}, "
                f"quantization_weight={self.quantization_weight}, assignment={self.assignment_method!r}")


@register_loss("scrh")
class SemanticCRHLoss(CRHLoss):
    """SCRH, ours (docs/baselines.md, "SCRH: semantic targets that learn"): CRH whose targets start at semantic
    centers and move by a reassignment that also keeps their semantic fit. Its version is CRH's (2: the exact costs of
    Eq. 7, which its reassignment adds to).

    - **Start (Eq. S1).** Each head's codebook holds the distinct sub-codes of the semantic ``centers`` (stage 2's
      shc-ls centers of the stage-1 S, or any (C, K) +-1 set), topped up with distinct uniform draws to
      ``M = codebook_multiple * C``; every class starts on its own sub-codes where the classes' sub-codes differ
      (:func:`shc.codebook.semantic_codebook`), so the first targets are the semantic centers.
    - **Loss.** CRH's margin cosine cross-entropy and quantisation term (Eqs. 1-4), unchanged.
    - **Reassignment (Eq. S2).** CRH's schedule and greedy pass, where giving class c candidate z_j of head g costs
      Eq. 7's mean squared distance to the class's sub-codes plus ``semantic_weight * d * mean_{c' != c}
      (S_cc' - <h_c, h_c'> / K)^2``, the per-class SHC fit (paper Eq. 14, the first term of Eq. 22) of the center it makes
      (:func:`shc.codebook.semantic_greedy_assignment`). ``semantic_weight = 0`` is CRH started at the semantic
      centers.

    Parameters as :class:`CRHLoss`, plus ``centers`` (C, K) the starting centers, ``similarity`` (C, C) the S whose
    fit the reassignment keeps (None: the starting centers' own ``H H^T / K``) and ``semantic_weight`` (1.0).
    The reassignment is greedy (``assignment="hungarian"`` is refused: the semantic term couples the classes).
    """

    def __init__(self, num_classes: int, num_bits: int, train_labels: Any, centers: Any, similarity: Any = None,
                 seed: int = 0, semantic_weight: float = 1.0, assignment: str = "greedy", **crh: Any) -> None:
        from shc.codebook import semantic_codebook

        if assignment != "greedy":
            raise ValueError(f"SCRH's reassignment is greedy (its semantic term couples the classes); got assignment="
                             f"{assignment!r}. Use assignment='greedy', or CRH for the Hungarian one.")
        super().__init__(num_classes, num_bits, train_labels, seed=seed, assignment=assignment, **crh)
        start = np.asarray(_check_codes_array(centers, self.num_classes, self.num_bits), dtype=np.int8)
        if similarity is None:
            similarity = start.astype(np.float64) @ start.T / self.num_bits
        similarity = validate_similarity(similarity, num_classes=self.num_classes)  # stage 1's S, as stage 2's
        self.semantic_weight = _positive_number(semantic_weight, "semantic_weight", allow_zero=True)
        self.register_buffer("similarity", torch.from_numpy(similarity), persistent=False)
        codebooks, assignment_now = semantic_codebook(start, self.num_heads, self.codebooks.shape[1],
                                                      np.random.default_rng([self.seed, 1]))
        self.codebooks.copy_(torch.from_numpy(codebooks.astype(np.float32)))
        self.assignment.copy_(torch.from_numpy(assignment_now))
        self.start_fit = self.semantic_fit()  # of the starting centers: what the log's entries compare with

    def _semantic_options(self) -> dict[str, Any]:
        return {"similarity": self.similarity.cpu().numpy(), "semantic_weight": self.semantic_weight,
                "current": self.assignment.cpu().numpy()}

    def semantic_fit(self) -> float:
        """``mean_{c != c'} (S_cc' - <h_c, h_c'> / K)^2`` of the current centers: the SHC fit the reassignment keeps,
        over the off-diagonal entries (stage 2's ``s_loss`` averages over all C^2 entries, the diagonal's zeros
        included: ``s_loss = semantic_fit * (C - 1) / C``)."""
        centers = self.centers().double().cpu()
        gram = (centers @ centers.T / self.num_bits).numpy()
        off = ~np.eye(self.num_classes, dtype=bool)
        return float(((self.similarity.cpu().numpy() - gram) ** 2)[off].mean())

    @torch.no_grad()
    def reassign(self, codes: torch.Tensor | np.ndarray, epoch: int) -> dict[str, float]:
        entry = super().reassign(codes, epoch)
        self.reassignments[-1]["semantic_fit"] = entry["semantic_fit"] = self.semantic_fit()
        return entry

    def artifacts(self) -> dict[str, Any]:
        """CRH's files; ``reassignments.json`` also holds ``start_semantic_fit``, the fit of the starting centers."""
        files = super().artifacts()
        files["reassignments.json"] = {**files["reassignments.json"], "semantic_weight": self.semantic_weight,
                                       "start_semantic_fit": self.start_fit}
        return files

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, semantic_weight={self.semantic_weight}"


def _check_codes_array(centers: Any, num_classes: int, num_bits: int) -> np.ndarray:
    from shc.validation import sign_codes

    codes = sign_codes(centers, "centers")
    if codes.shape != (num_classes, num_bits):
        raise ValueError(f"centers must be ({num_classes}, {num_bits}) +-1 (one per class), got {codes.shape}.")
    return codes
