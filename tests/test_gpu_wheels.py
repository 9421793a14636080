"""The wheel set `make gpu-check` installs on the offline GPU box.

The box has its own torch, numpy 2.5, pyarrow and pandas (tools/gpu-box.txt)
and pip there has no index, so these tests read the committed lock
(tools/gpu-wheels.lock, what `make gpu-wheels` downloaded) with no
download, and the set before this one (tests/data) must fail them.
"""

import importlib.util
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "tools"))


def load(name):
    """A tool, not part of the package: loaded from its file."""
    spec = importlib.util.spec_from_file_location(
        name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gpuwheels = load("gpuwheels")

BOX = gpuwheels.read_box()
LOCK = gpuwheels.read_lock()
BEFORE = gpuwheels.read_lock(ROOT / "tests" / "data" /
                             "gpu-wheels-before.lock")
NOTEBOOKS = sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))


def floors(lock):
    return gpuwheels.kit_floors({w["name"] for w in lock} |
                                {"torch", "accelerate", "matplotlib"})


def missing(lock):
    return gpuwheels.missing_modules(
        NOTEBOOKS, lock, BOX, gpuwheels.read_not_carried(),
        metadata.packages_distributions())


def test_every_requirement_of_the_set_is_met_by_the_box_or_the_set():
    assert gpuwheels.unmet(LOCK, BOX, floors(LOCK)) == []


def test_every_module_the_notebooks_import_is_on_the_box_or_carried():
    assert NOTEBOOKS, "kit build has not written notebooks/solutions"
    assert missing(LOCK) == []


def test_the_set_before_this_one_fails_both_checks():
    # pyarrow 15 wants numpy < 2 (the box has 2.5.2); no ipywidgets
    problems = gpuwheels.unmet(BEFORE, BOX, floors(BEFORE))
    assert any("pyarrow 15.0.2 needs numpy" in p and "2.5.2" in p
               for p in problems), problems
    assert any(p.startswith("ipywidgets") for p in missing(BEFORE))


def test_the_set_carries_only_what_the_box_lacks_or_refuses():
    needs = gpuwheels._specifiers(LOCK, gpuwheels.box_environment(BOX),
                                  floors(LOCK))
    for wheel in LOCK:
        if wheel["name"] not in BOX:
            continue
        version = BOX[wheel["name"]]
        refused = version and not all(
            s.contains(version, prereleases=True)
            for s in needs.get(wheel["name"], []))
        # a box version unrecorded (fsspec): something must cap it
        capped = version is None and any(
            spec.operator in ("<", "<=", "==")
            for s in needs.get(wheel["name"], []) for spec in s)
        assert refused or capped, f"{wheel['name']} is on the box already"
    before = {w["name"] for w in BEFORE}
    assert {"aiohttp", "pandas", "pyarrow", "requests"} <= before & set(BOX)


def test_the_lock_is_what_gpu_carry_pins():
    pins = {Requirement(line).name: str(Requirement(line).specifier)
            for line in gpuwheels._lines(gpuwheels.CARRY)}
    locked = {w["name"]: f"=={w['version']}" for w in LOCK}
    assert {gpuwheels.canonicalize_name(n): v for n, v in pins.items()} \
        == locked
    assert {"ipywidgets", "trl", "datasets"} <= set(locked)


def box_with(**versions):
    """The box as its Python would report it: the recorded versions, and
    for names recorded alone (pyarrow, pandas, ...) this machine's."""
    here = gpuwheels.installed_versions()
    installed = {n: v or here.get(n) for n, v in BOX.items()}
    installed.update(pyarrow="21.0.0", fsspec="2025.3.0", aiohttp="3.14.5")
    installed.update({k.replace("_", "-"): v for k, v in versions.items()})
    return {n: v for n, v in installed.items() if v}


@pytest.mark.parametrize("fsspec, carried", [("2026.9.0", True),
                                             ("2025.3.0", False)])
def test_the_plan_keeps_the_boxs_fsspec_only_when_datasets_accepts_it(
        fsspec, carried):
    chosen, problems, said = gpuwheels.install_plan(
        LOCK, box_with(fsspec=fsspec), floors(LOCK))
    assert problems == []
    assert ("fsspec" in {w["name"] for w in chosen}) is carried
    line = next(s for s in said if s.startswith(("fsspec", "kept the box's "
                                                 "fsspec")))
    assert fsspec in line
    assert "transformers" in {w["name"] for w in chosen}  # 5.17 is refused


def test_the_plan_says_in_one_line_what_pyarrow_it_found():
    _, problems, said = gpuwheels.install_plan(LOCK, box_with(), floors(LOCK))
    assert [s for s in said if s.startswith("pyarrow")] == [
        "pyarrow: the box has 21.0.0; datasets 4.7.0 needs >=21.0.0: met"]
    assert problems == []


@pytest.mark.parametrize("pyarrow", ["15.0.2", None])
def test_a_box_pyarrow_datasets_cannot_use_is_refused(pyarrow):
    installed = box_with()
    if pyarrow:
        installed["pyarrow"] = pyarrow
    else:
        del installed["pyarrow"]
    _, problems, said = gpuwheels.install_plan(LOCK, installed, floors(LOCK))
    assert any("NOT met" in s for s in said)
    assert any("pyarrow" in p for p in problems)


def test_install_refuses_a_folder_without_the_wheels(tmp_path, capsys):
    assert load("gpucheck").install_wheels(tmp_path, tmp_path / "site") == 1
    assert "make gpu-wheels" in capsys.readouterr().err
    assert not (tmp_path / "site").exists()
