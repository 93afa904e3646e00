"""Job logs: a progress bar that stays readable in a log file, and where a job ran.

A tqdm bar redraws itself with carriage returns: in a log file every redraw piles up on one
line. :class:`ProgressLog` wraps the log file and turns the redraws into separate lines, at
most one every ``interval`` seconds (plus the bar's final state), so a training cell's log reads

    fedavg seed=0:  40%|####      | 20/50 [00:04<00:06, 4.90round/s, acc=0.8611, loss=0.4502]
    fedavg seed=0: 100%|##########| 50/50 [00:10<00:00, 4.95round/s, acc=0.9306, loss=0.2208]

:func:`job_context` says where the job ran (host, Slurm job id, CPUs, GPUs); the train shim
prints it at the top of the log and records it in the cell's summary.json.

:func:`ends_with_message` ends a job whose failure is already explained by its error (a damaged
file named with its fix) with that message alone, in the job's log and on Snakemake's stderr.

A job's fixed cost (benchmarks/job_fixed_cost.py): :func:`pyarrow_without_pandas` spares a job
pyarrow's import of pandas, :func:`process_age` dates the job's start for the timing line it logs,
and :func:`end_process` ends a finished job without the interpreter's teardown.
"""

from __future__ import annotations

import io
import os
import re
import socket
import sys
import threading
import time
from contextlib import contextmanager

__all__ = ["ProgressLog", "end_process", "ends_with_message", "job_context", "process_age", "pyarrow_without_pandas",
           "slurm_cpus", "update_json"]


class ProgressLog(io.TextIOBase):
    """A text stream over ``file`` that writes carriage-return redraws as lines.

    Ordinary text is written line by line as it comes. A redraw (text after a ``\\r``) is
    written when at least ``interval`` seconds passed since the last redraw was written (the
    first one at once); the last state of a bar (a redraw ended by a newline, or pending at
    flush/close) is always written. Trailing spaces (tqdm pads redraws with them) are dropped.
    """

    def __init__(self, file, interval: float = 10.0, clock=time.monotonic):
        super().__init__()
        self._file = file
        self._interval = float(interval)
        self._clock = clock
        self._buf = ""  # the line being built
        self._redraw = False  # whether the line being built started after a carriage return
        self._latest = None  # the latest complete redraw
        self._written = None  # the redraw written last, and when
        self._when = None
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self):
        return getattr(self._file, "encoding", "utf-8")

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._file.fileno()

    def _show(self, line) -> None:
        if line is not None and line.strip() and line != self._written:
            self._file.write(line.rstrip() + "\n")
            self._written, self._when = line, self._clock()

    def write(self, s: str) -> int:
        with self._lock:
            for tok in re.split(r"(\r|\n)", s):
                if tok == "\n":
                    if self._redraw:  # the final state of a bar
                        self._show(self._buf if self._buf.strip() else self._latest)
                        self._latest = None
                    else:
                        self._file.write(self._buf + "\n")
                    self._buf, self._redraw = "", False
                elif tok == "\r":
                    if self._redraw:
                        if self._buf.strip():
                            self._latest = self._buf
                    elif self._buf:
                        self._file.write(self._buf + "\n")
                    self._buf, self._redraw = "", True
                elif tok:
                    self._buf += tok
            if self._redraw and self._buf.strip():
                self._latest = self._buf
            if self._latest is not None and (self._when is None or self._clock() - self._when >= self._interval):
                self._show(self._latest)
            self._file.flush()
        return len(s)

    def flush(self) -> None:
        with self._lock:
            self._file.flush()

    def close(self) -> None:
        if self.closed:
            return
        with self._lock:
            if self._redraw:
                self._show(self._buf if self._buf.strip() else self._latest)
            elif self._buf:
                self._file.write(self._buf + "\n")
            self._buf, self._latest = "", None
            self._file.flush()
        super().close()


