"""The command line: `python -m kit doctor|train|build|grade|bench`."""

import argparse
import sys


def _train(args):
    from kit import recipes
    extra = {}
    if args.steps_per_generation is not None:
        if args.recipe != "grpo":
            print("--steps-per-generation is for grpo", file=sys.stderr)
            return 2
        extra["steps_per_generation"] = args.steps_per_generation
    trainer = recipes.run(args.recipe, output_dir=args.output_dir,
                          preset=args.preset, seed=args.seed,
                          max_steps=args.max_steps, **extra)
    print(f"saved the model and log_history.json to {trainer.args.output_dir}")
    return 0


def _doctor(args):
    from kit import doctor
    return doctor.main()


def _build(args):
    from kit import course
    stale = course.build(check=args.check)
    for path in stale:
        verb = "out of date (run `python -m kit build`)" if args.check else "written"
        print(f"{path.relative_to(course.ROOT)}: {verb}")
    if not stale:
        print("all notebooks match their sources")
    return 1 if args.check and stale else 0


def _grade(args):
    from kit import grade
    return grade.main(args.notebook, as_json=args.json, timeout=args.timeout)


def parser():
    top = argparse.ArgumentParser(prog="python -m kit", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)

    commands.add_parser("doctor", help="check this machine for the course")

    train = commands.add_parser("train", help="run a course configuration")
    train.add_argument("recipe", choices=["sft", "dpo", "grpo"])
    train.add_argument("--preset", choices=["cpu", "gpu"], default=None,
                       help="model size (default: gpu with CUDA, else cpu)")
    train.add_argument("--max-steps", type=int, default=None)
    train.add_argument("--output-dir", default=None,
                       help="default: runs/RECIPE")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--steps-per-generation", type=int, default=None,
                       help="grpo: optimizer steps served by one generate()")

    build = commands.add_parser(
        "build", help="write notebooks/ and notebooks/solutions/ from src/")
    build.add_argument("--check", action="store_true",
                       help="write nothing; fail if a notebook is stale")

    grade = commands.add_parser(
        "grade", help="run a notebook headless and print a scorecard")
    grade.add_argument("notebook")
    grade.add_argument("--json", action="store_true",
                       help="one JSON object, for instructors' scripts")
    grade.add_argument("--timeout", type=int, default=600,
                       help="seconds allowed per cell (default 600)")
    return top


COMMANDS = {"doctor": _doctor, "train": _train, "build": _build,
            "grade": _grade}


def main(argv=None):
    args = parser().parse_args(argv)
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
