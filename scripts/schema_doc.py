#!/usr/bin/env python3
"""docs/schema.md against the tables chopper declares.

Every result table is declared once in the code (model/table_def.hpp: its name, its doc and each
column's name, type, unit, meaning and NULL meaning); the SQLite database describes itself with
those declarations (chopper_tables, chopper_columns). Each table's section in docs/schema.md
begins with what the declaration generates:

    ### <table>                (or ##)

    <the table's doc>.

    | column | type | unit | meaning | NULL |
    |---|---|---|---|---|
    | `<column>` | INTEGER | ns | <meaning> | <when NULL, or "never"> |

Prose after the column table is the doc's own. This script compares the two, or rewrites the
generated part from a database written by `chopper analyze`:

  schema_doc.py --check DB docs/schema.md   exit 1, naming each difference, unless every table of
                                            DB has a section that begins with exactly its
                                            generated text (doc, columns, types, units, meanings,
                                            NULL meanings), and no column declared never NULL
                                            holds a NULL in DB
  schema_doc.py --write DB docs/schema.md [TABLE...]
                                            rewrite the generated part of those tables' sections
                                            (all by default) and append the missing ones under
                                            "## More tables"
"""
import re
import sqlite3
import sys

HEADER = "| column | type | unit | meaning | NULL |\n|---|---|---|---|---|\n"


def declared(db):
    con = sqlite3.connect(db)
    tables = con.execute("SELECT table_name, doc FROM chopper_tables ORDER BY rowid").fetchall()
    out = []
    for name, doc in tables:
        cols = con.execute(
            "SELECT column_name, type, unit, doc, null_when FROM chopper_columns "
            "WHERE table_name = ? ORDER BY rowid", (name,)).fetchall()
        out.append((name, doc, cols))
    return out


def escape(text):
    return (text or "").replace("|", "\\|")


def generated(doc, cols):
    """The generated part of a section, after its heading line."""
    rows = "".join(f"| `{c}` | {t} | {escape(u)} | {escape(m)} | {escape(n)} |\n"
                   for c, t, u, m, n in cols)
    return f"\n{doc}.\n\n{HEADER}{rows}"


def find(text, name):
    """(start, end) of the generated part of `name`'s section: from after its heading line to the
    end of its first column table (or of the section, when it has none); None if no section."""
    m = re.search(rf"^#{{2,3}} {re.escape(name)}[ \t]*\n", text, re.M)
    if not m:
        return None
    start = m.end()
    nxt = re.search(r"^#{2,3} ", text[start:], re.M)
    stop = start + nxt.start() if nxt else len(text)
    table = re.search(r"^\|.*\n(?:\|.*\n)*", text[start:stop], re.M)
    end = start + table.end() if table else stop
    return start, end


def never_null_held(db):
    """The columns declared never NULL that hold a NULL in DB (a declaration that is not true)."""
    con = sqlite3.connect(db)
    out = []
    for table, column in con.execute(
            "SELECT table_name, column_name FROM chopper_columns WHERE null_when = 'never'"):
        n = con.execute(f'SELECT COUNT(*) FROM "{table}" WHERE "{column}" IS NULL').fetchone()[0]
        if n:
            out.append(f"{db}: {table}.{column} is declared never NULL but {n} row(s) hold NULL")
    return out


def check(db, md):
    text = open(md, encoding="utf-8").read()
    problems = []
    for name, doc, cols in declared(db):
        span = find(text, name)
        if span is None:
            problems.append(f"{md}: table {name} is not documented")
            continue
        have = text[span[0]:span[1]]
        want = generated(doc, cols)
        if have != want:
            line = text[:span[0]].count("\n") + 1
            hl, wl = have.splitlines(), want.splitlines()
            k = next((i for i, (a, b) in enumerate(zip(hl, wl)) if a != b), min(len(hl), len(wl)))
            problems.append(
                f"{md}:{line + k}: table {name} differs from its declaration\n"
                f"    doc:  {hl[k] if k < len(hl) else '(nothing)'}\n"
                f"    code: {wl[k] if k < len(wl) else '(nothing)'}")
    problems += never_null_held(db)
    for p in problems:
        print(p)
    print(f"schema_doc: {len(problems)} difference(s); "
          f"'scripts/schema_doc.py --write DB {md} TABLE' rewrites a table's columns from the code")
    return 1 if problems else 0


def write(db, md, only):
    text = open(md, encoding="utf-8").read()
    missing = []
    for name, doc, cols in declared(db):
        if only and name not in only:
            continue
        span = find(text, name)
        if span is None:
            missing.append(f"### {name}\n" + generated(doc, cols))
            continue
        text = text[:span[0]] + generated(doc, cols) + text[span[1]:]
    if missing:
        if "## More tables" not in text:
            text = text.rstrip("\n") + "\n\n## More tables\n"
        text = text.rstrip("\n") + "\n\n" + "\n".join(missing)
    open(md, "w", encoding="utf-8").write(text)
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("--check", "--write") or (
            sys.argv[1] == "--check" and len(sys.argv) != 4):
        print(__doc__)
        sys.exit(2)
    if sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    sys.exit(write(sys.argv[2], sys.argv[3], set(sys.argv[4:])))
