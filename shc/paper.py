"""The paper's reported retrieval numbers as data, and its differences beside ours.

``shc/assets/paper_results.csv`` holds Tables 4-6 of the paper (mAP@100, mAP@1000 and mAP@ALL of the nine
baselines and SHC on CIFAR-100, Stanford Cars-A/B and NABirds-A/B at 16/32/64 bits), one row per number with
its table and row named. It is extracted from the paper's LaTeX source by :func:`extract_tables`
(``python -m shc.paper --extract path/to/shc-paper.tex`` rewrites it; a test re-extracts it from
``../shared/paper`` when that folder is there), never typed in.

:func:`paper_differences` gives the paper's SHC-minus-best-baseline and SHC-minus-CSQ/MDS differences;
:func:`our_differences` the same differences from a preset's runs, paired over seeds with 95% t-intervals.
``python -m shc.results --preset NAME --paper`` prints both side by side.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MISSED_TARGETS", "PAPER_BASELINES", "PAPER_RESULTS", "extract_tables", "load_paper_results",
           "our_differences",
           "paper_baselines_sentence", "paper_differences", "side_by_side"]

PAPER_RESULTS = Path(__file__).parent / "assets" / "paper_results.csv"
#: Table 4-6 rows in the paper's order (our method names).
PAPER_BASELINES = ("dpsh", "dtsh", "hashnet", "greedyhash", "idhn", "csq", "mds", "lth", "orthohash")
_TABLES = {"tab:map@100": ("Table 4", "mAP@100"), "tab:map@1000": ("Table 5", "mAP@1000"),
           "tab:map@ALL": ("Table 6", "mAP@ALL")}
_DATASETS = ("cifar100", "stanford-cars-a", "stanford-cars-b", "nabirds-a", "nabirds-b")
_BITS = (16, 32, 64)
_ROW_NAMES = {"dpsh": "DPSH", "dtsh": "DTSH", "hashnet": "HashNet", "greedyhash": "GreedyHash", "idhn": "IDHN",
              "csq": "CSQ", "mds": "MDS", "lth": "LTH", "orthohash": "OrthoHash", "shc": "SHC"}


def paper_baselines_sentence(methods: Sequence[str]) -> str:
    """Which of the paper's nine baselines (:data:`PAPER_BASELINES`, Tables 4-6) ``methods`` holds, in the
    paper's order, and which it leaves out: a comparison page says so rather than promising all nine."""
    from shc.methods import get_method

    for name in methods:
        get_method(name)
    run = [name for name in PAPER_BASELINES if name in methods]
    left = [name for name in PAPER_BASELINES if name not in methods]
    if not left:
        return f"This page runs all {len(PAPER_BASELINES)} of the paper's baselines."
    if not run:
        return f"This page runs none of the paper's {len(PAPER_BASELINES)} baselines."
    return (f"This page runs {len(run)} of the paper's {len(PAPER_BASELINES)} baselines ({', '.join(run)}); it leaves "
            f"out {', '.join(left)}.")


