"""CUDA graphs for the vectorized engine's step loop: one step captured once, replayed S times.

On a GPU the vectorized step is launch-bound, not compute-bound: ``vmap(client_step)`` issues
tens (MLP) to thousands (the LSTM's time loop) of small kernels, each paying Python, dispatcher
and functorch overhead on the host (measured on an H200: ~3.7 ms per W1 step and ~90 ms per
W4 step for well under 1 ms of GPU work; benchmarks/RESULTS.md). A CUDA graph records the
kernels of one step once and replays them with a single launch (PyTorch's CUDA semantics notes,
"CUDA Graphs"). The step is the engine's own ``body(state, loss_sum, idx_s, y_s, m_s,
*aug_s)`` (gather, augment, vmapped ``client_step``, masked select, loss accumulation), so the
replayed step is the same code, the same kernels and the same values as the eager one.

How a group of S steps runs (:meth:`StepGraphs.run`):

1. The group's key (:func:`graph_key`: the state's structure, shapes and dtypes, the per-step
   inputs' shapes, and ``repr`` of the round's hyperparameters) is looked up. Python numbers in
   the hyperparameters (the learning rate, μ, α, ...) are baked into the captured kernels, so a
   round whose learning rate decayed gets a new graph: never a stale one. A chunk of stacked
   cells with *different* hyperparameter values (per-client tensors,
   :mod:`fedbench.engine.rounds.stacking`) is never graphed: the engine runs its steps eagerly.
2. Miss: step 0 runs eagerly (real work, and the warm-up that lazy cuBLAS/cuDNN initialisation
   needs before a capture), then step 1 is *captured* (recorded, not run) against static
   buffers. Hit: the group's initial state is copied into the cached graph's buffers.
3. Every remaining step: copy the step's inputs (row indices, labels, step mask, augmentation
   draws) into the static input buffers and replay. The state buffers are updated in place by
   the graph itself (the last kernels of the captured step copy the new state over the old).
4. The final state and loss sum are cloned out of the buffers (the next group may reuse them).

All captures of one engine share one memory pool: a graph's temporaries are dead once its replay
ends (its only outputs are the static buffers, allocated outside the pool), and the engine never
runs two graphs at once. The engine runs every CUDA round on its own stream (captures cannot run
on the default stream), ordered after and before the caller's stream.

Rules for an algorithm (already those of the vectorized engine, :mod:`fedbench.engine.clients.vectorized`):
no host synchronisation inside ``client_step`` (``.item()``, ``.cpu()``, ``torch.tensor(...)`` of
host data), no randomness, and a step state whose structure and shapes do not change from step to
step. A step that changes them is run eagerly (checked after step 0).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

import torch
from torch.utils import _pytree as pytree

#: Groups shorter than this run eagerly: a capture costs about one eager step of host time.
MIN_STEPS = 3
#: Graphs kept per engine (least recently used dropped); each holds its state buffers.
CACHE_SIZE = 4


def graph_key(state, loss_sum: torch.Tensor, inputs: Sequence[torch.Tensor], hparams: dict) -> tuple:
    """What a captured step depends on besides the values in its buffers.

    Args:
        state: the stacked step state (pytree of ``[G, ...]`` tensors).
        loss_sum: ``[G]`` float64 running loss.
        inputs: per-step inputs with the step dimension first, e.g. ``idx[S, G, B]``.
        hparams: the round's hyperparameters (Python numbers are baked into the kernels).
    """
    leaves, spec = pytree.tree_flatten(state)
    return (str(spec),
            tuple((tuple(v.shape), v.dtype) if torch.is_tensor(v) else repr(v) for v in leaves),
            (tuple(loss_sum.shape), loss_sum.dtype),
            tuple((tuple(a.shape[1:]), a.dtype) for a in inputs),
            repr(hparams))


def _signature(state) -> tuple:
    leaves, spec = pytree.tree_flatten(state)
    return str(spec), tuple((tuple(v.shape), v.dtype) if torch.is_tensor(v) else repr(v) for v in leaves)


class _Entry:
    """One captured step: the graph and its static state, loss and input buffers."""

    def __init__(self, graph, state_bufs, loss_buf, input_bufs):
        self.graph, self.state_bufs, self.loss_buf, self.input_bufs = graph, state_bufs, loss_buf, input_bufs

    def load(self, state, loss_sum) -> None:
        for dst, src in zip(pytree.tree_leaves(self.state_bufs), pytree.tree_leaves(state)):
            if torch.is_tensor(dst):
                dst.copy_(src)
        self.loss_buf.copy_(loss_sum)

    def unload(self):
        return (pytree.tree_map(lambda v: v.clone() if torch.is_tensor(v) else v, self.state_bufs),
                self.loss_buf.clone())


class StepGraphs:
    """Captured vectorized steps of one engine (CUDA only), cached by :func:`graph_key`.

    Attributes:
        stream: the engine's CUDA stream (every round runs on it).
        captures, replays: counts since construction (reported by the benchmark; checked in tests).
    """

    def __init__(self, device: torch.device):
        if device.type != "cuda":
            raise ValueError(f"StepGraphs: CUDA graphs need a CUDA device (got {device})")
        self.device = device
        self.stream = torch.cuda.Stream(device)
        self.pool = torch.cuda.graph_pool_handle()
        self.cache: OrderedDict[tuple, _Entry] = OrderedDict()
        self.captures = self.replays = 0

    def run(self, body: Callable, state, loss_sum: torch.Tensor, inputs: Sequence[torch.Tensor],
            hparams: dict):
        """Run ``body`` for every step s of ``inputs`` (``a[s]`` for each a), graphed.

        ``body(state, loss_sum, *[a[s] for a in inputs]) -> (state, loss_sum)`` must be pure on
        tensors (see the module docstring). Returns the final ``(state, loss_sum)`` (fresh tensors).
        Must be called on :attr:`stream` (the engine does: :meth:`VectorizedClients.train_round`).
        """
        steps = int(inputs[0].shape[0])
        key = graph_key(state, loss_sum, inputs, hparams)
        entry = self.cache.pop(key, None)
        first = 0
        if entry is None:
            before = _signature(state)
            state, loss_sum = body(state, loss_sum, *(a[0] for a in inputs))  # step 0, eager
            first = 1
            if steps == 1 or _signature(state) != before:  # nothing to replay, or not capturable
                for s in range(1, steps):
                    state, loss_sum = body(state, loss_sum, *(a[s] for a in inputs))
                return state, loss_sum
            entry = self._capture(body, state, loss_sum, [a[0] for a in inputs])
        entry.load(state, loss_sum)
        self.cache[key] = entry
        while len(self.cache) > CACHE_SIZE:
            self.cache.popitem(last=False)
        for s in range(first, steps):
            for buf, a in zip(entry.input_bufs, inputs):
                buf.copy_(a[s])
            entry.graph.replay()
        self.replays += steps - first
        return entry.unload()

    def _capture(self, body: Callable, state, loss_sum: torch.Tensor, example_inputs: list) -> _Entry:
        def buffer(v):
            return torch.empty_like(v, memory_format=torch.contiguous_format) if torch.is_tensor(v) else v

        state_bufs = pytree.tree_map(buffer, state)
        loss_buf = torch.empty_like(loss_sum)
        input_bufs = [torch.empty_like(a, memory_format=torch.contiguous_format) for a in example_inputs]
        graph = torch.cuda.CUDAGraph()
        graph.capture_begin(pool=self.pool, capture_error_mode="thread_local")
        try:
            new_state, new_loss = body(state_bufs, loss_buf, *input_bufs)
            for dst, src in zip(pytree.tree_leaves(state_bufs), pytree.tree_leaves(new_state)):
                if torch.is_tensor(dst) and src is not dst:
                    dst.copy_(src)
            loss_buf.copy_(new_loss)
            del new_state, new_loss
        except BaseException:
            try:
                graph.capture_end()
            except Exception:  # noqa: BLE001 - the body's error is the one to report
                pass
            raise
        graph.capture_end()
        self.captures += 1
        return _Entry(graph, state_bufs, loss_buf, input_bufs)
