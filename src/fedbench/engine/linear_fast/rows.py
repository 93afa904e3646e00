"""The training inputs as rows, the layouts the compiled kernels read.

Inputs are read as sparse rows (CSR; a9a: 14 of 123 features are non-zero) when at most
:data:`SPARSE_DENSITY` of the entries are non-zero (:func:`sparse_rows`), else dense. The whole-round
kernels read rows as CSR only: dense rows (epsilon) as CSR rows that store every entry
(:func:`dense_rows`); :func:`csr_rows` picks. :func:`_copy_row` copies a CSR row's non-zeros into a
kernel's buffer.
"""

from __future__ import annotations

import numba
import numpy as np

#: Inputs are read as sparse rows when at most this fraction of their entries is non-zero.
SPARSE_DENSITY = 0.5


def sparse_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(indptr [N+1] int64, indices [nnz] int32, values [nnz]) of the rows of ``x`` [N, D] (CSR),
    or None when more than :data:`SPARSE_DENSITY` of the entries are non-zero."""
    x = x.reshape(len(x), -1)
    nz = x != 0
    if nz.mean() > SPARSE_DENSITY if x.size else True:
        return None
    counts = nz.sum(axis=1)
    indptr = np.zeros(len(x) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    rows, cols = np.nonzero(nz)
    return indptr, cols.astype(np.int32), np.ascontiguousarray(x[rows, cols])


def dense_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of a dense ``x`` [N, D] in the CSR layout the whole-round kernels read: indptr
    [N+1] int64 = 0, D, 2D, …; indices [N·D] the columns 0..D−1 of every row, int16 where D ≤
    32,767 (else int32); values: ``x``'s own memory (no copy when ``x`` is C-contiguous). Zeros are
    stored like any entry: a zero adds 0 to the logits and its coordinate's gradient is 0 · ∂ℓ/∂z,
    what the dense generic path computes. Costs N·D·2 bytes beside ``x`` (epsilon, 400,000 × 2,000:
    1.6 GB beside its 6.4 GB of float64 rows)."""
    x = np.ascontiguousarray(x.reshape(len(x), -1))
    n, d = x.shape
    index_dtype = np.int16 if d <= np.iinfo(np.int16).max else np.int32
    indptr = np.arange(n + 1, dtype=np.int64) * d
    indices = np.empty((n, d), dtype=index_dtype)
    indices[:] = np.arange(d, dtype=index_dtype)
    return indptr, indices.reshape(-1), x.reshape(-1)


def csr_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of ``x`` [N, D] as CSR for the compiled kernels: :func:`sparse_rows` where at most
    :data:`SPARSE_DENSITY` of the entries are non-zero, else :func:`dense_rows`."""
    csr = sparse_rows(x)
    return dense_rows(x) if csr is None else csr


@numba.njit(cache=True, inline="always")
def _copy_row(r, indptr, indices, values, buf_i, buf_v, cnt, j):
    """CSR row r's non-zeros copied into line j of ``buf_i``/``buf_v``, their count into ``cnt[j]``."""
    start = indptr[r]
    m = indptr[r + 1] - start
    cnt[j] = m
    for u in range(m):
        buf_i[j, u] = indices[start + u]
        buf_v[j, u] = values[start + u]
