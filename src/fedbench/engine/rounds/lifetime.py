"""A training process's lifetime: one writer per cell, and no training left behind by a dead workflow.

:class:`CellLock`
    An exclusive, non-blocking ``fcntl.flock`` on a hidden lock file beside the cell's checkpoint
    (``.checkpoint.pt.lock``), held for the whole run of the cell (:func:`fedbench.engine.rounds.loop.run_cells`).
    A second process on the same cell (a rerun after ``snakemake --unlock`` while an orphaned
    job still trains it) fails at once with :class:`CellBusyError`, naming the cell and the pid
    of the process that holds it, instead of writing the same checkpoint. The kernel releases the
    lock when its holder dies, however it dies, so a stale lock file never blocks a rerun. The
    holder removes the file when it is done.

:func:`exit_with_parent`
    The workflow's training job (``workflow/scripts/train.py``) ends when Snakemake dies, even
    by SIGKILL. Snakemake runs a ``script:`` through a shell (``bash -c "set -euo pipefail;
    python …"``), and its local executor through a further ``snakemake`` process, so the job's
    direct parent is a shell that outlives a killed Snakemake. The job therefore watches its
    ancestors through any shells to the first that is not one, and on to the outermost
    ``snakemake`` process (:func:`watched_ancestors`): a
    daemon thread polls them every second and sends the job SIGTERM when one of them has gone
    (or been replaced: same pid, other start time). On Linux the direct parent is also covered by
    ``prctl(PR_SET_PDEATHSIG, SIGTERM)``. SIGTERM raises :class:`SystemExit` in the main thread,
    so ``finally`` blocks run (temporary files removed, lock released).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import signal
import sys
import threading
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1
SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "busybox"}


class CellBusyError(RuntimeError):
    """Another live process holds the cell's lock."""


class CellLock:
    """Exclusive lock of one cell: ``with CellLock(lock_path, name): ...``.

    Args:
        path: the lock file (created; removed on release).
        name: the cell, for the error message.

    Raises:
        CellBusyError: on entry, when another process holds the lock.
    """

    def __init__(self, path: str | os.PathLike, name: str):
        self.path, self.name, self.fd = Path(path), name, None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                raise CellBusyError(
                    f"cell {self.name} is being trained by another process (pid {self._holder()}; lock "
                    f"{self.path}). Wait for it or end it; two processes must not write the same "
                    "checkpoint and outputs.") from None
            # The holder before us may have removed the file after we opened it: lock the file
            # that is at the path now.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd

    def _holder(self) -> str:
        try:
            return self.path.read_text().strip() or "unknown"
        except OSError:
            return "unknown"

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)  # while still locked: no one else can hold this file
        finally:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> CellLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(comm, ppid, start time) of a live process from /proc, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):  # zombie or dead: gone
        return None
    return comm, int(fields[1]), int(fields[19])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _is_snakemake(pid: int, comm: str) -> bool:
    """Whether ``pid`` is a Snakemake process (``snakemake …`` or ``python -m snakemake …``), not
    merely a wrapper whose arguments name it (``timeout 60 snakemake``)."""
    argv = _cmdline(pid).split()
    head = [Path(a).name for a in argv[:3]]
    return comm == "snakemake" or "snakemake" in head[:2] or head[1:3] == ["-m", "snakemake"]


def watched_ancestors(pid: int | None = None) -> list[tuple[int, int]]:
    """(pid, start time) of the ancestors of ``pid`` (default: this process) whose death ends the
    job: the parent, through any shells up to the first ancestor that is not a shell, and on up to
    the outermost one running ``snakemake``."""
    chain = []
    current = os.getpid() if pid is None else pid
    while True:
        st = _stat(current)
        if st is None or st[1] <= 1:
            break
        parent = st[1]
        pst = _stat(parent)
        if pst is None:
            break
        chain.append((parent, pst[2], pst[0] in SHELLS, _is_snakemake(parent, pst[0])))
        current = parent
    first_not_shell = next((i for i, (_, _, shell, _) in enumerate(chain) if not shell), len(chain) - 1)
    last = max([first_not_shell] + [i for i, (_, _, _, smk) in enumerate(chain) if smk])
    return [(p, start) for p, start, _, _ in chain[: last + 1]]


def _on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


def exit_with_parent(poll_seconds: float = 1.0) -> list[tuple[int, int]]:
    """End this process (SIGTERM → SystemExit) when its parent or a watched ancestor dies
    (see the module docstring). Call once, from the main thread, at the start of a job.
    Returns the watched (pid, start time) pairs. Exits at once if the parent is already gone."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    init = _stat(1)
    if parent == 1 and not (init and _is_snakemake(1, init[0])):  # died before the death signal was set
        # (Snakemake as a container's pid 1 is a live parent)
        raise SystemExit("fedbench: the parent process has already exited; not starting the job")
    watched = watched_ancestors() if Path("/proc").is_dir() else []

    def watch():
        while True:
            time.sleep(poll_seconds)
            gone = os.getppid() != parent or any(
                (st := _stat(p)) is None or st[2] != start for p, start in watched)
            if gone:
                print("fedbench: the workflow process that started this job has exited; stopping",
                      file=sys.stderr)
                os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=watch, name="exit_with_parent", daemon=True).start()
    return watched
