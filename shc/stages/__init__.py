"""The stages of a run, each one object (issue 36): :class:`Stage` (:mod:`shc.stages.base`) knows its identity,
folder, lock and cache, loads, computes and saves; the five stages of a run and the layout they make are
:mod:`shc.stages.definitions`::

    Pretraining (stage0) -> Similarity (stage1) -> Centers (stage2) -> Hashing (stage3) -> Evaluation

``Stage(config).run()`` gives a stage's artifacts, cached or computed (its parents first); :mod:`shc.pipeline`
runs them top to bottom, one line each. To add a stage: one subclass registered in :data:`STAGES` and one entry in
:data:`shc.pipeline.PIPELINE` (docs/architecture.md).
"""

from shc.stages.base import Stage, identity_key, is_main, read_identity
from shc.stages.definitions import (
    ENCODER_FILE,
    ENCODER_FORMAT,
    CLASSIFIER_RULES,
    STAGES,
    Centers,
    ClassifierCodes,
    Evaluation,
    Hashing,
    Pretraining,
    Similarity,
    artifact,
    classifier_codes,
    classifier_config,
    data_identity,
    encode,
    paired_seeds,
    selection_rule,
    stage_directories,
    stage_identities,
    write_encoder_record,
)

__all__ = ["ENCODER_FILE", "ENCODER_FORMAT", "STAGES", "Centers", "Evaluation", "Hashing", "Pretraining", "Similarity",
           "Stage", "artifact", "data_identity", "encode", "identity_key", "is_main", "paired_seeds", "read_identity",
           "selection_rule", "stage_directories", "stage_identities", "write_encoder_record"]
