"""The command line: `python -m kit doctor|train|build|grade|bench`."""

import argparse
import json
import re
import sys
import traceback
from pathlib import Path

from kit import i18n


def positive_int(text):
    """argparse type: a whole number >= 1 (0 and -5 are refused).

    Every count the command line takes: steps, k, repeats, and grade's
    --jobs and --timeout, where 0 would otherwise read as "no limit".
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a whole number, 1 or more, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


MOST_STEPS = 10**9  # at 1,000 steps a second: 11 days
# grade --memory: a kernel imports torch and the kit in less; the course's
# notebooks peak at 1.6 GiB of data (kit.grading.sandbox.MEMORY_LIMIT)
LEAST_MEMORY = 512 << 20
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def memory_size(text):
    """argparse type: bytes, from "4G", "512M", "6GiB" or "1500000000"."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*",
                         text.upper())
    if not match:
        raise argparse.ArgumentTypeError(
            f"must be a size such as 4G or 512M, got {text!r}")
    value = int(float(match[1]) * UNITS[match[2]])
    if value < LEAST_MEMORY:
        raise argparse.ArgumentTypeError(
            f"{text} is less than a kernel needs to import torch and the "
            "kit: give at least 512M (the course's notebooks peak at 1.6G)")
    if value > UNITS["T"]:
        raise argparse.ArgumentTypeError(f"{text} is more than a machine "
                                         "has: give at most 1T")
    return value


def step_count(text):
    """argparse type: positive_int, and no more steps than a run can take
    (99999999999999999999999 trained on, its progress bar's end in 10**16
    years)."""
    value = positive_int(text)
    if value > MOST_STEPS:
        raise argparse.ArgumentTypeError(
            f"{value} steps is more than a run can take ({MOST_STEPS:,} take "
            f"11 days at 1,000 steps a second): give at most {MOST_STEPS:,}")
    return value


# the kit's own code: errors raised here are the kit's one-line refusals
KIT_DIR = Path(__file__).resolve().parent
# what the kit raises for bad input (a config rule, a checkpoint it will not
# resume, a missing policy, a run gone non-finite, a policy outside its band,
# a full disk)
REFUSALS = (ValueError, OSError, FloatingPointError, RuntimeError)


