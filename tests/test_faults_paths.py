"""Issue 67, round 5: paths and counts the command line took without a word.

Each case below once lost a run, measured nothing, or ended in a library's
traceback; each is now one line that names the cause and the fix.
"""

import json

import pytest

from kit import cli


@pytest.fixture
def no_training(monkeypatch, tmp_path):
    """runs/ is a scratch folder, and a training that starts fails."""
    from kit import runs
    monkeypatch.setenv("KIT_RUNS", str(tmp_path / "runs"))
    monkeypatch.setattr(runs, "run", lambda *a, **k: pytest.fail(
        "it trained"))
    return tmp_path / "runs"


@pytest.mark.parametrize("flag, given, said", [
    # `--output-dir "$OUT"`, OUT unset: trained into runs/sft, replacing it
    ("--output-dir", "", "--output-dir is empty (an unset variable?): name a "
     "folder, or leave --output-dir out to train into runs/sft"),
    # trained into a folder named " "
    ("--output-dir", " ", "--output-dir is ' ', blank: name a folder, or "
     "leave --output-dir out to train into runs/sft"),
    # trained from scratch, as if no checkpoint had been named
    ("--resume-from-checkpoint", "", "--resume-from-checkpoint is empty (an "
     "unset variable?): name a checkpoint-N folder, or leave the option out "
     "to start afresh"),
], ids=["output-dir-empty", "output-dir-blank", "resume-empty"])
def test_an_empty_or_blank_path_is_refused_before_training(
        flag, given, said, no_training, capsys):
    assert cli.main(["train", "sft", flag, given]) == 2
    assert capsys.readouterr().err == said + "\n"
    assert not no_training.exists()  # runs/sft neither made nor touched


def test_an_empty_plot_path_is_refused_before_the_benchmark(monkeypatch,
                                                             tmp_path, capsys):
    # before: "--plot . is a folder", the empty path read as "."
    from kit import bench
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(bench, "one_run", lambda *a, **k: pytest.fail(
        "the benchmark ran"))
    assert cli.main(["bench", "--plot", ""]) == 2
    assert capsys.readouterr().err == (
        "--plot is empty (an unset variable?): name a .png file, or leave "
        "--plot out to write runs/bench/bench.png\n")


def test_a_bench_whose_runs_end_before_k_steps_is_refused(
        monkeypatch, tmp_path, capsys):
    # --k 8 2 --steps 2: k=8 generated once and stopped, like k=2, and the
    # table compared the two as if k=8 had been measured
    from kit import bench
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(bench, "one_run", lambda *a, **k: pytest.fail(
        "the benchmark ran"))
    assert cli.main(["bench", "--k", "8", "2", "--steps", "2"]) == 2
    assert capsys.readouterr().err == (
        "bench: --k 8 is more than --steps 2: a run of 2 steps ends before "
        "one generation has served its 8 steps, so it never measures "
        "k = 8: give --steps 8 or more (or k at most 2)\n")
    with pytest.raises(ValueError, match="--k 8 is more than --steps 2"):
        bench.run(ks=(8, 2), steps=2)


# ------------------------------------------------------------ kit build

