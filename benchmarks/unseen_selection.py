"""What did the held-out images in model selection change? The two selection rules on the same training runs.

Under the unseen-class protocol stage 3 selects its epoch by the validation queries' tie-aware mAP@ALL. Before
2026-12-02 it ranked them against the whole database, whose held-out images then entered the ranking as negatives;
since then it ranks them against the database's seen part (``shc.stages.selection_rule``), so that no held-out class
meets a training stage. This trains each run of the grid once, as stage 3 does (its stages 1-2 from the run folder,
computed when missing), and at every evaluated epoch scores the validation queries both ways and the query set's
pairings. It prints, per run, the epoch each rule selects and the query numbers at each; then, per method, the mean
over seeds of the change from the old rule to the new one. The networks trained here are not stored as runs.

Run: ``python benchmarks/unseen_selection.py --preset standard-unseen --methods csq shc crh --bits 16``.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from shc.evaluation import PRIMARY_METRIC, selection_scores, unseen_scores
from shc.presets import get_preset

NEW, OLD = "val against the seen database", "val against the whole database"
QUERY_KEYS = ("seen@seen_tie_aware_mAP@ALL", "unseen@all_tie_aware_mAP@ALL", "unseen@unseen_tie_aware_mAP@ALL")


def selected_epoch(rows: list[dict[str, float]], key: str) -> int:
    """The epoch whose ``key`` is highest, the earliest of a tie (as ``shc.train.fit`` selects)."""
    scored = [row for row in rows if key in row and np.isfinite(row[key])]
    best = max(row[key] for row in scored)
    return int(next(row["epoch"] for row in scored if row[key] == best))


def train_both_ways(config) -> list[dict[str, float]]:
    """Stage 3 of ``config`` trained here, scored at each evaluated epoch by both rules and on the query set; the
    history rows (``epoch``, :data:`NEW`, :data:`OLD` and the query pairings)."""
    import tempfile

    from shc.methods import build_criterion
    from shc.models import build_hashing_network
    from shc.pipeline import run_centers, run_pretraining
    from shc.runs import load_data, method_spec
    from shc.stages import Similarity, encode
    from shc.stages.definitions import _start_weights, _train_config
    from shc.train import fit, set_seed

    data, spec = load_data(config), method_spec(config)
    centers = run_centers(config)
    start = _start_weights(config, {"stage0": run_pretraining(config)})  # a pretrained regime's backbone, as stage 3
    selected = data.selection_mask()  # the images stage 3's selection ranks against (DatasetSplits.selection_database)
    set_seed(config.seed)
    model = build_hashing_network(config.backbone, config.bits, pretrained=config.pretrained, weights=start,
                                  **dict(spec.head))
    similarity = Similarity(config).load() if spec.needs_similarity else None
    criterion = build_criterion(config.method, data.num_classes, config.bits, data.train.labels, centers=centers,
                                seed=config.seed, similarity=similarity, **dict(config.method_options))

    def both(network) -> dict[str, float]:
        val = encode(network, data.val, config)
        database = encode(network, data.database, config)
        query = encode(network, data.query, config)
        codes = {"query_codes": query, "query_labels": data.query.labels, "database_codes": database,
                 "database_labels": data.database.labels, "seen_classes": np.array(data.num_classes)}
        return {PRIMARY_METRIC: selection_scores(val, data.val.labels, database[selected],
                                                 data.database.labels[selected])[PRIMARY_METRIC],
                OLD: selection_scores(val, data.val.labels, database, data.database.labels)[PRIMARY_METRIC],
                **{key: value for key, value in unseen_scores(codes).items() if key in QUERY_KEYS}}

    with tempfile.TemporaryDirectory() as folder:
        history = fit(model, criterion, data.train, _train_config(config, config.epochs, config.lr, PRIMARY_METRIC),
                      folder, evaluate=both, progress=False)
    return [{**row, NEW: row[PRIMARY_METRIC]} for row in history.rows if PRIMARY_METRIC in row]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="standard-unseen")
    parser.add_argument("--methods", nargs="+", default=["csq", "shc", "crh"])
    parser.add_argument("--bits", nargs="+", type=int, default=[16])
    parser.add_argument("--seeds", nargs="+", type=int, default=None)
    parser.add_argument("--run-dir", default=None, help="where stages 1-2 are read or computed (default runs/<preset>)")
    args = parser.parse_args(argv)
    import pandas as pd

    from shc.executors import set_threads

    set_threads(1)  # as every stage computes (docs/scale-out.md)
    configs = get_preset(args.preset).configs(methods=args.methods, bits=args.bits, seeds=args.seeds,
                                              run_dir=args.run_dir or f"runs/{args.preset}")
    if not configs[0].dataset_options.get("unseen_classes"):
        parser.error(f"preset {args.preset!r} holds no class out; give an unseen one, e.g. standard-unseen.")
    rows = []
    for config in configs:
        history = train_both_ways(config)
        by_epoch = {row["epoch"]: row for row in history}
        old, new = selected_epoch(history, OLD), selected_epoch(history, NEW)
        row = {"method": config.method, "bits": config.bits, "seed": config.seed, "epoch old": old, "epoch new": new}
        for key in QUERY_KEYS:
            row[f"{key.split('_')[0]} old"] = by_epoch[old][key]
            row[f"{key.split('_')[0]} new"] = by_epoch[new][key]
        rows.append(row)
        print(f"{config.method} {config.bits} bits seed {config.seed}: selected epoch {old} -> {new}", flush=True)
    table = pd.DataFrame(rows)
    print(f"## the epoch each rule selects ({OLD} -> {NEW}) and the query set's tie-aware mAP@ALL there, "
          f"preset {args.preset!r}")
    print(table.to_string(index=False, float_format=lambda value: f"{value:.4f}"))
    pairings = [key.split("_")[0] for key in QUERY_KEYS]
    change = pd.DataFrame({"method": table["method"], "bits": table["bits"], "moved": table["epoch old"] !=
                           table["epoch new"], **{p: table[f"{p} new"] - table[f"{p} old"] for p in pairings}})
    summary = change.groupby(["method", "bits"], sort=False).agg(
        runs=("moved", "size"), moved=("moved", "sum"), **{f"{p} change": (p, "mean") for p in pairings})
    print("## per method: runs whose selected epoch moved, and the mean change of each pairing (new - old)")
    print(summary.reset_index().to_string(index=False, float_format=lambda value: f"{value:+.4f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
