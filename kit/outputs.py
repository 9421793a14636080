"""Guards for what the kit writes: nothing it did not make is overwritten.

Every path `python -m kit` writes to (a training run's folder, grade's CSV
and HTML, bench's plot) goes through here before any work starts: `~` is
expanded, the shipped starting policies and anything the kit did not write
are refused, and the folder is created and test-written, so that a bad
path costs one line, not a finished run.
"""

import csv
import hashlib
import json
import tempfile
from pathlib import Path

from kit import models


class Refused(ValueError):
    """An output path the kit will not write to; the message is one line."""


# What a finished training run leaves in its folder: `trainer.save_model`,
# then `runs.save`. A folder holding one of these that is not a kit run
# (an unpacked Hub model, someone's project) would be overwritten.
RUN_FILES = ("config.json", "generation_config.json", "model.safetensors",
             "tokenizer.json", "tokenizer_config.json", "training_args.bin",
             "log_history.json", "plot.png")
# How a report the kit wrote can be told from someone else's file:
# gradebook.write_csv's header, gradebook.html_page's <title>, and the
# Software chunk matplotlib puts at the start of every PNG it saves.
CSV_HEADER_HAS = {"submission", "exercise", "status"}
HTML_MARK = "<title>Class report</title>"
PNG_MARK = b"Matplotlib"


def expand(path):
    """`~/run` -> the home folder's run (a shell leaves `--x=~/run` as is)."""
    return Path(path).expanduser()


def shipped_policy(path):
    """The preset whose shipped policy folder holds `path`, or "" if none.

    Shipped means below kit/policies; "policies" for the folder itself.
    """
    shipped = models.SHIPPED_POLICIES.resolve()
    path = Path(path).resolve()
    if path == shipped:
        return "policies"
    if shipped in path.parents:
        return path.relative_to(shipped).parts[0]
    return ""


def rebuild_command(preset):
    preset = preset if preset in models.PRESETS else "PRESET"
    return (f"python -m kit train sft --preset {preset} --output-dir "
            f"kit/policies/{preset}")


def rebuilds(recipe, preset=None, max_steps=None, seed=0, save_steps=None,
             resume_from_checkpoint=None, **ignored):
    """The preset whose starting policy this run rebuilds, or None.

    Only the documented command does: `train sft --preset P --output-dir
    kit/policies/P`, the course's steps and seed, nothing resumed or saved
    on the way (save_starting_policy checks the result before it ships).
    """
    if (recipe, max_steps, seed, save_steps, resume_from_checkpoint) == (
            "sft", None, 0, None, None):
        return models.check_preset(preset)
    return None


def check_run_dir(path, flag="--output-dir", rebuilds=None):
    """Refuse a training output folder that would destroy something.

    rebuilds: the preset whose starting policy this run rebuilds (the
    course's SFT recipe, default steps and seed), or None. Only that run
    may write into kit/policies, and only into its own preset's folder.
    """
    path = Path(path)
    preset = shipped_policy(path)
    if preset and (rebuilds is None or path.resolve()
                   != models.policy_path(rebuilds).resolve()):
        raise Refused(
            f"{flag} {path} is inside the kit's shipped starting policies "
            f"(kit/policies): train into runs/ instead (the default); only "
            f"`{rebuild_command(preset)}` (no other options) writes there")
    if path.exists() and not path.is_dir():
        raise Refused(f"{flag} {path} is a file: give a folder (it is "
                      f"created if missing)")
    if path.is_dir() and not _is_kit_run(path):
        clash = next((n for n in RUN_FILES if (path / n).exists()), None)
        if clash:
            raise Refused(
                f"{flag} {path} holds a {clash} the kit did not write, "
                f"which the run would overwrite: give a new or empty folder")
    return path


