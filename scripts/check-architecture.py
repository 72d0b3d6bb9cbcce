#!/usr/bin/env python3
"""ARCHITECTURE.md's crate graph against `cargo metadata` (run by `make lint`).

The table under "## Crate graph" lists each workspace crate, the workspace crates it uses and
the crates from outside it uses (normal dependencies; a note in parentheses after a name is
allowed). This check fails, naming the crate and the difference, when:
- a workspace package has no row, or a row names no workspace package;
- a row's workspace crates differ from the package's normal `flexbench-*` dependencies;
- a row's outside crates differ from the package's other normal dependencies;
- a workspace package has no row in the "## Crates, and what each owns" table;
- a workspace crate that a crate optimised in test builds (Cargo.toml's
  `[profile.dev.package.<name>] opt-level = 3`) depends on is not optimised itself (its code
  would run unoptimised under the optimised one: the LU once did, and the tests took minutes
  longer).
Exit status 0 when the document agrees, 1 otherwise.
"""
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def packages():
    """Each workspace package's normal dependencies, split into workspace and outside ones."""
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    meta = json.loads(out)
    found = {}
    for p in meta["packages"]:
        deps = {d["name"] for d in p["dependencies"] if d["kind"] is None}
        found[p["name"]] = ({d for d in deps if d.startswith("flexbench")},
                            {d for d in deps if not d.startswith("flexbench")})
    return found


def names(cell):
    """The crate names of a cell: parenthetical notes dropped, '-' for none."""
    cell = re.sub(r"\([^)]*\)", "", cell).strip()
    if cell in ("-", ""):
        return set()
    return {n.strip().strip("`") for n in cell.split(",") if n.strip()}


def section(text, title):
    """The lines of the section `## title`."""
    part = text.split(f"\n## {title}\n", 1)
    if len(part) < 2:
        sys.exit(f"ARCHITECTURE.md has no section '## {title}'")
    return part[1].split("\n## ", 1)[0].splitlines()


def rows(lines):
    """The table rows of `lines` whose first cell names a crate: name -> the other cells."""
    found = {}
    for line in lines:
        m = re.match(r"^\| `(flexbench[a-z-]*)`[^|]*\|(.*)\|\s*$", line)
        if m:
            found[m.group(1)] = [c.strip() for c in m.group(2).split("|")]
    return found


def unoptimised_below_optimised(pkgs):
    """The workspace crates that an optimised crate uses but that are not optimised."""
    profile = tomllib.loads((ROOT / "Cargo.toml").read_text())
    packages = profile.get("profile", {}).get("dev", {}).get("package", {})
    fast = {n for n, p in packages.items() if p.get("opt-level") == 3}
    problems = []
    for name in sorted(fast & set(pkgs)):
        for dep in sorted(pkgs[name][0] - fast):
            problems.append(f"Cargo.toml: {dep} is used by {name}, optimised in test builds, "
                            f"but is not: add [profile.dev.package.{dep}] opt-level = 3")
    return problems


def main():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    pkgs = packages()
    graph = rows(section(text, "Crate graph"))
    owns = rows(section(text, "Crates, and what each owns"))
    problems = []
    for name in sorted(set(pkgs) | set(graph)):
        if name not in pkgs:
            problems.append(f"{name}: a row of the crate graph, but no such workspace package")
            continue
        if name not in graph:
            problems.append(f"{name}: a workspace package without a row in the crate graph")
            continue
        inside, outside = pkgs[name]
        said_inside = {f"flexbench-{n}" for n in names(graph[name][0])}
        said_outside = names(graph[name][1])
        for what, said, real in (("workspace crates", said_inside, inside),
                                 ("outside crates", said_outside, outside)):
            if said != real:
                problems.append(f"{name}: {what} listed {sorted(said)}, cargo metadata says "
                                f"{sorted(real)} (missing {sorted(real - said)}, extra "
                                f"{sorted(said - real)})")
        if name not in owns:
            problems.append(f"{name}: no row in 'Crates, and what each owns'")
    for p in problems:
        print(f"ARCHITECTURE.md: {p}", file=sys.stderr)
    slow = unoptimised_below_optimised(pkgs)
    for p in slow:
        print(p, file=sys.stderr)
    problems += slow
    if problems:
        print("fix ARCHITECTURE.md's tables, or the crate's Cargo.toml or the workspace's profile", file=sys.stderr)
        return 1
    print(f"ARCHITECTURE.md's crate graph agrees with cargo metadata ({len(pkgs)} crates); "
          "every crate under an optimised one optimised")
    return 0


if __name__ == "__main__":
    sys.exit(main())
