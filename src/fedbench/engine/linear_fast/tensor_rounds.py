"""Whole rounds of binary logistic regression as tensor programs: the vectorized engine's
whole-rounds path on CUDA.

For FedAc's protocol (Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020,
§5: M workers with batch size 1, full participation, an ℓ2-regularized linear model) the CPU engine
runs whole rounds in compiled loops (:mod:`fedbench.engine.linear_fast.cpu_rounds`, numba). On a GPU the
generic path is launch-bound instead: every round runs each stacked cell's ``client_init``,
``client_final`` and server update in Python and, for a chunk that stacks several learning rates,
its vmapped steps eagerly (measured on an H200: ~70 ms of host time per round and ~4.5 ms per step
for 54 cells at M = 256; ``benchmarks/RESULTS.md``). This module runs the same rounds for every
client of every stacked cell at once, in one of two versions:

- two Triton kernels a round (:mod:`fedbench.engine.linear_fast.round_kernels`: the clients' state in
  registers for the round's K steps; no host synchronisation per round), where Triton is
  installed and the rows have at most 256 features (a9a); on an H100 a round of 54 cells at
  M = 8,192 takes 0.37 ms at K = 1;
- otherwise torch operations (:func:`_torch_rounds`): a few per local step over the state
  [groups, lanes, n, M, d] (epsilon's 2,000 features; no Triton).

The rules are the algorithm's own, read off it as the CPU path reads them
(:func:`fedbench.engine.linear_fast.forms.round_form` and
:func:`~fedbench.engine.linear_fast.forms.affine_form`):
for n step sequences s (FedAc: w, w^ag), server sequences S and message entries e,

    s ← B S                                   (client_init)
    K times:  p = Σ_j q_j s_j;   s_i ← Σ_j A_ij s_j + c_i ∇f(p; b)     (client_step)
    e = C s + D S;   ē = Σ_k w_k e_k;   S ← E S + F ē                  (client_final, server_update)

with ∇f(p; b) = (1/B) Σ_b (σ(x_bᵀp) − y_b) x_b, the gradient of the mean cross-entropy of the
logits [0, xᵀp] (``binary_logreg``). The stacked cells whose clients draw the same rows (one seed's
learning-rate grid, :func:`~fedbench.engine.linear_fast.cpu_rounds.lane_groups`) are the lanes of one group:
a step gathers each group's rows once. The rows are the engine's keyed draws
(:func:`fedbench.engine.linear_fast.keyed_integers.uniform_rows_rounds`, bit for bit numpy's
``generator(seed, t, k, "batches").integers``), drawn on the host's threads for a span of rounds
and looked up on the device (:class:`_Draws`).

Memory: the kernels keep per lane only the server state and per block of clients a partial sum
(FedAc-I at M = 8,192, 54 cells, a9a: 232 MB of GPU a job in all, measured). The torch version
keeps the clients' state, n × U with U = groups · lanes · M · d · 8 bytes (870 MB there), and a
step's temporaries about 3U more; where the device has too little, :meth:`TensorRounds.rounds`
gives up and the engine runs round by round in chunks.

Equality: float64, the generic path's rows and server states to 1e-10 relative, both versions
(``tests/engine/linear_fast/test_tensor_rounds.py``: on the CPU, the kernels through Triton's interpreter; on
CUDA where a GPU is visible).
Softmax ``logreg``, partial participation, drawn local work and stateful clients are not served
here (the engine then runs round by round).
"""

from __future__ import annotations

import numpy as np
import torch

from fedbench.engine.linear_fast import keyed_integers
from fedbench.engine.linear_fast.cpu_rounds import lane_groups
from fedbench.engine.linear_fast.forms import cell_forms, sequence_keys
from fedbench.engine.linear_fast.linear_steps import LINEAR_MODELS
from fedbench.tree import _mean_weights

#: Host memory for a segment's row indices (int64) is bounded by drawing at most this many
#: client-steps at once; a longer segment is drawn in parts.
MAX_DRAWN = 1 << 22

#: Rows per chunk of :meth:`TensorRounds.evaluate` (its logits are [rows, models] float64).
EVAL_ROWS = 1 << 16


