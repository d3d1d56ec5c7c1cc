"""`python -m grader COMMAND`: a thin layer over the modules that do the work."""

import argparse
import sys


def cmd_stubs(args):
    from grader.stubs import write_stubs

    print(f"wrote {write_stubs()}")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("stubs", help="regenerate assignment/attention.py from solutions/").set_defaults(run=cmd_stubs)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
