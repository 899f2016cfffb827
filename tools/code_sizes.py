#!/usr/bin/env python3
"""Prints the size of every C++ source file and function under src/ and include/, and fails
when one passes its bound: files in src/store/ at most 400 lines and their functions at most 50;
every other file at most 800 lines. Functions elsewhere over 80 lines are listed as places to
look at (a declarative table is long by design), not failures.

A function is a brace block at namespace or class scope whose head has a parameter list and is
not a control statement, a class, an enum or an initializer; its size runs from the first line
of its head to its closing brace. Comments, strings and preprocessor lines are skipped.

Usage: tools/code_sizes.py [--all] [ROOT]   (--all lists every function, not only the largest)
"""
import os
import re
import sys

STORE_FILE_LINES, STORE_FUNCTION_LINES = 400, 50
FILE_LINES, FUNCTION_LINES = 800, 80

CONTROL = re.compile(r"^(if|for|while|switch|catch|do|else|return|try)\b")
TYPE_HEAD = re.compile(r"\b(class|struct|union|enum|namespace)\b[^()]*$")


def strip(text):
    """The source with comments, string and character literals and preprocessor lines blanked
    (newlines kept, so line numbers stay)."""
    out, i, n = [], 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
            continue
        if text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            if m:
                close = ")" + m.group(1) + '"'
                end = text.find(close, i)
                end = n if end < 0 else end + len(close)
                out.append('""' + "\n" * text.count("\n", i, end))
                i = end
                continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        at_line_start = c == "\n" or (at_line_start and c in " \t")
        i += 1
    return "".join(out)


def functions(text):
    """(name, first line, last line) of each function defined at namespace or class scope."""
    code = strip(text)
    found = []
    stack = []  # kinds of the open blocks: "scope" (namespace, class) or "body"
    head_start = 0  # offset where the current statement's head begins
    for i, c in enumerate(code):
        if c in ";{}":
            if c == "{":
                head = code[head_start:i].strip()
                in_scope = all(kind == "scope" for kind, _ in stack)
                flat = " ".join(head.split())
                if not in_scope:
                    stack.append(("body", None))
                elif TYPE_HEAD.search(flat) or flat.startswith("extern") or "(" not in flat \
                        or CONTROL.match(flat) or flat.endswith("=") or re.search(r"=\s*\[", flat):
                    stack.append(("scope", None))
                else:
                    first = code.count("\n", 0, head_start + (len(code[head_start:i]) - len(code[head_start:i].lstrip()))) + 1
                    name = re.findall(r"([~\w:]+)\s*\(", flat)
                    stack.append(("body", (name[0] if name else "?", first)))
            elif c == "}" and stack:
                kind, info = stack.pop()
                if info is not None:
                    found.append((info[0], info[1], code.count("\n", 0, i) + 1))
            head_start = i + 1
    return found


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    show_all = "--all" in sys.argv
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    failures, notes, rows = [], [], []
    for top in ("src", "include"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".cc", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                store = rel.startswith(os.path.join("src", "store") + os.sep)
                file_cap = STORE_FILE_LINES if store else FILE_LINES
                fn_cap = STORE_FUNCTION_LINES if store else FUNCTION_LINES
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                lines = text.count("\n")
                fns = functions(text)
                longest = max((last - first + 1 for _, first, last in fns), default=0)
                rows.append((rel, lines, len(fns), longest))
                if lines > file_cap:
                    failures.append(f"{rel}: {lines} lines (at most {file_cap})")
                for fn, first, last in fns:
                    size = last - first + 1
                    if size > fn_cap:
                        line = f"{rel}:{first}: {fn} is {size} lines (at most {fn_cap})"
                        (failures if store else notes).append(line)
                    if show_all:
                        print(f"  {size:4d}  {rel}:{first} {fn}")
    print(f"{'lines':>6} {'functions':>9} {'longest':>7}  file")
    for rel, lines, count, longest in sorted(rows, key=lambda r: -r[1]):
        if rel.startswith(os.path.join("src", "store")) or lines > 300:
            print(f"{lines:6d} {count:9d} {longest:7d}  {rel}")
    if notes:
        print("\nlong functions to look at:")
        for n in notes:
            print("  " + n)
    if failures:
        print("\ncode_sizes: over the bounds:", file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        return 1
    print("\ncode_sizes: every file and function within its bound")
    return 0


if __name__ == "__main__":
    sys.exit(main())
