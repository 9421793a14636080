"""What `python -m kit` writes can never destroy what it did not write.

Each case was found by an audit: a shipped policy overwritten by a 3-step
run, a student's notebook overwritten by the class CSV, a run saved into a
folder named `~`, 25 s of training lost to a path under a file, a plot
title that broke on `$`.
"""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from kit import cli, models

def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """A copy of kit/policies that the kit takes for the shipped one."""
    copy = tmp_path / "policies"
    shutil.copytree(models.SHIPPED_POLICIES, copy)
    monkeypatch.setattr(models, "SHIPPED_POLICIES", copy)
    return copy


@pytest.fixture
def no_training(monkeypatch):
    from kit import runs
    monkeypatch.setattr(runs, "run", lambda *a, **k: pytest.fail(
        "trained although the output path was bad"))


@pytest.fixture
def no_grading(monkeypatch):
    from kit.grading import grade
    monkeypatch.setattr(grade, "main", lambda *a, **k: pytest.fail(
        "graded although the report path was bad"))


def one_line(capsys, stream="err"):
    text = getattr(capsys.readouterr(), stream).strip()
    assert len(text.splitlines()) == 1, text
    return text


# -------------------------------------------------- L1: the shipped policy

def test_a_short_run_cannot_overwrite_the_shipped_policy(shipped, capsys):
    # once: held-out accuracy 0.517 -> 0.001, and `kit doctor` still ready
    weights = shipped / "cpu" / "model.safetensors"
    before = sha256(weights)
    code = cli.main(["train", "sft", "--max-steps", "3", "--output-dir",
                     str(shipped / "cpu")])
    assert code == 2
    assert "shipped starting policies" in one_line(capsys)
    assert sha256(weights) == before


@pytest.mark.parametrize("argv", [
    ["train", "sft", "--preset", "gpu"],                 # the wrong preset
    ["train", "sft", "--preset", "cpu", "--seed", "1"],  # not as it ships
    ["train", "sft", "--preset", "cpu", "--save-steps", "5"],
    ["train", "dpo", "--preset", "cpu", "--max-steps", "1"]])
def test_only_the_documented_rebuild_writes_into_kit_policies(
        argv, shipped, no_training, capsys):
    code = cli.main(argv + ["--output-dir", str(shipped / "cpu")])
    assert code == 2
    assert ("python -m kit train sft --preset cpu --output-dir "
            "kit/policies/cpu" in one_line(capsys))


def test_a_notebook_cannot_overwrite_the_shipped_policy_either(shipped):
    from kit import runs
    before = sha256(shipped / "cpu" / "model.safetensors")
    with pytest.raises(ValueError, match="shipped starting policies"):
        runs.run("sft", output_dir=shipped / "cpu", max_steps=3)
    assert sha256(shipped / "cpu" / "model.safetensors") == before


def test_the_documented_rebuild_is_let_through(shipped):
    from kit import outputs
    args = cli.parser().parse_args(
        ["train", "sft", "--preset", "cpu", "--output-dir",
         "kit/policies/cpu"])
    assert cli._rebuilds(args) == "cpu"
    outputs.check_run_dir(shipped / "cpu", rebuilds="cpu")  # no refusal
    with pytest.raises(outputs.Refused):
        outputs.check_run_dir(shipped / "gpu", rebuilds="cpu")


def test_the_shipped_policies_match_their_records():
    from kit import outputs
    for preset in models.PRESETS:
        assert outputs.policy_problem(preset) == ""
        record = json.loads((models.policy_path(preset)
                             / outputs.POLICY_RECORD).read_text())
        assert 0.3 <= record["held_out_accuracy"] <= 0.6


def test_doctor_says_a_changed_policy_is_a_problem(shipped, capsys):
    from kit import doctor
    assert doctor.main() == 0
    capsys.readouterr()
    weights = shipped / "cpu" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    assert doctor.main() == 1
    captured = capsys.readouterr()
    assert "PROBLEM: the cpu starting policy" in captured.err
    assert "git checkout kit/policies" in captured.err
    assert "not ready" in captured.out


# ------------------------------------------------ L2: files it did not write

@pytest.fixture
def class_of_two(tmp_path):
    notebooks = []
    for name in ("alice", "bob"):
        path = tmp_path / f"{name}.ipynb"
        path.write_text(json.dumps({"nbformat": 4, "cells": [],
                                    "metadata": {}, "nbformat_minor": 5}))
        notebooks.append(path)
    return notebooks


def test_grade_csv_onto_a_graded_notebook_is_refused(class_of_two,
                                                     no_grading, capsys):
    alice, bob = class_of_two
    before = alice.read_bytes()
    assert cli.main(["grade", "--csv", str(alice), str(alice), str(bob)]) == 2
    assert "one of the notebooks to grade" in one_line(capsys, "out")
    assert alice.read_bytes() == before


