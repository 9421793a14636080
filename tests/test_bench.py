"""The benchmark's plumbing. Speeds are measured by `kit bench`, not here."""

import json
import math

import pytest

from kit import bench

CANNED = [  # what run() returns, for the tests of main() alone
    {"steps_per_generation": 1, "generate_calls": 8,
     "generation_seconds_per_step": 0.01, "seconds_per_step": 0.03,
     "tokens_per_second": 3000.0},
    {"steps_per_generation": 4, "generate_calls": 2,
     "generation_seconds_per_step": 0.004, "seconds_per_step": 0.02,
     "tokens_per_second": 7000.0},
]


STEPS = 4  # k=2 generates twice: once more when its buffer runs out


@pytest.fixture(scope="module")
def rows():
    return bench.run(ks=(1, 2), repeats=1, steps=STEPS)


def test_rows_hold_the_documented_keys(rows):
    assert [set(row) for row in rows] == [set(bench.KEYS)] * 2
    assert [row["steps_per_generation"] for row in rows] == [1, 2]


def test_one_generate_call_per_k_steps(rows):
    for row in rows:
        k = row["steps_per_generation"]
        assert row["generate_calls"] == math.ceil(STEPS / k)


def test_timings_are_positive(rows):
    for row in rows:
        assert row["generation_seconds_per_step"] > 0
        assert row["tokens_per_second"] > 0
        # generation happens inside training, so the step costs more
        assert row["seconds_per_step"] > row["generation_seconds_per_step"]


def test_table_has_a_header_and_a_line_per_k(rows):
    lines = bench.table(rows).splitlines()
    assert lines[0].split() == ["k", "generate", "calls", "generation",
                                "s/step", "total", "s/step", "tokens/s",
                                "gen/step", "vs", "k=1"]
    assert [line.split()[0] for line in lines[1:]] == ["1", "2"]
    assert lines[1].split()[-1] == "1.00"  # k=1 against itself


def test_table_without_k1_has_no_ratio():
    lines = bench.table(CANNED[1:]).splitlines()
    assert len(lines) == 2 and lines[1].split()[-1] == "-"


def test_plot_saves_a_png(rows, tmp_path):
    figure = bench.plot(rows)
    assert len(figure.axes) == 2
    figure.savefig(tmp_path / "bench.png")
    assert (tmp_path / "bench.png").read_bytes().startswith(b"\x89PNG")


def test_main_prints_json_rows_and_nothing_else(monkeypatch, capsys,
                                                tmp_path):
    monkeypatch.setattr(bench, "run", lambda *args, **kwargs: CANNED)
    path = tmp_path / "b" / "bench.png"
    assert bench.main(as_json=True, plot_path=path) == 0
    assert json.loads(capsys.readouterr().out) == CANNED
    assert path.read_bytes().startswith(b"\x89PNG")


def test_main_prints_the_table_and_the_saving(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(bench, "run", lambda *args, **kwargs: CANNED)
    assert bench.main(plot_path=tmp_path / "bench.png") == 0
    out = capsys.readouterr().out
    assert bench.table(CANNED) in out
    assert str(tmp_path / "bench.png") in out
    assert "k=4 is 0.40 of k=1's" in out and "ideal 1/k of 0.250" in out


def test_an_unwritable_plot_path_keeps_the_table(monkeypatch, capsys,
                                                 tmp_path):
    # the plot used to be saved first: a bad path lost every measurement
    monkeypatch.setattr(bench, "run", lambda *args, **kwargs: CANNED)
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    assert bench.main(plot_path=a_file / "bench.png") == 1
    captured = capsys.readouterr()
    assert bench.table(CANNED) in captured.out
    assert len(captured.err.strip().splitlines()) == 1
    assert "could not save the plot" in captured.err


def test_zero_repeats_is_refused_before_any_run(monkeypatch):
    monkeypatch.setattr(bench, "one_run", lambda *args: pytest.fail("ran"))
    with pytest.raises(ValueError, match="repeats must be 1 or more"):
        bench.run(repeats=0)
