"""The benchmark's plumbing. Speeds are measured by `kit bench`, not here."""

import json
import math

import pytest

from kit import bench


@pytest.fixture(scope="module")
def rows():
    return bench.run(ks=(1, 4), repeats=1, steps=8)


def test_rows_hold_the_documented_keys(rows):
    assert [set(row) for row in rows] == [set(bench.KEYS)] * 2
    assert [row["steps_per_generation"] for row in rows] == [1, 4]


def test_generate_calls_follow_the_law(rows):
    for row in rows:
        assert row["generate_calls"] == math.ceil(8 / row["steps_per_generation"])
    for row in rows:
        assert row["generation_seconds_per_step"] > 0
        assert row["seconds_per_step"] > row["generation_seconds_per_step"]
        assert row["tokens_per_second"] > 0


def test_table_and_plot(rows, tmp_path):
    text = bench.table(rows)
    assert text.splitlines()[0].split()[:3] == ["k", "generate", "calls"]
    assert len(text.splitlines()) == 3
    assert text.splitlines()[1].split()[-1] == "1.00"  # k=1 against itself
    figure = bench.plot(rows)
    figure.savefig(tmp_path / "bench.png")
    assert (tmp_path / "bench.png").read_bytes().startswith(b"\x89PNG")


def test_main_prints_json_rows(monkeypatch, capsys, tmp_path, rows):
    monkeypatch.setattr(bench, "run", lambda *args, **kwargs: rows)
    assert bench.main(as_json=True, plot_path=tmp_path / "b" / "bench.png") == 0
    assert json.loads(capsys.readouterr().out) == rows
    assert (tmp_path / "b" / "bench.png").exists()


def test_main_prints_the_table_and_the_saving(monkeypatch, capsys, tmp_path,
                                              rows):
    monkeypatch.setattr(bench, "run", lambda *args, **kwargs: rows)
    bench.main(plot_path=tmp_path / "bench.png")
    out = capsys.readouterr().out
    assert "generate calls" in out and "ideal 0.250" in out
