"""Committed notebooks are clean, parameterised papermill inputs wired into the report table.

Fix a failure with ``python -m shc.reports --strip-notebooks`` (outputs, execution counts) or by
editing the notebook's first code cell / ``shc.presets``.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from papermill.translators import PythonTranslator

from shc import reports

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOKS_DIR}"


@pytest.fixture(params=NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def notebook(request):
    path = request.param
    return path, nbformat.read(str(path), as_version=4)


def _parameters_cell(notebook):
    return next(cell for cell in notebook.cells if cell.cell_type == "code")


def test_notebook_is_valid_and_titled(notebook):
    path, content = notebook
    nbformat.validate(content)
    first = content.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), f"{path.name}: start with a '# Title' cell"
    assert content.metadata.get("kernelspec", {}).get("language") == "python"


def test_first_code_cell_is_tagged_parameters(notebook):
    path, content = notebook
    assert "parameters" in _parameters_cell(content).metadata.get("tags", []), path.name


def test_no_outputs_and_no_execution_counts(notebook):
    path, content = notebook
    for index, cell in enumerate(content.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name} cell {index} has outputs"
            assert cell.execution_count is None, f"{path.name} cell {index} has an execution count"
    assert "papermill" not in content.metadata, f"{path.name} keeps papermill run metadata"


def test_parameters_parse_and_include_runner_parameters(notebook):
    path, content = notebook
    cell = _parameters_cell(content)
    parsed = {parameter.name for parameter in PythonTranslator.inspect(cell)}
    assigned = {line.split("=")[0].split(":")[0].strip() for line in cell.source.splitlines()
                if "=" in line and not line.lstrip().startswith("#")}  # fmt: skip
    assert assigned <= parsed, f"{path.name}: papermill cannot parse {sorted(assigned - parsed)}"
    assert {"output_dir", "run_dir"} <= parsed


def test_notebook_is_in_the_report_table_for_every_preset(notebook):
    path, content = notebook
    from shc.presets import PRESETS

    table = reports.notebook_table()
    assert path.stem in table, f"add {path.stem} to the notebooks of the presets in shc.presets"
    presets = table[path.stem]
    assert set(presets) == {name for name in PRESETS.names() if path.stem in PRESETS.get(name).notebooks}
    # the pretrained, many-class and modes testbeds leave out 05, the unseen-class presets 00 and 05 (shc.presets says
    # why)
    unseen = {name for name in PRESETS.names() if name.endswith("-unseen")}
    assert set(PRESETS.names()) - set(presets) <= {"standard-pretrained", "standard-fine", "standard-modes", *unseen}
    declared = {parameter.name for parameter in PythonTranslator.inspect(_parameters_cell(content))}
    for preset, parameter_sets in presets.items():
        assert parameter_sets, f"{path.stem}: preset {preset} has no parameter set"
        for parameters in parameter_sets:
            unknown = set(parameters) - declared
            assert not unknown, f"{path.stem} preset {preset}: parameters {sorted(unknown)} are not declared"
            assert not set(parameters) & {"output_dir", "run_dir"}, "the runner sets output_dir and run_dir"


def test_report_table_names_existing_notebooks():
    missing = [stem for stem in reports.notebook_table() if not (NOTEBOOKS_DIR / f"{stem}.ipynb").is_file()]
    assert missing == []


def test_check_notebook_agrees(notebook):
    path, _ = notebook
    assert reports.check_notebook(path) == []


def test_notebooks_take_a_methods_configuration_from_the_preset_not_by_renaming_another(notebook):
    """``config.replace(method=...)`` keeps the other method's fields (a preset's per-method epochs, e.g. MDS at
    160 on ``standard``), so it names a run that was never computed; ``presets.report_configs`` gives the right one."""
    path, content = notebook
    code = "\n".join(cell.source for cell in content.cells if cell.cell_type == "code")
    assert ".replace(method=" not in code, f"{path.name}: build a method's config with presets.report_configs(...)"


def test_prose_quotes_the_codes_thresholds(notebook):
    """A threshold the code decides with and the prose states (the training hit rate a network must reach,
    shc.reachability.REACHED; the budget ratio from which page 03 draws each run against its own budget,
    shc.plots.curves.BUDGET_SHARE_RATIO) is the code's value: changing one without the other fails here."""
    from shc.plots.curves import BUDGET_SHARE_RATIO
    from shc.reachability import REACHED

    words = {2: "twofold", 3: "threefold", 4: "fourfold", 5: "fivefold", 8: "eightfold", 10: "tenfold"}
    _, nb = notebook
    prose = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    for value in re.findall(r"hit rate below (\d+(?:\.\d+)?)|[Bb]elow (\d+(?:\.\d+)?) on the\s+training", prose):
        assert float(value[0] or value[1]) == REACHED, f"the prose says {value}, shc.reachability.REACHED is {REACHED}"
    for fold in re.findall(r"\b(\w+fold)\b", prose):
        assert fold == words[BUDGET_SHARE_RATIO], (f"the prose says {fold}, BUDGET_SHARE_RATIO is "
                                                   f"{BUDGET_SHARE_RATIO}")
