"""fedbench.runlog: a progress bar readable in a log file; where a job ran; a job's start and end."""

from __future__ import annotations

import io
import json
import subprocess
import sys

from tqdm import tqdm

from fedbench.runlog import ProgressLog, job_context, slurm_cpus, update_json


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_redraws_become_throttled_lines_and_the_final_state_is_kept():
    out, clock = io.StringIO(), Clock()
    log = ProgressLog(out, interval=1.0, clock=clock)
    print("starting", file=log)
    bar = tqdm(range(50), desc="fedavg seed=0", file=log, mininterval=0, unit="round", ascii=True)
    for i in bar:
        clock.t += 0.1
        bar.set_postfix(acc=f"{i / 50:.4f}")
    bar.close()
    print("done", file=log)
    log.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "starting" and lines[-1] == "done"
    bars = lines[1:-1]
    assert "\r" not in out.getvalue()
    assert 4 <= len(bars) <= 7  # 5 s of redraws at most one per second, plus first and final state
    assert bars[0].startswith("fedavg seed=0:   0%")
    assert "50/50" in bars[-1] and "acc=0.9800" in bars[-1]
    assert all(not b.endswith(" ") for b in bars)


def test_plain_text_passes_through_and_close_flushes_a_pending_redraw():
    out, clock = io.StringIO(), Clock()
    log = ProgressLog(out, interval=100.0, clock=clock)
    log.write("a line\nanother ")
    log.write("part\n")
    log.write("\rstate 1")  # written at once: the first redraw
    log.write("\rstate 2")  # held back: within the interval
    log.write("\rstate 3   ")
    assert out.getvalue() == "a line\nanother part\nstate 1\n"
    log.write("tail")  # ordinary text after a redraw, no newline yet
    log.close()
    assert out.getvalue() == "a line\nanother part\nstate 1\nstate 3   tail\n"


def test_job_context_outside_and_inside_slurm(monkeypatch):
    for k in ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_CPUS_PER_TASK"):
        monkeypatch.delenv(k, raising=False)
    ctx = job_context()
    assert ctx["slurm"] is None and ctx["host"]
    assert slurm_cpus() is None
    monkeypatch.setenv("SLURM_JOB_ID", "1234")
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "8")
    monkeypatch.setenv("SLURM_JOB_PARTITION", "gpu")
    ctx = job_context()
    assert ctx["slurm"]["job_id"] == "1234" and ctx["slurm"]["cpus_per_task"] == 8
    assert ctx["slurm"]["partition"] == "gpu"
    assert slurm_cpus() == 8


def test_update_json_adds_keys_atomically(tmp_path):
    p = tmp_path / "summary.json"
    p.write_text(json.dumps({"a": 1}))
    update_json(p, {"job": {"slurm": None}})
    assert json.loads(p.read_text()) == {"a": 1, "job": {"slurm": None}}
    assert [f.name for f in tmp_path.iterdir()] == ["summary.json"]


def test_pyarrow_without_pandas_keeps_pandas_out_and_available():
    """A job's pyarrow conversions import no pandas after the probe; to_pandas still gets it."""
    code = (
        "import sys\n"
        "from fedbench.runlog import pyarrow_without_pandas\n"
        "pyarrow_without_pandas()\n"
        "import pyarrow as pa\n"
        "t = pa.Table.from_pylist([{'a': 1.0, 's': 'train'}])\n"
        "assert t.column('s').to_numpy(zero_copy_only=False).tolist() == ['train']\n"
        "assert 'pandas' not in sys.modules, 'pyarrow imported pandas'\n"
        "assert t.to_pandas()['a'].tolist() == [1.0] and 'pandas' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_end_process_flushes_and_exits_with_status(tmp_path):
    code = "import sys\nfrom fedbench.runlog import end_process\nprint('done', end='')\nend_process(3)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (3, "done")


def test_process_age_is_not_negative():
    from fedbench.runlog import process_age

    age = process_age()
    assert age is None or age >= 0.0
