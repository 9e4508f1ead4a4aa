"""The class similarities the explorer and page 00 show (split from :mod:`shc.explore`, issue 38).

* :data:`SIMILARITY_SOURCES`: the explorer's registry of S sources ("label": the tens-digit hierarchy of
  ``digits-composite``; "hierarchical": a random two-level hierarchy with noise; "preset": a preset's stored
  stage-1 S), and :func:`similarity_for` to build one;
* :func:`page_similarity`: the S a page 00 shows, its preset's own testbed and, where computed, its stage-1 S
  (Eq. 2-12), with a note that says which; :func:`live_settings`: where the live explorer opens.

:mod:`shc.explore` re-exports every name, so ``explore.page_similarity`` and friends stay where users found them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from shc.registry import Registry
from shc.similarity import hierarchical_similarity, similarity_from_labels, validate_similarity

__all__ = ["SIMILARITY_SOURCES", "PageSimilarity", "SimilaritySource", "live_settings", "page_similarity",
           "preset_similarity", "similarity_for"]


# --------------------------------------------------------------------------------------------
# Similarity sources
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SimilaritySource:
    """``build(num_classes, seed, **context) -> (S, class_names)``; ``fixed_classes``: C comes from the source."""

    name: str
    build: Callable[..., tuple[np.ndarray, list[str]]]
    description: str
    fixed_classes: bool = False


def _label_source(num_classes: int, seed: int, **_: Any) -> tuple[np.ndarray, list[str]]:
    # digits-composite's hierarchy: class c is the number "c" (two digits), its coarse class the tens digit
    coarse = np.arange(num_classes) // 10
    return similarity_from_labels(num_classes, coarse), [f"{c:02d}" for c in range(num_classes)]


def _hierarchical_source(num_classes: int, seed: int, **_: Any) -> tuple[np.ndarray, list[str]]:
    S, groups = hierarchical_similarity(num_classes, num_groups=max(2, num_classes // 10), seed=seed,
                                        return_groups=True)
    return S, [f"c{c} (g{g})" for c, g in enumerate(groups)]


def preset_similarity(preset: str, dataset: str | None = None, seed: int = 0,
                      run_dir: str | None = None) -> tuple[np.ndarray, list[str]]:
    """The stored stage-1 S (Eq. 2-12) of ``preset`` and its class names, read from its run folder.

    Raises :class:`shc.runs.MissingRunError` naming the command that computes it when it is absent.
    """
    from shc import presets, results
    from shc.runs import MissingRunError, StaleRunError

    chosen = presets.get_preset(preset)
    dataset = dataset or chosen.datasets[0]
    config = presets.report_configs(preset, dataset, ["shc"], [chosen.bits[0]], [seed], run_dir)[0]
    try:
        S = validate_similarity(results.load_similarity(config))
    except StaleRunError:
        raise  # stored, under other settings: its own message says what to do
    except MissingRunError as error:
        raise MissingRunError(
            f"no stored stage-1 S of preset {preset!r} (dataset {dataset}, seed {seed}) in {config.run_dir}; compute "
            f"it with `python -m shc.pipeline --preset {preset}` (or `python -m shc.reports --preset {preset}`), "
            f"or pick the label or hierarchical source. ({error})") from error
    return S, [str(name) for name in results.load_data(config).class_names]


@dataclass(frozen=True)
class PageSimilarity:
    """The S a geometry page (notebook 00) shows, what it is, and where its explorers open (issue 38)."""

    matrix: np.ndarray  #: (C, C) S
    class_names: list[str]
    coarse_labels: np.ndarray  #: (C,) coarse class of every class
    coarse_names: list[str]
    dataset: str
    source: str  #: "stage-1 S" (read from the preset's runs) or "hierarchy S" (from the coarse classes)
    note: str  #: one Markdown paragraph: what S is, where it came from, what computes the missing one
    preset: str | None = None  #: the preset whose testbed this is; None: the stand-alone demonstration


def page_similarity(preset: str | None = None, dataset: str = "digits-composite", num_classes: int = 100,
                    seed: int = 0, run_dir: str | None = None, epochs: int | None = None,
                    config_overrides: dict[str, Any] | None = None) -> PageSimilarity:
    """The class similarity notebook 00 shows: its preset's own testbed and, where computed, its stage-1 S.

    * ``preset`` None: the stand-alone demonstration (the ``digits-composite`` hierarchy of ``num_classes``
      two-digit numbers grouped by their tens digit: 1 on the diagonal, 0.5 within a tens digit, 0 otherwise).
    * ``preset`` given: that preset's dataset (``dataset``, with the preset's options), and its stage-1 S (Eq. 2-12)
      of seed ``seed`` read from the run folder when ``python -m shc.reports`` / ``python -m shc.pipeline`` has
      computed it; else the hierarchy S of the dataset's coarse classes, and the note names the command that
      computes the stage-1 S. ``num_classes`` is then the dataset's.
    """
    from shc.data import load_dataset

    if preset is None:
        data = load_dataset(dataset, num_classes=num_classes, seed=seed)
        return PageSimilarity(
            similarity_from_labels(num_classes, data.coarse_labels), [str(n) for n in data.class_names],
            np.asarray(data.coarse_labels), [str(n) for n in data.coarse_names], dataset, "hierarchy S",
            f"$\\mathbf{{S}}$ here is the class hierarchy of `{dataset}` ({num_classes} classes in "
            f"{len(np.unique(data.coarse_labels))} coarse classes; the demonstration reads their names and hierarchy, "
            "not the images or their splits): $s_{ii} = 1$, $s_{ij} = 0.5$ for "
            "two classes of the same coarse class and 0 otherwise (`similarity_from_labels`). In the full method "
            "$\\mathbf{S}$ comes from a classifier (stage 1, Eq. 2-12): the reports of a preset show that one.")
    from shc import presets, results
    from shc.runs import MissingRunError, StaleRunError

    chosen = presets.get_preset(preset)
    config = presets.report_configs(preset, dataset, ["shc"], [chosen.bits[0]], [seed], run_dir, epochs,
                                    **dict(config_overrides or {}))[0]
    data = results.load_data(config)
    names = [str(n) for n in data.class_names]
    count = len(names)
    if data.coarse_labels is None:
        coarse, coarse_names = np.zeros(count, dtype=int), ["all classes"]
    else:
        coarse, coarse_names = np.asarray(data.coarse_labels), [str(n) for n in data.coarse_names]
    described = (f"`{dataset}` of preset `{preset}`: {count} classes in {len(np.unique(coarse))} coarse classes "
                 f"({data.protocol})")
    try:
        S = validate_similarity(results.load_similarity(config.replace(similarity="logits")))
    except StaleRunError:
        raise  # stored, under other settings: a page must not fall back to another S without saying why
    except MissingRunError:
        return PageSimilarity(
            similarity_from_labels(count, coarse), names, coarse, coarse_names, dataset, "hierarchy S",
            f"The classes are those of {described}. Its stage-1 $\\mathbf{{S}}$ (Eq. 2-12) is not computed in its "
            f"run folder yet (`python -m shc.reports --preset {preset}` computes it), so this page uses the "
            "hierarchy of the coarse classes: $s_{ii} = 1$, $s_{ij} = 0.5$ for two classes of the same coarse class "
            "and 0 otherwise.", preset)
    return PageSimilarity(
        S, names, coarse, coarse_names, dataset, "stage-1 S",
        f"The classes are those of {described}, and $\\mathbf{{S}}$ is this preset's own stage-1 similarity "
        f"(Eq. 2-12, seed {seed}): the classifier's average confusions, read from the run folder that "
        f"`python -m shc.reports --preset {preset}` computed (notebook 01 shows how it is made).", preset)


def live_settings(preset: str | None, dataset: str | None = None, seed: int = 0, run_dir: str | None = None,
                  fallback_preset: str = "quick") -> dict[str, Any]:
    """The :class:`Explorer` keywords notebook 00 (and its app) opens with: its preset's stored stage-1 S where
    computed (``source="preset"``), else the tens-digit labels (``source="label"``; the "preset" choice then reads
    ``fallback_preset``)."""
    from shc.runs import MissingRunError, StaleRunError

    if preset is not None:
        try:
            preset_similarity(preset, dataset, seed, run_dir)
        except StaleRunError:
            raise
        except MissingRunError:
            pass
        else:
            return {"source": "preset", "preset": preset, "dataset": dataset, "run_dir": run_dir}
    return {"source": "label", "preset": fallback_preset}


def _preset_source(num_classes: int, seed: int, *, preset: str = "quick", dataset: str | None = None,
                   run_dir: str | None = None, **_: Any) -> tuple[np.ndarray, list[str]]:
    return preset_similarity(preset, dataset, seed, run_dir)


#: Every similarity source of the explorer by name; a new one is one ``SIMILARITY_SOURCES.register(...)``.
SIMILARITY_SOURCES: Registry[SimilaritySource] = Registry("similarity source")
for _source in (
    SimilaritySource("label", _label_source, "labels: 1 on the diagonal, 0.5 within a tens digit (digits-composite)"),
    SimilaritySource("hierarchical", _hierarchical_source, "random two-level hierarchy with noise "
                     "(shc.similarity.hierarchical_similarity)"),
    SimilaritySource("preset", _preset_source, "the stored stage-1 S of a preset's run folder", fixed_classes=True),
):
    SIMILARITY_SOURCES.register(_source.name, _source)


def similarity_for(source: str, num_classes: int, seed: int = 0, **context: Any) -> tuple[np.ndarray, list[str]]:
    """S and class names of ``source`` (:data:`SIMILARITY_SOURCES`) for ``num_classes`` classes."""
    entry = SIMILARITY_SOURCES.get(source)
    if not entry.fixed_classes and (isinstance(num_classes, bool) or int(num_classes) != num_classes
                                    or num_classes < 2):
        raise ValueError(f"num_classes must be an integer >= 2, got {num_classes!r}; pick at least two classes.")
    S, names = entry.build(int(num_classes), int(seed), **context)
    return validate_similarity(S), names
