"""Submissions read as the student's (issue 64): a hard link to a file
the student may not read is refused like a symbolic link, no error quotes
what a file holds, and a student's folder that is a link is one refused
row, not a silence."""

import json
import os

from test_grade import kit_grade

SECRET = "INSTRUCTOR-ONLY: api_key=hunter2"


def cards(result):
    return {card["submission"]: card
            for card in json.loads(result.stdout)["submissions"]}


def test_a_hard_link_is_refused_and_its_file_never_quoted(tmp_path):
    private = tmp_path / "private.txt"
    private.write_text(SECRET)
    (tmp_path / "class" / "amy").mkdir(parents=True)
    os.link(private, tmp_path / "class" / "amy" / "03.ipynb")
    (tmp_path / "class" / "ben").mkdir()
    (tmp_path / "class" / "ben" / "03.ipynb").write_text(SECRET)
    result = kit_grade(tmp_path / "class", "--json")
    found = cards(result)
    assert "hard link" in found["amy/03.ipynb"]["error"]
    assert found["ben/03.ipynb"]["error"].startswith("not a notebook")
    assert "api_key" not in result.stdout + result.stderr  # nor hunter2


def test_a_student_folder_that_is_a_link_is_one_refused_row(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "03.ipynb").write_text("{}")
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "cat").symlink_to(elsewhere)
    result = kit_grade(tmp_path / "class", "--json")
    found = cards(result)
    assert list(found) == ["cat"]
    assert "symbolic link" in found["cat"]["error"]


def test_a_client_whose_kernel_is_gone_cleans_up_quietly():
    # nbclient registers this at exit; after a dead kernel or a Ctrl-C it
    # printed "Exception ignored in atexit callback ... AssertionError"
    import nbformat

    from kit.grading.grade import GradingClient
    client = GradingClient(nbformat.v4.new_notebook())
    client.km = None
    client._cleanup_kernel()  # no AssertionError