class TensorRounds:
    """The whole-rounds path of one vectorized engine: the training inputs on its device.

    Build it with :meth:`build` (None when the model is not ``binary_logreg``'s linear model with
    its cross-entropy gradient); :meth:`rounds` runs rounds t0..t1 or returns None.
    """

    def __init__(self, x_all: torch.Tensor, y_all: torch.Tensor):
        self.x = x_all.detach().reshape(len(x_all), -1)
        self.y = y_all.detach().to(device=x_all.device, dtype=torch.float64)
        self._forms: dict = {}

    @classmethod
    def build(cls, model, grad_fn, x_all: torch.Tensor, y_all: torch.Tensor) -> TensorRounds | None:
        """The path for ``model`` trained with ``grad_fn`` on ``x_all`` [N, D] (float, on the
        engine's device) with labels ``y_all`` [N] ∈ {0, 1}, or None (another model or gradient)."""
        apply = getattr(grad_fn, "model_apply", None)
        if LINEAR_MODELS.get(apply) != "binary" or model.apply is not apply or not x_all.is_floating_point():
            return None
        return cls(x_all, y_all)

    def rounds(self, algo, servers: list[dict], hps: list[dict], t0: int, t1: int, batch_size: int,
               key_seed: np.ndarray, key_id: np.ndarray, row_table: np.ndarray, slot: np.ndarray,
               sizes: np.ndarray, bounds: list[tuple[int, int]]) -> tuple[int, list[dict]] | None:
        """Rounds t0..t1 (1-based) of C cells with full participation, every client drawing its
        K·B rows with replacement; the arguments and the result are those of
        :meth:`fedbench.engine.linear_fast.linear_steps.LinearSteps.rounds` (``y_all`` is held here). None
        when they do not qualify: inputs or server states not float64, a rule not of the linear
        form, cells with different sequences or K, lane groups of different sizes, or the device's
        memory too small for the state (then the engine runs round by round, in chunks).

        Returns:
            (the last round run: t1, or the first round after which a cell diverged (a client's
            logit or the cell's new ``params`` not finite); per cell ``{"server", "uplink_floats",
            "uplink_nonzeros", "diverged"}``).
        """
        names = ["weight"]
        server_keys = sequence_keys(servers[0])
        if server_keys is None or any(sequence_keys(s) != server_keys for s in servers):
            return None
        if (set(servers[0]["params"]) != set(names) or servers[0]["params"]["weight"].dtype != torch.float64
                or self.x.dtype != torch.float64):
            return None
        forms = [cell_forms(self._forms, algo, server_keys, names, hp) for hp in hps]
        if any(f is None for f in forms) or len({(tuple(f[0]), tuple(f[1])) for f in forms}) != 1:
            return None
        k_steps = int(hps[0]["local_steps"])
        if any(int(hp["local_steps"]) != k_steps for hp in hps):
            return None
        lanes = lane_groups(bounds, key_seed, key_id, row_table, slot, sizes)
        n_lanes = len(lanes[0])
        clients = bounds[lanes[0][0]][1] - bounds[lanes[0][0]][0]
        if any(len(g) != n_lanes or bounds[g[0]][1] - bounds[g[0]][0] != clients for g in lanes):
            return None
        dev, d = self.x.device, self.x.shape[1]
        order = [ci for g in lanes for ci in g]  # cell at (group, lane), flattened

        def per_cell(of):  # [G, L, ...] of a form's matrix, float64 on the device
            arr = np.stack([of(forms[ci]) for ci in order])
            return torch.as_tensor(arr, dtype=torch.float64, device=dev).reshape(len(lanes), n_lanes, *arr.shape[1:])

        q, a, c = (per_cell(lambda f, i=i: f[2][i]) for i in range(3))  # the step: q [n], A [n, n], c [n]
        bm, cm, dm, em, fm = (per_cell(lambda f, i=i: f[i]) for i in range(3, 8))  # the round: B, C, D, E, F
        server = torch.stack([torch.stack([servers[ci][k]["weight"].detach().reshape(-1) for k in server_keys])
                              for ci in order]).to(dev).reshape(len(lanes), n_lanes, len(server_keys), d)
        weight = torch.stack([_mean_weights(torch.as_tensor(sizes[lo:hi], dtype=torch.float64), hi - lo)
                              for lo, hi in (bounds[g[0]] for g in lanes)]).to(dev)  # [G, M]
        firsts = [np.arange(*bounds[g[0]]) for g in lanes]  # engine-wide ids of each group's clients
        draw = _Draws(firsts, k_steps * int(batch_size), key_seed, key_id, row_table, slot, sizes, dev)
        sizes_of = (len(forms[0][0]), len(server_keys), len(forms[0][1]))
        try:  # nothing is kept from a failed attempt: the caller's states are untouched until the end
            if KERNELS and _kernels_apply(dev, d, *sizes_of):
                run = _KernelRounds(self.x, self.y, server, q, a, c, bm, cm, dm, em, fm, weight, k_steps,
                                    int(batch_size), sizes_of)
                first_bad = run(draw, t0, t1)
                last = t1
                if bool((first_bad >= 0).any()):  # a cell diverged: again, up to the first such round
                    last = int(first_bad[first_bad >= 0].min())
                    run.reset(server)
                    first_bad = run(draw, t0, last)
                server, nonzeros, ok = run.results()
            else:
                server, nonzeros, ok, last = _torch_rounds(self.x, self.y, server, draw, t0, t1, q, a, c, bm, cm,
                                                           dm, em, fm, weight, k_steps, int(batch_size))
        except torch.OutOfMemoryError:  # the state and a step's temporaries, ~(2n + 3) × [G, L, M, d]
            return None
        out = []
        ran = last - t0 + 1
        at = {ci: (gi, ln) for gi, g in enumerate(lanes) for ln, ci in enumerate(g)}
        nonzeros_cpu, ok_cpu = nonzeros.cpu(), ok.cpu()
        for ci, (lo, hi) in enumerate(bounds):
            gi, ln = at[ci]
            new = dict(servers[ci])
            for i, k in enumerate(server_keys):  # on the servers' device, as the generic path keeps them
                old = servers[ci][k]["weight"]
                new[k] = {"weight": server[gi, ln, i].clone().reshape(old.shape).to(old.device)}
            out.append({"server": new, "uplink_floats": ran * (hi - lo) * len(forms[ci][1]) * d,
                        "uplink_nonzeros": int(nonzeros_cpu[gi, ln]), "diverged": not bool(ok_cpu[gi, ln])})
        return last, out

    def evaluate(self, params: list[dict], x: torch.Tensor, y: torch.Tensor) -> list[tuple] | None:
        """:func:`fedbench.engine.rounds.evaluate.evaluate` (with ``worst_class``) of several
        ``binary_logreg`` models on the same rows at once, as one product [rows, D] × [D, models]
        per chunk and one host synchronisation: per model (mean cross-entropy per sample,
        accuracy, worst-class accuracy), to float rounding the generic evaluation's. The CPU
        counterpart is :meth:`fedbench.engine.linear_fast.linear_steps.LinearSteps.evaluate`.

        Args:
            params: per model its parameters (``weight`` [D]).
            x: [N, ...] the rows; y: [N] int64 labels in {0, 1}; on the models' device.

        Returns None where it does not apply (not float64).
        """
        if x.dtype != torch.float64 or not params or any(p["weight"].dtype != torch.float64 for p in params):
            return None
        n = len(y)
        if n == 0:  # an empty split (a dataset without a test split): evaluate()'s NaNs
            return [(float("nan"),) * 3 for _ in params]
        w = torch.stack([p["weight"].detach().reshape(-1) for p in params], 1).to(x.device)  # [D, models]
        xf, yf = x.reshape(n, -1), y.to(torch.float64).unsqueeze(1)
        loss = torch.zeros(len(params), dtype=torch.float64, device=x.device)
        hits = torch.zeros(2, len(params), dtype=torch.int64, device=x.device)
        for i in range(0, n, EVAL_ROWS):
            z, yy = xf[i:i + EVAL_ROWS] @ w, yf[i:i + EVAL_ROWS]  # logits [0, z]: cross-entropy log(1 + eᶻ) − y z
            loss += (torch.logaddexp(torch.zeros_like(z), z) - yy * z).sum(0)
            right = (z > 0) == (yy > 0)  # argmax of [0, z] (a tie is class 0)
            hits[1] += (right & (yy > 0)).sum(0)
            hits[0] += (right & (yy == 0)).sum(0)
        counts = torch.bincount(y, minlength=2)[:2].cpu()
        loss, hits = loss.cpu(), hits.cpu()
        present = counts > 0
        return [(float(loss[j]) / n, int(hits[:, j].sum()) / n,
                 float((hits[present, j].double() / counts[present].double()).min())) for j in range(len(params))]


