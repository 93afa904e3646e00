"""Trees with a leading client dimension, for the vectorized engine (:mod:`~.vectorized`).

One function run over a chunk of clients (:func:`_batched`: ``vmap``, or the function itself on a
lone client's slice); stacking and unstacking (:func:`_tensorize`, :func:`_expand`, :func:`_take`,
:func:`_unstack`); the masked select of padded steps (:func:`_select`); and what the engine holds
stacked: each client's rows (:func:`_as_rows`), a round's drawn rows (:class:`_StackedRows`) and a
round's messages (:class:`StackedMessages`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch.func import vmap
from torch.utils import _pytree as pytree


def _tensorize(tree, device):
    """Python numbers in a step state (``steps``) become 0-d tensors, so vmap can return them."""

    def conv(v):
        if torch.is_tensor(v) or v is None:
            return v
        if isinstance(v, bool):
            return torch.tensor(v, device=device)
        if isinstance(v, int):
            return torch.tensor(v, dtype=torch.int64, device=device)
        if isinstance(v, float):
            return torch.tensor(v, dtype=torch.float64, device=device)
        raise TypeError(f"vectorized engine: cannot stack a step-state leaf of type {type(v).__name__}")

    return pytree.tree_map(conv, tree)


def _as_rows(clients: Sequence[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray, list[np.ndarray]]:
    """Each client's rows as an int64 array, with clients given the same array object (the
    ``shared`` partition: :func:`fedbench.data.partition.client_indices`) sharing one converted
    array, so m clients of n rows cost O(n), not O(m·n).

    Returns:
        (rows per client [m], slot [m] int64: the index of client k's array in ``distinct``,
        distinct: the u ≤ m distinct arrays).
    """
    seen: dict[int, tuple] = {}
    out, slot, distinct = [], np.empty(len(clients), dtype=np.int64), []
    for k, c in enumerate(clients):
        hit = seen.get(id(c))
        if hit is None or hit[0] is not c:
            hit = seen[id(c)] = (c, np.asarray(c, dtype=np.int64), len(distinct))
            distinct.append(hit[1])
        out.append(hit[1])
        slot[k] = hit[2]
    return out, slot, distinct


def _batched(fn, g: int, device):
    """``vmap(fn)`` for a chunk of g clients; for g = 1, ``fn`` called directly on the client's
    slice (leading dimension dropped from every tensor argument, restored on every result).

    Same function, same values: a one-client vmap only adds per-op wrapper overhead and, inside
    ``fn``, hides the kernels that have no batching rule (:attr:`fedbench.models.Model.batch_clients_on_cpu`).
    """
    if g > 1:
        return vmap(fn)

    def one(*args):
        out = fn(*pytree.tree_map(lambda v: v[0] if torch.is_tensor(v) else v, args))
        return pytree.tree_map(lambda v: v.unsqueeze(0) if torch.is_tensor(v) else v, _tensorize(out, device))

    return one


def _expand(tree, g: int):
    """Broadcast every leaf to a leading client dimension of size g (a stride-0 view, no copy)."""
    return pytree.tree_map(lambda v: v.unsqueeze(0).expand(g, *v.shape), tree)


def _take(tree, j):
    """Client j's slice of a stacked tree (nested dicts of tensors; for an int j views, no copies);
    j may also be an index tensor (the slices of several clients, stacked)."""
    if isinstance(tree, dict):
        return {k: _take(v, j) for k, v in tree.items()}
    if torch.is_tensor(tree):
        return tree[j]
    return pytree.tree_map(lambda v: v[j], tree)


class _StackedRows(Mapping):
    """``{client id: its [K, B] rows}`` for a round's clients held as one array ``rows[G, K, B]``
    (``ids`` ascending): what :meth:`~.vectorized.VectorizedClients._round_batches` draws with replacement.
    :meth:`take` lays out a chunk's rows without a Python loop over its clients."""

    def __init__(self, ids: np.ndarray, rows: np.ndarray):
        self.ids, self.rows = ids, rows

    def __getitem__(self, k):
        i = int(np.searchsorted(self.ids, k))
        if i >= len(self.ids) or self.ids[i] != k:
            raise KeyError(k)
        return self.rows[i]

    def __iter__(self):
        return iter(self.ids.tolist())

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, members) -> np.ndarray:
        """The members' rows, ``[G, K, B]``."""
        return self.rows[np.searchsorted(self.ids, np.asarray(members, dtype=np.int64))]


class StackedMessages(Sequence):
    """One cell's messages of a round, in ascending client order, held as the chunks' stacked
    messages: ``parts`` is a list of (positions of the chunk's clients among the cell's, the
    chunk's message tree with leaves ``[G, ...]``).

    A list of per-client message dicts for code that reads them one by one (built on first
    access); :meth:`stacked` gives an entry for all clients at once, ``[P, ...]`` per leaf, which
    :func:`fedbench.tree.messages_weighted_mean` uses (no per-client tensors: a round of thousands
    of clients costs a few tensor operations); :attr:`entries` the keys every message has."""

    def __init__(self, parts: list, n: int):
        self.parts, self.n, self._list = parts, n, None
        self.entries = frozenset(parts[0][1]) if parts else frozenset()

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if self._list is None:
            out: list = [None] * self.n
            for pos, msg in self.parts:
                for p, one in zip(pos.tolist(), _unstack(msg, len(pos))):
                    out[p] = one
            self._list = out
        return self._list[i]

    def stacked(self, entry: str):
        """Entry ``entry`` of every message, stacked in client order (a tree of ``[P, ...]``)."""
        pos = np.concatenate([p for p, _ in self.parts])
        order = None if np.all(pos[1:] > pos[:-1]) else torch.as_tensor(np.argsort(pos))
        trees = [m[entry] for _, m in self.parts]
        if all(isinstance(t, dict) and all(torch.is_tensor(v) for v in t.values()) for t in trees):  # the usual
            out = {k: torch.cat([t[k] for t in trees]) if len(trees) > 1 else trees[0][k] for k in trees[0]}
            return out if order is None else {k: v[order.to(v.device)] for k, v in out.items()}
        out = pytree.tree_map(lambda *leaves: torch.cat(leaves) if len(leaves) > 1 else leaves[0], *trees)
        return out if order is None else pytree.tree_map(lambda v: v[order.to(v.device)], out)


def _unstack(tree, g: int) -> list:
    """``[_take(tree, j) for j in range(g)]`` (views, no copies), one ``unbind`` per leaf: a
    round's messages of thousands of clients cost microseconds each, not a tree walk each."""
    if isinstance(tree, dict):
        keys, parts = list(tree), [_unstack(v, g) for v in tree.values()]
        return [dict(zip(keys, vals)) for vals in zip(*parts)] if keys else [{} for _ in range(g)]
    if torch.is_tensor(tree):
        return list(tree.unbind(0))
    return [_take(tree, j) for j in range(g)]


def _bcast(mask: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return mask.view(mask.shape[0], *([1] * (v.dim() - 1)))


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when a and b are views of the same memory with the same layout (hence equal)."""
    return a is b or (a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()
                      and a.dtype == b.dtype)


def _select(mask: torch.Tensor, new, old):
    """``torch.where(mask[g], new, old)`` leaf-wise; leaves the step did not touch are kept."""
    def sel(n, o):
        if _same(n, o):
            return o
        return torch.where(_bcast(mask, n), n, o)

    return pytree.tree_map(sel, new, old)
