"""The command line: `python -m kit doctor|train|build|grade|bench`."""

import argparse
import sys


def _train(args):
    from kit import recipes
    trainer = recipes.run(args.recipe, output_dir=args.output_dir,
                          preset=args.preset, seed=args.seed,
                          max_steps=args.max_steps)
    print(f"saved the model and log_history.json to {trainer.args.output_dir}")
    return 0


def _doctor(args):
    from kit import doctor
    return doctor.main()


def parser():
    top = argparse.ArgumentParser(prog="python -m kit", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)

    commands.add_parser("doctor", help="check this machine for the course")

    train = commands.add_parser("train", help="run a course configuration")
    train.add_argument("recipe", choices=["sft"])
    train.add_argument("--preset", choices=["cpu", "gpu"], default=None,
                       help="model size (default: gpu with CUDA, else cpu)")
    train.add_argument("--max-steps", type=int, default=None)
    train.add_argument("--output-dir", default=None,
                       help="default: runs/RECIPE")
    train.add_argument("--seed", type=int, default=0)
    return top


COMMANDS = {"doctor": _doctor, "train": _train}


def main(argv=None):
    args = parser().parse_args(argv)
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
