"""Whole rounds of binary logistic regression as two GPU kernels (Triton): the tensor path's round
on CUDA.

:mod:`fedbench.engine.linear_fast.tensor_rounds` reads each algorithm's round off the algorithm itself as
linear maps (:func:`fedbench.engine.linear_fast.forms.round_form`,
:func:`~fedbench.engine.linear_fast.forms.affine_form`):
for the n ≤ 2 step sequences s of a client (FedAc: w^md's two parents w^ag and w), the server's
n_s ≤ 2 sequences S and the n_e ≤ 2 entries e of a message,

    s ← B S                                                    (client_init)
    K times:  p = Σ_j q_j s_j;   s_i ← Σ_j A_ij s_j + c_i ∇f(p; b)     (client_step)
    e = C s + D S;   ē = Σ_k w_k e_k;   S ← E S + F ē                  (client_final, server_update)

with ∇f(p; b) = (1/B) Σ_b (σ(x_bᵀp) − y_b) x_b (``binary_logreg``'s logits [0, xᵀp]). Yuan & Ma,
"Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020, eqs. (3.1)–(3.2) for FedAc; the
minibatch baselines of their §2.6–2.7 and FedAvg have the same form.

Every client starts a round from the broadcast server state, so a client's state lives only
inside its round: :func:`clients_kernel` holds a tile of BLOCK_M clients × d coordinates of each
sequence in registers for all K steps, gathers the drawn rows of x (an L2-resident [N, d] matrix on
a9a), and writes only its tiles' weighted message sums, non-zero counts and non-finite flags.
:func:`server_kernel` then sums those partial sums in a fixed order (the same bits every run),
applies E and F, and records the first round at which a lane stopped being finite. Two launches a
round, no host synchronisation; per round the memory traffic is the gathered rows and the partial
sums, not the [clients, d] state that the torch version reads and writes at every step.

Grid: ``clients_kernel`` over (P lanes, NBLK client blocks), a block holding TILES tiles of
BLOCK_M clients; ``server_kernel`` over the P lanes. The tile is BLOCK_M × BLOCK_D float64 per
sequence, BLOCK_D = d rounded up to a power of two; :func:`supported` bounds d so that the tiles fit
in registers (a9a's 123; epsilon's 2,000 does not, and runs on the torch version).

Equality with the generic path: float64 to 1e-10 relative (the sums run in another order); the
same bits for any segmenting of the rounds (``tests/engine/linear_fast/test_tensor_rounds.py``, which runs these
kernels through Triton's interpreter on the CPU, and compiled on CUDA).
"""

from __future__ import annotations

import triton
import triton.language as tl

#: The widest row the register tiles take (BLOCK_D); wider rows run on the torch version.
MAX_BLOCK_D = 256
# The tile's shape, chosen by benchmarks/round_kernel_tiles.py on an H100 (benchmarks/RESULTS.md,
# "The round kernels' tile shape (H100)"): at M = 8,192, 54 lanes, a9a's d = 123, these gave 0.37 ms a
# round at K = 1 and 3.7 ms at K = 16, against 0.51 and 6.7 ms for 1,024 elements and 4 warps.
#: Elements of one sequence's tile (BLOCK_M · BLOCK_D).
TILE = 512
#: Client blocks per lane at most: ``server_kernel`` sums this many partial sums per lane.
MAX_BLOCKS = 256
#: Warps of a ``clients_kernel`` program.
NUM_WARPS = 2
#: Partial sums ``server_kernel`` loads at once (BLOCK_B).
SUM_CHUNK = 16


