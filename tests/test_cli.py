"""The command line: exit codes and what each command leaves behind."""

import json
import subprocess
import sys

from kit import doctor


def kit(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "kit", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_doctor_reports_and_succeeds():
    result = kit("doctor")
    assert result.returncode == 0, result.stderr
    for line in ("torch", "transformers", "device", "preset", "policy", "hub"):
        assert line in result.stdout
    assert "offline" in result.stdout  # the tests run with HF_HUB_OFFLINE=1


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


def test_train_sft_saves_model_and_log_history(tmp_path):
    out = tmp_path / "sft"
    result = kit("train", "sft", "--max-steps", "4", "--output-dir", str(out),
                 "--seed", "1")
    assert result.returncode == 0, result.stderr
    assert (out / "model.safetensors").exists()
    assert (out / "tokenizer.json").exists()
    assert (out / "plot.png").read_bytes().startswith(b"\x89PNG")
    history = json.loads((out / "log_history.json").read_text())
    assert history[-1]["step"] == 4
    assert "train_loss" in history[-1]


def test_train_rejects_unknown_recipes_and_presets():
    assert kit("train", "ppo").returncode == 2
    assert kit("train", "sft", "--preset", "tpu").returncode == 2