def extract_tables(tex: str) -> pd.DataFrame:
    """Tables 4-6 from the paper's LaTeX source: ``table, label, metric, row, method, dataset, bits, value``.

    Each table is found by its ``\\label``; a data row is a line whose first cell names a method and whose other
    15 cells are numbers (``\\textbf``, ``\\underline`` and braces are formatting, removed).
    """
    rows = []
    for label, (table, metric) in _TABLES.items():
        start = tex.find(f"\\label{{{label}}}")
        if start < 0:
            raise ValueError(f"the LaTeX source has no \\label{{{label}}} ({table}); is it the SHC paper?")
        body = tex[start:tex.index("\\end{tabular}", start)]
        for line in body.splitlines():
            cells = [re.sub(r"\\(textbf|underline)\s*|[{}]|\\\\.*$", "", cell).strip() for cell in line.split("&")]
            method = next((m for m, name in _ROW_NAMES.items() if cells[0] == name), None)
            if method is None or len(cells) != 1 + len(_DATASETS) * len(_BITS):
                continue
            values = [float(cell) for cell in cells[1:]]
            for i, value in enumerate(values):
                rows.append({"table": table, "label": label, "metric": metric, "row": cells[0], "method": method,
                             "dataset": _DATASETS[i // len(_BITS)], "bits": _BITS[i % len(_BITS)], "value": value})
        found = {row["method"] for row in rows if row["table"] == table}
        if found != set(_ROW_NAMES):
            raise ValueError(f"{table}: found rows {sorted(found)}, expected {sorted(_ROW_NAMES)}.")
    return pd.DataFrame(rows)


def load_paper_results() -> pd.DataFrame:
    """The extracted tables (:data:`PAPER_RESULTS`)."""
    return pd.read_csv(PAPER_RESULTS)


def paper_differences(metric: str = "mAP@100") -> pd.DataFrame:
    """Per paper dataset and code length: SHC, the best of the nine baselines (and which), SHC minus it, SHC minus
    CSQ and SHC minus MDS, as the paper reports them (one run each: no interval)."""
    table = load_paper_results()
    table = table[table["metric"] == metric]
    if table.empty:
        raise ValueError(f"the paper reports no {metric!r}; choose mAP@100, mAP@1000 or mAP@ALL.")
    wide = table.pivot_table(index=["dataset", "bits"], columns="method", values="value").reindex(
        [(d, q) for d in _DATASETS for q in _BITS])
    best = wide[list(PAPER_BASELINES)].idxmax(axis=1)
    return pd.DataFrame({
        "source": "paper", "dataset": [d for d, _ in wide.index], "bits": [q for _, q in wide.index],
        "shc": wide["shc"].to_numpy(), "best baseline": best.to_numpy(),
        "shc - best": (wide["shc"] - wide[list(PAPER_BASELINES)].max(axis=1)).to_numpy(),
        "shc - csq": (wide["shc"] - wide["csq"]).to_numpy(), "shc - mds": (wide["shc"] - wide["mds"]).to_numpy()})


def our_differences(rows: pd.DataFrame, metric: str, source: str, baselines: Sequence[str] = PAPER_BASELINES,
                    confidence: float = 0.95) -> pd.DataFrame:
    """The same differences from our runs (``rows``: :func:`shc.results.result_rows`), paired over seeds.

    The best baseline is the one of ``baselines`` with the highest mean at that length among those in ``rows``;
    each difference is the mean paired difference with its ``confidence`` t-interval (``low``, ``high``).
    """
    from shc.stats import paired_by_seed, summary_frame

    out: list[dict[str, Any]] = []
    for (dataset, bits), _ in rows.groupby(["dataset", "bits"], sort=True):
        summary, per_seed = summary_frame(rows[rows["dataset"] == dataset], [metric], method="method")  # per dataset
        here = summary[(summary["bits"] == bits)].set_index("method")["mean"]
        present = [b for b in baselines if b in here.index]
        if "shc" not in here.index or not present:
            continue
        best = max(present, key=lambda b: here[b])
        record: dict[str, Any] = {"source": source, "dataset": dataset, "bits": int(bits), "shc": float(here["shc"]),
                                  "best baseline": best}
        for name, other in (("shc - best", best), ("shc - csq", "csq"), ("shc - mds", "mds")):
            if other not in here.index:
                record[name] = np.nan
                continue
            interval = paired_by_seed(per_seed, metric, bits, "shc", other, confidence)
            record[name], record[f"{name} low"], record[f"{name} high"] = interval.mean, interval.low, interval.high
        record[MISSED_TARGETS] = _missed_targets(rows[(rows["dataset"] == dataset) & (rows["bits"] == bits)],
                                                 ["shc", best, "csq", "mds"])
        out.append(record)
    return pd.DataFrame(out)


#: The column of :func:`our_differences` that names the compared methods whose networks missed their targets.
MISSED_TARGETS = "missed targets"


def _missed_targets(rows: pd.DataFrame, methods: Sequence[str]) -> str:
    """The ``methods`` (of one dataset and code length) whose mean training center hit rate is below
    :data:`shc.reachability.REACHED`, ``", "``-joined; "none" when all reached theirs (the word the page shows, so
    the saved table holds it too); "not recorded" without the record. A difference involving one of them compares
    what the networks could fit, not the targets (a reader audit of ``standard-fine``'s page 06, issue 38: its 64-bit
    rows sat beside the paper's without it)."""
    from shc.findings.runs import missed_targets

    if "train_center_hit_rate" not in rows or rows["train_center_hit_rate"].isna().all():
        return "not recorded"
    short = {name for rates in missed_targets(rows, method="method").values() for name in rates.index}
    return ", ".join(m for m in dict.fromkeys(methods) if m in short) or "none"


def side_by_side(rows: pd.DataFrame, name: str, metric: str = "mAP@100") -> list[pd.DataFrame]:
    """The paper's Table 4 differences (:func:`paper_differences`), then ours from ``rows`` under both rankings
    (tie-aware and ties by index: :func:`our_differences`), each labelled ``ours: {name} (...)``: the frames that
    :func:`comparison_markdown` shows and page 06 saves."""
    frames = [paper_differences(metric)]
    for ours, ranking in ((f"tie_aware_{metric}", "tie-aware"), (metric, "ties by index")):
        frames.append(our_differences(rows, ours, f"ours: {name} ({ranking})"))
    return frames


def comparison_markdown(frames: Sequence[pd.DataFrame], digits: int = 3) -> str:
    """The paper's and our differences as one Markdown table (intervals in brackets where there are seeds)."""
    from shc.stats import signed_interval, signed_number

    def cell(row: pd.Series, name: str) -> str:  # enough decimals to show each number's sign (no "+0.000")
        value = row.get(name, np.nan)
        if not np.isfinite(value):
            return "-"
        low, high = row.get(f"{name} low", np.nan), row.get(f"{name} high", np.nan)
        if np.isfinite(low) and np.isfinite(high):
            return signed_interval(value, low, high, digits)
        return signed_number(value, digits)

    from shc.reachability import REACHED

    missed = any(MISSED_TARGETS in frame for frame in frames)  # ours record reachability; the paper's rows do not

    def caveat(row: pd.Series) -> str:
        value = row.get(MISSED_TARGETS, "-")
        return f" {value if isinstance(value, str) and value else '-'} |"  # the paper's rows: no record

    lines = ["| source | dataset | bits | SHC | best baseline | SHC − best | SHC − CSQ | SHC − MDS |"
             + (f" below the {REACHED:g} hit rate |" if missed else ""),
             "|---|---|---|---|---|---|---|---|" + ("---|" * missed)]
    for frame in frames:
        for _, row in frame.iterrows():
            lines.append(f"| {row['source']} | {row['dataset']} | {row['bits']} | {row['shc']:.{digits + 1}f} | "
                         f"{row['best baseline']} | {cell(row, 'shc - best')} | {cell(row, 'shc - csq')} | "
                         f"{cell(row, 'shc - mds')} |" + (caveat(row) if missed else ""))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m shc.paper --extract TEX``: rewrite :data:`PAPER_RESULTS` from the paper's LaTeX source."""
    from shc.cli_common import run_cli

    return run_cli(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    import argparse

    from shc._io import write_text

    parser = argparse.ArgumentParser(prog="python -m shc.paper", description=main.__doc__)
    parser.add_argument("--extract", required=True, metavar="TEX", help="the paper's LaTeX source (shc-paper.tex)")
    args = parser.parse_args(argv)
    tex = Path(args.extract)
    if not tex.is_file():
        raise FileNotFoundError(f"--extract: {tex} is not a file; give the path of the paper's LaTeX source.")
    table = extract_tables(tex.read_text())
    write_text(PAPER_RESULTS, table.to_csv(index=False))
    print(f"wrote {len(table)} numbers of {table['table'].nunique()} tables to {PAPER_RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
