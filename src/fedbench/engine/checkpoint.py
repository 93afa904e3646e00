"""Resume checkpoints of a training cell: their format, writing and reading.

With ``checkpoint_every = k`` (:func:`fedbench.engine.loop.train`), a cell's full training state
is written after every k-th round (:meth:`fedbench.engine.cell.Cell.end_round`): the format
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
from pathlib import Path

import torch

from fedbench.files import atomic_write

#: Version of the checkpoint's content; a checkpoint of another version is ignored (fresh start).
CHECKPOINT_FORMAT = 2


def save_checkpoint(path: str | os.PathLike, state: dict) -> None:
    """Write a resume checkpoint atomically (temporary file, fsync, rename)."""
    with atomic_write(path) as tmp:
        torch.save(state, tmp)


def load_checkpoint(path: str | os.PathLike | None, hparams_id: str, device: torch.device | str = "cpu") -> dict | None:
    """The checkpoint at ``path`` if it exists and belongs to the cell ``hparams_id``, else None.

    A checkpoint of another spec (a changed hyperparameter) or of another format version is
    ignored with a message: the cell starts from round 1.
    """
    if path is None or not Path(path).exists():
        return None
    state = torch.load(path, map_location=device, weights_only=False)
    if state.get("format") != CHECKPOINT_FORMAT:
        print(f"ignoring checkpoint {path}: written by another fedbench version (format "
              f"{state.get('format', 1)}, expected {CHECKPOINT_FORMAT})", file=sys.stderr)
        return None
    if state.get("hparams_id") != hparams_id:
        print(f"ignoring checkpoint {path}: it belongs to spec {state.get('hparams_id')}, "
              f"not {hparams_id}", file=sys.stderr)
        return None
    return state