def _raised_by_kit(error):
    """True when the innermost frame of `error` is in the kit, not a library:
    the kit's messages name the field and the fix, a library's may need its
    traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and KIT_DIR in Path(
        frames[-1].filename).resolve().parents


def _rebuilds(args):
    """The preset whose starting policy `args` rebuilds, or None."""
    from kit import outputs
    return outputs.rebuilds(args.recipe, preset=args.preset,
                            max_steps=args.max_steps, seed=args.seed,
                            save_steps=args.save_steps,
                            resume_from_checkpoint=args.resume_from_checkpoint)


def _blank(flag, text, fix):
    """One line refusing an empty or blank path, or "" when `text` is one.

    `--output-dir "$OUT"` with OUT unset passes "": taken for "not given",
    it trained into runs/RECIPE and replaced the run there; " " trained
    into a folder named " "."""
    if text is None or text.strip():
        return ""
    what = "empty (an unset variable?)" if not text else f"{text!r}, blank"
    return f"{flag} is {what}: {fix}"


def _train_refusal(args):
    """One line refusing what `train` was given before any work, or ""."""
    from kit.runtime import launched_alone
    for flag, text, fix in (
            ("--output-dir", args.output_dir, "name a folder, or leave "
             f"--output-dir out to train into runs/{args.recipe}"),
            ("--resume-from-checkpoint", args.resume_from_checkpoint,
             "name a checkpoint-N folder, or leave the option out to "
             "start afresh")):
        if _blank(flag, text, fix):
            return _blank(flag, text, fix)
    if launched_alone():  # half the run asked for, and no word of it
        return ("accelerate launch started one process, not the several "
                "asked for (--num_processes without --multi_gpu): launch "
                "with `accelerate launch --multi_gpu --num_processes 2 -m "
                f"kit train {args.recipe}` (on CPU too: the processes talk "
                "over gloo)")
    return ""


def _train(args):
    from kit import outputs
    from kit.runtime import run_path
    refusal = _train_refusal(args)
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    output_dir = run_path(outputs.expand(args.output_dir
                                         or f"runs/{args.recipe}"))
    extra = {}
    if args.steps_per_generation is not None:
        if args.recipe != "grpo":
            print("--steps-per-generation is for grpo", file=sys.stderr)
            return 2
        extra["steps_per_generation"] = args.steps_per_generation
    resume = args.resume_from_checkpoint and str(
        outputs.expand(args.resume_from_checkpoint))
    created = not output_dir.exists()
    try:
        # before any training: a path that cannot be written costs a line
        outputs.check_run_dir(output_dir, rebuilds=_rebuilds(args))
        outputs.prepare_folder(output_dir, "--output-dir")
        from kit import runs
        trainer = runs.run(args.recipe, output_dir=output_dir,
                           preset=args.preset, seed=args.seed,
                           max_steps=args.max_steps,
                           save_steps=args.save_steps,
                           resume_from_checkpoint=resume, **extra)
    except REFUSALS as error:
        if not _raised_by_kit(error):
            raise
        if created:  # refused before anything was written: leave no trace
            try:
                output_dir.rmdir()  # only if still empty
            except OSError:
                pass  # not empty, or another process got there first
        print(error, file=sys.stderr)
        return 2
    print(f"saved the model and log_history.json to {trainer.args.output_dir}")
    trainer.accelerator.end_training()  # several processes: part cleanly
    return 0


def _doctor(args):
    from kit import doctor
    return doctor.main()


def _build(args):
    from kit.builder import japanese, notebooks, paths
    if args.ja_stale:  # for translators: what to (re)translate
        blocks = japanese.ja_stale()
        print("\n".join(blocks) or "every Japanese translation is current")
        return 0
    try:
        stale, kept = notebooks.build(check=args.check, force=args.force)
    except ValueError as error:  # a source's markers: its file and cell
        print(error, file=sys.stderr)
        return 2
    for path in stale:
        print(f"{path.relative_to(paths.ROOT)}: "
              f"{_build_verb(path, path in kept, args.check)}")
    # a notebook whose source was deleted: no build updates it again
    gone = notebooks.orphans()
    for path in gone:
        source = f"notebooks/src/{path.stem}.py"
        print(f"{path.relative_to(paths.ROOT)}: its source {source} is gone: "
              f"restore it (`git checkout {source}`), or delete this "
              f"notebook from every set")
    if not stale and not gone:
        print("all notebooks match their sources")
    problems = notebooks.text_problems()  # a slip in the text fails the build
    for problem in problems:
        print(f"notebooks/src/{problem}")
    # a missing or stale translation fails --check (notebooks/src/*.ja.md)
    ja = japanese.ja_problems()
    for problem in ja:
        print(problem)
    return 1 if (args.check and (stale or ja)) or problems or kept or gone \
        else 0


def _build_verb(path, kept, check):
    """What build did, or will not do, with the stale notebook `path`."""
    from kit.builder import notebooks
    damage = kept and notebooks.damage(path)
    if damage and path.is_dir():
        return (f"{damage}: build writes the notebook there: move the "
                "folder aside, then run `python -m kit build`")
    if damage:
        return (f"{damage}: build leaves it as it is: move it aside to keep "
                "it, or `python -m kit build --force` writes the notebook "
                "over it")
    if kept:
        return ("holds edits build did not write (your answers?), so build "
                "leaves it as it is: copy it elsewhere to keep them, then "
                "`python -m kit build --force` writes it")
    return "out of date (run `python -m kit build`)" if check else "written"


def _bench(args):
    from kit import outputs
    from kit.runtime import run_path
    refusal = _blank("--plot", args.plot, "name a .png file, or leave "
                     "--plot out to write runs/bench/bench.png")
    if refusal:  # "" read as ".", the current folder
        print(refusal, file=sys.stderr)
        return 2
    plot = run_path(outputs.expand(args.plot))
    try:  # refused before the benchmark runs, not after
        outputs.check_report(plot, "--plot")
        outputs.prepare_folder(plot.parent, "--plot", plot)
    except outputs.Refused as error:
        print(error, file=sys.stderr)
        return 2
    from matplotlib.backend_bases import FigureCanvasBase
    kinds = FigureCanvasBase.get_supported_filetypes()
    if plot.suffix[1:].lower() not in kinds:  # before, after the benchmark
        suffix = plot.suffix or "file without a suffix"
        others = ", ".join("." + kind for kind in sorted(kinds))
        print(f"--plot {plot}: matplotlib writes no {suffix}: give a name "
              f"ending in .png (or {others})", file=sys.stderr)
        return 2
    from kit import bench
    try:
        bench.check_ks(args.k, args.steps)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    return bench.main(ks=args.k, repeats=args.repeats, steps=args.steps,
                      preset=args.preset, as_json=args.json, plot_path=plot)


def _report_paths(args):
    """--csv and --html, expanded and checked before any notebook runs."""
    from kit import outputs
    reports = {flag: outputs.expand(path) for flag, path in
               (("--csv", args.csv), ("--html", args.html)) if path}
    for flag, path in reports.items():
        outputs.check_report(path, flag, inputs=map(outputs.expand,
                                                     args.paths))
        outputs.prepare_folder(path.parent, flag, path)
    if len({path.resolve() for path in reports.values()}) < len(reports):
        raise outputs.Refused("--csv and --html name the same file: give "
                              "each report its own")
    return reports.get("--csv"), reports.get("--html")


def _student_paths(args, taken):
    """--gradebook and --feedback, checked like --csv before any notebook
    runs (`taken`: the other reports' files)."""
    from kit import outputs
    from kit.grading import feedback
    book = args.gradebook and outputs.expand(args.gradebook)
    folder = args.feedback and outputs.expand(args.feedback)
    inputs = [outputs.expand(p) for p in args.paths]
    if book and not feedback.wrote_gradebook(book):
        outputs.check_report(book, "--gradebook", inputs=inputs)
    if book:
        outputs.prepare_folder(book.parent, "--gradebook", book)
    if book and book.resolve() in {p.resolve() for p in taken if p}:
        raise outputs.Refused("--gradebook names the file of another "
                              "report: give it its own")
    if folder and folder.exists() and not folder.is_dir():
        raise outputs.Refused(f"--feedback {folder} is a file: give a "
                              f"folder (one file per student goes in it)")
    if folder:
        outputs.prepare_folder(folder, "--feedback")
    return book, folder


def _grade(args):
    from kit import outputs
    from kit.grading import grade, sandbox
    if args.memory:  # each walled kernel's share (kit.grading.sandbox)
        sandbox.MEMORY_LIMIT = args.memory
    try:
        csv_path, html_path = _report_paths(args)
        book, folder = _student_paths(args, (csv_path, html_path))
    except outputs.Refused as error:  # printed as grade prints its errors
        print(json.dumps({"error": str(error)}) if args.json else error)
        return 2
    # the report, and the kernels' checkers, speak args.lang
    # (kit.grading.grade)
    return grade.main(args.paths, as_json=args.json, timeout=args.timeout,
                      jobs=args.jobs, csv_path=csv_path, html_path=html_path,
                      all_cells=args.all_cells, lang=args.lang,
                      notebook_timeout=args.notebook_timeout,
                      gradebook_path=book, feedback_dir=folder)


def seed(text):
    """argparse type: a seed numpy accepts, 0 to 2**32 - 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a whole number, got {text!r}") from None
    if not 0 <= value <= 2**32 - 1:
        raise argparse.ArgumentTypeError(
            f"must be from 0 to {2**32 - 1}, got {value}")
    return value


def parser():
    # models.PRESETS, from where it is defined: no torch to wait for
    from kit.runtime import PRESETS
    top = argparse.ArgumentParser(prog="python -m kit", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)

    commands.add_parser("doctor", help="check this machine for the course")

    train = commands.add_parser("train", help="run a course configuration")
    train.add_argument("recipe", choices=["sft", "dpo", "grpo"])
    train.add_argument("--preset", choices=sorted(PRESETS), default=None,
                       help="model size (default: gpu with CUDA, else cpu)")
    train.add_argument("--max-steps", type=step_count, default=None)
    train.add_argument("--output-dir", default=None,
                       help="default: runs/RECIPE")
    train.add_argument("--seed", type=seed, default=0)
    train.add_argument("--steps-per-generation", type=step_count,
                       default=None,
                       help="grpo: optimizer steps served by one generate()")
    train.add_argument("--save-steps", type=step_count, default=None,
                       help="save a checkpoint every N optimizer steps")
    train.add_argument("--resume-from-checkpoint", default=None,
                       metavar="CHECKPOINT",
                       help="a checkpoint-N folder written by --save-steps")

    build = commands.add_parser(
        "build", help="write notebooks/ and notebooks/solutions/ from src/")
    build.add_argument("--check", action="store_true",
                       help="write nothing; fail if a notebook is stale")
    build.add_argument("--force", action="store_true",
                       help="overwrite notebooks that hold edits build did "
                            "not write (a learner's answers)")
    build.add_argument("--ja-stale", action="store_true",
                       help="list the English cells whose Japanese text "
                            "is missing or stale, with their text")

    grade = commands.add_parser(
        "grade", help="run notebooks headless: a scorecard, or a class report")
    grade.add_argument("paths", nargs="+", metavar="PATH",
                       help="notebooks or folders (every .ipynb below, "
                            "solutions/ and checkpoints skipped)")
    grade.add_argument("--json", action="store_true",
                       help="one JSON object, for instructors' scripts")
    grade.add_argument("--csv", metavar="FILE",
                       help="one row per submission x exercise")
    grade.add_argument("--html", metavar="FILE",
                       help="a self-contained class report")
    grade.add_argument("--feedback", metavar="DIR",
                       help="one page per student (HTML and Markdown): "
                            "their verdicts, hints and score only")
    grade.add_argument("--gradebook", metavar="FILE",
                       help="a CSV for an LMS: a row per student, points "
                            "per notebook, a total")
    grade.add_argument("--jobs", type=positive_int, default=None,
                       help="kernels at a time (default: CPUs, at most 4)")
    grade.add_argument("--timeout", type=positive_int, default=600,
                       help="seconds allowed per cell (default 600)")
    grade.add_argument("--notebook-timeout", type=positive_int,
                       default=1800, help="seconds allowed per notebook, "
                                          "all cells together (default 1800)")
    grade.add_argument("--memory", type=memory_size, default=None,
                       help="data each kernel behind the wall may hold "
                            "(default 4G); past it, MemoryError in its cell")
    grade.add_argument("--all-cells", action="store_true",
                       help="also run the cells tagged train or plot "
                            "(no check needs them; skipped by default)")
    grade.add_argument("--lang", choices=i18n.LANGUAGES, default=None,
                       help="the reports' and checkers' language (default: "
                            "KIT_LANG, else the notebooks' own: ja when "
                            "every one is a Japanese copy, else en)")

    bench = commands.add_parser(
        "bench", help="time GRPO's generation at several steps_per_generation")
    bench.add_argument("--k", type=positive_int, nargs="+",
                       default=[1, 2, 4, 8],
                       help="steps_per_generation values (default 1 2 4 8)")
    bench.add_argument("--repeats", type=positive_int, default=5,
                       help="timed runs per k; the table shows medians")
    bench.add_argument("--steps", type=positive_int, default=64,
                       help="optimizer steps per run")
    bench.add_argument("--preset", choices=sorted(PRESETS), default=None)
    bench.add_argument("--json", action="store_true",
                       help="print the rows as JSON objects")
    bench.add_argument("--plot", default="runs/bench/bench.png",
                       help="where to save the PNG plot")
    return top


COMMANDS = {"doctor": _doctor, "train": _train, "build": _build,
            "grade": _grade, "bench": _bench}


# the kit's own packages: a module of theirs missing is a bug, not the
# wrong Python
OURS = ("kit", "tools", "tests")


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ModuleNotFoundError as missing:
        # a Python without torch & co. (the system's, not .venv's): one
        # line that says which Python to use, not a traceback
        name = (missing.name or "").split(".")[0]
        if not name or name in OURS:
            raise
        from kit.grading.report_text import say
        print(say("wrong_python", python=sys.executable, module=name),
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