def shape(clients: int, d: int) -> tuple[int, int, int, int]:
    """(BLOCK_M, BLOCK_D, TILES, NBLK) for ``clients`` clients of rows of width ``d``: BLOCK_D the
    power of two ≥ d, BLOCK_M · BLOCK_D = :data:`TILE`, and NBLK ≤ :data:`MAX_BLOCKS` blocks of
    TILES tiles each covering the clients."""
    block_d = triton.next_power_of_2(max(d, 1))
    block_m = max(1, TILE // block_d)
    tiles_total = triton.cdiv(clients, block_m)
    tiles = triton.cdiv(tiles_total, MAX_BLOCKS)
    return block_m, block_d, tiles, triton.cdiv(tiles_total, tiles)


def supported(d: int, n: int, n_server: int, n_entries: int) -> bool:
    """Whether the kernels take rows of width ``d`` and forms of these sizes (each at most 2)."""
    return triton.next_power_of_2(max(d, 1)) <= MAX_BLOCK_D and max(n, n_server, n_entries) <= 2


@triton.jit
def _sequences(ptr, lane, d, cols, dmask, NS: tl.constexpr, BLOCK_D: tl.constexpr):
    """Lane ``lane``'s NS ≤ 2 sequences of [P, NS, d] at ``ptr`` as vectors (zeros past d; the
    second zeros where NS = 1)."""
    at = ptr + lane.to(tl.int64) * NS * d
    s_0 = tl.load(at + cols, mask=dmask, other=0.0)
    s_1 = tl.zeros([BLOCK_D], dtype=tl.float64)
    if NS > 1:
        s_1 = tl.load(at + d + cols, mask=dmask, other=0.0)
    return s_0, s_1


@triton.jit
def _combine(coef_ptr, s_0, s_1, NS: tl.constexpr):
    """Σ_j coef[j] s_j over NS ≤ 2 vectors s_j: one row of B, D, E or F applied to the coordinates."""
    out = tl.load(coef_ptr) * s_0
    if NS > 1:
        out += tl.load(coef_ptr + 1) * s_1
    return out


@triton.jit
def clients_kernel(x_ptr, y_ptr, rows_ptr, server_ptr, b_ptr, q_ptr, a_ptr, c_ptr, cm_ptr, dm_ptr, w_ptr,
                   part_ptr, nz_ptr, bad_ptr, M, d, L, NBLK, K, B, TILES,
                   N: tl.constexpr, NS: tl.constexpr, NE: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
    """One round of the clients of block ``program_id(1)`` of lane ``program_id(0)``: K local steps
    of batch size B each. The sizes of the forms and the tile are compile-time constants (one
    compiled kernel per algorithm's (n, n_s, n_e) and row width, cached by Triton); K, B and the
    tiles per block TILES are not (the loops over them are ``while`` loops, which Triton's
    interpreter also runs).

    Args (float64 unless named; P lanes = G groups × L lanes; a group's lanes draw the same rows):
        x_ptr [N_rows, d], y_ptr [N_rows] (labels 0/1): the training rows.
        rows_ptr [G, M, K·B] int64: this round's rows of every client.
        server_ptr [P, NS, d]: the server sequences S.
        b_ptr [P, N, NS], q_ptr [P, N], a_ptr [P, N, N], c_ptr [P, N], cm_ptr [P, NE, N],
        dm_ptr [P, NE, NS]: the forms B, q, A, c, C, D of each lane.
        w_ptr [G, M]: the clients' weights in the mean (Σ = 1).
        part_ptr [P, NBLK, NE, d] (out): Σ over the block's clients of w_k e_k.
        nz_ptr [P, NBLK] int64 (out): the block's messages' non-zero entries.
        bad_ptr [P, NBLK] int32 (out): 1 where a client's logit was not finite.
    """
    lane = tl.program_id(0)
    blk = tl.program_id(1)
    g = lane // L
    cols = tl.arange(0, BLOCK_D)
    dmask = cols < d
    s_0, s_1 = _sequences(server_ptr, lane, d, cols, dmask, NS, BLOCK_D)
    # client_init (B S) and the message's server part (D S), as vectors over the coordinates
    init_0 = _combine(b_ptr + lane * N * NS, s_0, s_1, NS)
    init_1 = tl.zeros([BLOCK_D], dtype=tl.float64)
    if N > 1:
        init_1 = _combine(b_ptr + lane * N * NS + NS, s_0, s_1, NS)
    ds_0 = _combine(dm_ptr + lane * NE * NS, s_0, s_1, NS)
    ds_1 = tl.zeros([BLOCK_D], dtype=tl.float64)
    if NE > 1:
        ds_1 = _combine(dm_ptr + lane * NE * NS + NS, s_0, s_1, NS)
    # the step's coefficients
    q_0 = tl.load(q_ptr + lane * N)
    a_00 = tl.load(a_ptr + lane * N * N)
    c_0 = tl.load(c_ptr + lane * N)
    cm_00 = tl.load(cm_ptr + lane * NE * N)
    q_1 = 0.0
    a_01 = 0.0
    a_10 = 0.0
    a_11 = 0.0
    c_1 = 0.0
    cm_01 = 0.0
    cm_10 = 0.0
    cm_11 = 0.0
    if N > 1:
        q_1 = tl.load(q_ptr + lane * N + 1)
        a_01 = tl.load(a_ptr + lane * N * N + 1)
        a_10 = tl.load(a_ptr + lane * N * N + 2)
        a_11 = tl.load(a_ptr + lane * N * N + 3)
        c_1 = tl.load(c_ptr + lane * N + 1)
        cm_01 = tl.load(cm_ptr + lane * NE * N + 1)
    if NE > 1:
        cm_10 = tl.load(cm_ptr + lane * NE * N + N)
        if N > 1:
            cm_11 = tl.load(cm_ptr + lane * NE * N + N + 1)
    acc_0 = tl.zeros([BLOCK_D], dtype=tl.float64)
    acc_1 = tl.zeros([BLOCK_D], dtype=tl.float64)
    nonzeros = tl.zeros([BLOCK_M], dtype=tl.int64)
    bad = tl.zeros([BLOCK_M], dtype=tl.int32)
    kb = K * B
    tile = 0
    while tile < TILES:
        m = (blk * TILES + tile) * BLOCK_M + tl.arange(0, BLOCK_M)
        mmask = m < M
        valid = mmask[:, None] & dmask[None, :]
        row_base = rows_ptr + (g.to(tl.int64) * M + m) * kb
        t_0 = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float64) + init_0[None, :]
        t_1 = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float64) + init_1[None, :]
        k = 0
        while k < K:
            p = q_0 * t_0
            if N > 1:
                p += q_1 * t_1
            grad = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float64)
            b = 0
            while b < B:
                r = tl.load(row_base + k * B + b, mask=mmask, other=0)
                xb = tl.load(x_ptr + r[:, None] * d + cols[None, :], mask=valid, other=0.0)
                yb = tl.load(y_ptr + r, mask=mmask, other=0.0)
                z = tl.sum(p * xb, axis=1)
                finite = (z == z) & (tl.abs(z) < float("inf"))
                bad = tl.where(mmask & ~finite, 1, bad)
                dz = (1.0 / (1.0 + tl.exp(-z)) - yb) / B
                grad += dz[:, None] * xb
                b += 1
            n_0 = c_0 * grad + a_00 * t_0
            if N > 1:
                n_0 += a_01 * t_1
                t_1 = c_1 * grad + a_10 * t_0 + a_11 * t_1
            t_0 = n_0
            k += 1
        # client_final: the message, its non-zeros and its weighted sum over the tile's clients
        wk = tl.load(w_ptr + g.to(tl.int64) * M + m, mask=mmask, other=0.0)
        e_0 = ds_0[None, :] + cm_00 * t_0
        if N > 1:
            e_0 += cm_01 * t_1
        nonzeros += tl.sum((valid & (e_0 != 0)).to(tl.int64), axis=1)
        acc_0 += tl.sum(wk[:, None] * e_0, axis=0)
        if NE > 1:
            e_1 = ds_1[None, :] + cm_10 * t_0
            if N > 1:
                e_1 += cm_11 * t_1
            nonzeros += tl.sum((valid & (e_1 != 0)).to(tl.int64), axis=1)
            acc_1 += tl.sum(wk[:, None] * e_1, axis=0)
        tile += 1
    at = lane.to(tl.int64) * NBLK + blk
    out = part_ptr + at * NE * d
    tl.store(out + cols, acc_0, mask=dmask)
    if NE > 1:
        tl.store(out + d + cols, acc_1, mask=dmask)
    tl.store(nz_ptr + at, tl.sum(nonzeros, axis=0))
    tl.store(bad_ptr + at, tl.max(bad, axis=0))


