import sys


def print(*values, file=None):
    return file


stream = print(file=sys.stderr)