def _is_kit_run(folder):
    """A folder `runs.save` wrote: its log_history.json is a JSON list."""
    try:
        history = json.loads((folder / "log_history.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(history, list)


def check_report(path, flag, inputs=()):
    """Refuse a report file (CSV, HTML, PNG) that would destroy something.

    inputs: the paths the command reads (grade's notebooks and folders); a
    report may not overwrite any of them.
    """
    path = Path(path)
    if shipped_policy(path):
        raise Refused(f"{flag} {path} is inside the kit's shipped starting "
                      f"policies (kit/policies): write it somewhere else")
    if any(path.resolve() == Path(given).resolve() for given in inputs):
        raise Refused(f"{flag} {path} is one of the notebooks to grade: give "
                      f"the report a name of its own")
    if path.is_dir():
        raise Refused(f"{flag} {path} is a folder: give a file name")
    if path.exists() and path.stat().st_size and not _kit_wrote(path):
        what = ("a notebook" if _is_notebook(path)
                else "a file the kit did not write")
        raise Refused(f"{flag} {path} is {what}, and writing the report "
                      f"would overwrite it: give another name")
    return path


def _head(path):
    """The first 4 kB of a file (b"" when unreadable)."""
    try:
        with open(path, "rb") as file:
            return file.read(4096)
    except OSError:
        return b""


def _is_notebook(path):
    """An .ipynb, or JSON with an "nbformat" key, whatever its name."""
    if path.suffix == ".ipynb":
        return True
    if not _head(path).lstrip().startswith(b"{"):
        return False  # not JSON: no need to read it all
    try:
        return "nbformat" in json.loads(path.read_text("utf-8"))
    except (OSError, ValueError, TypeError):
        return False


def _kit_wrote(path):
    """Does the existing file at `path` look like a report the kit wrote?"""
    if _is_notebook(path):
        return False
    head = _head(path)
    text = head.decode("utf-8", "replace")
    if head.startswith(b"\x89PNG"):
        return PNG_MARK in head
    if HTML_MARK in text:
        return True
    header = next(csv.reader([text.splitlines()[0] if text else ""]), [])
    return CSV_HEADER_HAS <= set(header)


def prepare_folder(folder, flag, target=None):
    """Create `folder` if missing and prove a file can be written there.

    target: the file the command will write in it, named in the message.
    """
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".kit-write-"):
            pass
    except OSError as error:
        blocker = next((p for p in (folder, *folder.parents)
                        if p.exists() and not p.is_dir()), None)
        why = (f"{blocker} is a file, not a folder" if blocker
               else error.strerror or str(error))
        raise Refused(f"cannot write {flag} {target or folder}: {why}"
                      ) from None
    return folder


# ------------------------------------------------ the shipped policies

# Written beside each starting policy by the rebuild itself, so a policy
# rebuilt on another machine's arithmetic still matches; `kit doctor`
# compares the weights with it.
POLICY_RECORD = "kit_policy.json"


def policy_sha256(folder):
    """sha256 of a policy folder's model.safetensors."""
    digest = hashlib.sha256()
    with open(Path(folder) / "model.safetensors", "rb") as weights:
        for block in iter(lambda: weights.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def record_policy(folder, preset, accuracy):
    """Write kit_policy.json: the weights' sha256 and held-out accuracy."""
    record = {"preset": preset, "held_out_accuracy": accuracy,
              "model.safetensors sha256": policy_sha256(folder)}
    (Path(folder) / POLICY_RECORD).write_text(json.dumps(record, indent=1))


def policy_problem(preset):
    """Why the shipped `preset` policy is not as built, or "" when intact."""
    folder = models.policy_path(preset)
    restore = (f"restore it with `git checkout kit/policies` (installed with "
               f"pip: reinstall the kit), or rebuild it with "
               f"`{rebuild_command(preset)}`")
    try:
        record = json.loads((folder / POLICY_RECORD).read_text())
        intact = policy_sha256(folder) == record["model.safetensors sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return (f"the {preset} starting policy in {folder} is missing or "
                f"incomplete: {restore}")
    if not intact:
        return (f"the {preset} starting policy in {folder} is not the one "
                f"built for the course (model.safetensors does not match "
                f"{POLICY_RECORD}): {restore}")
    return ""
