"""The unseen-class protocol: a seeded part of the classes held out of every training stage.

Sablayrolles et al. ("How should we evaluate supervised hashing?", ICASSP 2017, arXiv 1609.06753) show that
retrieving the classes a network was trained on is classification in disguise, and propose to hold classes out of
training. :func:`hold_out_classes` does so for any dataset's splits (the dataset option ``unseen_classes`` of
:func:`shc.data.load_dataset`):

- a seeded draw of ``unseen_classes`` classes (a count, or a fraction of C) is **held out**; the others are seen;
- the training and validation splits keep only images of seen classes (so stage 1's classifier, S, stage 2's
  centers, stage 3's network and its model selection never meet a held-out class);
- the query and database splits keep every image, of both kinds; stage 3's model selection ranks the validation
  queries against the database's seen part (``DatasetSplits.selection_database``);
- labels are renumbered: seen classes ``0 .. C_s - 1`` and held-out ones ``C_s .. C - 1`` (each in its original
  order). ``num_classes``, ``class_names`` and ``coarse_labels`` describe the **seen** classes only, which is all a
  training stage may know; ``unseen_names`` names the held-out ones (label ``C_s + i`` is ``unseen_names[i]``) and
  ``unseen_coarse_labels`` gives their coarse classes (``all_class_names``, ``all_coarse_labels``: every label).

A label below ``num_classes`` is seen, one at or above it held out: :func:`shc.evaluation.pairing_masks` turns that
into the three evaluations of DSH_Analysis (docs/evaluation.md): seen@seen, unseen@unseen and unseen@all.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np

from shc.data.splits import DatasetSplits, HashingSplit, _resolve_size

__all__ = ["hold_out_classes", "held_out_classes"]
#: Salt of the held-out draw, so it is independent of every other draw of the seed.
_HOLD_OUT_SALT = 0x5EE7


def held_out_classes(num_classes: int, unseen_classes: int | float, seed: int) -> np.ndarray:
    """The sorted original ids of the classes held out for ``seed``: ``unseen_classes`` of them (a count, or a
    fraction of ``num_classes``, rounded), at least one, and leaving at least two seen classes."""
    if isinstance(unseen_classes, (int, np.integer)) and not isinstance(unseen_classes, bool) and unseen_classes < 0:
        raise ValueError(f"unseen_classes={unseen_classes} is negative; give a count of classes in [1, {num_classes - 2}] "
                         "or a fraction of them (e.g. 0.25).")
    count = _resolve_size(unseen_classes, num_classes, "unseen_classes")
    if not 1 <= count <= num_classes - 2:
        raise ValueError(f"unseen_classes={unseen_classes!r} holds out {count} of {num_classes} classes; hold out at "
                         f"least 1 and leave at least 2 seen (e.g. unseen_classes=0.25).")
    rng = np.random.default_rng([int(seed), _HOLD_OUT_SALT])
    return np.sort(rng.choice(num_classes, size=count, replace=False))


def _relabelled(split: HashingSplit, keep: np.ndarray, new_label: np.ndarray) -> HashingSplit:
    """The samples of ``split`` whose class is in ``keep``, with labels mapped through ``new_label``."""
    kept = split.subset(np.flatnonzero(keep[split.labels]))
    kept = copy.copy(kept)
    kept.labels = new_label[kept.labels]
    return kept


def hold_out_classes(splits: DatasetSplits, unseen_classes: int | float, seed: int) -> DatasetSplits:
    """``splits`` under the unseen-class protocol (module docstring): held-out classes leave train and val, stay in
    query and database, and are renumbered after the seen ones."""
    if splits.multi_label:
        raise ValueError(f"unseen_classes needs one class per image; {splits.name!r} is multi-label. Drop the option.")
    if splits.unseen_names:
        raise ValueError(f"{splits.name!r} already holds classes out; apply unseen_classes once.")
    num_classes = splits.num_classes
    unseen = held_out_classes(num_classes, unseen_classes, seed)
    is_unseen = np.zeros(num_classes, bool)
    is_unseen[unseen] = True
    seen = np.flatnonzero(~is_unseen)
    new_label = np.empty(num_classes, np.int64)
    new_label[seen] = np.arange(len(seen))
    new_label[unseen] = len(seen) + np.arange(len(unseen))
    everything = np.ones(num_classes, bool)
    coarse = None if splits.coarse_labels is None else splits.coarse_labels[seen]
    unseen_coarse = None if splits.coarse_labels is None else splits.coarse_labels[unseen]
    return dataclasses.replace(
        splits,
        train=_relabelled(splits.train, ~is_unseen, new_label),
        val=_relabelled(splits.val, ~is_unseen, new_label),
        query=_relabelled(splits.query, everything, new_label),
        database=_relabelled(splits.database, everything, new_label),
        class_names=[splits.class_names[c] for c in seen],
        num_classes=len(seen),
        coarse_labels=coarse,
        unseen_names=[splits.class_names[c] for c in unseen],
        unseen_coarse_labels=unseen_coarse,
        protocol=f"{splits.protocol}; unseen classes: {len(unseen)} of {num_classes} held out of train and val "
                 f"(seeded), kept in query and database",
    )
