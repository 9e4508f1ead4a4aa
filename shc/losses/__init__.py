"""Training objectives, one ``nn.Module`` per method, registered by name.

The training loop (``shc.train``) treats every method alike: a loss is called as
``loss(outputs, labels, indices) -> scalar tensor`` where

- ``outputs`` are the network's outputs for the batch: continuous codes ``u`` (B, q) for hashing
  networks, logits (B, C) for classifiers;
- ``labels`` are int64 class indices (B,) or float multi-hot rows (B, C);
- ``indices`` are the samples' positions in the dataset (B,), for losses with a memory bank; the
  others ignore them.

Register a new method with :func:`register_loss` and build one with :func:`build_loss`.

The baselines (the nine methods the paper compares against, Sec. 4.3) have one loss per method, each
written from its paper and checked against its official code; ``docs/baselines.md`` lists what we fixed or
chose. All are means over the batch, run in float32 and never loop over samples.

Modules, grouped by what a loss compares the codes with; each imports only ``registry`` among its siblings:

``registry``        :data:`LOSSES`, :func:`register_loss`, :func:`build_loss`, and what more than one family
                    shares: the checks of outputs, labels and options, label and target tensors, the
                    quantisation error, :class:`CodeBank` (the memory bank of DPSH and MDS's pair term)
``center``          ``"center"``: every bit of the code against its class's fixed hash center (CSQ's
                    per-bit cross-entropy plus quantisation, SHC's Eq. 41-43); the loss of every
                    center-loss method, which differ only in their centers
``classification``  ``"cross_entropy"``, ``"greedyhash"``, ``"mds"``, ``"lth"``, ``"orthohash"``: a softmax
                    over the classes, whose scores come from a classifier (logits; GreedyHash's and LTH's
                    linear layer on the codes) or from the code's cosines to one fixed code per class
                    (MDS's centers, OrthoHash's codebook): one term per class, not per bit
``pairwise``        ``"dpsh"``, ``"dtsh"``, ``"hashnet"``, ``"idhn"``: code inner products against the label
                    similarity of pairs (or the order of triplets); no class targets at all
``crh``             ``"crh"``: a cosine softmax like OrthoHash's, but towards centers drawn from a codebook
                    and reassigned between epochs (:mod:`shc.codebook`): the one loss with learned targets,
                    training state beyond its weights and ``fit``'s epoch hook

:data:`LOSSES` lists the names in the order the modules below register them (imported alphabetically):
``center``, ``cross_entropy`` first.
"""

from __future__ import annotations

from shc.losses.center import CenterLoss
from shc.losses.classification import (
    ClassificationLoss,
    GreedyHashLoss,
    LongTailLoss,
    MDSLoss,
    OrthoHashLoss,
    class_balanced_weights,
    class_counts,
)
from shc.losses.crh import CRHLoss, SemanticCRHLoss
from shc.losses.pairwise import IDHN_HARD_TOLERANCE, DPSHLoss, DTSHLoss, HashNetLoss, IDHNLoss
from shc.losses.registry import LOSSES, CodeBank, _label_tensor, build_loss, register_loss

__all__ = [
    "IDHN_HARD_TOLERANCE",
    "LOSSES",
    "CenterLoss",
    "ClassificationLoss",
    "CRHLoss",
    "SemanticCRHLoss",
    "CodeBank",
    "DPSHLoss",
    "DTSHLoss",
    "GreedyHashLoss",
    "HashNetLoss",
    "IDHNLoss",
    "LongTailLoss",
    "MDSLoss",
    "OrthoHashLoss",
    "build_loss",
    "class_balanced_weights",
    "class_counts",
    "register_loss",
]
