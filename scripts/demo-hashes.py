#!/usr/bin/env python3
"""The SHA-256 of every file `make demo` wrote, for before/after comparisons of a change that
must not alter any result (a refactoring): `python3 scripts/demo-hashes.py [out/demo] > list`.

The build's identity (the SHA-256 of the flexbench executable) is in the manifest, in every
stage's key (the key hashes build, settings and inputs) and in the report's footer; it changes
with any rebuild, so it is masked: JSON files are hashed with every "build" value and every stage
"key" replaced by a placeholder, and the report's HTML with the build's hash replaced. Every other
byte of every file counts. Paths are relative to the output folder, sorted.

Derived from the build too, and masked likewise: a stage's inputs that are earlier stages (their
hash covers the earlier stage's key) and the hash of report.html in the report stage's outputs
(its footer names the build). The files themselves are all hashed on their own.
"""
import hashlib
import json
import sys
from pathlib import Path

MASK = "<masked: depends on the build>"
STAGES = {"calibrate", "track", "smooth", "process", "fem", "compare", "report"}


def masked(value, build, parent=None):
    """The JSON value with the build and what derives from it masked."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            derived = (parent == "inputs" and k in STAGES) or (parent == "outputs" and k == "report.html")
            if k in ("build", "key") or derived:
                out[k] = MASK
            else:
                out[k] = masked(v, build, k)
        return out
    if isinstance(value, list):
        return [masked(v, build) for v in value]
    if isinstance(value, str) and build and build in value:
        return value.replace(build, MASK)
    return value


def file_hash(path, build):
    data = path.read_bytes()
    if path.suffix == ".json":
        value = masked(json.loads(data), build)
        data = json.dumps(value, sort_keys=True, indent=1).encode()
    elif build and path.suffix == ".html":
        data = data.replace(build.encode(), MASK.encode())
    return hashlib.sha256(data).hexdigest()


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "out/demo")
    manifest = out / "manifest.json"
    if not manifest.is_file():
        sys.exit(f"demo-hashes: {manifest} not found; run `make demo` first")
    build = json.loads(manifest.read_text()).get("build", "")
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        print(f"{file_hash(path, build)}  {path.relative_to(out)}")


if __name__ == "__main__":
    main()
