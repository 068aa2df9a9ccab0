#!/usr/bin/env python3
"""Checks that the folders of src/chopper depend on each other in one direction only.

Every `#include "chopper/<folder>/..."` in src/chopper/<from>/ must name a folder that LAYERS allows
<from> to use (or <from> itself). The layers, bottom to top, and why each may use what it may, are in
docs/architecture.md, "Layers"; change both together. An include the layers forbid but the code
still needs is listed in EXCEPTIONS with its reason (docs/architecture.md lists them too).

Usage: scripts/check_layers.py [--root DIR]   (DIR: the repository; default: this script's parent)
Exit 0: every include goes down; 1: each offending include printed as
  file:line: from-layer -> to-layer (#include "...")
"""
import argparse
import os
import re
import sys

# folder -> the folders its files may include (besides its own). Bottom to top.
LAYERS = {
    "base": [],
    "model": ["base"],
    "devices": ["base"],
    "ingest": ["base", "model"],
    "hierarchy": ["base", "model"],
    "synth": ["base", "model", "devices"],
    "link": ["base", "model", "hierarchy"],
    "analysis": ["base", "model", "devices", "hierarchy", "link"],
    "report": ["base", "model", "devices", "hierarchy", "link", "analysis"],
    "pipeline": ["base", "model", "devices", "ingest", "hierarchy", "link", "analysis", "report"],
    "record": ["base"],
    "chakra": ["base", "model", "devices", "hierarchy", "link", "analysis"],
    "cli": ["base", "model", "devices", "ingest", "hierarchy", "link", "analysis", "report",
            "pipeline", "synth", "record", "chakra"],
}

# (file relative to src/chopper, included folder) -> why it is allowed for now.
# None today; an entry looks like
#   ("ingest/load.cpp", "link"): "why this include cannot go yet",
EXCEPTIONS = {}

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]chopper/([A-Za-z0-9_]+)/([^">]+)[">]')


def check(root):
    src = os.path.join(root, "src", "chopper")
    bad, unknown, used = [], set(), set()
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith((".cpp", ".hpp", ".h", ".inc")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            layer = rel.split("/", 1)[0]
            if layer not in LAYERS:
                unknown.add(layer)
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    to = m.group(1)
                    if to == layer or to in LAYERS[layer]:
                        continue
                    if (rel, to) in EXCEPTIONS:
                        used.add((rel, to))
                        continue
                    what = "unknown folder" if to not in LAYERS else f"{layer} -> {to}"
                    bad.append(f"src/chopper/{rel}:{n}: {what} "
                               f"(#include \"chopper/{m.group(1)}/{m.group(2)}\")")
    for layer in sorted(unknown):
        bad.append(f"src/chopper/{layer}/: a folder scripts/check_layers.py does not know: add it "
                   "to LAYERS and to docs/architecture.md, \"Layers\"")
    for rel, to in sorted(set(EXCEPTIONS) - used):
        bad.append(f"src/chopper/{rel}: the exception for its include of {to}/ is no longer "
                   "needed: remove it from EXCEPTIONS and docs/architecture.md")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = ap.parse_args()
    bad = check(args.root)
    for b in bad:
        print(b)
    if bad:
        print(f"{len(bad)} include(s) against the layers (docs/architecture.md, \"Layers\")",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
