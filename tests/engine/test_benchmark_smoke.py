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
    # (a') seed stacking runs where the CPU engine stacks clients: W3 only
    assert [line.split("|")[1].strip() for line in text.splitlines() if "(a') 10 seeds stacked" in line] == ["W3"]


def test_benchmark_refuses_unknown_impls_before_running():
    # "a,c" once ran the sequential engine twice and crashed at the table; now refused up front.
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--impls", "a,plain"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "unknown --impls a" in r.stderr and "vectorized, seeds, sequential, plain" in r.stderr


def test_stacking_benchmark_runs_and_marks_the_rule():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "stacking.py"), "--clients", "2"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| ") and "model" not in line]
    assert len(rows) == 8
    # the automatic column follows d x B against the 1 M rule: W3 stacked, W1's 2NN one client
    assert rows[0].startswith("| W3") and rows[0].endswith("| stacked |")
    assert "(W1)" in rows[-1] and rows[-1].endswith("| one client |")


def test_benchmark_target_rows_say_by_how_much_a_target_is_missed():
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)

    def row(w, p, impl, s):
        return {"workload": w, "participation": p, "impl": impl, "round_s": s}

    results = [row("W1", 1.0, "plain", 6.0), row("W1", 1.0, "vectorized", 4.0),   # 1.5x of 1x (W1's CPU target: ≥ 1×)
               row("W1", 0.1, "plain", 1.0), row("W1", 0.1, "vectorized", 2.0),   # slower than (c)
               row("W3", 0.1, "plain", 1.0), row("W3", 0.1, "vectorized", 0.05),  # 20x of 10x
               row("W4", 1.0, "plain", 1.0), row("W4", 1.0, "sequential", 0.5)]   # no (a): skipped
    got = {(w, p): (goal, round(ratio, 3), verdict) for w, p, goal, ratio, verdict in run.target_rows(results, "cpu")}
    assert got == {("W1", 1.0): (1.0, 1.5, "met"), ("W1", 0.1): (1.0, 0.5, "missed by 2.0×"),
                   ("W3", 0.1): (10.0, 20.0, "met")}
    # on CUDA the W1 target is 50x at every participation
    assert run.target_rows(results[:2], "cuda") == [("W1", 1.0, 50.0, 1.5, "missed by 33.3×")]


def test_fedac_speed_runs_and_says_how_to_get_the_authors_code(tmp_path):
    """benchmarks/fedac_speed.py at a tiny size without the authors' checkout: the fedbench job runs
    and the authors' column says how to get their code (it is never copied here)."""
    env = {k: v for k, v in __import__("os").environ.items() if k != "FEDAC_AUTHORS"}
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fedac_speed.py"), "--algorithms", "fedac",
                        "--M", "4", "--K", "4", "--T-fedbench", "8", "--json", str(tmp_path / "rows.json")],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| fedac |")]
    assert len(rows) == 1 and "git clone https://github.com/hongliny/FedAc-NeurIPS20" in rows[0]
    row = __import__("json").loads((tmp_path / "rows.json").read_text())[0]
    # the job carries 1/9 of its process's start-up (the workflow runs the 9 K values of an (algorithm, M)
    # in one process), and its rounds scaled from the 2 timed to the 1,024 of T = 4,096
    assert row["startup_s"] > 0 and row["setup_s"] >= row["startup_s"] / 9 and row["job_s_T"] > row["setup_s"]


def test_fedac_epsilon_memory_runs_a_job_and_reports_its_memory(tmp_path):
    """benchmarks/fedac_epsilon_memory.py at a tiny size: an epsilon-shaped dataset written in the
    store format, one stacked job of the experiment's η grid × seeds, its row and JSON written."""
    out = tmp_path / "rows.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fedac_epsilon_memory.py"), "--rows", "600",
                        "--test-rows", "100", "--M", "4", "--K", "2", "--rounds", "2", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert len([line for line in r.stdout.splitlines() if line.startswith("| fedac | 4 | 2 | 48 |")]) == 1
    row = __import__("json").loads(out.read_text())[0]
    assert row["ok"] == 48 and row["round_s"] > 0 and row["peak_rss_mb"] > 0


def test_fedac_figure_set_runs_its_jobs_as_processes():
    args = ["--algorithms", "fedac,mb_sgd", "--M", "4", "--K", "1,2", "--T", "4", "--parallel", "2",
            "--groups-per-job", "2"]
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fedac_figure_set.py"), *args],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "4 jobs (54 runs each, T = 4) in 2 processes of up to 2 jobs" in r.stdout
    assert "4 jobs ran, 0 failed, 0 not started" in r.stdout
    assert "Cells that stayed finite: 216 of 216" in r.stdout


def test_round_kernel_tiles_runs():
    """On a machine without a GPU the kernels run through Triton's interpreter (tests/conftest.py)."""
    import pytest
    import torch

    pytest.importorskip("triton")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "round_kernel_tiles.py"), "--device", device,
                        "--M", "4", "--K", "2", "--steps", "2", "--tiles", "512", "--warps", "2", "--blocks", "256",
                        "--lanes", "1,2"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| 4 | 2 |")]
    assert len(rows) == 1 and "(default)" in rows[0]
