"""The command line: `python -m kit doctor|train|build|grade|bench`."""

import argparse
import sys
from pathlib import Path


def positive_int(text):
    """argparse type: a whole number >= 1 (0 and -5 are refused)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _train(args):
    output_dir = Path(args.output_dir or f"runs/{args.recipe}")
    if output_dir.exists() and not output_dir.is_dir():
        print(f"--output-dir {output_dir} is a file: give a folder (it is "
              f"created if missing)", file=sys.stderr)
        return 2
    from kit import recipes  # after the checks: refusing takes no time
    extra = {}
    if args.steps_per_generation is not None:
        if args.recipe != "grpo":
            print("--steps-per-generation is for grpo", file=sys.stderr)
            return 2
        extra["steps_per_generation"] = args.steps_per_generation
    trainer = recipes.run(args.recipe, output_dir=output_dir,
                          preset=args.preset, seed=args.seed,
                          max_steps=args.max_steps, save_steps=args.save_steps,
                          resume_from_checkpoint=args.resume_from_checkpoint,
                          **extra)
    print(f"saved the model and log_history.json to {trainer.args.output_dir}")
    trainer.accelerator.end_training()  # several processes: part cleanly
    return 0


def _doctor(args):
    from kit import doctor
    return doctor.main()


def _build(args):
    from kit import course
    stale = course.build(check=args.check)
    for path in stale:
        verb = ("out of date (run `python -m kit build`)" if args.check
                else "written")
        print(f"{path.relative_to(course.ROOT)}: {verb}")
    if not stale:
        print("all notebooks match their sources")
    problems = course.text_problems()  # a slip in the text fails the build
    for problem in problems:
        print(f"notebooks/src/{problem}")
    return 1 if (args.check and stale) or problems else 0


def _bench(args):
    from kit import bench
    return bench.main(ks=args.k, repeats=args.repeats, steps=args.steps,
                      preset=args.preset, as_json=args.json,
                      plot_path=args.plot)


def _grade(args):
    from kit import grade
    return grade.main(args.paths, as_json=args.json, timeout=args.timeout,
                      jobs=args.jobs, csv_path=args.csv, html_path=args.html)


def _at_least_one(text):
    """argparse type: a whole number >= 1 (0 would mean no limit)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def parser():
    top = argparse.ArgumentParser(prog="python -m kit", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)

    commands.add_parser("doctor", help="check this machine for the course")

    train = commands.add_parser("train", help="run a course configuration")
    train.add_argument("recipe", choices=["sft", "dpo", "grpo"])
    train.add_argument("--preset", choices=["cpu", "gpu"], default=None,
                       help="model size (default: gpu with CUDA, else cpu)")
    train.add_argument("--max-steps", type=positive_int, default=None)
    train.add_argument("--output-dir", default=None,
                       help="default: runs/RECIPE")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--steps-per-generation", type=positive_int,
                       default=None,
                       help="grpo: optimizer steps served by one generate()")
    train.add_argument("--save-steps", type=positive_int, default=None,
                       help="save a checkpoint every N optimizer steps")
    train.add_argument("--resume-from-checkpoint", default=None,
                       metavar="CHECKPOINT",
                       help="a checkpoint-N folder written by --save-steps")

    build = commands.add_parser(
        "build", help="write notebooks/ and notebooks/solutions/ from src/")
    build.add_argument("--check", action="store_true",
                       help="write nothing; fail if a notebook is stale")

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
    grade.add_argument("--jobs", type=_at_least_one, default=None,
                       help="kernels at a time (default: CPUs, at most 4)")
    grade.add_argument("--timeout", type=_at_least_one, default=600,
                       help="seconds allowed per cell (default 600)")

    bench = commands.add_parser(
        "bench", help="time GRPO's generation at several steps_per_generation")
    bench.add_argument("--k", type=positive_int, nargs="+",
                       default=[1, 2, 4, 8],
                       help="steps_per_generation values (default 1 2 4 8)")
    bench.add_argument("--repeats", type=positive_int, default=5,
                       help="timed runs per k; the table shows medians")
    bench.add_argument("--steps", type=positive_int, default=64,
                       help="optimizer steps per run")
    bench.add_argument("--preset", choices=["cpu", "gpu"], default=None)
    bench.add_argument("--json", action="store_true",
                       help="print the rows as JSON objects")
    bench.add_argument("--plot", default="runs/bench/bench.png",
                       help="where to save the PNG plot")
    return top


COMMANDS = {"doctor": _doctor, "train": _train, "build": _build,
            "grade": _grade, "bench": _bench}


def main(argv=None):
    args = parser().parse_args(argv)
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
