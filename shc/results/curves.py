"""Retrieval curves of finished runs, by method, for :mod:`shc.plots` (read-only).

:func:`curves_by_method` (precision@K, recall@K, the Hamming-radius and rank-based PR curves, stacked over seeds),
:func:`pr_curves_by_method` (Hamming-radius PR curves averaged over seeds), :func:`curve_rows` (one curve over
every run as a tidy table: what the figures draw) and :func:`class_ap_rows` (per-class AP@ALL against the class's
mean similarity to the others).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import numpy as np

from shc.results.reading import _identity, load_codes, load_metrics, load_similarity, run_label
from shc.runs import RunConfig, load_data


_CURVE_AXES = {"precision@k": "k", "recall@k": "k", "tie_aware_precision@k": "k", "tie_aware_recall@k": "k",
               "pr_precision": "pr_radius", "pr_recall": "pr_radius", "rank_precision": "rank_k",
               "rank_recall": "rank_k", "tie_aware_rank_precision": "rank_k", "tie_aware_rank_recall": "rank_k"}


def curves_by_method(configs: Iterable[RunConfig], key: str, bits: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A stage-3 curve of every run at one code length, stacked over seeds, for :func:`shc.plots.plot_curves`.

    Parameters
    ----------
    configs : iterable of RunConfig
        Runs that exist (:func:`run_grid`); those with another code length are ignored.
    key : {"precision@k", "recall@k", "pr_precision", "pr_recall"}
        The curve; its x values are K (retrieved items) or the Hamming radius 0..q.
    bits : int

    Returns
    -------
    x : (n,) array
    curves : dict label -> (seeds, n) array
    """
    if key not in _CURVE_AXES:
        raise ValueError(f"unknown curve {key!r}; choose one of {sorted(_CURVE_AXES)}.")
    x, curves = None, {}
    for config in configs:
        if config.bits != bits:
            continue
        metrics = load_metrics(config)
        values = np.asarray(metrics[_CURVE_AXES[key]])
        if x is not None and not np.array_equal(x, values):
            raise ValueError(f"the runs disagree on the x values of {key!r}; evaluate them with the same K list.")
        x = values
        curves.setdefault(run_label(config), []).append(np.asarray(metrics[key], dtype=np.float64))
    if x is None:
        raise ValueError(f"no config has bits={bits}; pick one of the grid's code lengths.")
    return x, {label: np.stack(runs) for label, runs in curves.items()}


def pr_curves_by_method(configs: Iterable[RunConfig], bits: int) -> dict[str, dict[str, np.ndarray]]:
    """Hamming-radius precision-recall curves at one code length, averaged over seeds at each radius
    (radii where no query of a seed retrieves anything are left out of that radius's mean), for
    :func:`shc.plots.plot_pr_curves`: label -> {"pr_precision", "pr_recall"}."""
    configs = list(configs)
    _, precision = curves_by_method(configs, "pr_precision", bits)
    _, recall = curves_by_method(configs, "pr_recall", bits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN radius: the mean stays NaN, unplotted
        return {label: {"pr_precision": np.nanmean(precision[label], axis=0),
                        "pr_recall": np.nanmean(recall[label], axis=0)} for label in precision}


def curve_rows(configs: Iterable[RunConfig], kind: str):
    """The tidy table of one retrieval curve over every run: ``method, bits, seed, <x>, precision, recall``.

    ``kind`` is "k" (precision@K / recall@K), "radius" (precision-recall by Hamming radius) or "rank"
    (precision-recall at cut-offs of the Hamming ranking: the paper's figures); "k" and "rank" are expectations
    over random orders within Hamming ties, "k-by-index" and "rank-by-index" break ties by index. Exactly what
    the curve figures draw; save it beside them (``plots.save_figure(fig, stem, data=...)``).
    """
    from shc.plots import curve_frame

    return curve_frame(({**_identity(config), "method": run_label(config), **load_metrics(config)}
                        for config in configs), kind)


def class_ap_rows(configs: Iterable[RunConfig], bits: int, seed: int | None = None):
    """Per-class AP@ALL against the class's mean similarity to the others, one row per (method, class).

    Reads each run's stored per-query AP@ALL (``metrics.json``) and the data-dependent S of the seed
    (stage 1), for :func:`shc.plots.plot_class_ap`. Under the unseen-class protocol: the seen classes (S has no
    row for a held-out one).
    """
    from shc.metrics import per_class_mean
    from shc.plots import class_ap_frame

    chosen = [config for config in configs if config.bits == bits]
    if not chosen:
        raise ValueError(f"no config has bits={bits}; pick one of the grid's code lengths.")
    seed = chosen[0].seed if seed is None else seed
    chosen = [config for config in chosen if config.seed == seed]
    data = load_data(chosen[0])
    labels = load_codes(chosen[0])["query_labels"]
    seen = labels < data.num_classes  # under the unseen-class protocol, S has rows for the seen classes only
    ap = {run_label(config): per_class_mean(np.asarray(load_metrics(config)["query_AP@ALL"])[seen], labels[seen],
                                            data.num_classes)[0] for config in chosen}
    S = load_similarity(chosen[0].replace(method="shc", similarity="logits"))
    return class_ap_frame(ap, S, class_names=data.class_names)
