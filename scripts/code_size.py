#!/usr/bin/env python3
"""Lists the source files over M lines and the C++ functions over N lines in src/.

The size rules of the project (docs/architecture.md, "Exceptions to the size rules"): no function
over ~120 lines, no file over ~800 lines without a reason. This prints what is over, largest first,
so the list in docs/architecture.md can be checked against the code.

Functions are found by a brace-matching scanner, not a compiler: comments, string and character
literals (raw strings included) and preprocessor lines are blanked, then every `{` at namespace or
class scope whose text since the previous `;`, `{` or `}` looks like a signature (a parenthesised
parameter list, not after `=`, `class`, `struct`, `enum`, `union` or `namespace`) opens a function
whose body runs to its matching `}`. Constructor initialiser lists (`) : a_{x}, b_(y) {`) are
followed to the body. A function's length is counted from the first line of its signature to its
closing brace. Lambdas and local classes count towards the function they are in.

Usage: scripts/code_size.py [--functions N] [--files M] [--root DIR] [--check DOC]
       (defaults 120 and 800; DIR: the repository, default this script's parent)
Without --check it exits 0: it measures, it does not judge. With --check DOC (docs/architecture.md)
it compares the measurements with DOC's tables of exceptions, rows `| lines | `file` | ...` and
`| lines | `file`: `function` | ...`, and exits 1 naming each file or function that is over and not
listed, listed with a size more than 5% off, or listed and no longer over.
"""
import argparse
import os
import re
import sys

EXTS = (".cpp", ".hpp", ".h", ".inc", ".cc")


