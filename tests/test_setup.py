"""The two ways to install stay in step: pyproject.toml and environment.yml."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"pytorch": "torch"}  # conda-forge spells a few names its own way


def _name(requirement):
    return re.split(r"[<>=!~\[ ;]", requirement.strip(), maxsplit=1)[0].lower()


def pyproject_packages():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + project["optional-dependencies"]["dev"]
    return {_name(r) for r in requirements}


def environment_packages():
    names, in_dependencies = set(), False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        if re.match(r"^\w", line):  # a top-level key starts a new section
            in_dependencies = line.startswith("dependencies:")
        match = re.match(r"^  - ([A-Za-z][\w.-]*)", line)  # its own entries
        if in_dependencies and match and match.group(1) not in ("python", "pip"):
            name = _name(match.group(1))
            names.add(CONDA_NAMES.get(name, name))
    return names


def test_environment_yml_lists_the_same_packages_as_pyproject():
    assert environment_packages() == pyproject_packages()


def test_environment_yml_installs_the_kit_and_pins_python():
    text = (ROOT / "environment.yml").read_text()
    assert "conda-forge" in text
    assert re.search(r"- python=3\.\d+", text)
    assert "- -e ." in text


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
