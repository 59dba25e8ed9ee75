"""``python -m lineage``: the list of commands answers at once, without importing torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import sys
from lineage.__main__ import main
try:
    main(["--help"])
except SystemExit as exit:
    print("exit", exit.code)
print("torch" in sys.modules)
"""


def test_the_list_of_commands_does_not_import_torch():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "train small models" in out and "sweep" in out and "bench" in out
    assert out.strip().endswith("exit 0\nFalse"), out


def test_a_command_still_gets_its_own_options():
    probe = PROBE.replace('main(["--help"])', 'main(["train", "--help"])')
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "--front-end" in out and "--mixers" in out