def blank(text):
    """Text with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out = list(text)
    i, n = 0, len(text)

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c in " \t":
            i += 1
            continue
        if at_line_start and c == "#":  # preprocessor line, with its continuations
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            wipe(i, j)
            i = j
            continue
        at_line_start = c == "\n"
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j)
            i = j
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and (i == 0 or not (
                text[i - 1].isalnum() or text[i - 1] == "_") or text[i - 1] in "uU8L"):
            m = re.match(r'R"([^()\\ ]{0,16})\(', text[i:])
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            end = n if end < 0 else end + len(m.group(1)) + 2
            wipe(i + 1, end)
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator 1'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            wipe(i + 1, min(j, n))
            i = j + 1
        else:
            i += 1
    return "".join(out)


def strip_templates(head):
    """`template <...>` prefixes removed (their `class` is no class definition)."""
    while True:
        m = re.search(r"\btemplate\s*<", head)
        if not m:
            return head
        depth, j = 1, m.end()
        while j < len(head) and depth:
            depth += {"<": 1, ">": -1}.get(head[j], 0)
            j += 1
        head = head[:m.start()] + " " + head[j:]


def top_level(s):
    """s with everything inside (), [] and <> blanked: what is at its top level."""
    out, depth = [], 0
    for ch in s:
        if ch in "([":
            depth += 1
            out.append(ch if depth == 1 else " ")
        elif ch in ")]":
            out.append(ch if depth == 1 else " ")
            depth = max(0, depth - 1)
        else:
            out.append(ch if depth == 0 else " ")
    return "".join(out)


MACRO_LINE = re.compile(r"^[ \t]*[A-Z_][A-Z0-9_]*[ \t]*(\([^\n]*\))?[ \t]*$", re.M)


def strip_macro_lines(head):
    """Lines that are only an upper-case macro invocation with no `;` (a pragma or attribute push
    before a namespace) blanked, keeping offsets."""
    return MACRO_LINE.sub(lambda m: " " * len(m.group(0)), head)


def kind_of(head):
    h = strip_templates(strip_macro_lines(head)).strip()
    if re.match(r"(inline\s+)?namespace\b", h) or re.match(r"extern\s*\"\s*\"", h) or h == "extern":
        return "namespace", None
    top = top_level(h)
    paren = top.find("(")
    before = top if paren < 0 else top[:paren]
    if re.search(r"\b(class|struct|union|enum)\b", before):
        return "class", None
    if paren < 0:
        return "other", None
    if "=" in before.replace("operator", "") and not re.search(r"\boperator\s*[=!<>+\-*/%^&|]*=", h):
        return "other", None
    m = re.search(r"((?:[A-Za-z_~][\w:~]*::)*(?:operator\s*(?:\(\)|[^\s(]+)|~?[A-Za-z_]\w*))\s*$",
                  h[:paren])
    return "function", (m.group(1) if m else h[:paren].split()[-1] if h[:paren].split() else "?")


def functions(text):
    """(name, first line, last line) of every function defined at namespace or class scope."""
    b = blank(text)
    line_of = []
    ln = 1
    for ch in b:
        line_of.append(ln)
        if ch == "\n":
            ln += 1
    found = []
    scopes = []  # "namespace" | "class"
    head_start = 0
    i, n = 0, len(b)
    while i < n:
        c = b[i]
        if c in ";}":
            if c == "}" and scopes:
                scopes.pop()
            head_start = i + 1
            i += 1
            continue
        if c != "{":
            i += 1
            continue
        head = b[head_start:i]
        kind, name = kind_of(head)
        if kind == "function":
            # A constructor's initialiser list: `{` after an identifier or `>` initialises a member.
            top = top_level(strip_templates(head))
            close = top.rfind(")")
            after = top[close + 1:] if close >= 0 else ""
            if re.search(r"(^|[^:]):([^:]|$)", after) and re.search(r"[\w>]\s*$", head):
                i = match_brace(b, i) + 1
                continue
            end = match_brace(b, i)
            lead = strip_macro_lines(head)
            first = head_start + (len(lead) - len(lead.lstrip()))
            found.append((name, line_of[first], line_of[min(end, n - 1)]))
            head_start = end + 1
            i = end + 1
            continue
        if kind == "other":
            end = match_brace(b, i)
            i = end + 1
            continue  # an initialiser: the head goes on to its `;`
        scopes.append(kind)
        head_start = i + 1
        i += 1
    return found


def match_brace(b, i):
    depth = 0
    for j in range(i, len(b)):
        if b[j] == "{":
            depth += 1
        elif b[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(b) - 1


GROWTH = 0.05  # how far a listed size may drift before --check asks for the row again


def check(doc_path, big_files, big_funcs):
    with open(doc_path, encoding="utf-8") as f:
        doc = f.read()
    listed_files = {m.group(2): int(m.group(1))
                    for m in re.finditer(r"^\| (\d+) \| `([^`]+)` \|", doc, re.M)}
    listed_funcs = {(m.group(2), m.group(3)): int(m.group(1))
                    for m in re.finditer(r"^\| (\d+) \| `([^`]+)`: `([^`]+)` \|", doc, re.M)}
    strip = lambda rel: rel[len("src/chopper/"):] if rel.startswith("src/chopper/") else rel
    files = {strip(rel): n for n, rel in big_files}
    funcs = {}
    for n, rel, _, fn in big_funcs:
        funcs[(strip(rel), fn)] = max(n, funcs.get((strip(rel), fn), 0))
    bad = []
    for what, measured, listed in (("file", files, listed_files), ("function", funcs, listed_funcs)):
        name = lambda k: k if isinstance(k, str) else f"{k[0]}: {k[1]}"
        for k, n in sorted(measured.items()):
            if k not in listed:
                bad.append(f"{what} {name(k)}: {n} lines, not listed in {doc_path}")
            elif n > listed[k] * (1 + GROWTH) or n < listed[k] * (1 - GROWTH):
                # The listed size stays a fair picture: a change of more than GROWTH asks for the
                # row (and its reason) to be looked at again; a line or two does not.
                bad.append(f"{what} {name(k)}: {n} lines, listed as {listed[k]} "
                           f"(more than {GROWTH:.0%} apart)")
        for k in sorted(set(listed) - set(measured)):
            bad.append(f"{what} {name(k)}: listed in {doc_path}, no longer over the limit")
    for b in bad:
        print(b)
    print(f"code_size: {len(bad)} difference(s) from {doc_path}")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--functions", type=int, default=120, metavar="N")
    ap.add_argument("--files", type=int, default=800, metavar="M")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--check", metavar="DOC")
    args = ap.parse_args()
    src = os.path.join(args.root, "src")
    big_files, big_funcs = [], []
    for dirpath, _, names in os.walk(src):
        for name in names:
            if not name.endswith(EXTS):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, args.root).replace(os.sep, "/")
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            if lines > args.files:
                big_files.append((lines, rel))
            for fn, a, z in functions(text):
                if z - a + 1 > args.functions:
                    big_funcs.append((z - a + 1, rel, a, fn))
    if args.check:
        return check(args.check, big_files, big_funcs)
    print(f"files over {args.files} lines: {len(big_files)}")
    for lines, rel in sorted(big_files, key=lambda t: (-t[0], t[1])):
        print(f"  {lines:6d}  {rel}")
    print(f"functions over {args.functions} lines: {len(big_funcs)}")
    for lines, rel, a, fn in sorted(big_funcs, key=lambda t: (-t[0], t[1], t[2])):
        print(f"  {lines:6d}  {rel}:{a}  {fn}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
