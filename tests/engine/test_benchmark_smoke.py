"""The benchmark script runs (tiny sizes); its numbers are not checked here (see benchmarks/)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_benchmark_quick_runs(tmp_path):
    out = tmp_path / "RESULTS.md"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    for impl in ("(a) vectorized", "(b) sequential", "(c) plain loop"):
        assert impl in text
    assert "| W1 |" in text and "| W3 |" in text and "| W4 |" in text


def test_benchmark_refuses_unknown_impls_before_running():
    # "a,c" once ran the sequential engine twice and crashed at the table; now refused up front.
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--impls", "a,plain"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "unknown --impls a" in r.stderr and "vectorized, sequential, plain" in r.stderr


def test_stacking_benchmark_runs_and_marks_the_rule():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "stacking.py"), "--clients", "2"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| ") and "model" not in line]
    assert len(rows) == 8
    # the automatic column follows d x B against the 1 M rule: W3 stacked, W1's 2NN one client
    assert rows[0].startswith("| W3") and rows[0].endswith("| stacked |")
    assert "(W1)" in rows[-1] and rows[-1].endswith("| one client |")
