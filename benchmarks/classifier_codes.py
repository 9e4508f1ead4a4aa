"""The classifier-code baseline of a preset's center methods, without any hashing network (issue 37).

Sablayrolles et al.'s trivial solution: stage 1's classifier (the one SHC's S comes from, selected on the validation
split) labels every query and database image, and the image gets the center of its predicted class (``top1``) or
``sign(sum_c p_c h_c)`` (``soft``) of each center method (:class:`shc.stages.ClassifierCodes`). Stages 1 and 2 and
the baseline are computed where missing and cached under ``--run-dir`` (the preset's run folder by default, so they
are the grid's own); no stage 3 is trained. Prints, per rule, the tie-aware mAP@ALL mean ± std over seeds (and the
unseen-class pairings under the protocol) and the stage-1 classifier's validation accuracy per seed.

Run: ``python benchmarks/classifier_codes.py --preset standard [--methods random csq mds shc shc-ls] [--bits 16 32 64]
[--seeds 0 1 2] [--run-dir runs/standard]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from shc.evaluation import PAIRINGS
from shc.pipeline import run_classifier_codes, summarize
from shc.methods import get_method
from shc.presets import get_preset
from shc.stages import Similarity, classifier_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="standard")
    parser.add_argument("--methods", nargs="+", default=None,
                        help="center methods (default: those of the preset's grid)")
    parser.add_argument("--bits", nargs="+", type=int, default=None)
    parser.add_argument("--seeds", nargs="+", type=int, default=None)
    parser.add_argument("--rules", nargs="+", default=["top1", "soft"], choices=["top1", "soft"])
    parser.add_argument("--run-dir", default=None, help="default runs/<preset>")
    args = parser.parse_args(argv)
    preset = get_preset(args.preset)
    methods = args.methods or [method for method in preset.methods if get_method(method).centers is not None]
    configs = preset.configs(methods=methods, bits=args.bits, seeds=args.seeds,
                             run_dir=args.run_dir or f"runs/{args.preset}")
    started = time.perf_counter()
    rows = run_classifier_codes(configs, args.rules)
    print(f"classifier-code baseline of preset {args.preset!r} ({len(rows)} code sets, {time.perf_counter() - started:.0f} s"
          f" wall): no hashing network; stage 1's classifier gives each image a center")
    metrics = ["tie_aware_mAP@ALL"] + [key for key in (f"{pairing}_tie_aware_mAP@ALL" for pairing in PAIRINGS)
                                       if key in rows[0]]
    for metric in metrics:
        print(f"\n## {metric} (mean ± std over seeds)\n{summarize(rows, metric).to_string()}")
    print("\n## stage-1 classifier (selected on the validation split)")
    for seed in sorted({config.seed for config in configs}):
        config = next(c for c in configs if c.seed == seed)
        record = json.loads((Similarity(classifier_config(config)).directory / "metrics.json").read_text())
        print(f"seed {seed}: validation accuracy {record['val_accuracy']:.3f}, {config.classifier_epochs} epochs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
