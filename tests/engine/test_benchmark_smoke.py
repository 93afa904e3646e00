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
