#!/usr/bin/env python3
"""Fails when a tracked source file is longer than the style limit (DEVELOPERS.md: no file
over 800 lines; split it by topic). Usage: file_length.py ROOT [--max N]"""
import argparse
import os
import sys

from tracked import tracked_files

SUFFIXES = (".cpp", ".h", ".comp", ".qml", ".py", ".sh")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--max", type=int, default=800)
    args = ap.parse_args()
    too_long = []
    checked = 0
    for rel in tracked_files(args.root):
        if not rel.endswith(SUFFIXES):
            continue
        path = os.path.join(args.root, rel)
        if not os.path.isfile(path):  # deleted in the work tree, not yet committed
            continue
        with open(path, "rb") as f:
            n = sum(1 for _ in f)
        checked += 1
        if n > args.max:
            too_long.append((n, rel))
    if checked == 0:
        print(f"no source files found under {args.root}", file=sys.stderr)
        return 1
    for n, rel in sorted(too_long, reverse=True):
        print(f"{rel}: {n} lines, over the limit of {args.max}: split it by topic "
              "(DEVELOPERS.md, Style)", file=sys.stderr)
    if too_long:
        return 1
    print(f"{checked} source files, none over {args.max} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
