"""The interface of the client engines: what the round loop asks of the engine that runs step 2.

Step 2 of a round (local training of the sampled clients, :mod:`fedbench.engine.rounds.loop`) is done
by one of two engines with the same results to float rounding:

- :class:`fedbench.engine.clients.sequential.SequentialClients`, the reference: one client at a time;
- :class:`fedbench.engine.clients.vectorized.VectorizedClients`, the default: all sampled clients at once.

Both satisfy :class:`ClientEngine`: built for one or several stackable cells (``stacked``; they
may differ in seed and in numeric hyperparameters: :mod:`fedbench.engine.rounds.stacking`), they train a
round of the given cells, each with its own hyperparameters (``train_cells``), and hand back one
:class:`RoundResult` per cell. The round loop calls nothing else, so it never asks which engine
it has.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


@dataclass
class RoundResult:
    """What one round of local training of one cell returns to the round loop."""

    messages: list[dict]  # one per sampled client, ascending id order
    losses: list[float]  # mean minibatch loss of each client (NaN if K = 0)
    counted: list = field(default_factory=list)  # messages (stacked or not) to count communication from
    executed_steps: int = 0  # client-steps run, padding included
    real_steps: int = 0  # client-steps that were not padding


class ClientEngine(Protocol):
    """A client engine over C cells (C = 1 for one cell), built by the engine's ``stacked``
    classmethod (the same arguments for both engines; :func:`fedbench.engine.rounds.loop.make_engine`)."""

    def train_cells(self, servers: Sequence[dict], sampled: Sequence[np.ndarray], hps: Sequence[dict], t: int,
                    cells: Sequence[int] | None = None) -> list[RoundResult]:
        """Round ``t`` of the cells ``cells`` (default 0, 1, ...): per cell, its server state, its
        sampled client ids (ascending) and its round's hyperparameters (its ``hparams`` plus
        ``lr`` = local.lr × lr_decay^(t−1) (× the lr_schedule factors), ``weight_decay``, ``clip_norm``); one
        :class:`RoundResult` per given cell, in that order. ``hps`` may also be one dict, the
        same for every cell."""
        ...

    def client_states(self, cell: int = 0) -> dict[int, dict]:
        """Cell ``cell``'s persistent client states ``{k: state}`` (its own client ids)."""
        ...

    def load_client_states(self, states: dict[int, dict], cell: int = 0) -> None:
        """Restore cell ``cell``'s persistent client states (resume from a checkpoint)."""
        ...

    @property
    def padding_efficiency(self) -> float:
        """Real client-steps / executed client-steps so far (1.0 = no padding)."""
        ...