SOURCE = "# %%\nx = 1\n### BEGIN SOLUTION\ny = 2\n### END SOLUTION\n"


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A course of one source (code only: its Japanese text is empty),
    built in all four sets under tmp_path: its notebooks folder."""
    from kit.builder import japanese, notebooks, paths
    folder = tmp_path / "notebooks"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "07_demo.py").write_text(SOURCE)
    (folder / "src" / "07_demo.ja.md").write_text("")
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    monkeypatch.setattr(paths, "NOTEBOOKS", folder)
    monkeypatch.setattr(paths, "SOURCES", folder / "src")
    monkeypatch.setattr(paths, "SOLUTIONS", folder / "solutions")
    monkeypatch.setattr(japanese, "JA", folder / "ja")
    monkeypatch.setattr(japanese, "JA_SOLUTIONS", folder / "ja" / "solutions")
    assert len(notebooks.build()[0]) == 4
    return folder


def test_build_check_passes_on_the_built_course(course, capsys):
    assert cli.main(["build", "--check"]) == 0
    assert capsys.readouterr().out == "all notebooks match their sources\n"


def test_build_check_names_a_notebook_whose_source_is_gone(course, capsys):
    # before: "all notebooks match their sources", exit 0
    (course / "src" / "07_demo.py").unlink()
    (course / "src" / "07_demo.ja.md").unlink()
    assert cli.main(["build", "--check"]) == 1
    out = capsys.readouterr().out.splitlines()
    fix = ("its source notebooks/src/07_demo.py is gone: restore it (`git "
           "checkout notebooks/src/07_demo.py`), or delete this notebook "
           "from every set")
    assert out == [f"notebooks/{copy}: {fix}" for copy in (
        "07_demo.ipynb", "solutions/07_demo.ipynb", "ja/07_demo.ipynb",
        "ja/solutions/07_demo.ipynb")]


def test_a_learners_own_notebook_without_a_source_is_not_an_orphan(
        course, capsys):
    (course / "07_mine.ipynb").write_text(json.dumps(
        {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert cli.main(["build", "--check"]) == 0


def half_saved(path):
    path.write_text("".join(path.read_text().splitlines(True)[:3]))


def binary(path):
    path.write_bytes(bytes(range(256)) * 8)


def a_folder(path):
    path.unlink()
    (path / "inside").mkdir(parents=True)


@pytest.mark.parametrize("damage, said", [
    # before: nbformat's NotJSONError traceback (reading the ja twin)
    (half_saved, "not a whole notebook: its JSON breaks off at line 4, "
     "column 1 (saved half-way?): build leaves it as it is: move it aside "
     "to keep it, or `python -m kit build --force` writes the notebook over "
     "it"),
    # before: "'utf-8' codec can't decode byte 0x80 ...", no file named
    (binary, "not a notebook: binary, not text: build leaves it as it is: "
     "move it aside to keep it, or `python -m kit build --force` writes the "
     "notebook over it"),
    # before: IsADirectoryError traceback
    (a_folder, "a folder, not a notebook: build writes the notebook there: "
     "move the folder aside, then run `python -m kit build`"),
], ids=["half-saved", "binary", "folder"])
@pytest.mark.parametrize("check", [True, False], ids=["check", "build"])
def test_a_damaged_notebook_is_one_line_naming_it(course, damage, said,
                                                  check, capsys):
    damage(course / "solutions" / "07_demo.ipynb")
    assert cli.main(["build", "--check"] if check else ["build"]) == 1
    captured = capsys.readouterr()
    assert captured.out == f"notebooks/solutions/07_demo.ipynb: {said}\n"
    assert captured.err == ""


def test_build_force_writes_over_a_damaged_file_not_a_folder(course, capsys):
    from kit.builder import notebooks
    learner = course / "07_demo.ipynb"
    solved = course / "solutions" / "07_demo.ipynb"
    binary(learner)
    a_folder(solved)
    assert cli.main(["build", "--force"]) == 1
    assert notebooks.damage(learner) == ""  # written anew
    assert capsys.readouterr().out.splitlines() == [
        "notebooks/07_demo.ipynb: written",
        "notebooks/solutions/07_demo.ipynb: a folder, not a notebook: build "
        "writes the notebook there: move the folder aside, then run "
        "`python -m kit build`"]


# ------------------------------------------------- accelerate launch, alone

# What accelerate 1.16's single-process launcher put in the environment for
# `accelerate launch --num_processes 2` without --multi_gpu (read from a
# launched script): MASTER_ADDR/PORT because 2 were asked for, no world size.
ALONE = {"ACCELERATE_USE_CPU": "False", "MASTER_ADDR": "127.0.0.1",
         "MASTER_PORT": "29500", "ACCELERATE_MIXED_PRECISION": "no"}
# ... and what --multi_gpu's torchrun gives each of its two processes
TWO = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500", "RANK": "0",
       "LOCAL_RANK": "0", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
       "ACCELERATE_MIXED_PRECISION": "no"}


@pytest.mark.parametrize("environ, alone", [
    (ALONE, True), ({**ALONE, "ACCELERATE_USE_CPU": "True"}, True),
    (TWO, False),
    ({**ALONE, "OMPI_COMM_WORLD_SIZE": "2"}, False),  # mpirun's processes
    ({"ACCELERATE_USE_CPU": "False"}, False),  # --num_processes 1
    ({}, False)])  # python -m kit
def test_a_launch_of_one_process_for_several_is_told_apart(environ, alone):
    from kit.runtime import launched_alone
    assert launched_alone(environ) is alone


def test_train_launched_alone_is_refused_with_the_command_that_works(
        monkeypatch, no_training, capsys):
    # before: one process trained the whole run, and nothing said so
    for name in ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE",
                 "MV2_COMM_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in ALONE.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["train", "grpo"]) == 2
    assert capsys.readouterr().err == (
        "accelerate launch started one process, not the several asked for "
        "(--num_processes without --multi_gpu): launch with `accelerate "
        "launch --multi_gpu --num_processes 2 -m kit train grpo` (on CPU "
        "too: the processes talk over gloo)\n")