def slurm_cpus() -> int | None:
    """The CPUs Slurm gave this job (SLURM_CPUS_PER_TASK), or None outside a Slurm job."""
    v = os.environ.get("SLURM_CPUS_PER_TASK")
    return int(v) if v and v.isdigit() and int(v) > 0 else None


def job_context() -> dict:
    """Where this process runs: host, Slurm job (id, step, partition, node list, CPUs, GPUs) or
    None outside Slurm, and the GPUs it may use (CUDA_VISIBLE_DEVICES)."""
    env = os.environ
    job_id = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    slurm = None
    if job_id:
        slurm = {
            "job_id": job_id,
            "step_id": env.get("SLURM_STEP_ID"),
            "partition": env.get("SLURM_JOB_PARTITION"),
            "nodelist": env.get("SLURM_JOB_NODELIST"),
            "cpus_per_task": slurm_cpus(),
            "gpus": env.get("SLURM_GPUS") or env.get("SLURM_GPUS_ON_NODE") or env.get("SLURM_JOB_GPUS"),
            "restart_count": int(env.get("SLURM_RESTART_COUNT", "0") or 0),
        }
    return {"host": socket.gethostname(), "slurm": slurm, "cuda_visible_devices": env.get("CUDA_VISIBLE_DEVICES")}


def update_json(path, values: dict) -> None:
    """Add ``values`` to the JSON object in ``path``, atomically (write a temp file, rename)."""
    import json
    from pathlib import Path

    from fedbench.files import atomic_write

    path = Path(path)
    data = json.loads(path.read_text())
    data.update(values)
    with atomic_write(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, default=float) + "\n")


@contextmanager
def ends_with_message(*errors: type[BaseException], what: str = "job"):
    """Within the block, one of ``errors`` ends the job (exit status 1) with its message alone:
    ``fedbench: <what> failed:`` and the message, on the job's log (the redirected ``sys.stdout``)
    and on the process's original stderr, which Snakemake shows; no traceback. For errors whose
    message already names the file and the fix (fedbench.data.errors.DamagedFileError)."""
    try:
        yield
    except errors as e:
        msg = f"fedbench: {what} failed:\n{e}\n"
        print(msg, flush=True)
        if sys.stdout is not sys.__stderr__:
            sys.__stderr__.write(msg)
            sys.__stderr__.flush()
        raise SystemExit(1) from None


def process_age() -> float | None:
    """Seconds since this process started (wall clock), or None where /proc does not say (not Linux)."""
    try:
        fields = open("/proc/self/stat").read().rsplit(")", 1)[1].split()  # comm may hold spaces
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))  # field 22: starttime
    except (OSError, ValueError, IndexError):
        return None


class _NoPandas:
    """A meta path finder that fails the import of pandas (and only while it is installed)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not imported by this job (fedbench.runlog.pyarrow_without_pandas)")
        return None


def pyarrow_without_pandas() -> None:
    """Let pyarrow decide once, without importing pandas, that no argument is a pandas object.

    pyarrow imports pandas (~0.35 s of CPU) the first time it converts Python values (a scalar, a
    list of rows, ``pa.table``), only to ask whether they are pandas objects; a training job never
    passes one. Here its first such check finds pandas missing (``pyarrow.lib._pandas_api`` tries
    once and remembers), so later checks answer "not pandas" at once. What needs pandas itself
    (``to_pandas``) still imports it: pyarrow retries the import there. Call it before the job's
    first conversion; a no-op once pandas or pyarrow's check came first."""
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    blocker = _NoPandas()
    sys.meta_path.insert(0, blocker)
    try:
        pa.scalar(0)  # pyarrow's check for pandas (it tries the import once)
    finally:
        sys.meta_path.remove(blocker)


def end_process(status: int = 0) -> None:
    """End this process now with ``status``, after flushing its standard streams, without the
    interpreter's teardown (freeing every module's objects: ~0.45 s of CPU, and more wall time on a
    loaded machine, after torch and numba). For a job whose outputs are written and closed: no
    ``atexit`` handler runs."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
