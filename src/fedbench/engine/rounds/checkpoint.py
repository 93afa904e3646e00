"""Resume checkpoints of a training cell: their format, writing and reading.

With ``checkpoint_every = k`` (:func:`fedbench.engine.rounds.loop.train`), a cell's full training state
is written after every k-th round (:meth:`fedbench.engine.rounds.cell.Cell.end_round`): the format
version, the spec's ``hparams_id``, the round, the server state, the persistent client states,
the metrics rows so far (the round-0 row of ``eval_initial`` included: a resumed cell does
not evaluate θ⁰ again), the communication counters, the Δ-histogram state and the elapsed time.
Every random draw is keyed by (seed, round, client, purpose), so there is no RNG position to
save: a cell killed at any point and restarted resumes after the last checkpointed round and
produces bitwise the metrics of an uninterrupted run (``wall_seconds`` aside).
"""

from __future__ import annotations

import os
import sys
import warnings
import zipfile
from pathlib import Path

import torch

from fedbench.filecheck import set_aside, zip_problem
from fedbench.files import atomic_write

#: Version of the checkpoint's content; a checkpoint of another version is ignored (fresh start).
CHECKPOINT_FORMAT = 2


def save_checkpoint(path: str | os.PathLike, state: dict) -> None:
    """Write a resume checkpoint atomically (temporary file, fsync, rename)."""
    with atomic_write(path) as tmp:
        torch.save(state, tmp)


def checkpoint_problem(path: str | os.PathLike) -> str | None:
    """What is wrong with a checkpoint file, or None when it is whole: its zip structure (both
    ends, :func:`fedbench.filecheck.zip_problem`) and every member's CRC-32, which ``torch.load``
    does not check (a changed byte in a tensor would load silently). Reads the whole file."""
    problem = zip_problem(path)
    if problem is not None:
        return problem
    try:
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, KeyError) as e:  # UnicodeDecodeError is a ValueError
        return f"is not a readable zip archive ({type(e).__name__}: {e})"
    return None if bad is None else f"fails the CRC check of its member {bad} (changed bytes)"


def load_checkpoint(path: str | os.PathLike | None, hparams_id: str, device: torch.device | str = "cpu") -> dict | None:
    """The checkpoint at ``path`` if it exists and belongs to the cell ``hparams_id``, else None.

    A checkpoint of another spec (a changed hyperparameter) or of another format version is
    ignored with a message: the cell starts from round 1. A damaged checkpoint (truncated by a
    killed run or a full disk, or changed: :func:`checkpoint_problem`) is renamed to
    ``checkpoint.pt.damaged`` with a :class:`RuntimeWarning` naming it and what is wrong, and the
    cell starts from round 1 too.

    Raises:
        Whatever ``torch.load`` raises for a whole file it cannot load (e.g. a CUDA device
        that this machine lacks), with the file's path added as a note.
    """
    if path is None or not Path(path).exists():
        return None
    problem = checkpoint_problem(path)
    if problem is not None:
        aside = set_aside(path)
        warnings.warn(f"checkpoint {path} {problem}: set aside as {aside.name if aside else '(gone)'}; the cell "
                      f"trains from its first round", RuntimeWarning, stacklevel=2)
        return None
    try:
        state = torch.load(path, map_location=device, weights_only=False)
    except Exception as e:
        e.add_note(f"while loading the checkpoint {path} (a whole file: its zip structure and CRCs check out)")
        raise
    if state.get("format") != CHECKPOINT_FORMAT:
        print(f"ignoring checkpoint {path}: written by another fedbench version (format "
              f"{state.get('format', 1)}, expected {CHECKPOINT_FORMAT})", file=sys.stderr)
        return None
    if state.get("hparams_id") != hparams_id:
        print(f"ignoring checkpoint {path}: it belongs to spec {state.get('hparams_id')}, "
              f"not {hparams_id}", file=sys.stderr)
        return None
    return state
