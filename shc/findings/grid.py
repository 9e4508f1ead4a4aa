"""The first line of a page of runs or centers, computed from a table the page publishes: the grid's shape, the
dataset, how the networks start and the settings each run trained with (pages 01 to 06).

These lines were printed from the configs in memory, so the report checker could not re-derive them (an edit by hand
passed), and page 03's named the first run's learning rate where methods train with their own (issue 38). Now
:func:`grid_findings` reads the settings table (:func:`shc.results.settings_rows`, one row per run) and
:mod:`shc.findings` registers it, so the checker derives the line again from the file; :func:`budget_phrase` and
:func:`grid_phrase` are the words it is made of (``shc.results`` re-exports them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from shc.stats import counted

__all__ = ["budget_phrase", "budgets_from_rows", "grid_findings", "grid_phrase", "setting_phrase"]


def budget_phrase(epochs: Mapping[str, Sequence[int] | Mapping[int, int]]) -> str:
    """The training budgets of a grid in words: the most common one first (on a tie, the first method's), then
    each other one with its methods in grid order, e.g. ``{"mds": [160], "shc": [80], "dtsh": [160]}`` gives
    ``"160 epochs, 80 for shc"``.

    A method's budget is a sequence of epochs (``[80, 160]`` reads ``80/160``) or a mapping code length -> epochs
    (:func:`budgets_from_rows`), which names a code length whose budget differs from the method's usual one:
    ``{"crh": {16: 120, 64: 120}, "lth": {16: 480, 64: 960}}`` gives ``"120 epochs, 480 for lth (960 at 64 bits)"``.
    """
    budgets = [_budget_key(e) for e in epochs.values()]
    if not budgets:
        raise ValueError("budget_phrase needs at least one method's epochs.")
    usual = max(dict.fromkeys(budgets), key=budgets.count)
    grouped: dict[tuple, list[str]] = {}
    for method, budget in zip(epochs, budgets):
        if budget != usual:
            grouped.setdefault(budget, []).append(method)
    return ", ".join([f"{_budget_words(usual, 'epochs')}",
                      *(_budget_words(e, f"for {', '.join(methods)}") for e, methods in grouped.items())])


GRID_UNITS = ("method", "variant")


def grid_phrase(methods: Sequence[str], bits: Sequence[int], seeds: Sequence[int], unit: str = "method") -> str:
    """A grid's shape in words, each count with its noun in the right number: ``"8 methods x 3 code lengths x 3
    seeds"``, ``"1 method x 1 code length x 3 seeds"`` (a reader audit found "1 code lengths", issue 38).
    ``unit="variant"`` counts the labels of an ablation, where one method may appear twice (page 05's ``shc`` and
    ``shc (text S)`` are one method and two variants)."""
    if unit not in GRID_UNITS:
        raise ValueError(f"unit must be one of {GRID_UNITS}, got {unit!r}.")
    return " x ".join(counted(count, noun) for noun, count in ((unit, len(methods)), ("code length", len(bits)),
                                                                ("seed", len(seeds))))


def budgets_from_rows(rows: Any, method: str = "label") -> dict[str, dict[int, int]]:
    """Each method's budget per code length from a table of runs with ``bits`` and ``epochs`` columns (one row per
    run; methods in the order they first appear), for :func:`budget_phrase`. A method whose runs at one code length
    have several budgets is refused: the phrase could not say which."""
    budgets: dict[str, dict[int, int]] = {}
    for name, group in rows.groupby(method, sort=False):
        found = group.groupby("bits")["epochs"].unique()
        mixed = {int(q): sorted(int(e) for e in values) for q, values in found.items() if len(values) > 1}
        if mixed:
            raise ValueError(f"{name}'s runs have several budgets at one code length ({mixed}); pass one budget a "
                             "method and code length (e.g. --hashing-epochs METHOD=E).")
        budgets[str(name)] = {int(q): int(values[0]) for q, values in sorted(found.items())}
    return budgets


def setting_phrase(rows: Any, column: str, method: str = "label") -> str:
    """One setting of a grid's runs in words: its value when every run shares it (``"0.003"``), else the most
    common value first and each other one with its methods, ``"0.003 (0.001 for dpsh, dtsh)"``."""
    values = [_plain(value) for value in rows[column]]
    usual = max(dict.fromkeys(values), key=values.count)
    others: dict[Any, list[str]] = {}
    for name, value in zip(rows[method], values):
        if value != usual and str(name) not in others.setdefault(value, []):
            others[value].append(str(name))
    words = ", ".join(f"{value} for {', '.join(names)}" for value, names in others.items())
    return f"{usual}" + (f" ({words})" if words else "")


def grid_findings(settings: Any, dataset: str, what: str = "runs", unit: str = "method") -> list[str]:
    """The page's first line from its settings table (:func:`shc.results.settings_rows`: one row per run, columns
    ``label, bits, seed, classes, epochs, backbone, pretrained, pretrain, weights, batch_size, optimizer, lr,
    eval_every``). ``what="runs"`` (pages 03, 04, 06): the count of runs, the grid's shape, how the networks start,
    the budgets (each run's own) and the other training settings, each with the methods that differ from the rest.
    ``what="centers"`` (page 02): the classes, the count of center sets and the Gilbert-Varshamov distance d of each
    code length (Eq. 13). ``what="classifier"`` (page 01; ``settings_rows(..., stage="classifier")``, one row per
    seed with a ``protocol`` column): the classes and the split, then how the stage-1 classifiers start and train.
    ``unit`` names what the ``label`` column counts (:func:`grid_phrase`)."""
    if what not in ("runs", "centers", "classifier"):
        raise ValueError(f"what must be 'runs', 'centers' or 'classifier', got {what!r}.")
    if len(settings) == 0:
        raise ValueError("the settings table has no run: save shc.results.settings_rows(configs) of the page's runs.")
    if what == "classifier":
        return [f"{dataset}: {_one(settings, 'classes')} classes; {_one(settings, 'protocol')}",
                f"classifier ({counted(settings['seed'].nunique(), 'seed')}): {_start_phrase(settings)}, "
                f"{budget_phrase({str(r.label): [int(r.epochs)] for r in settings.itertuples()})}, "
                f"{setting_phrase(settings, 'optimizer')}, "
                f"lr {setting_phrase(settings, 'lr')}."]
    methods = list(dict.fromkeys(str(name) for name in settings["label"]))
    bits = sorted({int(q) for q in settings["bits"]})
    shape = grid_phrase(methods, bits, sorted({int(s) for s in settings["seed"]}), unit)
    if what == "centers":
        from shc.centers import gv_min_distance

        classes = int(_one(settings, "classes"))
        return [f"{dataset}: C = {classes} classes; {counted(len(settings), 'center set')} ({shape}).",
                "Gilbert-Varshamov distance d (Eq. 13): "
                + ", ".join(f"{gv_min_distance(classes, q)} at {q} bits" for q in bits) + "."]
    return [f"{counted(len(settings), 'run')}: {shape} on {dataset}; {_start_phrase(settings)}, "
            f"{budget_phrase(budgets_from_rows(settings))} (each run's own config), "
            f"batch {setting_phrase(settings, 'batch_size')}, "
            f"{setting_phrase(settings, 'optimizer')}, lr {setting_phrase(settings, 'lr')}, {_validation(settings)}."]


def _start_phrase(settings: Any) -> str:
    """How the runs' networks start (:func:`_start_words`), with the methods that start otherwise."""
    return setting_phrase(settings.assign(start=[_start_words(row) for row in settings.itertuples()]), "start")


def _one(settings: Any, column: str) -> Any:
    """The one value of ``column`` every row shares (a page shows one dataset's classes and split)."""
    values = list(dict.fromkeys(_plain(value) for value in settings[column]))
    if len(values) != 1:
        raise ValueError(f"the rows hold several {column} values {values}; a page shows one dataset's.")
    return values[0]


def _validation(settings: Any) -> str:
    """``validation every 6 epochs``; ``validation every epoch`` (not "every 1 epochs")."""
    every = setting_phrase(settings, "eval_every")
    return "validation every epoch" if every == "1" else f"validation every {every} epochs"


def _plain(value: Any) -> Any:
    """A table cell as the phrase writes it: integers without ``.0``, floats in their shortest form."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(f"{float(value):.6g}")
    return value.item() if isinstance(value, np.generic) else value


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) or value == ""


def _start_words(row: Any) -> str:
    """How a run's network starts, in words (a row of the settings table; read back from CSV, an absent value is
    NaN): ``composite_cnn, trained from scratch``, ``resnet34 starting from ImageNet weights``,
    ``composite_cnn pretrained on the items source task (stage 0), then fine-tuned``."""
    if not _missing(getattr(row, "pretrain", None)):
        return f"{row.backbone} pretrained on the {row.pretrain} source task (stage 0), then fine-tuned"
    weights = getattr(row, "weights", None)
    if not _missing(weights) or bool(getattr(row, "pretrained", False)):
        return f"{row.backbone} starting from {weights if not _missing(weights) else 'ImageNet'} weights"
    return f"{row.backbone}, trained from scratch"


def _budget_key(value: Sequence[int] | Mapping[int, int]) -> tuple:
    """A hashable budget: for a mapping code length -> epochs, the most common epochs (on a tie, the shortest code
    length's) and the code lengths that differ from it; a sequence of one budget is the same key as a mapping with
    that budget at every length, a sequence of several is read ``80/160``."""
    if not isinstance(value, Mapping):
        value = tuple(value)
        return ("bits", value[0], ()) if len(value) == 1 else ("list", value)  # one budget: as a mapping's
    if not value:
        raise ValueError("budget_phrase: a method's mapping of code lengths to epochs is empty.")
    by_bits = dict(sorted(value.items()))
    counts = list(by_bits.values())
    usual = max(dict.fromkeys(counts), key=counts.count)
    return ("bits", usual, tuple((q, e) for q, e in by_bits.items() if e != usual))


def _budget_words(key: tuple, what: str) -> str:
    """``"480 for lth (960 at 64 bits)"``: a budget (:func:`_budget_key`), ``what`` it is (``"epochs"``, ``"for lth"``)
    and the code lengths that differ from it."""
    if key[0] == "list":
        return f"{'/'.join(map(str, key[1]))} {what}"
    _, usual, others = key
    return f"{usual} {what}" + (f" ({', '.join(f'{e} at {q} bits' for q, e in others)})" if others else "")
