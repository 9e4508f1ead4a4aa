"""Does a result depend on numpy's BLAS kernel? (docs/reliability.md, "numpy's BLAS kernel"; docs/baselines.md,
"CRH's ties and numpy's BLAS kernel").

Computes, in one fresh process per OpenBLAS kernel (``OPENBLAS_CORETYPE``), stage 2's centers (SHC, shc-ls, MDS) of
one S at each code length, and CRH's greedy reassignment of noisy +-1 codes twice: through the class means
(``shc.codebook.assignment_costs``, the costs of CRH's version 1) and as the package computes it now
(``shc.codebook.reassign``, exact costs). Prints one row per result and one column per kernel: the first 12 hex
digits of the SHA-1 of its bytes, and whether the kernels agree::

    python benchmarks/blas_kernels.py --similarity \
        runs/standard-fine/fashion-composite/seed0/stage1-logits-3f57c2b0/similarity.npy
    python benchmarks/blas_kernels.py --kernels Nehalem Haswell   # a seeded random S of 333 classes

Each column names the core OpenBLAS says it ran (``OPENBLAS_VERBOSE=2``): a kernel this CPU cannot run, or a numpy
whose BLAS is not a run-time dispatching OpenBLAS, shows there instead of a silent same-bits claim.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

RESULT = "RESULT "
"""The prefix of a worker's one line of results on stdout."""


def _digest(array) -> str:
    import numpy as np

    return hashlib.sha1(np.ascontiguousarray(array).tobytes()).hexdigest()[:12]


def worker(similarity: str | None, bits: list[int], seed: int) -> dict[str, str]:
    """The digests of every result, computed in this process (whatever kernel its OpenBLAS runs)."""
    import numpy as np

    from shc.centers import run_center_method
    from shc.codebook import assignment_costs, class_mean_codes, greedy_assignment, reassign, sample_codebook

    rng = np.random.default_rng(seed)
    S = np.load(similarity) if similarity else np.corrcoef(rng.standard_normal((333, 40)))
    out = {}
    for method in ("shc", "shc-ls", "mds"):
        for q in bits:
            out[f"stage 2 {method} {q} bits"] = _digest(run_center_method(method, len(S), q, similarity=S,
                                                                          seed=seed)[0])
    # CRH's reassignment, 8 cases: 333 classes of 20 noisy codes of one 16-bit head, 666 candidates (standard-fine's)
    labels, before, now = np.repeat(np.arange(333), 20), [], []
    for case in range(8):
        draw = np.random.default_rng([seed, case])
        codes = np.where(draw.random((len(labels), 16)) < 0.15, -1, 1) * draw.choice([-1, 1], size=(333, 16))[labels]
        codebooks = sample_codebook(1, 666, 16, draw)
        means = assignment_costs(*class_mean_codes(codes, labels, 333), codebooks[0])
        before.append(greedy_assignment(means, np.random.default_rng([seed, case, 1]).permutation(333)))
        chosen, totals = reassign(codes, labels, 333, codebooks, "greedy", np.random.default_rng([seed, case, 1]))
        now.append(np.concatenate([chosen.ravel(), totals.view(np.int64)]))
    out["CRH greedy, costs through the means (version 1)"] = _digest(np.concatenate(before))
    out["CRH reassign, exact costs (version 2)"] = _digest(np.concatenate(now))
    return out


def run_kernel(kernel: str, args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """(the core OpenBLAS reports, the worker's digests) of a fresh process asked to run ``kernel``."""
    env = {**os.environ, "OPENBLAS_CORETYPE": kernel, "OPENBLAS_VERBOSE": "2", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    command = [sys.executable, __file__, "--worker", "--bits", *map(str, args.bits), "--seed", str(args.seed)]
    if args.similarity:
        command += ["--similarity", args.similarity]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise SystemExit(f"the worker for {kernel} failed:\n{done.stderr[-3000:]}")
    core = re.search(r"Core: (\S+)", done.stderr)
    line = next(line for line in done.stdout.splitlines() if line.startswith(RESULT))
    return (core.group(1) if core else "no OpenBLAS core reported"), json.loads(line[len(RESULT):])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", nargs="+", default=["Nehalem", "Haswell", "SkylakeX"],
                        help="OPENBLAS_CORETYPE values, one process each (default: Nehalem Haswell SkylakeX)")
    parser.add_argument("--similarity", help="an S saved as .npy (a stage-1 folder's similarity.npy); default: a "
                                             "seeded random S of 333 classes")
    parser.add_argument("--bits", nargs="+", type=int, default=[16, 32, 64])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.similarity and not Path(args.similarity).is_file():
        parser.error(f"--similarity {args.similarity}: no such file (a stage-1 folder's similarity.npy)")
    if args.worker:
        print(RESULT + json.dumps(worker(args.similarity, args.bits, args.seed)))
        return 0
    runs = [run_kernel(kernel, args) for kernel in args.kernels]
    names = list(runs[0][1])
    width = max(map(len, names))
    heads = [f"{kernel} ({core})" for kernel, (core, _) in zip(args.kernels, runs)]
    print(f"{'result':<{width}}  " + "  ".join(f"{head:<14}" for head in heads) + "  kernels")
    for name in names:
        digests = [result[name] for _, result in runs]
        cells = "  ".join(f"{digest:<{max(14, len(head))}}" for digest, head in zip(digests, heads))
        print(f"{name:<{width}}  {cells}  {'same' if len(set(digests)) == 1 else 'differ'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
