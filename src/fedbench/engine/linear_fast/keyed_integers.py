"""Keyed uniform integers for many keys at once, bit for bit what :mod:`fedbench.rng` gives one key.

:func:`fedbench.engine.clients.batches.local_batches` with ``replacement=True`` draws a client's rows as
``generator(seed, t, k, "batches").integers(0, n, size=(K, B))``: a fresh
:class:`numpy.random.SeedSequence` and :class:`numpy.random.PCG64` per (seed, round, client), about
17 µs of Python and numpy each. In FedAc's regime (M = 256..8,192 workers, K = 1 local step per
round, 4,096 rounds, 39 stacked cells) that is up to 1.3 M keys per job and round counts, minutes
per job. :func:`uniform_rows` computes the same numbers for a whole array of keys in one compiled
loop (numba), following numpy's published algorithms (numpy is BSD-licensed; these are
re-implementations, not copies):

- ``SeedSequence(entropy=[seed, round, client + 1, crc32(purpose)])`` with the default pool of four
  32-bit words: the entropy words are hashed into the pool (``hashmix`` with INIT_A / MULT_A), each
  word mixed into every other (``mix`` with MIX_MULT_L / MIX_MULT_R), and ``generate_state(4, uint64)``
  reads the pool out through a second hash (INIT_B / MULT_B), eight 32-bit words, little-endian pairs;
- ``PCG64`` seeded from those: state = words 0, 1 (high, low), increment = words 2, 3, through
  ``pcg_setseq_128_srandom_r`` (state 0, inc = 2·seq + 1, step, add the initial state, step);
  each 64-bit output steps the 128-bit LCG (multiplier 2549297995355413924 · 2⁶⁴ +
  4865540595714422341) and returns the XSL-RR output; 32-bit outputs take the low then the high
  half of one 64-bit output;
- ``Generator.integers(0, n, dtype=int64)`` for n ≤ 2³²: Lemire's multiply-shift on 32-bit outputs
  with rejection below (2³² − n) mod n (no draws at all when n = 1).

The equality is tested against numpy itself over many keys and sizes
(``tests/engine/linear_fast/test_keyed_integers.py``); keys with any of the four entropy values ≥ 2³² (which
numpy spreads over more words) are not handled here: :func:`supported` says so and the caller
draws them one by one.
"""

from __future__ import annotations

import numba
import numpy as np

from fedbench.rng import _purpose_id

_M32 = np.uint64(0xFFFFFFFF)
_INIT_A = np.uint64(0x43B0D7E5)
_MULT_A = np.uint64(0x931E8875)
_INIT_B = np.uint64(0x8B51F9DD)
_MULT_B = np.uint64(0x58F38DED)
_MIX_L = np.uint64(0xCA01F9DD)
_MIX_R = np.uint64(0x4973F715)
_MUL_HI = np.uint64(2549297995355413924)
_MUL_LO = np.uint64(4865540595714422341)
_S16 = np.uint64(16)
_S32 = np.uint64(32)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)


@numba.njit(cache=True, inline="always")
def _mulhi(a, b):
    """The high 64 bits of the 128-bit product of two uint64."""
    a_lo, a_hi = a & _M32, a >> _S32
    b_lo, b_hi = b & _M32, b >> _S32
    p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    carry = ((p0 >> _S32) + (p1 & _M32) + (p2 & _M32)) >> _S32
    return p3 + (p1 >> _S32) + (p2 >> _S32) + carry


@numba.njit(cache=True, inline="always")
def _step(hi, lo, inc_hi, inc_lo):
    """state ← state · MULT + inc (mod 2¹²⁸), as (high, low)."""
    new_lo = lo * _MUL_LO
    new_hi = _mulhi(lo, _MUL_LO) + hi * _MUL_LO + lo * _MUL_HI
    out_lo = new_lo + inc_lo
    carry = _ONE if out_lo < inc_lo else _ZERO
    return new_hi + inc_hi + carry, out_lo


@numba.njit(cache=True, inline="always")
def _output(hi, lo):
    """PCG's XSL-RR output of a 128-bit state."""
    value = hi ^ lo
    rot = hi >> np.uint64(58)
    return (value >> rot) | (value << ((np.uint64(64) - rot) & np.uint64(63)))


@numba.njit(cache=True, inline="always")
def _hashmix(value, hash_const, mult):
    """SeedSequence's hashmix: (mixed value, next hash constant)."""
    value = (value ^ hash_const) & _M32
    hash_const = (hash_const * mult) & _M32
    value = (value * hash_const) & _M32
    value ^= value >> _S16
    return value, hash_const


@numba.njit(cache=True, inline="always")
def _next32(hi, lo, inc_hi, inc_lo, have_half, half):
    """numpy's buffered 32-bit draw: the high half of the last 64-bit output if one is waiting,
    else a fresh output's low half. Returns (r, hi, lo, have_half, half)."""
    if have_half:
        return half, hi, lo, False, half
    hi, lo = _step(hi, lo, inc_hi, inc_lo)
    x = _output(hi, lo)
    return x & _M32, hi, lo, True, x >> _S32


