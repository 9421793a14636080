"""The two ways to install stay in step: pyproject.toml and environment.yml."""

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"pytorch": "torch"}  # conda-forge spells a few names its own way


def _name(requirement):
    return re.split(r"[<>=!~\[ ;]", requirement.strip(), maxsplit=1)[0].lower()


def pyproject_packages():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        requirements += extra
    return {_name(r) for r in requirements}


def environment_packages():
    names, in_dependencies = set(), False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        if re.match(r"^\w", line):  # a top-level key starts a new section
            in_dependencies = line.startswith("dependencies:")
        # its own entries, and those of its pip: list (not on conda-forge)
        match = re.match(r"^(?:  |      )- ([A-Za-z][\w.-]*)", line)
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


def _extras():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_jupyterlab_is_an_extra_that_make_lab_installs():
    project = _extras()
    core = {_name(r) for r in project["dependencies"]}
    assert "jupyterlab" not in core  # Colab installs the core only
    assert "ipywidgets>=7.7" in project["dependencies"]  # Colab's 7.7 does
    assert "jupyterlab" in {_name(r) for r in
                            project["optional-dependencies"]["lab"]}
    assert '".[dev,lab]"' in (ROOT / "Makefile").read_text()


def make_lab(**env):
    """The command `make lab` would run, without running it."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    result = subprocess.run(["make", "-n", "-o", "setup", "lab"], cwd=ROOT,
                            env={**environment, **env}, capture_output=True,
                            text=True, check=True)
    return result.stdout


@pytest.mark.skipif(os.uname().sysname != "Linux", reason="Linux's rules")
def test_make_lab_runs_as_root_and_without_a_display():
    command = make_lab()
    assert "jupyter lab --ServerApp.root_dir=notebooks" in command
    assert ("--allow-root" in command) == (os.getuid() == 0)
    assert "--no-browser" in command  # no display: it prints the URL
    assert "--no-browser" not in make_lab(DISPLAY=":0")


def test_course_runs_go_to_one_runs_folder_at_the_root(monkeypatch):
    from kit import models, recipes, runtime
    monkeypatch.delenv("KIT_RUNS", raising=False)
    assert runtime.runs_dir() == ROOT / "runs"
    assert models.run_path("runs/01_x") == ROOT / "runs" / "01_x"
    assert models.run_path("elsewhere/x") == Path("elsewhere/x")
    args = recipes.common_args("runs/03_dpo", seed=0)
    assert args["output_dir"] == str(ROOT / "runs" / "03_dpo")
    monkeypatch.setenv("KIT_RUNS", "/tmp/kit-runs")
    assert models.run_path("runs/a") == Path("/tmp/kit-runs/a")


def test_doctor_requires_what_the_core_install_gives_no_more():
    """Colab installs the core only: doctor must not ask for JupyterLab."""
    from kit import doctor
    core = {_name(r): r for r in _extras()["dependencies"]}
    assert set(doctor.REQUIRED) <= set(core)
    assert doctor.REQUIRED["ipywidgets"] == "7.7"
    assert "jupyterlab" in doctor.OPTIONAL
