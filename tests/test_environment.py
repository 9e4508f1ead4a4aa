"""The two install routes (pip via pyproject.toml, conda via environment.yml) name the same dependencies."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"pytorch": "torch"}  # conda-forge/pytorch channel name -> PyPI name
CONDA_ONLY = {"python", "pip"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_names_the_same_dependencies_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pip_names = {_name(r) for r in project["dependencies"]} | {_name(r) for r in project["optional-dependencies"]["dev"]}
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda_entries = [entry for entry in environment["dependencies"] if isinstance(entry, str)]
    conda_names = {CONDA_NAMES.get(_name(e), _name(e)) for e in conda_entries} - CONDA_ONLY
    pip_section = next(entry["pip"] for entry in environment["dependencies"] if isinstance(entry, dict))
    assert "-e ." in pip_section
    # a package conda-forge does not carry (pyoxipng) is listed in the pip section, by its PyPI name
    pip_only = {_name(entry) for entry in pip_section if entry != "-e ."}
    assert not conda_names & pip_only, "a dependency listed twice in environment.yml"
    assert conda_names | pip_only == pip_names


def test_constraints_pin_the_cpu_torch_build_served_here():
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    assert {name: pins.get(name) for name in ("torch", "torchvision")} == {"torch": "2.13.0", "torchvision": "0.28.0"}


def test_the_explore_extra_is_pinned_and_installed_by_ci():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    explore = {_name(r) for r in project["optional-dependencies"]["explore"]}
    assert explore == {"ipywidgets", "voila"}
    assert explore <= set(pins), f"pin {sorted(explore - set(pins))} in constraints.txt"
    install = re.search(r"^pip install .*$", (ROOT / "README.md").read_text(), re.M).group(0)
    assert "explore" in re.search(r"\[([^\]]*)\]", install).group(1).split(",")


def test_constraints_pin_every_package_of_the_stores_and_cluster_extras():
    """CI installs the optional extras (README's install line); their versions are the ones tested here."""
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {_name(requirement) for extra in ("stores", "cluster") for requirement in extras[extra]}
    assert names and not names - set(pins), f"pin these in constraints.txt: {sorted(names - set(pins))}"
    install = re.search(r"^pip install .*$", (ROOT / "README.md").read_text(), re.M).group(0)
    assert {"stores", "cluster"} <= set(re.search(r"\[([^\]]*)\]", install).group(1).split(","))


def test_ci_runs_exactly_the_readme_commands():
    readme, ci = (ROOT / "README.md").read_text(), (ROOT / ".ci" / "run").read_text()
    install = re.search(r"^pip install .*$", readme, re.M).group(0)
    tests = re.search(r"^python -m pytest.*$", readme, re.M).group(0)
    assert install in ci.splitlines() and tests in ci.splitlines()
