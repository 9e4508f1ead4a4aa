"""Writes ``stage_folders_before_issue36.json``: the stage folders (names and ``config.json`` identities) that the
code *before* issue 36's Stage refactor gave a set of configs, so ``tests/test_stages.py`` can check that every
cached run folder built before the change is found and reused after it.

It was run once, at commit af07af9 (the last commit before the refactor)::

    git worktree add /tmp/before af07af9 && cd /tmp/before && PYTHONPATH=. python <this file> <out.json>

Rerunning it on a later commit proves nothing: it must run on the code whose folders are to be kept.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from shc._io import jsonable
from shc.runs import RunConfig, stage_directories, stage_identities

TINY = {"num_classes": 20, "train_per_class": 20, "val_per_class": 5, "query_per_class": 5, "database_per_class": 20}
CASES = [
    {"method": "shc", "bits": 16, "epochs": 2, "classifier_epochs": 2, "eval_every": 1},
    {"method": "shc", "bits": 32, "similarity": "text"},
    {"method": "shc", "bits": 16, "similarity": "labels", "seed": 1},
    {"method": "shc-ls", "bits": 16, "center_options": {"max_iterations": 5}},
    {"method": "mds", "bits": 16, "pretrain": "items", "pretrain_epochs": 1},
    {"method": "shc", "bits": 16, "pretrain": "items", "pretrain_epochs": 1, "backbone": "small_cnn_mlp"},
    {"method": "csq", "bits": 64, "lr": 3e-3},
    {"method": "random", "bits": 16},
    {"method": "greedyhash", "bits": 16, "pretrain": "items", "pretrain_epochs": 1},
    {"method": "crh", "bits": 16, "method_options": {"heads": 2}},
    {"method": "dpsh", "bits": 32, "optimizer": "adam"},
]


def main(out: str) -> None:
    records = []
    for case in CASES:
        config = RunConfig(dataset="digits-composite", dataset_options=TINY, run_dir="RUN", **case)
        fields = {field.name: getattr(config, field.name) for field in dataclasses.fields(config)}
        records.append({
            "config": jsonable({key: value for key, value in fields.items() if key in {"dataset", "dataset_options",
                                                                                       "run_dir", *case}}),
            "folders": {stage: str(path) for stage, path in stage_directories(config).items()},
            "identities": jsonable(stage_identities(config)),
        })
    with open(out, "w") as handle:
        json.dump(records, handle, indent=1)
        handle.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
