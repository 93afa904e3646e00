"""The vectorized engine's compiled paths: where and how it hands work to
:mod:`fedbench.engine.linear_fast`.

:class:`CompiledPaths` is the part of :class:`~.vectorized.VectorizedClients` that decides, per
chunk of clients or per run of rounds, whether the fast path for linear logistic regression
applies, and runs it there:

- a chunk's local steps in one compiled loop (:meth:`CompiledPaths._fast_chunk`, CPU:
  :class:`fedbench.engine.linear_fast.linear_steps.LinearSteps`, :attr:`CompiledPaths.linear`);
- whole segments of rounds with full participation and a linear server side
  (:meth:`CompiledPaths.train_rounds`): compiled loops on CPU, tensor programs on CUDA
  (:attr:`CompiledPaths.tensors`); and the evaluation of many cells in one pass
  (:attr:`CompiledPaths.evaluator`).

Either runs only in a job long enough to repay the compiled code's start-up
(:meth:`CompiledPaths._compiled_pays`); :attr:`CompiledPaths.fast_steps` False turns them off.
Their results are the generic path's to float rounding (:mod:`fedbench.engine.linear_fast`). Small
jobs never import numba: the paths are built on first use.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from fedbench.engine.clients.chunking import IGNORE_INDEX


class CompiledPaths:
    """The compiled paths of :class:`~.vectorized.VectorizedClients`, which inherits them: they read
    the engine's own attributes (``algo``, ``model``, ``grad_fn``, ``x_all``, ``y_all``, ``local``,
    the clients' keys and rows, ``store``, ...)."""

    #: Use the fast path of :mod:`fedbench.engine.linear_fast.linear_steps` where a chunk qualifies (a
    #: runtime choice: the same results to float rounding). Tests and benchmarks set it False to
    #: run the generic path.
    fast_steps = True

    #: The compiled paths (keyed draws for many clients at once,
    #: :func:`fedbench.engine.clients.batches.stacked_batches`;
    #: the fast local steps) are used only where they save more than this many seconds in the job:
    #: their first call in a process costs ~2 s (numba and LLVM start-up, the compiled code loaded
    #: from its cache). :meth:`_compiled_pays` estimates the saving per round as clients × 20 µs (a
    #: client's keyed draw in numpy) + K × (0.5 ms, a vmapped step's fixed cost, + clients × 2 µs, a
    #: vmapped client-step against a compiled one; ``benchmarks/fedac_speed.py --probe``), times the
    #: rounds. Small jobs (the default suite, one cell of a sweep) keep the per-client path and never
    #: import numba. Tests set it to 0.
    compiled_min_seconds = 2.0

    #: Whole rounds (:meth:`train_rounds`) and the evaluation of many cells at once (:attr:`evaluator`)
    #: on CUDA run as tensor programs (:mod:`fedbench.engine.linear_fast.tensor_rounds`), on CPU as compiled loops
    #: (:mod:`fedbench.engine.linear_fast.linear_steps`). True runs the tensor programs on CPU too (the same
    #: results to float rounding): tests set it, since CI has no GPU.
    tensor_rounds = False

    def train_rounds(self, servers: Sequence[dict], hps: Sequence[dict], t0: int, t1: int,
                     cells: Sequence[int]) -> tuple[int, list[dict]] | None:
        """Rounds ``t0..t1`` of the given cells with full participation (every client of each
        cell, every round) and the same hyperparameters every round, local steps, messages and
        server updates in one compiled call on CPU
        (:meth:`fedbench.engine.linear_fast.linear_steps.LinearSteps.rounds`) or a few tensor operations per
        local step elsewhere (:meth:`fedbench.engine.linear_fast.tensor_rounds.TensorRounds.rounds`, binary
        logistic regression only; :attr:`tensor_rounds`), or None where that does not
        apply: the fast path's conditions (:meth:`_fast_chunk`), ``local.steps`` K with
        ``local.replacement``, stateless clients, and an algorithm whose ``client_init``,
        ``client_final`` and ``server_update`` are linear (:func:`fedbench.engine.linear_fast.forms.round_form`).

        The rows each client draws are those
        :meth:`~.vectorized.VectorizedClients.train_cells` draws (the same keys); the results equal
        :meth:`~.vectorized.VectorizedClients.train_cells` + the algorithm's ``server_update`` per
        round to float rounding (the weighted mean summed in another order), and do not depend on ``t0``,
        ``t1`` or the thread count: every round of such a job is computed by this one code.

        Returns:
            (the last round run: ``t1``, or the first round in which a cell diverged; per given
            cell, ``{"server", "uplink_floats", "uplink_nonzeros", "diverged"}``: its server state
            after that round and the communication counts of the rounds run).
        """
        local = self.local
        k, b = local.steps, local.batch_size
        if (not self.fast_steps or self.aug is not None or self.holdout is not None
                or self.store is not None or not isinstance(k, int) or isinstance(k, bool) or k < 1
                or local.epochs is not None or not local.replacement):
            return None
        compiled = self.device.type == "cpu" and not self.tensor_rounds
        bounds = [(int(self.offsets[c]), int(self.offsets[c + 1])) for c in cells]
        clients = sum(hi - lo for lo, hi in bounds)
        if not clients or (compiled and (not self._compiled_pays(clients) or self.linear is None)):
            return None
        if not compiled and self.tensors is None:  # another model: nothing to import
            return None
        from fedbench.engine.linear_fast import keyed_integers

        n_max = int(self._sizes.max())
        if self._sizes.min() < 1 or not keyed_integers.supported(self.key_seed, t1, self.key_id, n_max):
            return None
        if compiled:
            out = self.linear.rounds(self.algo, list(servers), [dict(h) for h in hps], t0, t1, self.y_all.numpy(), b,
                                     self.key_seed, self.key_id, self.row_table(), self._slot, self._sizes, bounds)
        else:
            out = self.tensors.rounds(self.algo, list(servers), [dict(h) for h in hps], t0, t1, b, self.key_seed,
                                       self.key_id, self.row_table(), self._slot, self._sizes, bounds)
        if out is not None:
            done = (out[0] - t0 + 1) * clients * k
            self.executed_steps += done
            self.real_steps += done
        return out

    @property
    def tensors(self):
        """The whole-rounds tensor path (:class:`fedbench.engine.linear_fast.tensor_rounds.TensorRounds`), or
        None (model); built on first use."""
        if self._tensors is False:
            from fedbench.engine.linear_fast.tensor_rounds import TensorRounds

            self._tensors = TensorRounds.build(self.model, self.grad_fn, self.x_all, self.y_all)
        return self._tensors

    @property
    def evaluator(self):
        """What evaluates many linear models in one pass (:func:`fedbench.engine.rounds.loop.evaluate_cells`):
        the compiled path on CPU (:attr:`linear`), the tensor path elsewhere or with
        :attr:`tensor_rounds` (:attr:`tensors`); None where neither applies."""
        return self.linear if self.device.type == "cpu" and not self.tensor_rounds else self.tensors

    def _compiled_pays(self, clients_per_round: int) -> bool:
        """Whether the compiled paths save more than :attr:`compiled_min_seconds` in this job (never
        with drawn local work, ``local.epochs``/``steps`` a distribution: its clients' step counts
        differ, which the compiled paths do not take)."""
        if self.local.drawn:
            return False
        k = int(self.local.steps or 1)
        per_round = clients_per_round * 20e-6 + k * (5e-4 + clients_per_round * 2e-6)
        return (self.planned_rounds or 1) * per_round >= self.compiled_min_seconds

    @property
    def linear(self):
        """The fast path's :class:`fedbench.engine.linear_fast.linear_steps.LinearSteps`, or None (model,
        device); built (and numba imported) on first use."""
        if self._linear is False:
            from fedbench.engine.linear_fast.linear_steps import LINEAR_MODELS, LinearSteps

            apply = getattr(self.grad_fn, "model_apply", None)
            self._linear = (LinearSteps.build(self.model, self.grad_fn, self.x_all)
                            if apply in LINEAR_MODELS else None)
        return self._linear

    def _fast_chunk(self, state, members: np.ndarray, hp_of: dict[int, dict], idx: torch.Tensor, y: torch.Tensor,
                    mask_np: np.ndarray, extra: bool):
        """The chunk's S steps by :meth:`fedbench.engine.linear_fast.linear_steps.LinearSteps.run`, or None where
        the chunk does not qualify: the fast path is off (:attr:`fast_steps`) or unavailable (model,
        device), the job is too small to repay the compiled code's start-up (:meth:`_compiled_pays`),
        the chunk has a held-out pass or augmentation (``extra``), padded steps or rows, or
        its algorithm's step is not affine (:func:`fedbench.engine.linear_fast.forms.affine_form`)."""
        if not self.fast_steps or extra or not mask_np.all() or idx.shape[0] == 0 or self.device.type != "cpu":
            return None
        if not self._compiled_pays(self._round_clients) or self.linear is None:
            return None
        if bool((y == IGNORE_INDEX).any()):
            return None
        cells = self.cell_of[members]
        order = np.unique(cells)
        return self.linear.run(self.algo, state, [hp_of[int(c)] for c in order], np.searchsorted(order, cells),
                               idx, y)