@numba.njit(cache=True, inline="always")
def _mix(x, y):
    result = ((_MIX_L * x) - (_MIX_R * y)) & _M32
    result ^= result >> _S16
    return result


@numba.njit(cache=True)
def _seeded(entropy, i, pool, words):
    """The PCG64 state (hi, lo, inc_hi, inc_lo) seeded from SeedSequence(entropy[i]) (4 words)."""
    hash_const = _INIT_A
    for w in range(4):
        pool[w], hash_const = _hashmix(np.uint64(entropy[i, w]), hash_const, _MULT_A)
    for src in range(4):
        for dst in range(4):
            if src != dst:
                h, hash_const = _hashmix(pool[src], hash_const, _MULT_A)
                pool[dst] = _mix(pool[dst], h)
    hash_b = _INIT_B
    for w in range(8):
        words[w], hash_b = _hashmix(pool[w % 4], hash_b, _MULT_B)
    seed_hi = words[0] | (words[1] << _S32)
    seed_lo = words[2] | (words[3] << _S32)
    seq_hi = words[4] | (words[5] << _S32)
    seq_lo = words[6] | (words[7] << _S32)
    inc_hi = (seq_hi << _ONE) | (seq_lo >> np.uint64(63))
    inc_lo = (seq_lo << _ONE) | _ONE
    hi, lo = _step(_ZERO, _ZERO, inc_hi, inc_lo)
    lo2 = lo + seed_lo
    carry = _ONE if lo2 < seed_lo else _ZERO
    hi, lo = _step(hi + seed_hi + carry, lo2, inc_hi, inc_lo)
    return hi, lo, inc_hi, inc_lo


def threshold_of(n: int):
    """Lemire's rejection threshold (2³² − n) mod n of ``integers(0, n)`` (0 for n = 1)."""
    return ((np.uint64(1) << _S32) - np.uint64(n)) % np.uint64(n) if n > 1 else _ZERO


_threshold = numba.njit(cache=True, inline="always")(threshold_of)


@numba.njit(cache=True, inline="always")
def keyed_integers_into(entropy, i, n, threshold, out_row, pool, words):
    """out_row[:] = ``integers(0, n, size=len(out_row))`` of the generator keyed by entropy[i]
    (4 words; ``threshold`` = :func:`threshold_of` (n); ``pool`` [4], ``words`` [8] uint64 scratch)."""
    hi, lo, inc_hi, inc_lo = _seeded(entropy, i, pool, words)
    if n == 1:
        for j in range(len(out_row)):
            out_row[j] = 0
        return
    rng_excl = np.uint64(n)
    have_half = False
    half = _ZERO
    for j in range(len(out_row)):
        while True:
            r, hi, lo, have_half, half = _next32(hi, lo, inc_hi, inc_lo, have_half, half)
            m = r * rng_excl
            if (m & _M32) >= threshold:
                break
        out_row[j] = np.int64(m >> _S32)


@numba.njit(cache=True)
def _fill(entropy, n, out):
    """out[i] = integers(0, n, size=out.shape[1:]) of the generator keyed by entropy[i] (4 words)."""
    threshold = _threshold(n)
    pool = np.empty(4, dtype=np.uint64)
    words = np.empty(8, dtype=np.uint64)
    for i in range(entropy.shape[0]):
        keyed_integers_into(entropy, i, n, threshold, out[i], pool, words)