def test_grade_reports_onto_other_peoples_files_are_refused(
        tmp_path, class_of_two, no_grading, capsys):
    alice, bob = class_of_two
    marks = tmp_path / "marks.csv"
    marks.write_text("name,score\nalice,10\n")
    page = tmp_path / "index.html"
    page.write_text("<html><title>My site</title></html>")
    for argv, says in (
            (["--csv", str(bob)], "is a notebook"),
            (["--csv", str(marks)], "a file the kit did not write"),
            (["--html", str(page)], "a file the kit did not write"),
            (["--csv", str(tmp_path)], "is a folder"),
            (["--csv", str(tmp_path / "r"), "--html", str(tmp_path / "r")],
             "name the same file")):
        assert cli.main(["grade", str(alice), *argv]) == 2
        assert says in one_line(capsys, "out")
    assert marks.read_text() == "name,score\nalice,10\n"
    assert cli.main(["grade", str(alice), "--json", "--csv", str(bob)]) == 2
    assert "is a notebook" in json.loads(one_line(capsys, "out"))["error"]


def test_grade_may_rewrite_its_own_reports(tmp_path, class_of_two,
                                           monkeypatch):
    from kit.grading import grade, gradebook
    card = {"submission": "alice", "notebook": "03", "error": None,
            "exercises": [], "passed": 0, "total": 0}
    csv_path, html_path = tmp_path / "class.csv", tmp_path / "class.html"
    gradebook.write_csv([card], gradebook.summarise([card]), csv_path)
    gradebook.write_html([card], gradebook.summarise([card]), html_path)
    (tmp_path / "empty.csv").write_text("")
    seen = {}
    monkeypatch.setattr(grade, "main", lambda *a, **k: seen.update(k) or 0)
    for csv_name in ("class.csv", "empty.csv", "new.csv"):
        assert cli.main(["grade", str(class_of_two[0]), "--csv",
                         str(tmp_path / csv_name), "--html",
                         str(html_path)]) == 0
        assert seen["csv_path"] == tmp_path / csv_name


def test_train_into_a_folder_holding_someone_elses_model_is_refused(
        tmp_path, no_training, capsys):
    hub_model = tmp_path / "downloaded"
    hub_model.mkdir()
    (hub_model / "config.json").write_text("{}")
    assert cli.main(["train", "sft", "--output-dir", str(hub_model)]) == 2
    assert "config.json the kit did not write" in one_line(capsys)


def test_a_kit_run_folder_may_be_trained_into_again(tmp_path):
    from kit import outputs
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")
    (run / "log_history.json").write_text("[]")
    outputs.check_run_dir(run)  # no refusal


def test_bench_plot_onto_a_notebook_is_refused_before_the_benchmark(
        class_of_two, monkeypatch, capsys):
    from kit import bench
    monkeypatch.setattr(bench, "run", lambda *a, **k: pytest.fail("ran"))
    assert cli.main(["bench", "--plot", str(class_of_two[0])]) == 2
    assert "is a notebook" in one_line(capsys)


# ------------------------------------------- S10, L3: paths that go astray

def test_a_tilde_output_dir_is_the_home_folder(tmp_path, monkeypatch,
                                              capsys):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    # --output-dir=~/run: the shell leaves the ~ alone after `=`
    code = cli.main(["train", "sft", "--max-steps", "1",
                     "--output-dir=~/run"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert (home / "run" / "model.safetensors").exists()
    assert not (work / "~").exists()
    assert f"to {home / 'run'}" in captured.out


def test_an_output_dir_under_a_file_is_refused_before_training(
        tmp_path, no_training, capsys):
    (tmp_path / "f").write_text("a file")
    assert cli.main(["train", "sft", "--max-steps", "1", "--output-dir",
                     str(tmp_path / "f" / "run")]) == 2
    assert one_line(capsys) == (f"cannot write --output-dir "
                                f"{tmp_path / 'f' / 'run'}: {tmp_path / 'f'}"
                                f" is a file, not a folder")


def test_report_parents_under_a_file_are_refused_before_any_work(
        tmp_path, class_of_two, no_grading, monkeypatch, capsys):
    from kit import bench
    monkeypatch.setattr(bench, "run", lambda *a, **k: pytest.fail("ran"))
    (tmp_path / "f").write_text("a file")
    for argv, stream in (
            (["grade", str(class_of_two[0]), "--csv",
              str(tmp_path / "f" / "class.csv")], "out"),
            (["grade", str(class_of_two[0]), "--html",
              str(tmp_path / "f" / "class.html")], "out"),
            (["bench", "--plot", str(tmp_path / "f" / "bench.png")], "err")):
        assert cli.main(argv) == 2
        assert one_line(capsys, stream) == (
            f"cannot write {argv[-2]} {argv[-1]}: {tmp_path / 'f'} is a "
            f"file, not a folder")


def test_report_folders_are_made_before_grading(tmp_path, class_of_two,
                                               monkeypatch):
    from kit.grading import grade
    csv_path = tmp_path / "reports" / "week 3" / "class.csv"
    monkeypatch.setattr(grade, "main", lambda *a, **k: int(
        not csv_path.parent.is_dir()))
    assert cli.main(["grade", str(class_of_two[0]), "--csv",
                     str(csv_path)]) == 0


def test_a_run_named_with_dollars_saves_its_plot(tmp_path, capsys):
    # once: matplotlib's ParseSyntaxException after training, and no plot
    out = tmp_path / "cost_$5_$x"
    code = cli.main(["train", "sft", "--max-steps", "1", "--output-dir",
                     str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert (out / "plot.png").read_bytes().startswith(b"\x89PNG")
    assert "could not draw" not in err
