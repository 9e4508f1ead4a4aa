"""Planning a batch: a preset's notebook table x command-line overrides -> report jobs.

The table itself is data in :mod:`shc.presets` (each preset names its notebooks and their parameter sets).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shc._paths import repository_root

__all__ = ["OVERRIDE_PARAMETERS", "RUNNER_PARAMETERS", "ReportJob", "apply_overrides", "declared_parameters",
           "default_notebooks_dir", "notebook_table", "plan_jobs", "variant_names"]

RUNNER_PARAMETERS = ("output_dir", "run_dir")

#: Command-line overrides -> the notebook parameter they set: the first name in the tuple
#: that the notebook declares. A list-valued parameter receives the whole list; a scalar one
#: gets one report per value.
OVERRIDE_PARAMETERS: dict[str, tuple[str, ...]] = {
    "dataset": ("dataset",),
    "bits": ("bits",),
    "methods": ("methods",),
    "seeds": ("seeds", "seed"),
    "epochs": ("epochs",),
}

@dataclass(frozen=True)
class ReportJob:
    """One notebook execution: a notebook, a preset and one parameter set."""

    notebook: str  #: notebook stem, e.g. "00_center_geometry"
    preset: str
    parameters: dict[str, Any] = field(hash=False)  #: without output_dir / run_dir
    variant: str = ""  #: sub-folder name when the notebook has several parameter sets
    ignored_overrides: tuple[str, ...] = ()  #: command-line overrides the notebook does not declare

    @property
    def name(self) -> str:
        return f"{self.notebook}/{self.variant}" if self.variant else self.notebook

    def output_dir(self, output_root: str | os.PathLike) -> Path:
        """``<output_root>/<preset>/<notebook>[/<variant>]``."""
        directory = Path(output_root) / self.preset / self.notebook
        return directory / self.variant if self.variant else directory


def default_notebooks_dir() -> Path:
    """``notebooks/`` of the repository containing this package, else of the working directory."""
    return repository_root() / "notebooks"


def apply_overrides(
    parameter_sets: Sequence[Mapping[str, Any]],
    overrides: Mapping[str, Sequence[Any]],
    declared: Mapping[str, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Apply command-line overrides to a notebook's parameter sets.

    Parameters
    ----------
    parameter_sets : sequence of dict
        The preset's parameter sets for one notebook.
    overrides : mapping option -> list of values
        E.g. ``{"bits": [16, 32]}``; options are the keys of :data:`OVERRIDE_PARAMETERS`.
    declared : mapping name -> papermill parameter info
        The notebook's declared parameters (:func:`declared_parameters`); the ``default`` text
        tells list-valued parameters (``[...]``) from scalar ones.

    Returns
    -------
    list of dict
        A list-valued parameter receives the whole list in every set; a scalar one multiplies the
        sets, one per value. Sets made identical by an override are merged (first order kept).
        Options the notebook does not declare are ignored.
    """
    result = [dict(parameters) for parameters in parameter_sets]
    for option, values in overrides.items():
        if option not in OVERRIDE_PARAMETERS:
            raise ValueError(f"unknown override {option!r}; known: {sorted(OVERRIDE_PARAMETERS)}.")
        values = list(values)
        if not values:
            continue
        name = next((n for n in OVERRIDE_PARAMETERS[option] if n in declared), None)
        if name is None:
            continue
        if str(declared[name].get("default", "")).lstrip().startswith(("[", "(")):
            result = [{**parameters, name: values} for parameters in result]
        else:
            result = [{**parameters, name: value} for parameters in result for value in values]
    unique: dict[str, dict[str, Any]] = {}
    for parameters in result:
        unique.setdefault(_canonical(parameters), parameters)
    return list(unique.values())