@triton.jit(do_not_specialize=["t"])  # the round: one compiled kernel for every t
def server_kernel(server_ptr, new_ptr, em_ptr, fm_ptr, part_ptr, nz_ptr, bad_ptr, nz_total_ptr, first_bad_ptr,
                  t, d, NBLK, NS: tl.constexpr, NE: tl.constexpr, BLOCK_D: tl.constexpr,
                  BLOCK_B: tl.constexpr):
    """The server update of lane ``program_id(0)``: ē = Σ over the NBLK partial sums (in block order),
    S' = E S + F ē into new_ptr [P, NS, d]; adds the round's non-zeros to nz_total_ptr [P] (int64)
    and, where a client's logit or S'₀ (``params``) is not finite and first_bad_ptr [P] (int64) is
    still −1, sets it to round ``t``."""
    lane = tl.program_id(0)
    cols = tl.arange(0, BLOCK_D)
    dmask = cols < d
    s_0, s_1 = _sequences(server_ptr, lane, d, cols, dmask, NS, BLOCK_D)
    e_0 = tl.zeros([BLOCK_D], dtype=tl.float64)
    e_1 = tl.zeros([BLOCK_D], dtype=tl.float64)
    nz = tl.zeros([BLOCK_B], dtype=tl.int64)
    bad = tl.zeros([BLOCK_B], dtype=tl.int32)
    base = lane.to(tl.int64) * NBLK
    b0 = 0
    while b0 < NBLK:
        bs = b0 + tl.arange(0, BLOCK_B)
        bmask = bs < NBLK
        at = (base + bs) * NE * d
        tile = bmask[:, None] & dmask[None, :]
        e_0 += tl.sum(tl.load(part_ptr + at[:, None] + cols[None, :], mask=tile, other=0.0), axis=0)
        if NE > 1:
            e_1 += tl.sum(tl.load(part_ptr + at[:, None] + d + cols[None, :], mask=tile, other=0.0), axis=0)
        nz += tl.load(nz_ptr + base + bs, mask=bmask, other=0)
        bad = tl.maximum(bad, tl.load(bad_ptr + base + bs, mask=bmask, other=0))
        b0 += BLOCK_B
    new_0 = _combine(em_ptr + lane * NS * NS, s_0, s_1, NS) + _combine(fm_ptr + lane * NS * NE, e_0, e_1, NE)
    out = new_ptr + lane.to(tl.int64) * NS * d
    tl.store(out + cols, new_0, mask=dmask)
    if NS > 1:
        new_1 = (_combine(em_ptr + lane * NS * NS + NS, s_0, s_1, NS)
                 + _combine(fm_ptr + lane * NS * NE + NE, e_0, e_1, NE))
        tl.store(out + d + cols, new_1, mask=dmask)
    tl.store(nz_total_ptr + lane, tl.load(nz_total_ptr + lane) + tl.sum(nz, axis=0))
    finite = (new_0 == new_0) & (tl.abs(new_0) < float("inf"))
    lost = (tl.max(bad, axis=0) > 0) | (tl.sum((dmask & ~finite).to(tl.int32), axis=0) > 0)
    first = tl.load(first_bad_ptr + lane)
    tl.store(first_bad_ptr + lane, tl.where(lost & (first < 0), t, first))
