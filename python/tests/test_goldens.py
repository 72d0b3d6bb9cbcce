"""The committed golden files are what their scripts make (scripts/golden.py --check): every
generator but the two slow ones (the flexible crank's scipy integration, 40 s, and the rotating
beam's, three minutes; `make golden-check` runs them too) remade in a
scratch copy of the repository and compared with the committed file, bytes or numbers within the
file's stated tolerance."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_committed_goldens_are_what_the_scripts_make():
    r = subprocess.run([sys.executable, str(ROOT / "scripts/golden.py"), "--check", "--skip-slow"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("files compared") == 7, r.stdout
