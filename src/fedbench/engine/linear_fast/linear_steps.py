"""The vectorized engine's fast path for linear logistic regression on CPU: :class:`LinearSteps`, the
entry point the engine calls (:mod:`fedbench.engine.clients.vectorized`), and the models it knows
(:data:`LINEAR_MODELS`).

:meth:`LinearSteps.run` runs a round's local steps of a chunk of clients in one compiled loop
(:mod:`~.step_kernels`), :meth:`LinearSteps.rounds` whole rounds of every stacked cell
(:mod:`~.cpu_rounds`, :mod:`~.round_items`), :meth:`LinearSteps.evaluate` the evaluation of many
cells in one pass (:mod:`~.evaluation`). The update rules are read off the algorithm itself
(:mod:`~.forms`), the gradient of the model written out (:mod:`~.logits`), the inputs read as rows
(:mod:`~.rows`).

Equality: the same values as the generic path to float rounding (another summation order);
``tests/engine/linear_fast/test_linear_steps.py``: float64, 1e-10 relative, every algorithm it serves, stacked cells
differing in lr and seed, the ``shared`` partition with ``local.replacement``. The rows drawn are
the engine's, unchanged. Which path runs is decided by the engine per chunk
(:meth:`fedbench.engine.clients.compiled.CompiledPaths._fast_chunk`; docs/engines.md).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import torch

from fedbench.engine.linear_fast.cpu_rounds import (
    ROUND_BLOCK,
    _round_buffers,
    _round_items,
    _round_reduce,
    _round_shared,
    _run_rounds,
    lane_groups,
    round_mode,
)
from fedbench.engine.linear_fast.evaluation import _evaluate_lanes
from fedbench.engine.linear_fast.forms import cell_forms, sequence_keys, step_form
from fedbench.engine.linear_fast.round_items import _segment_steps
from fedbench.engine.linear_fast.rows import csr_rows, dense_rows, sparse_rows
from fedbench.engine.linear_fast.step_kernels import _run_dense, _run_dense_threads, _run_sparse, _run_sparse_threads
from fedbench.models import binary_logreg, logreg
from fedbench.rng import _purpose_id
from fedbench.tree import _mean_weights

#: The models this path knows: their ``apply`` → kind. "binary": logits [0, xᵀw] (``weight`` (D,));
#: "softmax": logits Wx + b (``weight`` (C, D), ``bias`` (C,)).
LINEAR_MODELS = {binary_logreg.apply: "binary", logreg.apply: "softmax"}

#: A chunk is split over torch's threads only with at least this many clients per thread.
MIN_CLIENTS_PER_THREAD = 64

#: Whole rounds (:meth:`LinearSteps.rounds`) are split over torch's threads only with at least this
#: many clients per thread and round (a round then takes ~0.1 ms or more, the threads' hand-off ~0.05 ms).
MIN_ROUND_CLIENTS_PER_THREAD = 512


class LinearSteps:
    """The fast path of one vectorized engine: the model's kind and the training inputs as rows.

    Build it with :meth:`build` (None when the model or device does not qualify); :meth:`run`
    trains a chunk of clients for all the steps of its round, or returns None when the chunk does
    not qualify (its algorithm's step is not affine, the state holds more than sequences), and the
    engine then runs the generic path.
    """

    def __init__(self, kind: str, x_all: torch.Tensor):
        self.kind = kind
        self._x_all = x_all
        self._rows = None  # ("sparse", indptr, indices, values) or ("dense", x), on first use
        self._round_rows = None  # (indptr, indices, values, max_nnz) for whole rounds, on first use
        self._forms: dict = {}
        self._pool: ThreadPoolExecutor | None = None  # the threads of :meth:`rounds`, on first use
        self._eval_rows: dict = {}  # id(x) -> (x, its CSR rows or None, labels): :meth:`evaluate`

    @classmethod
    def build(cls, model, grad_fn, x_all: torch.Tensor) -> LinearSteps | None:
        """The fast path for ``model`` trained with ``grad_fn`` on ``x_all``, or None: the model is
        not one of :data:`LINEAR_MODELS`, ``grad_fn`` is not its cross-entropy gradient
        (:func:`fedbench.models.make_grad_fn` marks it), or the inputs are not floating-point CPU tensors."""
        apply = getattr(grad_fn, "model_apply", None)
        kind = LINEAR_MODELS.get(apply)
        if kind is None or model.apply is not apply or x_all.device.type != "cpu" or not x_all.is_floating_point():
            return None
        return cls(kind, x_all)

    def rows(self):
        if self._rows is None:
            x = self._x_all.detach().reshape(len(self._x_all), -1).numpy()
            csr = sparse_rows(x)
            self._rows = (("dense", np.ascontiguousarray(x)) if csr is None
                          else ("sparse", *csr, int(np.diff(csr[0]).max(initial=0))))
        return self._rows

    def round_rows(self):
        """The training inputs as CSR rows for the whole-round kernels (indptr, indices, values,
        the most non-zeros of a row): :meth:`rows`' sparse rows, or its dense rows through
        :func:`~.rows.dense_rows` (their indices cost N·D·2 bytes, made on first use)."""
        if self._round_rows is None:
            rows = self.rows()
            self._round_rows = rows[1:] if rows[0] == "sparse" else (*dense_rows(rows[1]), rows[1].shape[1])
        return self._round_rows

    def form(self, algo, keys: list[str], names: list[str], hp: dict):
        """:func:`~.forms.step_form` cached in this path's forms."""
        return step_form(self._forms, algo, keys, names, hp)

    def run(self, algo, state: dict, hps: list[dict], coef_of: np.ndarray, idx: torch.Tensor,
            y: torch.Tensor) -> tuple[dict, np.ndarray] | None:
        """All S steps of a chunk of G clients, or None when the chunk does not qualify.

        Args:
            algo: the algorithm module.
            state: the chunk's stacked step state ``[G, ...]`` after ``client_init``.
            hps: the hyperparameters of the chunk's cells (Python numbers).
            coef_of: [G] int, member j's cell's position in ``hps``.
            idx: [S, G, B] rows of the training inputs; y: [S, G, B] their labels (no padding).

        Returns:
            (the step state after the S steps, [G] float64 sum of the S steps' losses).
        """
        keys = sequence_keys(state)
        if keys is None:
            return None
        params = state["params"]
        names = ["weight"] if self.kind == "binary" else ["weight", "bias"]
        if set(params) != set(names):
            return None
        weight = params["weight"]
        g, dtype = weight.shape[0], weight.dtype
        d = weight.shape[-1]
        n_lin = 1 if self.kind == "binary" else weight.shape[1]
        forms = [self.form(algo, keys, names, hp) for hp in hps]
        if any(f is None for f in forms):
            return None
        q, a, c = (np.ascontiguousarray(np.stack([f[i] for f in forms])) for i in range(3))
        n, width = len(keys), n_lin * d + (0 if self.kind == "binary" else n_lin)
        flat = torch.empty((g, n, width), dtype=dtype)
        for i, k in enumerate(keys):
            flat[:, i, : n_lin * d] = state[k]["weight"].reshape(g, n_lin * d)
            if self.kind != "binary":
                flat[:, i, n_lin * d:] = state[k]["bias"]
        loss_sum = np.zeros(g)
        last = np.zeros(g)
        idx_np = np.ascontiguousarray(idx.numpy().transpose(1, 0, 2))  # [G, S, B]: a client's rows together
        lab = np.ascontiguousarray(y.numpy().transpose(1, 0, 2))
        coef_of = np.ascontiguousarray(coef_of, dtype=np.int64)
        binary, has_bias = self.kind == "binary", self.kind != "binary"
        rows = self.rows()
        threads = max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS, g // MIN_CLIENTS_PER_THREAD))
        state_np = flat.numpy()
        if threads > 1:  # the clients split into one contiguous range per thread (torch's thread count)
            numba.set_num_threads(threads)
            bounds = np.linspace(0, g, threads + 1).astype(np.int64)
            if rows[0] == "sparse":
                _run_sparse_threads(state_np, *rows[1:], idx_np, lab, coef_of, q, a, c, binary, n_lin, d, has_bias,
                                    loss_sum, last, bounds)
            else:
                _run_dense_threads(state_np, rows[1], idx_np, lab, coef_of, q, a, c, binary, n_lin, d, has_bias,
                                   loss_sum, last, bounds)
        elif rows[0] == "sparse":
            _run_sparse(state_np, *rows[1:], idx_np, lab, coef_of, q, a, c, binary, n_lin, d, has_bias, loss_sum,
                        last, 0, g)
        else:
            _run_dense(state_np, rows[1], idx_np, lab, coef_of, q, a, c, binary, n_lin, d, has_bias, loss_sum, last,
                       0, g)
        new = dict(state)
        for i, k in enumerate(keys):
            leaf = {"weight": flat[:, i, : n_lin * d].reshape(weight.shape)}
            if self.kind != "binary":
                leaf["bias"] = flat[:, i, n_lin * d:]
            new[k] = leaf
        new["steps"] = state["steps"] + idx.shape[0]
        new["loss"] = torch.from_numpy(last).to(dtype)
        return new, loss_sum

    def _threaded_rounds(self, threads: int, args: tuple, t0: int, t1: int, nonzeros: np.ndarray,
                         diverged: np.ndarray) -> int:
        """:func:`~.cpu_rounds._run_rounds` with each round's work items split over ``threads`` threads (the
        compiled parts release the GIL): contiguous ranges of items with about equal clients; the
        items' sums and their order in the reduction are those of one thread, so are the results."""
        (server, indptr, indices, values, max_nnz, y_all, row_table, slot, sizes, key_seed, key_id, purpose,
         item_group, item_lo, item_hi, weight, q, af, c, bf, cmf, dmf, emf, fmf, cc, k_steps, b_size, binary, n_lin, d,
         has_bias, mode) = args
        n_items = len(item_group)
        seg_steps = _segment_steps(k_steps, b_size, q.shape[1])
        (part, item_nnz, item_ok, item_w, thresholds, e_shared, d_shared, s0, p0, v, sx, hqx, mc, ac, cs, pw, qpw, cpw,
         part_w) = _round_buffers(n_items, server, q, af, c, cmf, cc, sizes, mode, k_steps, b_size, seg_steps)
        done = np.concatenate([[0], np.cumsum(item_hi - item_lo)])
        cuts = np.searchsorted(done, np.linspace(0, done[-1], threads + 1)[1:-1])
        ranges = list(zip([0, *cuts], [*cuts, n_items]))
        if self._pool is None or self._pool._max_workers != threads - 1:
            self._pool = ThreadPoolExecutor(threads - 1)

        def items(i0, i1, t):
            _round_items(i0, i1, t, indptr, indices, values, max_nnz, y_all, row_table, slot, sizes, thresholds,
                         key_seed, key_id, purpose, item_group, item_lo, item_hi, weight, cc, k_steps, b_size, binary,
                         n_lin, d, has_bias, mode, e_shared, p0, v, sx, hqx, mc, ac, cs, pw, qpw, cpw, part, part_w,
                         item_nnz, item_ok, item_w)

        last = t0 - 1
        for t in range(t0, t1 + 1):
            _round_shared(server, q, bf, cmf, dmf, pw, qpw, seg_steps, s0, p0, v, sx, e_shared, d_shared)
            futures = [self._pool.submit(items, i0, i1, t) for i0, i1 in ranges[1:]]
            items(*ranges[0], t)
            for f in futures:
                f.result()
            last = t
            if _round_reduce(server, item_group, emf, fmf, cc, mode, e_shared, part, part_w, item_nnz, item_ok,
                             item_w, nonzeros, diverged):
                break
        return last

    def evaluate(self, params: list[dict], x: torch.Tensor, y: torch.Tensor) -> list[tuple] | None:
        """:func:`fedbench.engine.rounds.evaluate.evaluate` (with ``worst_class``) of several models of this
        kind on the same rows in one pass (:func:`~.evaluation._evaluate_lanes`): per model (mean cross-entropy
        per sample, accuracy, worst-class accuracy), each the model's own numbers whatever the
        others (to float rounding the generic evaluation's: another summation order). None where
        it does not apply: not float64. The rows of ``x`` are kept per tensor as CSR
        (:func:`~.rows.csr_rows`: dense rows cost N·D·2 bytes of indices beside them); the training
        inputs' are those the whole rounds read (:meth:`round_rows`), not a second copy.

        Args:
            params: per model its parameters (``weight``, and ``bias`` for ``logreg``).
            x: [N, ...] the rows (CPU); y: [N] int64 labels (0/1 for ``binary_logreg``, < C for ``logreg``).
        """
        if x.dtype != torch.float64 or any(p["weight"].dtype != torch.float64 for p in params) or not len(params):
            return None
        if len(x) == 0:  # an empty split (a dataset without a test split): evaluate()'s NaNs
            return [(float("nan"),) * 3 for _ in params]
        hit = self._eval_rows.get(id(x))
        if hit is None or hit[0] is not x:
            csr = (self.round_rows()[:3] if x is self._x_all
                   else csr_rows(x.detach().reshape(len(x), -1).numpy()))
            hit = self._eval_rows[id(x)] = (x, csr, y.numpy().astype(np.int64))
        csr, labels = hit[1], hit[2]
        n = len(labels)
        binary = self.kind == "binary"
        weight = params[0]["weight"]
        n_lin, d = (1, weight.shape[-1]) if binary else (weight.shape[0], weight.shape[-1])
        width = n_lin * d + (0 if binary else n_lin)
        w = np.empty((width, len(params)))  # coordinate-major, the models side by side
        for ln, p in enumerate(params):
            w[: n_lin * d, ln] = p["weight"].detach().reshape(-1).numpy()
            if not binary:
                w[n_lin * d:, ln] = p["bias"].detach().numpy()
        loss, hits, counts = _evaluate_lanes(*csr, labels, w.reshape(-1), binary, n_lin, d, not binary,
                                             2 if binary else n_lin)
        present = counts > 0
        return [(float(loss[ln] / n), float(hits[:, ln].sum() / n), float((hits[present, ln] / counts[present]).min()))
                for ln in range(len(params))]

    def round_form(self, algo, server_keys: list[str], names: list[str], hp: dict):
        """:func:`~.forms.cell_forms` cached in this path's forms."""
        return cell_forms(self._forms, algo, server_keys, names, hp)

    def rounds(self, algo, servers: list[dict], hps: list[dict], t0: int, t1: int, y_all: np.ndarray,
               batch_size: int, key_seed: np.ndarray, key_id: np.ndarray, row_table: np.ndarray, slot: np.ndarray,
               sizes: np.ndarray, bounds: list[tuple[int, int]]) -> tuple[int, list[dict]] | None:
        """Rounds t0..t1 of C cells with full participation, every client drawing its K·B rows
        with replacement, in one compiled call (:func:`~.cpu_rounds._run_rounds`); None when they do not
        qualify (inputs not float64, a rule not of :func:`~.forms.round_form`'s form, cells
        with different sequences).

        Args:
            algo: the algorithm module.
            servers, hps: per cell, its server state and its hyperparameters (the same every round).
            t0, t1: the first and last round (1-based).
            y_all: [N] int64, the labels of the training inputs' rows.
            batch_size: B.
            key_seed, key_id: per engine-wide client, its randomness key (seed, id).
            row_table, slot, sizes: client g's rows are ``row_table[slot[g], :sizes[g]]``.
            bounds: per cell, its clients ``lo..hi−1`` (engine-wide ids; every one participates).

        Returns:
            (the last round run: t1, or the round in which a cell diverged; per cell ``{"server":
            its new server state, "uplink_floats", "uplink_nonzeros": the counts of the rounds run,
            "diverged": bool}``).
        """
        names = ["weight"] if self.kind == "binary" else ["weight", "bias"]
        server_keys = sequence_keys(servers[0])
        if server_keys is None or any(sequence_keys(s) != server_keys for s in servers):
            return None
        if set(servers[0]["params"]) != set(names):
            return None
        weight = servers[0]["params"]["weight"]
        if weight.dtype != torch.float64 or self._x_all.dtype != torch.float64:
            return None
        forms = [self.round_form(algo, server_keys, names, hp) for hp in hps]
        if any(f is None for f in forms) or len({(tuple(f[0]), tuple(f[1])) for f in forms}) != 1:
            return None
        k_steps = int(hps[0]["local_steps"])
        if any(int(hp["local_steps"]) != k_steps for hp in hps):
            return None
        d = weight.shape[-1]
        n_lin = 1 if self.kind == "binary" else weight.shape[0]
        width = n_lin * d + (0 if self.kind == "binary" else n_lin)
        lanes = lane_groups(bounds, key_seed, key_id, row_table, slot, sizes)
        n_lanes = max(len(g) for g in lanes)
        # Per group, its cells as lanes, the last one repeated up to n_lanes (its copies' numbers are dropped).
        lane_cell = np.array([g + [g[-1]] * (n_lanes - len(g)) for g in lanes], dtype=np.int64)  # [G, L]
        server = np.empty((len(lanes), len(server_keys), width, n_lanes))  # [G, n_s, P, L], flat below
        for gi in range(len(lanes)):
            for ln in range(n_lanes):
                srv = servers[lane_cell[gi, ln]]
                for i, k in enumerate(server_keys):
                    server[gi, i, : n_lin * d, ln] = srv[k]["weight"].detach().reshape(-1).numpy()
                    if self.kind != "binary":
                        server[gi, i, n_lin * d:, ln] = srv[k]["bias"].detach().numpy()
        server = server.reshape(len(lanes), len(server_keys), width * n_lanes)
        steps = [f[2] for f in forms]  # (q, A, c) per cell, then B, C, D, E, F per cell
        per_cell = [np.stack(m) for m in (*zip(*steps), *zip(*(f[3:] for f in forms)))]
        per_cell.append(np.einsum("cen,cn->ce", per_cell[4], per_cell[2]))  # C c: the one-step path's coefficients
        # [C, ...] → [G, ..., L]: a group's lanes last
        q, a, c, bm, cm, dm, em, fm, cc = (np.moveaxis(m[lane_cell], 1, -1) for m in per_cell)
        q, c, cc = (np.ascontiguousarray(m) for m in (q, c, cc))
        # the maps of the dense passes with each lane's coefficient repeated at every coordinate: [G, r, c, P·L]
        af, bf, cmf, dmf, emf, fmf = (np.ascontiguousarray(np.tile(m, width)) for m in (a, bm, cm, dm, em, fm))
        weight_of = np.zeros(len(key_seed))
        item_group, item_lo, item_hi = [], [], []
        for gi, group in enumerate(lanes):
            lo, hi = bounds[group[0]]
            weight_of[lo:hi] = _mean_weights(torch.as_tensor(sizes[lo:hi], dtype=torch.float64), hi - lo).numpy()
            for b0 in range(lo, hi, ROUND_BLOCK):
                item_group.append(gi)
                item_lo.append(b0)
                item_hi.append(min(hi, b0 + ROUND_BLOCK))
        nonzeros = np.zeros((len(lanes), n_lanes), dtype=np.int64)
        diverged = np.zeros((len(lanes), n_lanes), dtype=np.bool_)
        args = (server, *self.round_rows(), y_all, row_table, slot, np.ascontiguousarray(sizes, dtype=np.int64),
                key_seed, key_id, _purpose_id("batches"), np.array(item_group, dtype=np.int64),
                np.array(item_lo, dtype=np.int64), np.array(item_hi, dtype=np.int64), weight_of, q, af, c, bf, cmf,
                dmf, emf, fmf, cc, k_steps, int(batch_size), self.kind == "binary", n_lin, d, self.kind != "binary",
                round_mode(k_steps, int(batch_size), *per_cell[:3]))
        draws = sum(bounds[g[0]][1] - bounds[g[0]][0] for g in lanes) * n_lanes
        threads = min(torch.get_num_threads(), draws // MIN_ROUND_CLIENTS_PER_THREAD, len(item_group))
        if threads > 1:
            last = self._threaded_rounds(threads, args, int(t0), int(t1), nonzeros, diverged)
        else:
            last = _run_rounds(*args, int(t0), int(t1), nonzeros, diverged)
        out = []
        ran = last - t0 + 1
        at = {ci: (gi, ln) for gi, group in enumerate(lanes) for ln, ci in enumerate(group)}
        for ci, (lo, hi) in enumerate(bounds):
            gi, ln = at[ci]
            new = dict(servers[ci])
            for i, k in enumerate(server_keys):
                arr = torch.from_numpy(server[gi, i, ln::n_lanes].copy())
                leaf = {"weight": arr[: n_lin * d].reshape(weight.shape)}
                if self.kind != "binary":
                    leaf["bias"] = arr[n_lin * d:]
                new[k] = leaf
            out.append({"server": new, "uplink_floats": ran * (hi - lo) * len(forms[ci][1]) * width,
                        "uplink_nonzeros": int(nonzeros[gi, ln]), "diverged": bool(diverged[gi, ln])})
        return last, out
