#!/usr/bin/env python3
"""docs/schema.md against the tables chopper declares.

Every result table is declared once in the code (its name, doc and columns with their docs); the
SQLite database describes itself with those declarations (chopper_tables, chopper_columns). This
script compares docs/schema.md with a database written by `chopper analyze`:

  schema_doc.py --check DB docs/schema.md   exit 1 (naming each difference) unless every table and
                                            column of DB is documented with its type and meaning
  schema_doc.py --write DB docs/schema.md   rewrite the documented tables' sections from DB and
                                            append the missing ones under "## More tables"
"""
import re
import sqlite3
import sys


def declared(db):
    con = sqlite3.connect(db)
    tables = con.execute("SELECT table_name, doc FROM chopper_tables ORDER BY rowid").fetchall()
    out = []
    for name, doc in tables:
        cols = con.execute(
            "SELECT column_name, type, doc FROM chopper_columns WHERE table_name = ? ORDER BY rowid",
            (name,)).fetchall()
        out.append((name, doc, cols))
    return out


def escape(text):
    return text.replace("|", "\\|")


def section(name, doc, cols):
    lines = [f"### {name}", "", f"{doc}.", "", "| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{c}` | {t} | {escape(d)} |" for c, t, d in cols]
    return "\n".join(lines) + "\n"


HEADING = re.compile(r"^(#{2,3}) (\S+)\s*$")
ROW = re.compile(r"^\| `([^`]+)` \| (INTEGER|REAL|TEXT) \| (.*) \|$")


def documented(text):
    """table name -> list of (column, type, meaning) from its section."""
    docs, current = {}, None
    for line in text.splitlines():
        m = HEADING.match(line)
        if m:
            current = m.group(2)
            docs.setdefault(current, [])
            continue
        m = ROW.match(line)
        if m and current is not None:
            docs[current].append((m.group(1), m.group(2), m.group(3).replace("\\|", "|")))
    return docs


def check(db, md):
    text = open(md, encoding="utf-8").read()
    docs = documented(text)
    problems = []
    for name, _, cols in declared(db):
        have = docs.get(name)
        if not have:
            problems.append(f"{md}: table {name} is not documented")
            continue
        want = [(c, t) for c, t, _ in cols]
        got = [(c, t) for c, t, _ in have]
        if want != got:
            problems.append(f"{md}: table {name}: documented columns {got} != declared {want}")
    for p in problems:
        print(p)
    print(f"schema_doc: {len(problems)} difference(s)")
    return 1 if problems else 0


def write(db, md):
    text = open(md, encoding="utf-8").read()
    docs = documented(text)
    missing = []
    for name, doc, cols in declared(db):
        block = section(name, doc, cols)
        pat = re.compile(rf"^### {re.escape(name)}\n.*?(?=^#{{2,3}} |\Z)", re.S | re.M)
        if name in docs and pat.search(text):
            text = pat.sub(lambda _: block + "\n", text, count=1)
        elif name not in docs:
            missing.append(block)
    if missing:
        if "## More tables" not in text:
            text = text.rstrip("\n") + "\n\n## More tables\n\n"
        text = text.rstrip("\n") + "\n\n" + "\n".join(missing)
    open(md, "w", encoding="utf-8").write(text)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("--check", "--write"):
        print(__doc__)
        sys.exit(2)
    sys.exit((check if sys.argv[1] == "--check" else write)(sys.argv[2], sys.argv[3]))
