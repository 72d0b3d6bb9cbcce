#!/usr/bin/env python3
"""The longest functions of the library code, in lines as the file stands (run it after
`cargo fmt`): `python3 scripts/long-functions.py [N] [--all]`.

A function runs from the line of its `fn` keyword to its closing brace, found by matching braces
outside comments, strings and character literals. Library code is crates/*/src, without the
binary's main.rs unless --all, and without `#[cfg(test)]` modules (tests are read as a whole, not
held in one's head). Prints lines, file:line and the function's name, longest first.

`--check` (run by `make lint`): fails, naming each, on a function of any crate's source (the
binary's too) over 80 lines without a comment that says why (a `//` or `///` line starting
`Long:` in its doc comment or among the first lines of its body), and on a source file over 800 lines.
"""
import re
import sys
from pathlib import Path

FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"[^\"]*\"\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)")


def code_only(text):
    """The text with comments, strings and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not text[i - 1].isalnum()):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = '"' + hashes
            j = text.find(end, i + 2 + len(hashes))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'|'\\x[0-9a-fA-F]{2}'", text[i:i + 12]):
            m = re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'|'\\x[0-9a-fA-F]{2}'", text[i:i + 12])
            out.append(" " * len(m.group(0)))
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    text = path.read_text()
    code = code_only(text)
    lines = code.split("\n")
    cut = len(lines)
    for k, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]" and k + 1 < len(lines) and re.match(r"\s*(pub\s+)?mod\s+\w+", lines[k + 1]):
            cut = k
            break
    found = []
    for k in range(cut):
        m = FN.match(lines[k])
        if not m:
            continue
        depth, opened = 0, False
        for j in range(k, cut):
            for ch in lines[j]:
                if ch == "{":
                    depth += 1
                    opened = True
                elif ch == "}":
                    depth -= 1
                elif ch == ";" and not opened and depth == 0:
                    break
            else:
                if opened and depth == 0:
                    found.append((j - k + 1, f"{path}:{k + 1}", m.group(1)))
                    break
                continue
            break
    return found


MAX_LINES = 80
MAX_FILE_LINES = 800


def says_why(path, line_no):
    """Whether the function at `line_no` (1-based) of `path` has a `Long:` comment: in the doc
    comment and attributes above it, or in the first lines of its body."""
    lines = path.read_text().splitlines()
    k = line_no - 2
    above = []
    while k >= 0 and lines[k].strip().startswith(("///", "#[", "//")):
        above.append(lines[k].strip())
        k -= 1
    start = line_no - 1
    while start < len(lines) - 1 and not lines[start].rstrip().endswith("{"):
        start += 1
    body = [l.strip() for l in lines[start + 1:start + 4]]
    return any(re.match(r"//[/!]?\s*Long:", l) for l in above + body)


def check():
    """The `--check` mode: every long function says why, every file under the limit."""
    paths = sorted(Path("crates").glob("*/src/**/*.rs"))
    bad = []
    for p in paths:
        n = len(p.read_text().splitlines())
        if n > MAX_FILE_LINES:
            bad.append(f"{p}: {n} lines, over {MAX_FILE_LINES}: split it by what it holds")
        for lines, where, name in functions(p):
            if lines > MAX_LINES and not says_why(p, int(where.rsplit(":", 1)[1])):
                bad.append(f"{where}: fn {name} is {lines} lines, over {MAX_LINES}, and no "
                           "`// Long: ...` comment says why: split it or say why")
    for b in bad:
        print(b, file=sys.stderr)
    if not bad:
        print(f"every function within {MAX_LINES} lines or saying why, every file within "
              f"{MAX_FILE_LINES} lines")
    return 1 if bad else 0


def main():
    if "--check" in sys.argv:
        sys.exit(check())
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    count = int(args[0]) if args else 10
    paths = sorted(Path("crates").glob("*/src/**/*.rs"))
    if "--all" not in sys.argv:
        paths = [p for p in paths if p.name != "main.rs"]
    found = [f for p in paths for f in functions(p)]
    found.sort(key=lambda f: (-f[0], f[1]))
    for lines, where, name in found[:count]:
        print(f"{lines:5d}  {where}  {name}")


if __name__ == "__main__":
    main()
