"""The vectorized client engine: every sampled client of a round trained at once.

The sequential reference (:mod:`fedbench.engine.clients.sequential`) runs ``client_init → client_step × K
→ client_final`` for one client at a time. This engine runs the *same* three functions of the
algorithm module, unchanged, through :func:`torch.func.vmap` over a leading client dimension, so
a round costs S_max = max_k K_k vectorized steps instead of Σ_k K_k small ones: on small models a
step is bound by per-kernel launch overhead, not arithmetic, so G clients in one step cost little
more than one. Both engines have one interface (:class:`fedbench.engine.clients.interface.ClientEngine`).

How a round is run
==================

1. **Batches up front.** For every sampled client k, :func:`fedbench.engine.clients.batches.local_batches`
   draws its row indices from the keyed RNG (seed, t, k, "batches"), exactly as the reference
   does, so both engines consume identical minibatches. Indices are mapped to rows of the one
   on-device training tensor (``X_all``, ``Y_all``); no per-client copies of the data are made.
2. **Groups.** Clients are sorted by step count K_k (descending, then by id) and cut into chunks
   of at most ``chunk_size`` clients (memory bound; :func:`~.chunking.auto_chunk_size` by default), so in
   every chunk the clients still stepping at any step are a prefix. Eager rounds (CPU; CUDA
   chunks not graphed) take the round as one group (padding costs nothing there: point 3). Where
   padded steps run (CUDA graphs), :func:`~.chunking.plan_groups` first cuts the clients into groups: a
   dynamic programme over the distinct step counts trades padded steps against per-step launch
   overhead, keeping every group's padding efficiency ≥ :data:`~.chunking.PADDING_EFFICIENCY_FLOOR` (so
   every round's). Per chunk: an index tensor ``idx[S, G, B]``, labels ``y[S, G, B]`` and a step
   mask ``m[S, G]``.
3. **Unequal step counts: finished clients leave, padded steps are exact no-ops.** In an eager
   chunk the vmapped step at step s runs over the prefix of clients with K_k > s only; a client
   whose steps are done leaves the chunk with its state (:meth:`VectorizedClients._retiring_steps`),
   and the last one runs on without vmap: no padded step is executed (padding efficiency 1).
   A graphed chunk runs all its S steps over all its clients: a client with K_k < S runs S − K_k
   padded steps on real rows of its own data; after every step the *whole* step state
   (parameters, optimizer and algorithm state, step counter, loss) is selected with
   ``torch.where(m[s, g], new, old)``. This is not ``lr * 0``: NaN/inf in a padded step cannot
   leak and momentum-like state does not decay. A step where every client is real skips the
   select. (:attr:`VectorizedClients.retire_finished` False runs eager chunks padded too.)
4. **Unequal batch sizes within a step** (the last, partial batch of an epoch; or clients with
   n_k < B) are handled by *padding rows with the ignore label*: a padded row repeats a real row
   of the same client and gets label ``IGNORE_INDEX = -100``, which
   :func:`torch.nn.functional.cross_entropy` (the models' loss, :func:`fedbench.models.make_loss_fn`)
   excludes from both the sum and the count of its ``mean`` reduction. The loss is therefore the
   mean over the real rows only, and the gradient of a padded row is exactly zero (it is
   multiplied by a zero weight). We chose padding over grouping by batch-size pattern because it
   keeps one group per step count and costs at most one partial batch per epoch; the equality
   (loss and gradient equal to the unpadded batch) is tested in ``tests/engine/clients/test_vectorized.py``.
5. **One-client chunks** (``chunk_size`` 1, the automatic choice on CPU where stacking does not
   pay: :func:`~.chunking.auto_chunk_size`) call the same three functions directly on the client's tensors,
   without ``vmap`` (:func:`~.stacked._batched`); the step loop keeps the client's state unstacked and
   skips its padded steps outright (the same no-op as the masked select).
6. **client_final** runs vmapped too (server state broadcast, step state stacked). Messages are
   unstacked and handed to the algorithm's ``server_update`` as a list **in ascending client id
   order**, exactly as the reference does; communication is counted from the stacked messages
   (identical counts; the entropy histogram does not depend on the order of the values).
7. **Augmentation** (image datasets, when the cell asks for it): each client's flip and crop
   draws are made up front from (seed, t, k, "augment") exactly as the reference makes them
   (:mod:`fedbench.engine.clients.augment`) and laid out as ``[S, G, B]`` like the indices; a step's
   gathered batch is flipped and cropped (copies only, so bitwise the reference's inputs) before
   the vmapped ``client_step``. Padded rows and steps get the identity.
8. **Held-out pass** (algorithms that declare one, :mod:`fedbench.engine.clients.holdout`; Elastic
   Aggregation's sensitivity): after ``client_init`` and before the first training step, the
   vmapped ``client_holdout_step`` runs over each client's held-out minibatches, laid out as
   ``[H, G, B]`` exactly like the training batches (rows of ``X_all``, padded rows labelled
   ``IGNORE_INDEX``, padded steps masked by ``torch.where``); ``output_grad_fn`` takes the mean
   over the real rows only. Algorithms without one skip this entirely.
9. **Client state** (SCAFFOLD c_k, FedDyn g_k) lives in one stacked table per leaf,
   ``[m, *shape]``, allocated when a client first returns state; clients that never participated
   get ``client_init(server, None)`` (computed once and broadcast), the others the vmapped
   ``client_init`` on their gathered rows, combined with ``torch.where``.
10. **CUDA graphs** (CUDA only): a group of at least :data:`fedbench.engine.clients.graphs.MIN_STEPS`
    steps runs its step (gather, augmentation, vmapped ``client_step``, masked select, loss sum)
    as a CUDA graph, captured once per group shape and hyperparameters and replayed for every
    step (:mod:`fedbench.engine.clients.graphs`); the same kernels, so the same values as the eager loop.
    CPU rounds run eagerly, and so do chunks that mix hyperparameter values (point 11).
11. **Cells stacked** (:meth:`VectorizedClients.stacked`, :meth:`VectorizedClients.train_cells`):
    the clients of several stackable cells (:mod:`fedbench.engine.rounds.stacking`: they may differ in
    seed and in numeric hyperparameters) are one engine's clients (cell c owns ids ``offsets[c]``
    to ``offsets[c + 1] - 1``), each drawing its batches, augmentation and held-out batches with
    its own cell's key (seed_c, t, k). Groups and chunks mix cells; ``client_init`` and
    ``client_final`` run per cell with that cell's server state and hyperparameters; messages,
    losses and communication come back per cell. In ``client_step`` and ``client_holdout_step``
    a chunk whose cells share every hyperparameter value runs with those Python numbers (the
    single-cell code path, bitwise); a chunk that mixes values (:meth:`VectorizedClients._chunk_hparams`)
    passes each differing one as a ``[G]`` tensor of the parameters' dtype through ``vmap``
    (in_dims 0), so inside the step it is a 0-d tensor (the algorithms read such values
    tensor-friendly: :mod:`fedbench.algorithms.hparams`). Such chunks run their steps eagerly
    on CUDA too, not as CUDA graphs: a captured graph bakes Python hyperparameters into its
    kernels and is keyed by them, and feeding per-client tensors as graph inputs is not done
    (untested without a GPU); correctness first, the speed of graphs for mixed chunks is left.

12. **Linear logistic regression on CPU** (``binary_logreg``, ``logreg``; FedAc's regime of many
    workers with batch size 1): a chunk whose algorithm step is affine in its state and gradient
    (FedAvg, FedAc, Mb-SGD, Mb-Ac-SGD, FedProx, SCAFFOLD, FedDyn, ... without clipping), with no padded
    steps or rows, no augmentation and no held-out pass, runs all its steps in one compiled loop
    (the update rule read off the algorithm's own ``client_step``, the gradient written out) instead
    of S vmapped steps; with full participation and a linear server side, whole segments of rounds
    (server updates included) run in one compiled call, on CUDA (``binary_logreg``) as tensor
    programs. :mod:`~.compiled` decides where, and hands them to :mod:`fedbench.engine.linear_fast`
    (docs/engines.md). Where every client's batches form one [K, B] array, a round's rows are drawn
    for all its clients at once (:func:`fedbench.engine.clients.batches.stacked_batches`, the same
    rows bit for bit). A round's messages stay stacked (:class:`~.stacked.StackedMessages`;
    per-client dicts only for algorithms that read them one by one).

Equivalence: in float64 the parameters match the reference to ~1e-14 relative after several
rounds (tests require 1e-10); bitwise equality is not promised, since batched kernels may sum in
a different order than unbatched ones. The same cell run twice is bitwise identical (the grouping
is deterministic).

How a new algorithm gets vectorized for free
============================================

Write ``client_init`` / ``client_step`` / ``client_final`` as the protocol in
:mod:`fedbench.algorithms` asks (pure functions of dicts of tensors) and this engine runs them
under ``vmap`` unchanged. Inside these three functions:

- **no Python control flow on tensor values**: no ``if loss > x``, ``while norm > ...``,
  ``bool(t)``, ``float(t)``, ``int(t)`` or ``.item()`` (under vmap a value is one per client);
  use ``torch.where``/``torch.clamp`` instead. Branching on Python values (hyperparameters, dict
  keys, ``hparams["clip_norm"] is None``) is fine;
- **treat ``step_state["steps"]`` as possibly a 0-d integer tensor** (one count per client), not
  only a Python int (see :func:`fedbench.algorithms.scaffold.client_final`);
- **no in-place ops** on inputs (``add_``, ``x[i] = ...``, ``out=``): return new tensors;
- **no randomness** inside the step (draw it up front from the keyed RNG, like the batches);
- **no data-dependent shapes** (``nonzero``, boolean-mask indexing); reductions must be over
  one client's tensors only (vmap takes care of this as long as no ``.sum()`` is taken over a
  stacked dimension by hand);
- the model must be a pure function (``apply(params, x)``), and its loss must honour
  ``ignore_index=-100`` with a mean over non-ignored rows (cross-entropy does);
- ``server_update`` is not vmapped: it runs once per round on the list of messages, so it may do
  anything the reference allows.

An algorithm that breaks a rule fails loudly under vmap (for example "vmap: It looks like you're
calling .item() on a Tensor"), and ``engine: sequential`` always remains available.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import ModuleType

import numpy as np
import torch
from torch.func import vmap
from torch.utils import _pytree as pytree

from fedbench.engine.clients import augment as augmentation
from fedbench.engine.clients import graphs
from fedbench.engine.clients.batches import local_batches, stacked_batches, uniform_shape
from fedbench.engine.clients.chunking import (
    DEFAULT_STEP_OVERHEAD,
    IGNORE_INDEX,
    PADDING_EFFICIENCY_FLOOR,
    auto_chunk_size,
    plan_groups,
)
from fedbench.engine.clients.compiled import CompiledPaths
from fedbench.engine.clients.holdout import holdout_batches
from fedbench.engine.clients.interface import RoundResult
from fedbench.engine.clients.stacked import (
    StackedMessages,
    _as_rows,
    _batched,
    _bcast,
    _expand,
    _select,
    _StackedRows,
    _take,
    _tensorize,
)
from fedbench.engine.spec import LocalWork


class VectorizedClients(CompiledPaths):
    """Trains the sampled clients of each round of one cell, vectorized (see module docstring);
    :meth:`stacked` builds one engine for several seeds of a cell trained in lockstep. Its compiled
    paths for linear models are those of :class:`~.compiled.CompiledPaths`.

    Args:
        algorithm: the algorithm module.
        model: the :class:`fedbench.models.Model` (its ``apply`` and ``batch_clients_on_cpu``, for
            the automatic chunk size only).
        grad_fn: the model's ``grad_fn(params, x, y) -> (grads, loss)`` (vmap-compatible).
        x_all, y_all: the whole training split, on the compute device (one tensor each).
        clients: per client, the rows of ``x_all`` it owns (int arrays, in partition order).
        local: the cell's ``local`` settings (batch_size, epochs, steps).
        seed: the cell's seed (batch randomness key).
        chunk_size: clients per vectorized chunk; None or "auto" = :func:`~.chunking.auto_chunk_size`.
        step_overhead: :func:`~.chunking.plan_groups`'s overhead per vectorized step (None = per device).
        augmentation: a checked augmentation record (:func:`fedbench.engine.clients.augment.check_record`)
            applied to every training minibatch, or None. Draws are keyed as in the reference;
            padded rows and padded steps get the identity (no flip, centre window).
        holdout: per client, the rows of ``x_all`` it holds out (:func:`fedbench.engine.clients.holdout.holdout_split`;
            ``clients`` are then the remaining rows), or None when the algorithm holds out nothing.
        output_grad_fn: ``(params, x, y) -> (grads, value)`` for the held-out pass
            (:func:`fedbench.engine.clients.holdout.make_output_grad_fn`); required with ``holdout``.
    """

    #: :func:`~.chunking.plan_groups`'s ``min_efficiency`` where padded steps run (CUDA graphs, or
    #: :attr:`retire_finished` False): every group, so every round, keeps at least this padding
    #: efficiency. Benchmarks set 0 to plan by the step cost alone.
    min_padding_efficiency = PADDING_EFFICIENCY_FLOOR

    #: Eager chunks of several clients run no padded step: a client whose K_k steps are done
    #: leaves the chunk (:meth:`_retiring_steps`), and a round is one group (cut into chunks). A
    #: runtime choice (the same results to float rounding): False runs every chunk's S steps
    #: over all its clients, padded ones masked by ``torch.where``, grouped by :func:`~.chunking.plan_groups`
    #: as for CUDA graphs; tests and benchmarks set it to run that path on CPU.
    retire_finished = True

    def __init__(self, algorithm: ModuleType, model, grad_fn, x_all: torch.Tensor, y_all: torch.Tensor,
                 clients: Sequence[np.ndarray], local: Mapping | LocalWork, seed: int, chunk_size=None,
                 step_overhead: float | None = None, augmentation: dict | None = None,
                 holdout: Sequence[np.ndarray] | None = None, output_grad_fn=None):
        if holdout is not None and output_grad_fn is None:
            raise ValueError("VectorizedClients: a held-out split needs output_grad_fn")
        self.algo = algorithm
        self.holdout = None if holdout is None else _as_rows(holdout)[0]
        self.output_grad_fn = output_grad_fn
        self.aug = augmentation
        self.model = model
        self.grad_fn = grad_fn
        self.x_all, self.y_all = x_all, y_all
        self.device = x_all.device
        self.clients, self._slot, self._distinct = _as_rows(clients)
        self.m = len(self.clients)
        self._sizes = np.array([len(r) for r in self._distinct], dtype=np.int64)[self._slot]  # n_k
        self.local = LocalWork.of(local)
        self.seed = int(seed)
        # Seed stacking (:meth:`stacked`): client g belongs to cell cell_of[g] and draws its
        # randomness with the keys (key_seed[g], t, key_id[g], ...). One cell: (seed, t, g).
        self.key_seed = np.full(self.m, self.seed, dtype=np.int64)
        self.key_id = np.arange(self.m, dtype=np.int64)
        self.cell_of = np.zeros(self.m, dtype=np.int64)
        self.offsets = np.array([0, self.m], dtype=np.int64)  # cell c owns clients offsets[c]:offsets[c+1]
        self.chunk_size = None if chunk_size in (None, "auto") else int(chunk_size)
        self.step_overhead = (DEFAULT_STEP_OVERHEAD.get(self.device.type, 256.0)
                              if step_overhead is None else float(step_overhead))
        self.store: dict | None = None  # stacked client state: pytree of [m, ...] tensors
        self.store_spec = None
        self._row_table: np.ndarray | None = None  # the distinct row arrays, [u, max n_k] (_uniform_batches)
        self.has_state = torch.zeros(self.m, dtype=torch.bool, device=self.device)
        self.has_state_np = np.zeros(self.m, dtype=bool)
        self.executed_steps = 0
        self.real_steps = 0
        #: CUDA graphs of the step loop (:mod:`fedbench.engine.clients.graphs`); None on CPU.
        self.graphs = graphs.StepGraphs(self.device) if self.device.type == "cuda" else None
        #: The compiled local steps of linear logistic regression (:mod:`fedbench.engine.linear_fast.linear_steps`),
        #: built on first use; None where the model or device does not qualify.
        self._linear = False
        # the whole-rounds tensor path (:mod:`fedbench.engine.linear_fast.tensor_rounds`), on first use
        self._tensors = False
        #: The rounds the caller will train (:func:`fedbench.engine.rounds.loop.train_seeds` sets it); with
        #: the clients per round it decides whether the compiled paths pay (:meth:`_compiled_pays`).
        self.planned_rounds: int | None = None

    @classmethod
    def stacked(cls, algorithm: ModuleType, model, grad_fn, x_all: torch.Tensor, y_all: torch.Tensor,
                seeds: Sequence[int], clients: Sequence[Sequence[np.ndarray]], local: Mapping | LocalWork,
                chunk_size=None,
                step_overhead: float | None = None, augmentation: dict | None = None,
                holdout: Sequence[Sequence[np.ndarray]] | None = None, output_grad_fn=None) -> VectorizedClients:
        """One engine for C stackable cells (:mod:`fedbench.engine.rounds.stacking`: seeds, hyperparameter
        values), trained in lockstep.

        Cell c's clients (``clients[c]``, its partition; ``holdout[c]`` its held-out rows) become
        the engine's clients ``offsets[c] .. offsets[c+1] - 1``; every random draw of client k of
        cell c keeps that cell's key (seeds[c], t, k, ...), so each cell consumes exactly the
        batches it would alone. :meth:`train_cells` trains the sampled clients of all cells of a
        round as one set: groups and chunks mix cells, so a small model's round over C cells costs
        about one round over C× the clients (``benchmarks/RESULTS.md``, "Seeds stacked").
        ``client_init`` and ``client_final`` run per cell (each with its own server state and
        hyperparameters; the cells' hyperparameters are given per round to :meth:`train_cells`).

        Equal to training the cells one by one to float rounding (chunks of another size may sum
        in another order; tested to 1e-10 relative in float64 for every algorithm,
        ``tests/engine/rounds/test_loop.py`` and ``tests/engine/rounds/test_stacking.py``); a stacked run
        repeated is bitwise identical.

        Raises:
            ValueError: no cells, or ``seeds`` and ``clients`` (and ``holdout``) of different lengths.
        """
        if not len(seeds) or len(seeds) != len(clients) or (holdout is not None and len(holdout) != len(seeds)):
            raise ValueError(f"VectorizedClients.stacked: {len(seeds)} seeds for {len(clients)} cells' clients"
                             + ("" if holdout is None else f" and {len(holdout)} held-out splits")
                             + "; give one of each per cell")
        sizes = [len(c) for c in clients]
        eng = cls(algorithm, model, grad_fn, x_all, y_all, [rows for cell in clients for rows in cell], local,
                  int(seeds[0]), chunk_size=chunk_size, step_overhead=step_overhead, augmentation=augmentation,
                  holdout=None if holdout is None else [rows for cell in holdout for rows in cell],
                  output_grad_fn=output_grad_fn)
        eng.key_seed = np.repeat(np.asarray(seeds, dtype=np.int64), sizes)
        eng.key_id = np.concatenate([np.arange(n, dtype=np.int64) for n in sizes])
        eng.cell_of = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
        eng.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return eng

    # -- batches ---------------------------------------------------------------------------------
    def _round_batches(self, t: int, sampled: np.ndarray) -> Mapping[int, np.ndarray | list]:
        """``{k: self._client_batches(t, k)}`` for the round's clients. Where every client's batches
        are one [K, B] array of the same shape (``local.steps``; epochs whose batch size divides
        n_k) the clients of equal n_k draw together (:func:`fedbench.engine.clients.batches.stacked_batches`:
        the same rows, without a generator object per client), held as one array."""
        local = self.local
        if not self._compiled_pays(len(sampled)):
            return {int(k): self._client_batches(t, int(k)) for k in sampled}
        ids = np.unique(np.asarray(sampled, dtype=np.int64))
        sizes = self._sizes[ids]
        distinct = np.unique(sizes)
        bs, epochs, steps, replacement = local.batch_size, local.epochs, local.steps, local.replacement
        parts = [] if len(ids) and all(n >= 1 and uniform_shape(int(n), bs, epochs, steps) for n in distinct) else None
        for n in distinct if parts is not None else ():
            at = np.flatnonzero(sizes == n)
            parts.append((at, stacked_batches(self.key_seed[ids[at]], t, self.key_id[ids[at]], int(n), bs,
                                              epochs=epochs, steps=steps, replacement=replacement)))
        if parts is None or len({p.shape[1:] for _, p in parts}) != 1:  # unequal steps or batch sizes
            return {int(k): self._client_batches(t, int(k)) for k in sampled}
        rows = np.empty((len(ids), *parts[0][1].shape[1:]), dtype=np.int64)
        for at, p in parts:
            rows[at] = p
        return _StackedRows(ids, rows)

    def _client_batches(self, t: int, k: int) -> list[np.ndarray]:
        return local_batches(int(self.key_seed[k]), t, int(self.key_id[k]), len(self.clients[k]),
                             self.local.batch_size, epochs=self.local.epochs, steps=self.local.steps,
                             replacement=self.local.replacement)

    def _uniform_batches(self, members: Sequence[int], batches: dict, draws):
        """:meth:`_group_tensors` without a Python loop over clients, for the common case where
        every member's batches are one ``[K, B]`` array of the same shape (equal steps and batch
        sizes: no padded rows or steps) and nothing is augmented; None otherwise. The same
        tensors as the general path: rows gathered from a table of the clients' distinct row arrays
        (one per cell for the ``shared`` partition, so no [m, n] table)."""
        if draws is not None:
            return None
        if isinstance(batches, _StackedRows):
            if batches.rows.shape[1] == 0:
                return None
            first, local = batches.rows[0], batches.take(members)
        else:
            first = batches[members[0]]
            if not (isinstance(first, np.ndarray) and first.ndim == 2 and len(first) > 0):
                return None
            if not all(isinstance(batches[k], np.ndarray) and batches[k].shape == first.shape for k in members):
                return None
            local = np.stack([batches[k] for k in members])  # [G, S, B] indices into each client's rows
        slots = self._slot[np.asarray(members, dtype=np.int64)]
        idx = self.row_table()[slots[:, None, None], local].transpose(1, 0, 2)
        idx_t = torch.from_numpy(np.ascontiguousarray(idx)).to(self.device)
        s_max, g = first.shape[0], len(members)
        return (idx_t, self.y_all[idx_t], np.ones((s_max, g), dtype=bool), np.full(g, s_max, dtype=np.int64),
                None)

    def row_table(self) -> np.ndarray:
        """[u, max n_k] int64: the u distinct row arrays of the clients (client g's rows are
        ``row_table()[_slot[g], :n_g]``; padded with 0, only real rows are indexed): u = m for a
        disjoint partition, 1 per cell for ``shared``."""
        if self._row_table is None:
            table = np.zeros((len(self._distinct), max(len(r) for r in self._distinct)), dtype=np.int64)
            for u, rows in enumerate(self._distinct):
                table[u, : len(rows)] = rows
            self._row_table = table
        return self._row_table

    def _group_tensors(self, members: Sequence[int], batches: dict[int, list[np.ndarray]], draws=None,
                       rows_of: Sequence[np.ndarray] | None = None):
        """(idx[S, G, B] rows of x_all, y[S, G, B] labels with IGNORE_INDEX pads, mask[S, G], K per
        client, and the augmentation draws (flip, dy, dx)[S, G, B] or None). ``batches`` index into
        ``rows_of[k]`` (default: the clients' training rows; the held-out rows for that pass)."""
        fast = self._uniform_batches(members, batches, draws) if rows_of is None else None
        if fast is not None:
            return fast
        rows_of = self.clients if rows_of is None else rows_of
        g = len(members)
        ks = [len(batches[k]) for k in members]
        s_max = max(ks)
        b_max = max((len(b) for k in members for b in batches[k]), default=1)
        idx = np.zeros((s_max, g, b_max), dtype=np.int64)
        real = np.zeros((s_max, g, b_max), dtype=bool)
        for j, k in enumerate(members):
            bl = batches[k]
            rows = rows_of[k]
            if len(bl) == 0:  # K = 0: every step is padding; point at a real row (of its training data)
                idx[:, j, :] = rows[0] if len(rows) else self.clients[k][0]
                continue
            sizes = np.fromiter((len(b) for b in bl), dtype=np.int64, count=len(bl))
            if np.all(sizes == b_max):
                local_idx = np.stack(bl)
                real[: len(bl), j, :] = True
            else:
                local_idx = np.empty((len(bl), b_max), dtype=np.int64)
                for i, b in enumerate(bl):
                    local_idx[i, : len(b)] = b
                    local_idx[i, len(b):] = b[0]  # padded rows repeat a real row of the batch
                    real[i, j, : len(b)] = True
            idx[: len(bl), j, :] = rows[local_idx]
            if len(bl) < s_max:  # padded steps: re-run the first batch (discarded by the mask)
                idx[len(bl):, j, :] = rows[local_idx[0]]
        step_mask = np.zeros((s_max, g), dtype=bool)
        for j, kk in enumerate(ks):
            step_mask[:kk, j] = True
        idx_t = torch.from_numpy(idx).to(self.device)
        y = self.y_all[idx_t]
        y = torch.where(torch.from_numpy(real).to(self.device), y, torch.full_like(y, IGNORE_INDEX))
        aug = None
        if draws is not None:  # padded rows and steps: the identity (no flip, centre window)
            pad = self.aug["padding"]
            flip = np.zeros((s_max, g, b_max), dtype=bool)
            dy = np.full((s_max, g, b_max), pad, dtype=np.int64)
            dx = np.full((s_max, g, b_max), pad, dtype=np.int64)
            for j, k in enumerate(members):
                for s, (f, a, b) in enumerate(draws[k]):
                    flip[s, j, : len(f)], dy[s, j, : len(a)], dx[s, j, : len(b)] = f, a, b
            aug = tuple(torch.from_numpy(a).to(self.device) for a in (flip, dy, dx))
        return idx_t, y, step_mask, np.asarray(ks), aug

    # -- client state ----------------------------------------------------------------------------
    def _by_cell(self, members: np.ndarray) -> list[tuple[int, np.ndarray | None]]:
        """(cell, positions of its members) for each cell in ``members``; positions None when
        every member belongs to one cell (the single-cell case: no slicing at all)."""
        cells = self.cell_of[members]
        if (cells == cells[0]).all():
            return [(int(cells[0]), None)]
        return [(int(c), np.flatnonzero(cells == c)) for c in np.unique(cells)]

    def _init_states(self, server_of: dict[int, dict], members: np.ndarray, hp_of: dict[int, dict]):
        """The stacked step state ``[G, ...]`` of ``members``: each cell's ``client_init`` with its
        own server state and hyperparameters (:meth:`_init_cell_states`), put back in member order."""
        parts = self._by_cell(members)
        if len(parts) == 1:
            return self._init_cell_states(server_of[parts[0][0]], members, hp_of[parts[0][0]])
        outs = [self._init_cell_states(server_of[c], members[pos], hp_of[c]) for c, pos in parts]
        if any(pytree.tree_structure(o) != pytree.tree_structure(outs[0]) for o in outs):
            raise ValueError(f"{self.algo.__name__}.client_init returns differently structured states with and "
                             "without client state; the vectorized engine needs one structure")
        inverse = torch.as_tensor(np.argsort(np.concatenate([pos for _, pos in parts])), device=self.device)
        return pytree.tree_map(lambda *v: torch.cat(v)[inverse], *outs)

    def _init_cell_states(self, server: dict, members: np.ndarray, hp: dict):
        algo, g = self.algo, len(members)
        has = self.has_state_np[members]
        base = None
        if not has.all():
            base = _expand(_tensorize(algo.client_init(server, None, hp), self.device), g)
            if not has.any():
                return base
        gathered = pytree.tree_map(lambda v: v[torch.as_tensor(members, device=self.device)], self.store)

        def init_one(cs):
            return _tensorize(algo.client_init(server, cs, hp), self.device)

        stacked = _batched(init_one, g, self.device)(gathered)
        if base is None:
            return stacked
        if pytree.tree_structure(stacked) != pytree.tree_structure(base):
            raise ValueError(f"{algo.__name__}.client_init returns differently structured states with and "
                             "without client state; the vectorized engine needs one structure")
        mask = torch.as_tensor(has, device=self.device)
        return pytree.tree_map(lambda n, o: torch.where(_bcast(mask, n), n, o), stacked, base)

    def _save_states(self, members: np.ndarray, new_states) -> None:
        if new_states is None or (isinstance(new_states, dict) and not new_states):
            return
        rows = torch.as_tensor(members, device=self.device)
        if self.store is None:
            self.store_spec = pytree.tree_structure(new_states)
            self.store = pytree.tree_map(
                lambda v: torch.zeros((self.m, *v.shape[1:]), dtype=v.dtype, device=v.device), new_states)
        for dst, src in zip(pytree.tree_leaves(self.store), pytree.tree_leaves(new_states)):
            dst[rows] = src  # the engine's own table: in place is safe here
        self.has_state[rows] = True
        self.has_state_np[members] = True

    def _chunk_hparams(self, members: np.ndarray, hp_of: dict[int, dict], dtype: torch.dtype):
        """(common, varying) hyperparameters of a chunk for its vmapped steps.

        ``common``: every value the chunk's cells share, as given (Python numbers: the single-cell
        code path, bitwise). ``varying``: None when the cells share every value; else, per key
        whose values differ, a ``[G]`` tensor of ``dtype`` (member j's cell's value), passed
        through vmap so that inside the step each is a 0-d tensor.

        Raises:
            ValueError: a non-numeric value (None, bool, str) differs between the cells (such
                cells are not stackable: :func:`fedbench.engine.rounds.stacking.check_stackable`).
        """
        cells = [c for c, _ in self._by_cell(members)]
        first = hp_of[cells[0]]
        if len(cells) == 1:
            return first, None
        keys = set().union(*(hp_of[c] for c in cells))
        differ = sorted(k for k in keys if any(k not in hp_of[c] or hp_of[c][k] != first.get(k) for c in cells))
        if not differ:
            return first, None
        cell_of = self.cell_of[members]
        varying = {}
        for k in differ:
            values = [hp_of[c].get(k) for c in cells]
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                raise ValueError(f"vectorized engine: stacked cells differ in hyperparameter {k!r} ({values}); "
                                 "only numbers can differ between cells trained together")
            per_cell = {c: float(hp_of[c][k]) for c in cells}
            varying[k] = torch.tensor([per_cell[int(c)] for c in cell_of], dtype=dtype, device=self.device)
        return {k: v for k, v in first.items() if k not in varying}, varying

    def client_states(self, cell: int = 0) -> dict[int, dict]:
        """Cell ``cell``'s persistent client states as the reference returns them: ``{k: state}``
        (k its own client ids)."""
        if self.store is None:
            return {}
        lo, hi = int(self.offsets[cell]), int(self.offsets[cell + 1])
        return {int(k) - lo: _take(self.store, k) for k in lo + np.flatnonzero(self.has_state_np[lo:hi])}

    def load_client_states(self, states: dict[int, dict], cell: int = 0) -> None:
        """Restore cell ``cell``'s persistent client states ``{k: state}`` (from :meth:`client_states`; resume)."""
        if not states:
            return
        members = self.offsets[cell] + np.array(sorted(states), dtype=np.int64)
        stacked = pytree.tree_map(lambda *vs: torch.stack([v.to(self.device) for v in vs]),
                                  *[states[int(k)] for k in sorted(states)])
        self._save_states(members, stacked)

    # -- one round -------------------------------------------------------------------------------
    def train_round(self, server: dict, sampled: np.ndarray, hp: dict, t: int) -> RoundResult:
        """Local training of the clients ``sampled`` (ascending ids) in round ``t`` (one cell)."""
        return self.train_cells([server], [sampled], [hp], t)[0]

    def train_cells(self, servers: Sequence[dict], sampled: Sequence[np.ndarray], hps: Sequence[dict], t: int,
                    cells: Sequence[int] | None = None) -> list[RoundResult]:
        """Round ``t`` of several stacked cells (:meth:`stacked`) as one set of clients.

        Args:
            servers: per cell, its server state (θ^{t-1} and the algorithm's server variables).
            sampled: per cell, its sampled client ids (its own ids, ascending).
            hps: per cell, its round's hyperparameters (its ``hparams`` plus ``lr``, ``weight_decay``,
                ``clip_norm``). ``client_init`` and ``client_final`` get their cell's; a chunk that
                mixes cells with different values gets those as per-client tensors in its steps
                (:meth:`_chunk_hparams`); one dict (not a list): the same for every cell.
            t: the round (1-based).
            cells: which cells ``servers`` and ``sampled`` belong to (default: 0, 1, ...); a cell
                that stopped (diverged) or has not reached round ``t`` (resumed later) is left out.

        Returns:
            One :class:`RoundResult` per given cell, in the order given; ``executed_steps`` and
            ``real_steps`` are the engine's totals (shared by the cells).

        On CUDA the round runs on the engine's own stream (graph captures cannot run on the default
        stream), after everything already queued on the caller's stream and before anything the
        caller queues next.
        """
        cells = list(range(len(servers))) if cells is None else [int(c) for c in cells]
        if isinstance(hps, dict):  # one dict: the same hyperparameters for every cell
            hps = [hps] * len(servers)
        if not (len(cells) == len(servers) == len(sampled) == len(hps)):
            raise ValueError(f"train_cells: {len(servers)} server states, {len(sampled)} sampled sets and "
                             f"{len(hps)} hyperparameter dicts for {len(cells)} cells; give one of each per cell")
        server_of = dict(zip(cells, servers))
        hp_of = dict(zip(cells, (dict(h) for h in hps)))
        sizes = [len(s) for s in sampled]
        flat = np.concatenate([self.offsets[c] + np.asarray(s, dtype=np.int64) for c, s in zip(cells, sampled)]
                              + [np.zeros(0, dtype=np.int64)])
        if self.graphs is None:
            result = self._train_round(server_of, flat, hp_of, t)
        else:
            caller = torch.cuda.current_stream(self.device)
            self.graphs.stream.wait_stream(caller)
            with torch.cuda.stream(self.graphs.stream):
                result = self._train_round(server_of, flat, hp_of, t)
            caller.wait_stream(self.graphs.stream)
        parts, losses, counted = result
        bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
        out = []
        for c, a, b in zip(cells, bounds[:-1], bounds[1:]):
            mine = [(pos - a, msg) for pos, msg in parts if len(pos) and a <= pos[0] < b]
            out.append(RoundResult(StackedMessages(mine, b - a), losses[a:b], counted[c], self.executed_steps,
                                   self.real_steps))
        return out

    def _train_round(self, server_of: dict[int, dict], sampled: np.ndarray, hp_of: dict[int, dict], t: int):
        """Train ``sampled`` (engine-wide client ids; ascending within each cell) with each cell's
        hyperparameters ``hp_of[c]``; returns (the messages as (positions in ``sampled``, the stacked
        message of those clients) per chunk and cell, the losses in the order of ``sampled``,
        {cell: messages to count})."""
        algo = self.algo
        any_server = next(iter(server_of.values()))
        hp_any = hp_of[next(iter(server_of))]
        dtype = next(iter(any_server["params"].values())).dtype
        self._round_clients = len(sampled)
        batches = self._round_batches(t, sampled)
        draws = None
        if self.aug is not None:
            draws = {k: augmentation.draw(self.aug, int(self.key_seed[k]), t, int(self.key_id[k]), [len(b) for b in bl])
                     for k, bl in batches.items()}
        if isinstance(batches, _StackedRows):
            steps = np.full(len(sampled), batches.rows.shape[1], dtype=np.int64)
        else:
            steps = [len(batches[int(k)]) for k in sampled]
        chunk = self.chunk_size or self._auto_chunk(any_server, hp_any, int(max(steps, default=0)))
        if self.graphs is None and self.retire_finished:  # eager: finished clients leave, padding costs nothing
            plan = plan_groups(steps, chunk, math.inf)
        else:  # graphed steps run every padded client-step: group by step count, above the floor
            plan = plan_groups(steps, chunk, self.step_overhead, self.min_padding_efficiency)

        def final_for(server, hp):
            def final_one(state):
                msg, cs = algo.client_final(server, state, hp)
                return msg, ({} if cs is None else cs)
            return final_one

        held = None
        if self.holdout is not None:
            bs = self.local.batch_size
            held = {int(k): holdout_batches(int(self.key_seed[k]), t, int(self.key_id[k]),
                                            len(self.holdout[int(k)]), bs)
                    for k in sampled}
        parts: list = []  # (positions in sampled, the chunk's stacked message)
        losses = np.full(len(sampled), np.nan)
        counted: dict[int, list] = {c: [] for c in server_of}
        for positions in plan:
            members = sampled[positions]
            idx, y, mask_np, ks, aug = self._group_tensors(members.tolist(), batches, draws)
            g = len(members)
            hp, varying = self._chunk_hparams(members, hp_of, dtype)
            step_one, step_v, holdout_v, step_g = self._step_fns(hp, varying, g)
            state = self._init_states(server_of, members, hp_of)
            if held is not None:
                state = self._holdout_pass(state, members, held, holdout_v)
            loss_sum = torch.zeros(g, dtype=torch.float64, device=self.device)
            mask_t = torch.from_numpy(mask_np).to(self.device)  # one host-to-device copy per group
            fast = self._fast_chunk(state, members, hp_of, idx, y, mask_np, held is not None or aug is not None)
            if fast is not None:  # every step of the chunk in one compiled loop
                state, loss_np = fast
                loss_sum = torch.from_numpy(loss_np)
                eager_steps = 0
            elif self.graphs is not None and varying is None and idx.shape[0] >= graphs.MIN_STEPS:

                def graphed_body(st, ls, idx_s, y_s, m_s, *aug_s, step_g=step_g):
                    new = step_g(st, self._gather(idx_s, aug_s), y_s)
                    return _select(m_s, new, st), ls + torch.where(m_s, new["loss"].double(), 0.0)

                state, loss_sum = self.graphs.run(graphed_body, _tensorize(state, self.device), loss_sum,
                                                  [idx, y, mask_t, *(aug or ())], hp)
                eager_steps = 0  # every step ran graphed
            else:
                eager_steps = idx.shape[0]
            executed = int(idx.shape[0]) * g
            if g > 1 and eager_steps and self.retire_finished:  # no padded step runs
                state, loss_sum = self._retiring_steps(state, loss_sum, idx, y, aug, ks, hp, varying, step_v,
                                                       step_one)
                executed, eager_steps = int(ks.sum()), 0
            if g == 1 and eager_steps:  # one client: its own tensors for the whole loop (no per-step slicing)
                state = _take(state, 0)
            for s in range(eager_steps):
                xs = self._gather(idx[s], None if aug is None else tuple(a[s] for a in aug))
                if g == 1:
                    if mask_np[s, 0]:  # a padded step of a lone client is skipped: the same no-op
                        state = step_one(state, xs[0], y[s, 0])
                        loss_sum = loss_sum + state["loss"].double()
                    continue
                new = step_v(state, xs, y[s])
                if mask_np[s].all():
                    state = new
                    loss_sum = loss_sum + new["loss"].double()
                else:
                    m_s = mask_t[s]
                    state = _select(m_s, new, state)
                    loss_sum = loss_sum + torch.where(m_s, new["loss"].double(), 0.0)
            if g == 1 and eager_steps:
                state = pytree.tree_map(lambda v: v.unsqueeze(0), _tensorize(state, self.device))
            for c, pos in self._by_cell(members):  # client_final with each cell's own server state
                if pos is None:
                    msg, cs = _batched(final_for(server_of[c], hp_of[c]), g, self.device)(state)
                    at = positions
                else:
                    contiguous = pos[-1] - pos[0] + 1 == len(pos)  # a slice (views) instead of a gather
                    mine = (slice(int(pos[0]), int(pos[-1]) + 1) if contiguous
                            else torch.as_tensor(pos, device=self.device))
                    msg, cs = _batched(final_for(server_of[c], hp_of[c]), len(pos), self.device)(_take(state, mine))
                    at = positions[pos]
                self._save_states(sampled[at], cs)
                counted[c].append(msg)
                parts.append((np.asarray(at, dtype=np.int64), msg))
            with np.errstate(invalid="ignore", divide="ignore"):
                losses[positions] = loss_sum.cpu().numpy() / ks
            self.executed_steps += executed
            self.real_steps += int(ks.sum())
        return parts, losses.tolist(), counted

    def _retiring_steps(self, state, loss_sum: torch.Tensor, idx: torch.Tensor, y: torch.Tensor, aug,
                        ks: np.ndarray, hp: dict, varying: dict | None, step_v, step_one):
        """A chunk's S eager steps without padded steps: its clients are sorted by K_k, descending,
        so at step s the clients still stepping (K_k > s) are a prefix of n_s; the vmapped
        ``client_step`` runs over that prefix only, and a client whose K_k steps are done leaves
        the chunk with its state and loss sum, which wait (copied out: each client's state is held
        once) until the chunk ends;
        the last client left runs its remaining steps without vmap (``step_one``; None when the
        chunk's hyperparameters vary per client), as a chunk of one does.
        The same no-op as a padded step under the masked select, without executing it: the step
        state, hence the result, is that of the client's own K_k steps (tested against the
        reference and against other groupings, ``tests/engine/test_heterogeneous_local_work.py``).

        Returns the chunk's final step state ``[G, ...]`` and loss sums ``[G]`` (float64), rows in
        the chunk's order."""
        if (np.diff(ks) > 0).any():
            raise RuntimeError(f"vectorized engine: a chunk's clients are not sorted by step count ({ks.tolist()}); "
                               "chunks come from plan_groups")
        live = len(ks)
        done: list = []  # (state rows, loss sums) of the clients that left, latest first
        for s in range(int(ks[0]) if live else 0):
            n = int(np.searchsorted(-ks, -s, side="left"))  # clients with K_k > s
            if n < live:
                # copies, not views: a view would keep this step's whole state alive to the end
                done.insert(0, (pytree.tree_map(lambda v, n=n, live=live: v[n:live].clone(), state),
                                loss_sum[n:live]))
                state = pytree.tree_map(lambda v, n=n: v[:n], state)
                loss_sum = loss_sum[:n]
                if varying is not None:
                    step_v = self._step_fns(hp, {k: v[:n] for k, v in varying.items()}, n)[1]
                live = n
            if n == 1 and step_one is not None:  # the last client's remaining steps without vmap
                one = _take(state, 0)
                for r in range(s, int(ks[0])):
                    xs = self._gather(idx[r, :1], None if aug is None else tuple(a[r, :1] for a in aug))
                    one = step_one(one, xs[0], y[r, 0])
                    loss_sum = loss_sum + one["loss"].double()
                state = pytree.tree_map(lambda v: v.unsqueeze(0), _tensorize(one, self.device))
                break
            xs = self._gather(idx[s, :n], None if aug is None else tuple(a[s, :n] for a in aug))
            state = step_v(state, xs, y[s, :n])
            loss_sum = loss_sum + state["loss"].double()
        if done:
            parts = [state, *(d[0] for d in done)]
            state = pytree.tree_map(lambda *vs: torch.cat(vs), *parts)
            loss_sum = torch.cat([loss_sum, *(d[1] for d in done)])
        return state, loss_sum

    def _step_fns(self, hp: dict, varying: dict | None, g: int):
        """(step_one, step_v, holdout_v, step_g) of a chunk of g clients: one client's
        ``client_step`` with the chunk's hyperparameters, the chunk's step (:func:`~.stacked._batched`), its
        held-out step, and the vmapped step for CUDA graphs (None when ``varying``).

        ``varying`` (:meth:`_chunk_hparams`): per-client ``[G]`` hyperparameter tensors, mapped by
        vmap along with the state (in_dims 0), merged into ``hp`` inside the step (0-d tensors).
        Without it, the functions close over ``hp`` alone: the single-cell code path."""
        algo, grad_fn, output_grad_fn = self.algo, self.grad_fn, self.output_grad_fn

        def step_one(state, x, y):
            return algo.client_step(state, (x, y), hp, grad_fn)

        def holdout_one(state, x, y):
            return algo.client_holdout_step(state, (x, y), hp, output_grad_fn)

        if varying is None:
            # the graphed step is vmapped for a lone client too (one captured code path)
            return step_one, _batched(step_one, g, self.device), _batched(holdout_one, g, self.device), vmap(step_one)

        def step_hv(state, x, y, hv):
            return algo.client_step(state, (x, y), {**hp, **hv}, grad_fn)

        def holdout_hv(state, x, y, hv):
            return algo.client_holdout_step(state, (x, y), {**hp, **hv}, output_grad_fn)

        step_m, holdout_m = vmap(step_hv), vmap(holdout_hv)  # g > 1: one cell per chunk of one client
        return (None, lambda st, x, y: step_m(st, x, y, varying), lambda st, x, y: holdout_m(st, x, y, varying),
                None)

    def _gather(self, idx_s: torch.Tensor, aug_s) -> torch.Tensor:
        """One step's inputs ``x[G, B, ...]`` from its rows ``idx_s[G, B]``, augmented when
        ``aug_s = (flip, dy, dx)`` (each ``[G, B]``) is given."""
        xs = self.x_all[idx_s]
        if not aug_s:
            return xs
        gb = xs.shape[0] * xs.shape[1]
        return augmentation.apply(xs.reshape(gb, *xs.shape[2:]), aug_s[0].reshape(gb), aug_s[1].reshape(gb),
                                  aug_s[2].reshape(gb), self.aug["padding"], self.aug["fill"]).reshape(xs.shape)

    def _holdout_pass(self, state, members: np.ndarray, held: dict, holdout_v):
        """The vmapped ``client_holdout_step`` over the group's held-out minibatches (exact no-op
        padding, as for training steps)."""
        if not any(held[int(k)] for k in members):
            return state
        idx, y, mask_np, _, _ = self._group_tensors(members.tolist(), held, None, rows_of=self.holdout)
        mask_t = torch.from_numpy(mask_np).to(self.device)
        for s in range(idx.shape[0]):
            new = holdout_v(state, self.x_all[idx[s]], y[s])
            state = new if mask_np[s].all() else _select(mask_t[s], new, state)
        return state

    def _auto_chunk(self, server: dict, hp: dict, max_steps: int) -> int:
        if getattr(self, "_chunk_cache", None) is None:
            params = server["params"]
            state = self.algo.client_init(server, None, hp)
            n_trees = sum(1 for v in state.values() if isinstance(v, dict))
            self._chunk_cache = auto_chunk_size(self.model.apply, params, self.x_all[:1],
                                                self.local.batch_size, n_trees, self.device,
                                                self.model.batch_clients_on_cpu)
        return self._chunk_cache

    @property
    def padding_efficiency(self) -> float:
        """Real client-steps / executed client-steps over all rounds so far (1.0 = no padding)."""
        return self.real_steps / self.executed_steps if self.executed_steps else 1.0