def variant_names(parameter_sets: Sequence[Mapping[str, Any]]) -> list[str]:
    """Folder names telling parameter sets apart (``""`` for a single set), e.g. ``bits-32``."""
    if len(parameter_sets) <= 1:
        return [""] * len(parameter_sets)
    keys = sorted({key for parameters in parameter_sets for key in parameters})
    differing = [k for k in keys if len({_canonical(p.get(k)) for p in parameter_sets}) > 1]
    names = ["_".join(f"{key}-{_slug(parameters.get(key))}" for key in differing) for parameters in parameter_sets]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates or not all(names):
        raise ValueError(f"identical parameter sets in one preset ({duplicates or names}); remove the duplicates.")
    return names


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _slug(value: Any) -> str:
    text = "-".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", text).strip("-") or "none"


def plan_jobs(
    preset: str,
    *,
    only: Sequence[str] | None = None,
    overrides: Mapping[str, Sequence[Any]] | None = None,
    notebooks_dir: str | os.PathLike | None = None,
    table: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]] | None = None,
) -> list[ReportJob]:
    """List the notebook executions of a preset, in table order.

    Parameters
    ----------
    preset : str
        A preset name present in the table (see :data:`shc.presets.PRESETS`).
    only : sequence of str, optional
        Notebook stems (or unique prefixes such as "00") to run; default: all.
    overrides : mapping, optional
        Command-line overrides, see :func:`apply_overrides`.
    notebooks_dir : path, optional
        Where the notebooks live (default :func:`default_notebooks_dir`).
    table : mapping, optional
        The report table ``stem -> preset -> parameter sets`` (default :func:`notebook_table`).
    """
    table = notebook_table() if table is None else table
    notebooks_dir = Path(notebooks_dir) if notebooks_dir is not None else default_notebooks_dir()
    known_presets = sorted({name for presets in table.values() for name in presets})
    if preset not in known_presets:
        raise ValueError(f"unknown preset {preset!r}; known presets: {known_presets}.")
    stems = _select_notebooks(list(table), only)
    jobs = []
    for stem in stems:
        if preset not in table[stem]:
            continue
        path = notebooks_dir / f"{stem}.ipynb"
        if not path.is_file():
            raise FileNotFoundError(f"notebook {path} listed in the report table does not exist; check --notebooks.")
        declared = declared_parameters(path)
        parameter_sets = apply_overrides(table[stem][preset], overrides or {}, declared)
        ignored = tuple(
            option for option, values in (overrides or {}).items()
            if values and not any(name in declared for name in OVERRIDE_PARAMETERS.get(option, ()))
        )  # fmt: skip
        for parameters, variant in zip(parameter_sets, variant_names(parameter_sets)):
            jobs.append(ReportJob(stem, preset, parameters, variant, ignored))
    return jobs


def declared_parameters(notebook_path: str | os.PathLike) -> dict[str, dict[str, str]]:
    """Parameters declared in a notebook's ``parameters`` cell, as papermill parses them.

    Returns name -> ``{"name", "inferred_type_name", "default", "help"}`` (``default`` is the source
    text of the value); empty when there is no cell tagged ``parameters``.
    """
    import nbformat
    from papermill.translators import PythonTranslator

    notebook = nbformat.read(str(notebook_path), as_version=4)
    cell = next((c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])), None)
    return {} if cell is None else {p.name: p._asdict() for p in PythonTranslator.inspect(cell)}


def _select_notebooks(stems: list[str], only: Sequence[str] | None) -> list[str]:
    if not only:
        return stems
    selected = []
    for request in only:
        request = Path(request).stem  # accept "notebooks/00_center_geometry.ipynb" too
        matches = [stem for stem in stems if stem == request] or [stem for stem in stems if stem.startswith(request)]
        if len(matches) != 1:
            problem = "matches none" if not matches else f"is ambiguous ({matches})"
            raise ValueError(f"--only {request!r} {problem} of the report notebooks: {stems}.")
        selected.extend(m for m in matches if m not in selected)
    return [stem for stem in stems if stem in selected]




def notebook_table() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """``notebook stem -> preset name -> parameter sets``, read from :data:`shc.presets.PRESETS`."""
    from shc.presets import NOTEBOOKS, PRESETS

    return {stem: {name: preset.notebook_parameters(stem) for name, preset in PRESETS.items()
                   if preset.notebook_parameters(stem)} for stem in NOTEBOOKS}