@numba.njit(cache=True, parallel=True)
def _fill_parallel(entropy, n, out):
    """:func:`_fill` over the keys in chunks of 4,096, the chunks on numba's threads (each key's
    numbers depend on its key alone: the same bits as :func:`_fill`)."""
    threshold = _threshold(n)
    keys = entropy.shape[0]
    chunk = 4096
    for c in numba.prange((keys + chunk - 1) // chunk):
        pool = np.empty(4, dtype=np.uint64)
        words = np.empty(8, dtype=np.uint64)
        for i in range(c * chunk, min(keys, (c + 1) * chunk)):
            keyed_integers_into(entropy, i, n, threshold, out[i], pool, words)


@numba.njit(cache=True)
def _fill_permutations(entropy, n, out):
    """out[i, c] = the c-th ``permutation(n)`` drawn in a row from the generator keyed by
    entropy[i]: numpy's Fisher–Yates shuffle of arange(n), from the last position down, each
    position's partner drawn by ``random_interval`` (masked 32-bit draws, rejected above the bound)."""
    keys, count = out.shape[0], out.shape[1]
    pool = np.empty(4, dtype=np.uint64)
    words = np.empty(8, dtype=np.uint64)
    for i in range(keys):
        hi, lo, inc_hi, inc_lo = _seeded(entropy, i, pool, words)
        have_half = False
        half = _ZERO
        for c in range(count):
            perm = out[i, c]
            for v in range(n):
                perm[v] = v
            for pos in range(n - 1, 0, -1):
                bound = np.uint64(pos)
                mask = bound
                mask |= mask >> np.uint64(1)
                mask |= mask >> np.uint64(2)
                mask |= mask >> np.uint64(4)
                mask |= mask >> np.uint64(8)
                mask |= mask >> np.uint64(16)
                while True:
                    r, hi, lo, have_half, half = _next32(hi, lo, inc_hi, inc_lo, have_half, half)
                    value = r & mask
                    if value <= bound:
                        break
                other = np.int64(value)
                tmp = perm[other]
                perm[other] = perm[pos]
                perm[pos] = tmp


def supported(seeds, round: int, clients, num_samples: int) -> bool:
    """Whether :func:`uniform_rows` handles these keys (every entropy word < 2³², 1 ≤ n ≤ 2³²)."""
    seeds, clients = np.asarray(seeds), np.asarray(clients)
    return (1 <= num_samples <= 1 << 32 and 0 <= round < 1 << 32 and bool(np.all(seeds >= 0))
            and bool(np.all(seeds < 1 << 32)) and bool(np.all(clients >= -1)) and bool(np.all(clients + 1 < 1 << 32)))


def _entropy(seeds, round, clients, purpose: str) -> np.ndarray:
    """[keys, 4] uint64: each key's (seed, round, client + 1, crc32(purpose)); ``round`` one value
    or one per key."""
    entropy = np.empty((len(clients), 4), dtype=np.uint64)
    entropy[:, 0] = seeds
    entropy[:, 1] = round
    entropy[:, 2] = clients + 1
    entropy[:, 3] = _purpose_id(purpose)
    return entropy


def permutations(seeds, round: int, clients, num_samples: int, count: int, purpose: str = "batches") -> np.ndarray:
    """``[[g.permutation(num_samples) for _ in range(count)] for g = generator(seeds[i], round,
    clients[i], purpose)]``: an int64 array ``[len(clients), count, num_samples]``, bit for bit.

    Raises:
        ValueError: keys or ``num_samples`` outside :func:`supported`.
    """
    seeds = np.broadcast_to(np.asarray(seeds, dtype=np.int64), np.shape(clients))
    clients = np.asarray(clients, dtype=np.int64)
    if not supported(seeds, round, clients, num_samples):
        raise ValueError("permutations: keys need seed, round, client + 1 < 2^32 and 1 <= num_samples <= 2^32")
    out = np.empty((len(clients), int(count), int(num_samples)), dtype=np.int64)
    _fill_permutations(_entropy(seeds, round, clients, purpose), int(num_samples), out)
    return out


def uniform_rows(seeds, round: int, clients, num_samples: int, shape: tuple, purpose: str = "batches") -> np.ndarray:
    """``[generator(seeds[i], round, clients[i], purpose).integers(0, num_samples, size=shape,
    dtype=np.int64) for i]`` stacked: an int64 array ``[len(clients), *shape]``, bit for bit.

    Raises:
        ValueError: keys or ``num_samples`` outside :func:`supported`.
    """
    seeds = np.broadcast_to(np.asarray(seeds, dtype=np.int64), np.shape(clients))
    clients = np.asarray(clients, dtype=np.int64)
    if not supported(seeds, round, clients, num_samples):
        raise ValueError("uniform_rows: keys need seed, round, client + 1 < 2^32 and 1 <= num_samples <= 2^32")
    out = np.empty((len(clients), int(np.prod(shape))), dtype=np.int64)
    _fill(_entropy(seeds, round, clients, purpose), int(num_samples), out)
    return out.reshape(len(clients), *shape)


def uniform_rows_rounds(seeds, rounds: np.ndarray, clients, num_samples: int, per_key: int,
                        purpose: str = "batches") -> np.ndarray:
    """:func:`uniform_rows` of the same keys for several rounds at once, on all of numba's threads:
    an int64 array ``[len(rounds), len(clients), per_key]`` whose ``[r]`` is
    ``uniform_rows(seeds, rounds[r], clients, num_samples, (per_key,))``, bit for bit (the CUDA
    tensor path draws a segment of rounds ahead of the device with it).

    Raises:
        ValueError: keys or ``num_samples`` outside :func:`supported`.
    """
    seeds = np.broadcast_to(np.asarray(seeds, dtype=np.int64), np.shape(clients))
    clients = np.asarray(clients, dtype=np.int64)
    rounds = np.asarray(rounds, dtype=np.int64)
    if len(rounds) and not (supported(seeds, int(rounds.min()), clients, num_samples)
                            and supported(seeds, int(rounds.max()), clients, num_samples)):
        raise ValueError("uniform_rows_rounds: keys need seed, round, client + 1 < 2^32 and 1 <= num_samples <= 2^32")
    keys = len(rounds) * len(clients)  # round-major: key r·len(clients) + i is client i in rounds[r]
    entropy = _entropy(np.tile(seeds, len(rounds)), np.repeat(rounds, len(clients)), np.tile(clients, len(rounds)),
                       purpose)
    out = np.empty((keys, int(per_key)), dtype=np.int64)
    _fill_parallel(entropy, int(num_samples), out)
    return out.reshape(len(rounds), len(clients), int(per_key))
