"""The command line: exit codes and what each command leaves behind."""

import json
import subprocess
import sys

import pytest

from kit import cli, doctor


def kit(*args, cwd=None):
    """`python -m kit ARGS` in a process of its own: the entry point."""
    return subprocess.run([sys.executable, "-m", "kit", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


# The other tests call cli.main in this process: a `python -m kit` process
# spends ~7 s importing torch and transformers before its first line.

def test_doctor_reports_and_succeeds(capsys):
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    for line in ("torch", "transformers", "device", "preset", "policy", "hub"):
        assert line in out
    assert "offline" in out  # the tests run with HF_HUB_OFFLINE=1


def test_doctor_fails_clearly_when_a_package_is_missing(monkeypatch, capsys):
    monkeypatch.setitem(doctor.REQUIRED, "no-such-package-xyz", "1.0")
    assert doctor.main() == 1
    err = capsys.readouterr().err
    assert "no-such-package-xyz is not installed" in err
    assert "make setup" in err


def test_doctor_fails_when_a_package_is_too_old(monkeypatch, capsys):
    monkeypatch.setitem(doctor.REQUIRED, "transformers", "999.0")
    assert doctor.main() == 1
    assert "too old" in capsys.readouterr().err


def test_train_sft_saves_model_and_log_history(tmp_path, capsys):
    out = tmp_path / "sft"
    assert cli.main(["train", "sft", "--max-steps", "2", "--output-dir",
                     str(out), "--seed", "1"]) == 0, capsys.readouterr().err
    assert (out / "model.safetensors").exists()
    assert (out / "tokenizer.json").exists()
    assert (out / "plot.png").read_bytes().startswith(b"\x89PNG")
    history = json.loads((out / "log_history.json").read_text())
    assert history[-1]["step"] == 2
    assert "train_loss" in history[-1]


@pytest.mark.parametrize("argv", [["train", "ppo"],
                                  ["train", "sft", "--preset", "tpu"]])
def test_train_rejects_unknown_recipes_and_presets(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_doctor_needs_the_transformers_with_loss_is_scaled_for_ga(
        monkeypatch, capsys):
    # 5.18 silently ignores Trainer.loss_is_scaled_for_ga (5.19 added it)
    installed = doctor._installed
    monkeypatch.setattr(doctor, "_installed", lambda package: "5.18.0"
                        if package == "transformers" else installed(package))
    assert doctor.main() == 1
    captured = capsys.readouterr()
    assert ("transformers 5.18.0 is too old, the course needs >= 5.19"
            in captured.err)
    assert "not ready" in captured.out


def test_doctor_and_pyproject_share_the_transformers_floor():
    import tomllib
    from pathlib import Path
    pyproject = Path(__file__).parents[1] / "pyproject.toml"
    dependencies = tomllib.loads(pyproject.read_text())["project"][
        "dependencies"]
    assert f"transformers>={doctor.REQUIRED['transformers']}" in dependencies


@pytest.mark.parametrize("argv", [
    ["train", "sft", "--max-steps", "-5"], ["train", "sft", "--max-steps", "0"],
    ["train", "grpo", "--save-steps", "0"],
    ["train", "grpo", "--steps-per-generation", "0"],
    ["bench", "--repeats", "0"], ["bench", "--steps", "-1"],
    ["bench", "--k", "1", "0"]])
def test_counts_below_one_are_refused_before_anything_runs(argv, capsys):
    # --max-steps -5 once planned 6744 steps, and 0 trained one
    with pytest.raises(SystemExit) as exit_:
        cli.parser().parse_args(argv)
    assert exit_.value.code == 2
    assert "must be 1 or more" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["train", "sft", "--max-steps", "99999999999999999999999"],
    ["train", "grpo", "--save-steps", "1000000001"],
    ["train", "grpo", "--steps-per-generation", "10000000000"]])
def test_more_steps_than_a_run_can_take_are_refused(argv, capsys):
    # N81: the first trained on, its progress bar ending in 10**16 years
    with pytest.raises(SystemExit) as exit_:
        cli.parser().parse_args(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.endswith(f"{argv[-1]} steps is more than a run can take "
                        "(1,000,000,000 take 11 days at 1,000 steps a "
                        "second): give at most 1,000,000,000")
    assert cli.parser().parse_args(argv[:-1] + ["1000000000"])


def test_train_into_a_file_is_one_line_not_a_traceback(tmp_path):
    # the one test of the entry point itself: main's exit code and a stderr
    # that holds nothing else (no import-time warnings), as a learner sees it
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder")
    result = kit("train", "sft", "--max-steps", "1", "--output-dir",
                 str(a_file))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"--output-dir {a_file} is a file: give a folder (it is created "
        f"if missing)")


@pytest.mark.parametrize("seed", ["-1", str(2**32), "1.5"])
def test_a_seed_numpy_cannot_take_is_refused_by_argparse(seed, capsys):
    # -1 once trained nothing and ended in numpy's "Seed must be between 0
    # and 2**32 - 1" traceback
    with pytest.raises(SystemExit) as exit_:
        cli.parser().parse_args(["train", "sft", "--seed", seed])
    assert exit_.value.code == 2
    assert "argument --seed: must be" in capsys.readouterr().err
    assert cli.parser().parse_args(
        ["train", "sft", "--seed", str(2**32 - 1)]).seed == 2**32 - 1


def test_a_kit_refusal_during_train_setup_is_one_line(tmp_path, monkeypatch,
                                                      capsys):
    from kit import models, runs
    # any of the kit's own ValueErrors, here the preset rule
    monkeypatch.setattr(runs, "run",
                        lambda *a, **k: models.check_preset("tpu"))
    out = tmp_path / "run"
    assert cli.main(["train", "sft", "--output-dir", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (
        "preset must be one of ['cpu', 'gpu'], got 'tpu'")
    assert not out.exists()  # the folder made for the run is gone again


def test_a_library_error_keeps_its_traceback(tmp_path, monkeypatch):
    from kit import runs

    def library_bug(*args, **kwargs):
        raise ValueError("not the kit's")
    monkeypatch.setattr(runs, "run", library_bug)
    with pytest.raises(ValueError, match="not the kit's"):
        cli.main(["train", "sft", "--output-dir", str(tmp_path / "run")])


def test_resuming_from_a_folder_no_kit_trainer_saved_is_one_line(tmp_path,
                                                                 capsys):
    # the long-standing traceback of `kit train` for a trainer's ValueError
    # (in this process, a traceback is the ValueError escaping cli.main)
    empty = tmp_path / "not-a-checkpoint"
    empty.mkdir()
    assert cli.main(["train", "grpo", "--max-steps", "1", "--output-dir",
                     str(tmp_path / "run"), "--resume-from-checkpoint",
                     str(empty)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(
        f"cannot resume from {empty}: ")


@pytest.mark.parametrize("argv, said", [
    # N83: a traceback after the warm-up run
    (["bench", "--k", "100000", "--repeats", "1", "--steps", "1"],
     "bench: --k 100000 needs 100000 prompts a generation (one prompt a "
     "step, k steps), and the workload has 9000: give k at most 9000"),
    # N84: the whole benchmark ran, then "Format 'txt' is not supported"
    (["bench", "--plot", "x.txt"], "--plot x.txt: matplotlib writes no .txt: "
     "give a name ending in .png (or .avif, .eps, "),
])
def test_a_bench_that_cannot_run_or_plot_is_refused_before_it_runs(
        argv, said, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from kit import bench
    monkeypatch.setattr(bench, "one_run", lambda *a, **k: pytest.fail(
        "the benchmark ran"))
    assert cli.main(argv) == 2
    assert capsys.readouterr().err.startswith(said)
