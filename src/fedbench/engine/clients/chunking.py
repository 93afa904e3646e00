"""How the vectorized engine (:mod:`~.vectorized`) cuts a round's clients into chunks, and how it
marks padding.

- :func:`plan_groups`: the clients sorted by step count and, where padded steps run (CUDA graphs,
  or :attr:`~.vectorized.VectorizedClients.retire_finished` False), grouped by a dynamic programme
  that trades padded steps against per-step launches (:data:`DEFAULT_STEP_OVERHEAD`) above a
  padding-efficiency floor (:data:`PADDING_EFFICIENCY_FLOOR`); each group cut into chunks;
- :func:`auto_chunk_size`: clients per chunk so that one chunk's step fits a memory budget
  (:data:`CPU_CHUNK_BUDGET`, :data:`CUDA_CHUNK_FRACTION`), one on CPU where stacking does not pay
  (:data:`CPU_STACK_MAX_MACS`);
- :data:`IGNORE_INDEX`: the label of a padded row (unequal batch sizes within a step), which the
  models' loss leaves out.

Both are deterministic: the same cell twice gets the same chunks, hence the same summation order
(bitwise-equal reruns).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from fedbench.tree import tree_numel

#: The label of a padded row: cross-entropy's default ``ignore_index``.
IGNORE_INDEX = -100

#: The fixed cost of one vectorized step, in units of one client's share of it (b), for
#: :func:`plan_groups` where padded steps are executed: CUDA graphs (a captured step runs over its
#: whole chunk), or eager chunks with :attr:`~.vectorized.VectorizedClients.retire_finished` False. Eager steps
#: by default execute no padded step at all (a chunk's finished clients leave it:
#: :meth:`~.vectorized.VectorizedClients._retiring_steps`), so there padding costs nothing and a round is one
#: group, cut into chunks. CPU: measured with ``python benchmarks/local_work.py --probe``
#: (benchmarks/RESULTS.md, "Padding floor", 2026-11-25; the engine's padded-step loop, t(G) = a + b·G
#: fitted over G = 2..64, 1 thread, six runs on the shared 2-core VM, load 0.4–4): a ≈ 1 ms
#: whatever the model (0.74–1.40 ms; 1.7–2.0 ms in the run at load 3.5), b = 0.038–0.075 ms for
#: the digits MLP 64-64 at B = 32 (a / b = 18–28), 0.002–0.016 ms for logistic regression at
#: B = 8 (a / b = 104–362). 32 is the larger model's scale; under the floor a larger value only
#: changes which ≥ 90 %-efficient merges are made. CUDA: not re-measured here.
DEFAULT_STEP_OVERHEAD = {"cpu": 32.0, "cuda": 256.0}

#: The least padding efficiency (real / executed client-steps) of every group of clients
#: :func:`plan_groups` forms where padded steps are executed (CUDA graphs), hence of every round:
#: clients of unequal step counts (heterogeneous local work, τ_i ~ Uniform{2..E} epochs; unequal
#: client sizes) share a group only while it wastes at most 10 % of its client-steps on padding.
#: Eager rounds execute no padding (efficiency 1). An engine constant, not a config key: the
#: grouping never changes a result (padded steps are exact no-ops), only the time.
PADDING_EFFICIENCY_FLOOR = 0.9

#: Memory budget of one chunk of clients (bytes) used by :func:`auto_chunk_size`.
#: On CPU a stacked step is bound by memory traffic, not arithmetic, once a chunk's state leaves
#: the caches: 39,936 W3 clients (a 13-lr x 3-seed sweep, 248 parameters, B = 1) take 11.7 s per
#: round in one chunk, 9.1 s in chunks of 16,384, 10.8 s of 4,096, 13.1 s of 1,024 (2026-11-24,
#: 1 thread). 64 MiB gives ~16,000 such clients per chunk and ~450 of the digits MLP 64-64 at B = 16.
CPU_CHUNK_BUDGET = 64 << 20  # 64 MiB

CUDA_CHUNK_FRACTION = 0.25  # of the device's total memory

#: On CPU, clients are stacked only while one client's step is smaller than this many
#: multiply-adds (estimated as parameters × batch size: exact for dense layers, a lower bound
#: for convolutions and recurrences). Above it one client's matrix products already run near the
#: CPU's matmul peak and stacking only adds vmap's fixed per-step cost (~0.4 ms) and cache misses
#: on the stacked gradients. From ``python benchmarks/stacking.py`` (benchmarks/RESULTS.md,
#: ms per client alone / vmapped over 10 clients): 2NN × B = 50 (10 M) 0.665 / 0.752;
#: MLP 784-100-100-10 × 50 (4.5 M) 0.390 / 0.400; digits MLP 64-64 × 16 (0.14 M) 0.133 / 0.084;
#: W3's logistic regression (248 × 1) gains 8.6× at 100 clients. Mid-sized MLPs gain 1.1–1.3×
#: at 100 clients, which this rule gives up (an explicit ``chunk_size`` takes it).
CPU_STACK_MAX_MACS = 1_000_000


def plan_groups(steps: Sequence[int], chunk_size: int, step_overhead: float = 256.0,
                min_efficiency: float = 0.0) -> list[np.ndarray]:
    """Positions (into ``steps``) of the clients of each chunk, chunks in execution order.

    Clients are sorted by step count K_k, descending (ties by position), so within every chunk
    the clients still stepping at any step are a prefix. Groups are unions of consecutive distinct
    step counts chosen by a dynamic programme minimising Σ_groups S_g · (step_overhead · chunks_g
    + |G_g|), the cost of S_g = max_{k∈G_g} K_k vectorized steps over |G_g| clients (padded steps
    included), among the groupings whose every group keeps its padding efficiency
    Σ_{k∈G_g} K_k / (S_g · |G_g|) ≥ ``min_efficiency`` (a group of one step count, efficiency 1,
    always qualifies); each group is then cut into ⌈|G|/chunk_size⌉ chunks of near-equal size.
    A chunk runs at most S_g steps, so the executed client-steps of the call are at most
    Σ_g S_g · |G_g| and its padding efficiency is ≥ ``min_efficiency``. ``step_overhead`` inf
    with ``min_efficiency`` 0 gives one group (clients with K_k = 0 apart): the plan where padding
    costs nothing.
    Deterministic: the same inputs give the same plan.

    Args:
        steps: K_k per client (ints ≥ 0; a client with K_k = 0 only runs padding).
        chunk_size: at most this many clients per chunk (≥ 1; smaller is taken as 1).
        step_overhead: the fixed cost of one vectorized step, in client-steps
            (:data:`DEFAULT_STEP_OVERHEAD`); 0 gives one group per distinct step count.
        min_efficiency: the least padding efficiency of a group, in [0, 1]
            (:data:`PADDING_EFFICIENCY_FLOOR` in the engine); 0 leaves the grouping to the cost alone.

    Raises:
        ValueError: ``min_efficiency`` outside [0, 1], or ``step_overhead`` negative or NaN.
    """
    if not 0.0 <= min_efficiency <= 1.0:
        raise ValueError(f"plan_groups: min_efficiency {min_efficiency} is not in [0, 1]")
    if not step_overhead >= 0.0:
        raise ValueError(f"plan_groups: step_overhead {step_overhead} is not ≥ 0")
    step_overhead = min(step_overhead, 1e18)  # inf: the fewest launches, ties broken by padding
    steps = np.asarray(steps, dtype=np.int64)
    if steps.size == 0:
        return []
    chunk_size = max(1, int(chunk_size))
    order = np.lexsort((np.arange(steps.size), -steps))  # by steps desc, then position
    values, counts = np.unique(-steps[order], return_counts=True)
    values = -values  # distinct step counts, descending
    nv = len(values)
    starts = np.concatenate([[0], np.cumsum(counts)])
    real = np.concatenate([[0], np.cumsum(values * counts)])  # client-steps of values[:i]

    def cost(i, j):  # distinct values i..j-1 in one group; inf where its padding breaks the floor
        n = int(starts[j] - starts[i])
        if real[j] - real[i] < min_efficiency * values[i] * n:
            return math.inf
        return float(values[i] * (step_overhead * math.ceil(n / chunk_size) + n))

    best = [0.0] + [math.inf] * nv
    cut = [0] * (nv + 1)
    for j in range(1, nv + 1):
        for i in range(j):
            c = best[i] + cost(i, j)
            if c < best[j]:
                best[j], cut[j] = c, i
    bounds, j = [], nv
    while j > 0:
        bounds.append((cut[j], j))
        j = cut[j]
    bounds.reverse()
    chunks = []
    for i, j in bounds:
        members = order[starts[i] : starts[j]]
        chunks.extend(np.array_split(members, math.ceil(len(members) / chunk_size)))
    return chunks


def _saved_activation_numel(apply, params: dict, x: torch.Tensor) -> int:
    """Scalars autograd saves for backward in one forward pass of ``apply(params, x)``."""
    total = 0

    def pack(t):
        nonlocal total
        total += t.numel()
        return t

    p = {k: v.detach().requires_grad_(True) for k, v in params.items()}
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        apply(p, x)
    return total


def auto_chunk_size(apply, params: dict, x_example: torch.Tensor, batch_size: int, n_state_trees: int,
                    device: torch.device, batch_clients_on_cpu: bool = True) -> int:
    """Clients per chunk so that one chunk's step fits a memory budget.

    Per client: ``n_state_trees + 3`` parameter-sized tensors (step state, new state, gradient,
    temporaries) plus ``2 ×`` the activations autograd saves for one batch (measured on one
    example, scaled by the batch size) plus the gathered batch itself. Budget: 64 MiB on CPU (:data:`CPU_CHUNK_BUDGET`),
    a quarter of the device's total memory on CUDA. Deterministic for a given model, batch size
    and device, so the same cell twice groups its clients the same way (bitwise-equal reruns).

    On CPU the answer is 1 (and a chunk of one client runs the algorithm's functions directly,
    without ``vmap``: :func:`~.stacked._batched`) when stacking does not pay: when the model's layers run
    slower stacked (``batch_clients_on_cpu=False``, the model's
    :attr:`fedbench.models.Model.batch_clients_on_cpu`: the CNN and the LSTM), or when one
    client's step is already large (d × B ≥ :data:`CPU_STACK_MAX_MACS`). An explicit
    ``chunk_size`` overrides this.
    """
    d = tree_numel(params)
    if device.type == "cpu" and (not batch_clients_on_cpu or d * batch_size >= CPU_STACK_MAX_MACS):
        return 1
    itemsize = next(iter(params.values())).element_size()
    act = _saved_activation_numel(apply, params, x_example[:1])
    per_client = itemsize * ((n_state_trees + 3) * d + batch_size * (2 * act + x_example[0].numel()))
    if device.type == "cuda":
        # total, not free, memory: the chunk (hence the grouping, hence the float summation
        # order) must not depend on what else happens to be allocated, or reruns would differ
        budget = int(torch.cuda.get_device_properties(device).total_memory * CUDA_CHUNK_FRACTION)
    else:
        budget = CPU_CHUNK_BUDGET
    return max(1, int(budget // max(per_client, 1)))
