"""The sequential reference engine: the sampled clients of a round trained one at a time.

Written to be obviously right, not fast: for each cell, and in it for each sampled client k in
ascending id order, it draws k's minibatches from the key (seed, t, k) (:mod:`fedbench.engine.clients.batches`),
its augmentation from (seed, t, k, "augment") (:mod:`fedbench.engine.clients.augment`) and its held-out
minibatches from the held-out key (:mod:`fedbench.engine.clients.holdout`), and runs
:func:`fedbench.engine.clients.local.train_client` on k's own rows. It is the oracle of the equivalence
tests of the vectorized engine (:mod:`fedbench.engine.clients.vectorized`).

It has the vectorized engine's interface (:class:`fedbench.engine.clients.interface.ClientEngine`):
:meth:`SequentialClients.stacked` builds it for several stackable cells
(:mod:`fedbench.engine.rounds.stacking`: they may differ in seed and in numeric hyperparameters), and
:meth:`SequentialClients.train_cells` trains a round of them, one cell after the other, each with
its own hyperparameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType

import numpy as np
import torch

from fedbench.engine.clients import augment as augmentation
from fedbench.engine.clients.batches import local_batches
from fedbench.engine.clients.holdout import holdout_batches
from fedbench.engine.clients.interface import RoundResult
from fedbench.engine.clients.local import train_client
from fedbench.engine.spec import LocalWork


class SequentialClients:
    """The reference: one client at a time (:func:`fedbench.engine.clients.local.train_client`).

    Args:
        algorithm: the algorithm module.
        grad_fn: the model's ``grad_fn(params, x, y) -> (grads, loss)``.
        client_data: per client k, its training data ``(x_k, y_k)``.
        clients: per client k, its training rows (their number is n_k).
        local: the cell's ``local`` settings (batch_size, epochs, steps).
        seed: the cell's seed (the key of every random draw).
        augmentation: a checked augmentation record (:func:`fedbench.engine.clients.augment.check_record`) or None.
        holdout_data: per client k, its held-out data ``(x_h, y_h)``; None: nothing held out.
        output_grad_fn: ``(params, x, y) -> (grads, value)`` for the held-out pass; required with
            ``holdout_data``.

    This builds the engine for one cell; :meth:`stacked` adds more cells (seeds) to it.
    """

    def __init__(self, algorithm: ModuleType, grad_fn, client_data, clients, local: Mapping | LocalWork, seed: int,
                 augmentation: dict | None = None, holdout_data=None, output_grad_fn=None):
        if holdout_data is not None and output_grad_fn is None:
            raise ValueError("SequentialClients: held-out data needs output_grad_fn")
        self.algo, self.grad_fn = algorithm, grad_fn
        self.output_grad_fn = output_grad_fn
        self.aug = augmentation
        self.local = LocalWork.of(local)
        # per cell c: its seed, client data, training rows, held-out data and persistent client states
        self.seeds = [int(seed)]
        self.client_data, self.clients, self.holdout_data = [client_data], [clients], [holdout_data]
        self.states: list[dict[int, dict]] = [{}]
        self.executed_steps = self.real_steps = 0

    @classmethod
    def stacked(cls, algorithm: ModuleType, model, grad_fn, x_all: torch.Tensor, y_all: torch.Tensor,
                seeds: Sequence[int], clients: Sequence[Sequence[np.ndarray]], local: Mapping | LocalWork,
                chunk_size=None,
                step_overhead: float | None = None, augmentation: dict | None = None,
                holdout: Sequence[Sequence[np.ndarray]] | None = None, output_grad_fn=None) -> SequentialClients:
        """The engine for C stackable cells (:mod:`fedbench.engine.rounds.stacking`), with the arguments of
        :meth:`fedbench.engine.clients.vectorized.VectorizedClients.stacked`: cell c's client k trains on
        the rows ``clients[c][k]`` of ``x_all``/``y_all`` (and holds out ``holdout[c][k]``) with the
        keys (seeds[c], t, k, ...). ``model``, ``chunk_size`` and ``step_overhead`` concern
        vectorization only and are ignored.

        Raises:
            ValueError: no cells, or ``seeds`` and ``clients`` (and ``holdout``) of different lengths.
        """
        if not len(seeds) or len(seeds) != len(clients) or (holdout is not None and len(holdout) != len(seeds)):
            raise ValueError(f"SequentialClients.stacked: {len(seeds)} seeds for {len(clients)} cells' clients"
                             + ("" if holdout is None else f" and {len(holdout)} held-out splits")
                             + "; give one of each per cell")
        device = x_all.device

        gathered: dict[int, tuple] = {}  # id(rows) -> (rows, (x, y)): clients sharing one row array
        # (the ``shared`` partition) share one gathered copy, not one copy each

        def rows(ix):
            hit = gathered.get(id(ix))
            if hit is not None and hit[0] is ix:
                return hit[1]
            t = torch.as_tensor(ix, device=device)
            gathered[id(ix)] = (ix, (x_all[t], y_all[t]))
            return gathered[id(ix)][1]

        def data_of(c):
            held = None if holdout is None else [rows(h) for h in holdout[c]]
            return [rows(ix) for ix in clients[c]], clients[c], held

        data, rows_of, held = data_of(0)
        eng = cls(algorithm, grad_fn, data, rows_of, local, seeds[0], augmentation=augmentation,
                  holdout_data=held, output_grad_fn=output_grad_fn)
        for c in range(1, len(seeds)):
            data, rows_of, held = data_of(c)
            eng.seeds.append(int(seeds[c]))
            eng.client_data.append(data)
            eng.clients.append(rows_of)
            eng.holdout_data.append(held)
            eng.states.append({})
        return eng

    def train_round(self, server: dict, sampled: np.ndarray, hp: dict, t: int) -> RoundResult:
        """Local training of the clients ``sampled`` (ascending ids) in round ``t`` (one cell)."""
        return self.train_cells([server], [sampled], [hp], t)[0]

    def train_cells(self, servers: Sequence[dict], sampled: Sequence[np.ndarray], hps: Sequence[dict], t: int,
                    cells: Sequence[int] | None = None) -> list[RoundResult]:
        """Round ``t`` of several cells, one after the other, each with its own hyperparameters
        ``hps[i]``: as :meth:`fedbench.engine.clients.vectorized.VectorizedClients.train_cells` (same
        arguments, same results to float rounding). ``executed_steps`` and ``real_steps`` are the
        engine's totals."""
        cells = list(range(len(servers))) if cells is None else [int(c) for c in cells]
        if isinstance(hps, dict):  # one dict: the same hyperparameters for every cell
            hps = [hps] * len(servers)
        if not (len(cells) == len(servers) == len(sampled) == len(hps)):
            raise ValueError(f"train_cells: {len(servers)} server states, {len(sampled)} sampled sets and "
                             f"{len(hps)} hyperparameter dicts for {len(cells)} cells; give one of each per cell")
        results = [self._train_cell(c, server, s, hp, t) for c, server, s, hp in zip(cells, servers, sampled, hps)]
        for r in results:
            r.executed_steps, r.real_steps = self.executed_steps, self.real_steps
        return results

    def _train_cell(self, cell: int, server: dict, sampled: np.ndarray, hp: dict, t: int) -> RoundResult:
        seed, states = self.seeds[cell], self.states[cell]
        client_data, clients, holdout_data = self.client_data[cell], self.clients[cell], self.holdout_data[cell]
        messages, losses = [], []
        for k in np.asarray(sampled).tolist():
            xk, yk = client_data[k]
            batches = local_batches(seed, t, k, len(clients[k]), self.local.batch_size,
                                    epochs=self.local.epochs, steps=self.local.steps,
                                    replacement=self.local.replacement)
            aug = None
            if self.aug is not None:
                aug = (self.aug, augmentation.draw(self.aug, seed, t, k, [len(b) for b in batches]))
            held = None
            if holdout_data is not None:
                xh, yh = holdout_data[k]
                held = (xh, yh, holdout_batches(seed, t, k, len(yh), self.local.batch_size))
            msg, cstate, loss = train_client(self.algo, server, states.get(k), xk, yk, batches, hp,
                                             self.grad_fn, augment=aug, holdout=held,
                                             output_grad_fn=self.output_grad_fn)
            if cstate is not None:
                states[k] = cstate
            messages.append(msg)
            losses.append(loss)
            self.executed_steps += len(batches)
            self.real_steps += len(batches)
        return RoundResult(messages, losses, messages)

    def client_states(self, cell: int = 0) -> dict[int, dict]:
        """Cell ``cell``'s persistent client states ``{k: state}``."""
        return self.states[cell]

    def load_client_states(self, states: dict[int, dict], cell: int = 0) -> None:
        """Restore cell ``cell``'s persistent client states ``{k: state}`` (resume from a checkpoint)."""
        self.states[cell] = dict(states)

    #: No padding: every executed client-step is real.
    padding_efficiency = 1.0