KERNELS = True
"""Run the rounds through :mod:`fedbench.engine.linear_fast.round_kernels` where they apply (Triton installed,
rows of at most :data:`~fedbench.engine.linear_fast.round_kernels.MAX_BLOCK_D` features): compiled on CUDA;
on the CPU only in a process that Triton interprets (``TRITON_INTERPRET=1`` before Triton's import,
as the tests set it on a machine without a GPU: the CPU engine has its own compiled rounds).
Else, or set to False, the rounds run as torch operations (:func:`_torch_rounds`)."""


def _kernels_apply(dev: torch.device, d: int, n: int, n_server: int, n_entries: int) -> bool:
    """Whether :mod:`fedbench.engine.linear_fast.round_kernels` can run these rounds on ``dev``."""
    try:
        import triton

        from fedbench.engine.linear_fast import round_kernels
    except ImportError:  # no Triton (a CPU-only install)
        return False
    interpreted = bool(triton.knobs.runtime.interpret)
    return (dev.type == "cpu") == interpreted and round_kernels.supported(d, n, n_server, n_entries)


class _Draws:
    """The rows of a span of rounds, [T, G, M, K·B] int64 on the device: row ``row_table[slot[g], j]``
    for j = ``generator(seed_g, t, id_g, "batches").integers(0, n_g, K·B)`` of each group's client
    g (the engine's draws, :func:`keyed_integers.uniform_rows_rounds` on the host's threads; the
    table lookup on the device). On CUDA the copy to the device does not wait for the device's
    earlier work, so the host draws the next span while the device runs this one."""

    def __init__(self, firsts: list[np.ndarray], per_client: int, key_seed: np.ndarray, key_id: np.ndarray,
                 row_table: np.ndarray, slot: np.ndarray, sizes: np.ndarray, dev: torch.device):
        self.dev, self.per = dev, per_client
        self.shape = (len(firsts), len(firsts[0]))
        self.span = max(1, MAX_DRAWN // max(len(firsts) * len(firsts[0]) * per_client, 1))  # rounds a draw
        self.parts = []  # per group, its clients by size (one size for the shared partition)
        for gi, ids in enumerate(firsts):
            for n in np.unique(sizes[ids]):
                at = np.flatnonzero(sizes[ids] == n)
                sel = ids[at]
                used, local = np.unique(slot[sel], return_inverse=True)
                table = torch.as_tensor(row_table[used, :int(n)], device=dev)
                self.parts.append((gi, torch.as_tensor(at, device=dev), key_seed[sel], key_id[sel], int(n), table,
                                   torch.as_tensor(local.reshape(-1), device=dev)))

    def __call__(self, t0: int, t1: int) -> torch.Tensor:
        """The rows of rounds t0..t1 (1-based)."""
        out = torch.empty((t1 - t0 + 1, *self.shape, self.per), dtype=torch.int64, device=self.dev)
        rounds = np.arange(t0, t1 + 1)
        for gi, at, seeds, ids, n, table, local in self.parts:
            drawn = torch.from_numpy(keyed_integers.uniform_rows_rounds(seeds, rounds, ids, n, self.per))
            if self.dev.type == "cuda":
                drawn = drawn.pin_memory().to(self.dev, non_blocking=True)
            out[:, gi, at] = table[local[None, :, None], drawn]
        return out


class _KernelRounds:
    """Rounds through :mod:`fedbench.engine.linear_fast.round_kernels`: the forms flattened to P = G·L lanes,
    the server state double-buffered on the device, the partial sums' buffers made once."""

    def __init__(self, x, y, server, q, a, c, bm, cm, dm, em, fm, weight, k_steps: int, batch_size: int,
                 sizes_of: tuple[int, int, int]):
        from fedbench.engine.linear_fast import round_kernels
        self.x, self.y, self.weight = x, y, weight.contiguous()
        self.groups, self.lanes = server.shape[:2]
        self.p = p = self.groups * self.lanes
        self.n, self.ns, self.ne = sizes_of
        self.clients, self.d = weight.shape[1], x.shape[1]
        self.forms = [f.reshape(p, -1).contiguous() for f in (bm, q, a, c, cm, dm, em, fm)]
        self.block_m, self.block_d, self.tiles, self.nblk = round_kernels.shape(self.clients, self.d)
        dev = server.device
        self.part = torch.empty(p, self.nblk, self.ne, self.d, dtype=torch.float64, device=dev)
        self.nz = torch.empty(p, self.nblk, dtype=torch.int64, device=dev)
        self.bad = torch.empty(p, self.nblk, dtype=torch.int32, device=dev)
        self.k_steps, self.batch_size = k_steps, batch_size
        self.clients_kernel, self.server_kernel = round_kernels.clients_kernel, round_kernels.server_kernel
        self.num_warps, self.sum_chunk = round_kernels.NUM_WARPS, round_kernels.SUM_CHUNK
        self.reset(server)

    def reset(self, server: torch.Tensor) -> None:
        """Start again from ``server`` [G, L, n_s, d]."""
        self.server = server.reshape(self.p, self.ns, self.d).clone()
        self.spare = torch.empty_like(self.server)
        self.nonzeros = torch.zeros(self.p, dtype=torch.int64, device=server.device)
        self.first_bad = torch.full((self.p,), -1, dtype=torch.int64, device=server.device)

    def __call__(self, draw: _Draws, t0: int, t1: int) -> torch.Tensor:
        """Rounds t0..t1; returns per lane [G, L] the first round after which it was not finite, or −1."""
        bm, q, a, c, cm, dm, em, fm = self.forms
        p = self.p
        t = t0
        while t <= t1:
            upto = min(t1, t + draw.span - 1)
            rows = draw(t, upto)
            for r in range(upto - t + 1):
                self.clients_kernel[(p, self.nblk)](
                    self.x, self.y, rows[r], self.server, bm, q, a, c, cm, dm, self.weight, self.part, self.nz,
                    self.bad, self.clients, self.d, self.lanes, self.nblk, self.k_steps, self.batch_size,
                    self.tiles, N=self.n, NS=self.ns, NE=self.ne, BLOCK_M=self.block_m, BLOCK_D=self.block_d,
                    num_warps=self.num_warps)
                self.server_kernel[(p,)](
                    self.server, self.spare, em, fm, self.part, self.nz, self.bad, self.nonzeros, self.first_bad,
                    t + r, self.d, self.nblk, NS=self.ns, NE=self.ne, BLOCK_D=self.block_d, BLOCK_B=self.sum_chunk)
                self.server, self.spare = self.spare, self.server
            t = upto + 1
        return self.first_bad.reshape(self.groups, self.lanes)

    def results(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(server [G, L, n_s, d], the messages' non-zeros [G, L], whether each lane stayed finite [G, L])."""
        shape = (self.groups, self.lanes)
        return (self.server.reshape(*shape, self.ns, self.d), self.nonzeros.reshape(shape),
                self.first_bad.reshape(shape) < 0)


def _torch_rounds(x, y, server, draw: _Draws, t0: int, t1: int, q, a, c, bm, cm, dm, em, fm, weight,
                  k_steps: int, batch_size: int):
    """Rounds t0..t1 as torch operations (:func:`_round`), stopping after the first round in which a
    lane was not finite: (server, non-zeros [G, L], finite [G, L], the last round run)."""
    g, l = server.shape[:2]
    nonzeros = torch.zeros(g, l, dtype=torch.int64, device=server.device)
    ok = torch.ones(g, l, dtype=torch.bool, device=server.device)
    last = t0 - 1
    t = t0
    while t <= t1 and bool(ok.all()):
        upto = min(t1, t + draw.span - 1)
        rows = draw(t, upto)
        for r in range(upto - t + 1):
            server, nz, fine = _round(x, y, server, rows[r], q, a, c, bm, cm, dm, em, fm, weight, k_steps, batch_size)
            nonzeros += nz
            ok &= fine
            last = t + r
            if not bool(ok.all()):  # a cell diverged: stop after this round, as the CPU path does
                break
        t = last + 1
    return server, nonzeros, ok, last


def _round(x, y, server, rows, q, a, c, bm, cm, dm, em, fm, weight, k_steps: int, batch_size: int):
    """One round of every client of every lane. ``server`` [G, L, n_s, d]; ``rows`` [G, M, K·B].
    Returns (the new server [G, L, n_s, d], the messages' non-zeros [G, L] (int64), whether each
    lane stayed finite [G, L]: every client's logits and the new ``params``).

    The clients' state is [G, L, n, M, d] (a sequence of all clients contiguous) and every sum
    over the n sequences is n scaled passes (``addcmul``), each a coalesced read-modify-write
    over the state (the layouts compared: ``benchmarks/tensor_step_layouts.py``)."""
    g, l = server.shape[:2]
    s = _mix(bm, server).unsqueeze(3)  # [G, L, n, 1, d]: every client starts from B S
    fine = torch.ones(g, l, dtype=torch.bool, device=server.device)
    for k in range(k_steps):
        r = rows[:, :, k * batch_size:(k + 1) * batch_size]  # [G, M, B]
        xb, yb = x[r].unsqueeze(1), y[r].unsqueeze(1)  # [G, 1, M, B, d], [G, 1, M, B]
        p = _mix(q.unsqueeze(2), s)[:, :, 0]  # [G, L, M or 1, d]
        z = (p.unsqueeze(3) * xb).sum(-1)  # [G, L, M, B]
        fine &= torch.isfinite(z).all(dim=(2, 3))
        dz = (torch.sigmoid(z) - yb) / batch_size
        grad = (dz.unsqueeze(-1) * xb).sum(3) if batch_size > 1 else dz * xb[:, :, :, 0]  # [G, L, M, d]
        s = _mix(a, s, c, grad)
    nonzeros = torch.zeros(g, l, dtype=torch.int64, device=server.device)
    ebar = []
    for e in _mix(cm, s, add=_mix(dm, server).unsqueeze(3)).unbind(2):  # each message entry [G, L, M, d]
        nonzeros += (e != 0).sum(dim=(2, 3))
        ebar.append(torch.einsum("gm,glmd->gld", weight, e))
    new = _mix(em, server) + _mix(fm, torch.stack(ebar, 2))
    fine &= torch.isfinite(new[:, :, 0]).all(dim=-1)
    return new, nonzeros, fine


def _mix(coef: torch.Tensor, seqs: torch.Tensor, c: torch.Tensor | None = None, grad: torch.Tensor | None = None,
         add: torch.Tensor | None = None) -> torch.Tensor:
    """out_i = Σ_j coef[..., i, j] seqs[:, :, j], plus c[..., i] grad or add[:, :, i] (one of the
    two), for sequences ``seqs`` [G, L, n, ...] and per-lane coefficients ``coef`` [G, L, r, n]:
    [G, L, r, ...]; one coalesced pass per term (the sums over n are short: n ≤ 3)."""
    g, l, r, n = coef.shape
    shape = torch.broadcast_shapes(seqs.shape[3:], () if grad is None else grad.shape[2:],
                                   () if add is None else add.shape[3:])
    out = torch.empty(g, l, r, *shape, dtype=seqs.dtype, device=seqs.device)
    pad = (None,) * len(shape)
    for i in range(r):
        o = out[:, :, i]
        if grad is not None:
            torch.mul(grad, c[:, :, i][(...,) + pad], out=o)
        elif add is not None:
            o.copy_(add[:, :, i])
        else:
            o.zero_()
        for j in range(n):
            o.addcmul_(seqs[:, :, j], coef[:, :, i, j][(...,) + pad])
    return out
