"""How semantic are the targets a network ended with? The fit of each run's final class targets to the stage-1 S.

For every finished run of the preset's grid (methods and code lengths as given, every seed) it reads the targets the
network trained towards at its end (``codes.npz``'s ``target_codes``: the fixed centers, or the learned class codes
of CRH and SCRH) and prints ``mean_{c != c'} (S_cc' - <h_c, h_c'> / q)^2`` against the data-dependent S of the seed
(the SHC fit per off-diagonal entry; lower is more semantic), beside the same for uniformly random centers (the mean
of 20 draws) and, for SCRH, its log's fit after its first reassignment. Nothing is trained; runs that have not
finished are listed.

Run: ``python benchmarks/target_fit.py --preset standard --methods crh scrh scrh-start shc-ls csq --bits 16``.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from shc.presets import get_preset
from shc.stages import Hashing, Similarity


def fit(similarity: np.ndarray, targets: np.ndarray) -> float:
    """``mean_{c != c'} (S_cc' - <h_c, h_c'> / q)^2``."""
    targets = np.asarray(targets, dtype=np.float64)
    off = ~np.eye(len(similarity), dtype=bool)
    return float(np.mean(((similarity - targets @ targets.T / targets.shape[1]) ** 2)[off]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="standard")
    parser.add_argument("--methods", nargs="+", required=True)
    parser.add_argument("--bits", nargs="+", type=int, default=[16])
    parser.add_argument("--run-dir", default=None, help="default runs/<preset>")
    args = parser.parse_args(argv)
    configs = get_preset(args.preset).configs(methods=args.methods, bits=args.bits,
                                              run_dir=args.run_dir or f"runs/{args.preset}")
    print(f"fit of the final targets to the data-dependent S (mean over c != c' of (S - H H^T / q)^2; lower is more "
          f"semantic), preset {args.preset!r}")
    print(f"{'method':<12} {'bits':>4} {'seed':>4} {'final targets':>13} {'first reassignment':>18} {'random centers':>14}")
    missing = []
    for config in configs:
        stage = Hashing(config)
        if stage.cached() is None:
            missing.append(f"{config.method} {config.bits} bits seed {config.seed}")
            continue
        S = Similarity(config.replace(method="shc", similarity="logits")).load()
        targets = stage.codes().get("target_codes")
        if targets is None:
            missing.append(f"{config.method} {config.bits} bits seed {config.seed} (no targets: majority codes)")
            continue
        log = stage.directory / "reassignments.json"
        first = json.loads(log.read_text())["log"][0].get("semantic_fit") if log.exists() else None
        rng = np.random.default_rng(0)
        chance = np.mean([fit(S, rng.choice([-1, 1], targets.shape)) for _ in range(20)])
        print(f"{config.method:<12} {config.bits:>4} {config.seed:>4} {fit(S, targets):>13.4f} "
              f"{'-' if first is None else f'{first:.4f}':>18} {chance:>14.4f}")
    if missing:
        print(f"not finished or without targets: {'; '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
