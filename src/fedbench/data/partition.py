"""Partitioners: split a labelled Dataset's train samples among K clients.

A partition is a :class:`pyarrow.Table` with one row per (client, sample):

=============  =======  ================================================================
column         type     meaning
=============  =======  ================================================================
client_id      int64    0..K-1; every client owns at least one train sample (``shared``: -1, every client)
sample_index   int64    row index into that split's arrays (``x_train`` or ``x_test``)
split          string   ``"train"``, or ``"test"`` (only the ``natural`` scheme lists test rows)
=============  =======  ================================================================

Rows are ordered by split (train first), client_id, sample_index. Every sample appears at most
once; ``iid``, ``dirichlet`` and ``shards`` use every train sample exactly once, ``pachinko`` when
num_clients · samples_per_client equals the number of train samples (CIFAR-100: 500 · 100). Outside the
``natural`` scheme the clients are evaluated on the dataset's global test split. The table's
schema metadata (key ``fedbench``) records the dataset, scheme, resolved parameters, seed and K.

The ``shared`` scheme is the exception to "at most once": every client holds every train row. Its
table lists each train row once, with client_id :data:`SHARED_CLIENT` (-1, "every client"), and K
comes from the metadata, so the file and :func:`client_indices` cost O(n), not O(K·n).

A partition config is ``{"scheme": name, **params}``; :data:`SCHEMES` lists each scheme's
parameters and defaults. All randomness comes from
``fedbench.rng.generator(seed, 0, -1, "partition")``, so (dataset, config, seed) fixes
the table.

Schemes
-------
``iid``
    Shuffle, then cut into K clients of sizes from :func:`client_sizes` (equal for sigma 0,
    lognormal otherwise; FedDyn ``unbalance_iid``).
``dirichlet``, ``form: client_prior`` (default)
    Acar et al. 2021 (FedDyn), reference code ``utils_dataset.py`` (``rule='Drichlet'``). Client
    sizes n_k from :func:`client_sizes`; each client's class prior p_k ~ Dir(α·1_C). Until all
    clients are full: pick a client uniformly among those not yet full, draw a class c ~ p_k
    restricted to the classes that still have samples (renormalised), and give it one remaining
    sample of class c. The reference code redraws on a full client or an exhausted class; drawing
    from the restricted distributions directly is the same law, without the loops. If all of a
    client's prior mass sits on exhausted classes (possible for tiny α) we draw uniformly among
    the remaining classes; the reference code would loop forever there.
``dirichlet``, ``form: class_split``
    Hsu et al. 2019, Yurochkin et al. 2019, as in NIID-Bench ``noniid-labeldir``: for each class c,
    q_c ~ Dir(α·1_K) over the clients and class c's (shuffled) samples are cut at
    ⌊n_c · cumsum(q_c)⌋. With sigma > 0, client k's share of class c is ∝ q_{c,k}·s_k with
    s_k ~ LogNormal(0, sigma). The whole draw is repeated until every client has at least
    ``min_size`` train samples (NIID-Bench uses 10; our default 1 only forbids empty clients), at
    most 1000 times. NIID-Bench also zeroes q_{c,k} for clients already above n/K; we do not.
``shards``
    McMahan et al. 2017 (FedAvg, "pathological non-IID"): sort by label, cut into K·k shards, give
    each client k = ``shards_per_client`` random shards. Departure: McMahan cuts the sorted data
    into equal shards, so a shard that straddles a class boundary holds two labels. We cut each
    class separately (class c gets m_c shards, apportioned by the D'Hondt rule so shard sizes
    are as equal as possible, m_c >= 1), so every shard has one label and every client has at
    most k classes. Shard sizes differ by a few samples when class sizes do; K·k need not divide n.
``pachinko``
    Pachinko Allocation (Li & McCallum 2006) as TFF built Fed-CIFAR100 (Reddi et al. 2021, "Adaptive
    Federated Optimization", ICLR 2021, App. C; TFF's ``tff.simulation.datasets.cifar100``; used by
    Chen et al., "Elastic Aggregation for Federated Optimization", CVPR 2023). Needs coarse labels
    (``Dataset.y_coarse_train``, e.g. CIFAR-100's 20 super-classes); each fine label must belong to
    one coarse label. For each client k in turn: p_k ~ Dir(coarse_alpha·1) over the coarse labels
    (default 0.1) and, for every coarse label c, p_{k,c} ~ Dir(fine_alpha·1) over c's fine labels
    (default 10); then ``samples_per_client`` times (default 100): draw c ~ p_k, f ~ p_{k,c} and take
    one remaining sample of fine label f, uniformly, without replacement. A fine label whose samples
    have run out is removed and the multinomial renormalised (for this and all later clients); a
    coarse label whose fine labels have all run out likewise. If all of a client's mass sits on
    exhausted labels (possible for tiny α) we draw uniformly among the remaining ones. Needs
    num_clients · samples_per_client <= n; equality (the default on CIFAR-100) uses every sample
    exactly once. TFF also partitioned the test split (100 clients); like the other schemes this
    one splits the train split only, and clients are evaluated on the global test split.
``natural``
    The dataset's own clients (``client_train`` / ``client_test``), renumbered 0..K-1 in
    increasing order of the original id. Each client's test samples are listed too (split
    ``"test"``). ``num_clients`` (default null = all) keeps a random subset of K clients (drawn
    with the seed), renumbered in order of the original id. Clients with no train sample are
    dropped, and with them their test samples.
``shared``
    Every one of the K = ``num_clients`` clients holds the whole train split (no randomness). With
    ``local.replacement: true`` this is the stochastic oracle of Yuan & Ma, "Federated Accelerated
    Stochastic Gradient Descent", NeurIPS 2020, §4 / App. E: M homogeneous workers, each gradient
    query drawn uniformly with replacement from the whole training set. K may exceed n. The
    table holds n rows (client_id -1) whatever K is; :func:`client_indices` returns the same
    array object for every client.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from fedbench.data.store import Dataset
from fedbench.files import atomic_write
from fedbench.params import resolve_params
from fedbench.rng import generator

SCHEMES: dict[str, dict] = {
    "iid": {"num_clients": 10, "sigma": 0.0, "min_size": 1},
    "dirichlet": {"num_clients": 10, "alpha": 0.5, "form": "client_prior", "sigma": 0.0, "min_size": 1},
    "shards": {"num_clients": 10, "shards_per_client": 2},
    "natural": {"num_clients": None},
    "pachinko": {"num_clients": 500, "samples_per_client": 100, "coarse_alpha": 0.1, "fine_alpha": 10.0},
    "shared": {"num_clients": 10},
}
#: client_id of the rows of a ``shared`` partition: each row belongs to every client.
SHARED_CLIENT = -1
DIRICHLET_FORMS = ("client_prior", "class_split")
MAX_TRIES = 1000  # redraws allowed to reach min_size (class_split) or non-empty lognormal sizes

SCHEMA = pa.schema([("client_id", pa.int64()), ("sample_index", pa.int64()), ("split", pa.string())])


# --------------------------------------------------------------------------- config checking


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and np.isfinite(v)


def resolve_partition_params(cfg: dict) -> dict:
    """A partition config's parameters with defaults filled in (``scheme`` excluded).

    Args:
        cfg: ``{"scheme": name, **params}``.

    Returns:
        A new dict in the key order of :data:`SCHEMES`.

    Raises:
        ValueError: ``scheme`` missing or unknown, a parameter the scheme does not take, or a
            value out of range; the message names the key and the fix.
    """
    scheme, p = resolve_params(cfg, "scheme", SCHEMES, "partition")

    def bad(key, want):
        raise ValueError(f"partition scheme {scheme!r}: {key} must be {want}, got {p[key]!r}")

    if "num_clients" in p:
        if scheme == "natural":
            if p["num_clients"] is not None and (not _is_int(p["num_clients"]) or p["num_clients"] < 1):
                bad("num_clients", "null (all natural clients) or an integer >= 1")
        elif not _is_int(p["num_clients"]) or p["num_clients"] < 1:
            bad("num_clients", "an integer >= 1")
    if "sigma" in p and (not _is_num(p["sigma"]) or p["sigma"] < 0):
        bad("sigma", "a number >= 0 (0 = equal client sizes)")
    for key in ("alpha", "coarse_alpha", "fine_alpha"):
        if key in p and (not _is_num(p[key]) or p[key] <= 0):
            bad(key, "a number > 0 (Dirichlet concentration; small = skewed labels, e.g. 0.3)")
    if "samples_per_client" in p and (not _is_int(p["samples_per_client"]) or p["samples_per_client"] < 1):
        bad("samples_per_client", "an integer >= 1 (Pachinko: 100)")
    if "form" in p and p["form"] not in DIRICHLET_FORMS:
        bad("form", f"one of {', '.join(DIRICHLET_FORMS)}")
    if "min_size" in p and (not _is_int(p["min_size"]) or p["min_size"] < 1):
        bad("min_size", "an integer >= 1")
    if "shards_per_client" in p and (not _is_int(p["shards_per_client"]) or p["shards_per_client"] < 1):
        bad("shards_per_client", "an integer >= 1")
    return p


#: Largest log-normal ``sigma`` of the client sizes (iid, dirichlet). FedDyn's unbalanced setting
#: uses 0.3; at sigma = 5 one of 10 clients already draws most of a 50,000-sample set, and beyond
#: it the draws leave clients empty so often that :func:`client_sizes` gives up after
#: :data:`MAX_TRIES` (sigma 10: 1,437 digits over 10 clients; sigma 3: 60,000 over 100).
MAX_SIGMA = 5.0


def size_problem(scheme: str, p: dict, n_train: int | None, natural: int | None = None,
                 classes: int | None = None) -> tuple[str, str] | None:
    """What a partition with the resolved parameters ``p`` asks of the data that cannot be had,
    checkable before the data exist (the partitioner raises the same later).

    Args:
        scheme: the partition scheme; p: its resolved parameters (:func:`resolve_partition_params`).
        n_train: at most how many train samples the dataset has.
        natural: at most how many natural clients it has.
        classes: at least how many classes its train split holds (``shards``: each shard holds one
            class, so K·k shards must cover them).

    Returns:
        ``(parameter, message)``, the message naming the values and the fix, or None. ``None``
        counts are unknown and not checked.
    """
    K = p.get("num_clients")
    if scheme == "shards" and classes is not None and K * p["shards_per_client"] < classes:
        k, need = p["shards_per_client"], -(-classes // K)
        return "shards_per_client", (f"num_clients·shards_per_client = {K}·{k} = {K * k} shards cannot cover the "
                                     f"{classes} classes of the dataset (each shard holds one class): raise "
                                     f"shards_per_client to at least {need}, or num_clients, so that "
                                     f"num_clients·shards_per_client >= {classes}")
    if scheme == "natural":
        if K is not None and natural is not None and K > natural:
            return "num_clients", (f"num_clients={K} but the dataset has at most {natural} natural clients: lower "
                                   f"num_clients to at most {natural} or set it to null (all clients)")
        return None
    if n_train is None or scheme == "shared":  # shared: every client holds all rows, K > n is fine
        return None
    if K > n_train:
        return "num_clients", (f"num_clients={K} exceeds the {n_train} train samples of the dataset: lower "
                               f"num_clients to at most {n_train}")
    if "min_size" in p and K * p["min_size"] > n_train:
        return "min_size", (f"min_size={p['min_size']} with num_clients={K} needs {K * p['min_size']} train samples "
                            f"but the dataset has {n_train}: lower min_size to at most {n_train // K} or lower "
                            f"num_clients")
    if scheme == "shards" and K * p["shards_per_client"] > n_train:
        k = p["shards_per_client"]
        return "shards_per_client", (f"num_clients·shards_per_client = {K}·{k} = {K * k} shards exceed the {n_train} "
                                     f"train samples (a shard holds at least one): lower shards_per_client to at "
                                     f"most {n_train // K} or lower num_clients")
    if scheme == "pachinko" and K * p["samples_per_client"] > n_train:
        m = p["samples_per_client"]
        return "samples_per_client", (f"num_clients·samples_per_client = {K}·{m} = {K * m} exceeds the {n_train} "
                                      f"train samples: lower samples_per_client to at most {n_train // K} or lower "
                                      f"num_clients")
    return None


# --------------------------------------------------------------------------- client sizes


def client_sizes(n: int, num_clients: int, sigma: float, rng: np.random.Generator, min_size: int = 1) -> np.ndarray:
    """Client sizes that sum to n (FedDyn ``utils_dataset.py``, ``unbalanced_sgm``).

    sigma = 0: ⌊n/K⌋ each, the remainder n mod K spread one by one over the first clients
    (FedDyn drops the remainder; we keep every sample). sigma > 0: w_k ~ LogNormal(log(n/K), sigma),
    n_k = ⌊n · w_k / Σw⌋, the rounding remainder added to client 0 (as FedDyn). Draws leaving a
    client below ``min_size`` are redrawn, at most 1000 times.

    Returns:
        (K,) int64 sizes, each >= min_size, summing to n.

    Raises:
        ValueError: num_clients > n, num_clients · min_size > n, or no draw reached min_size.
    """
    if num_clients > n:
        raise ValueError(f"num_clients={num_clients} exceeds the {n} train samples: lower num_clients to at most {n}")
    if num_clients * min_size > n:
        raise ValueError(
            f"min_size={min_size} with num_clients={num_clients} needs {num_clients * min_size} samples "
            f"but there are {n}: "
            f"lower min_size or num_clients"
        )
    if sigma == 0:
        sizes = np.full(num_clients, n // num_clients, dtype=np.int64)
        sizes[: n - int(sizes.sum())] += 1
        return sizes
    for _ in range(MAX_TRIES):
        w = rng.lognormal(mean=np.log(n / num_clients), sigma=sigma, size=num_clients)
        sizes = np.floor(w / w.sum() * n).astype(np.int64)
        sizes[0] += n - int(sizes.sum())
        if sizes.min() >= min_size:
            return sizes
    raise ValueError(
        f"sigma={sigma}: in {MAX_TRIES} lognormal draws some client always got fewer than min_size={min_size} "
        f"of the {n} samples: lower sigma or num_clients"
    )


# --------------------------------------------------------------------------- schemes


def _dirichlet(rng: np.random.Generator, alpha: float, dim: int, size: int | None = None) -> np.ndarray:
    """Dir(α·1) draws; a degenerate row (all zero or NaN, possible for tiny α) becomes one-hot."""
    q = rng.dirichlet(np.full(dim, float(alpha)), size=size)
    q2 = np.atleast_2d(q)
    bad = ~np.isfinite(q2).all(axis=1) | (q2.sum(axis=1) <= 0)
    if bad.any():
        q2 = q2.copy()
        q2[bad] = np.eye(dim)[rng.integers(0, dim, int(bad.sum()))]
    return q2 if size is not None else q2[0]


def _split_by_sizes(order: np.ndarray, sizes: np.ndarray) -> list[np.ndarray]:
    return np.split(order, np.cumsum(sizes)[:-1])


def _iid(y: np.ndarray, p: dict, rng: np.random.Generator) -> list[np.ndarray]:
    sizes = client_sizes(len(y), p["num_clients"], p["sigma"], rng, p["min_size"])
    return _split_by_sizes(rng.permutation(len(y)), sizes)


def _client_prior(y: np.ndarray, num_classes: int, p: dict, rng: np.random.Generator) -> list[np.ndarray]:
    n, K, C = len(y), p["num_clients"], num_classes
    capacity = client_sizes(n, K, p["sigma"], rng, p["min_size"])
    priors = _dirichlet(rng, p["alpha"], C, size=K)
    pools = [rng.permutation(np.flatnonzero(y == c)) for c in range(C)]
    remaining = np.array([len(q) for q in pools], dtype=np.int64)
    avail = (remaining > 0).astype(np.float64)
    open_clients = list(range(K))
    owner = np.empty(n, dtype=np.int64)
    u = rng.random((n, 2))
    for t in range(n):
        j = int(u[t, 0] * len(open_clients))
        k = open_clients[j]
        prob = priors[k] * avail
        cum = np.cumsum(prob)
        if cum[-1] <= 0:  # all of this client's prior mass is on exhausted classes
            prob = avail
            cum = np.cumsum(prob)
        c = int(np.searchsorted(cum, u[t, 1] * cum[-1], side="right"))
        if c >= C or prob[c] <= 0:
            c = int(np.flatnonzero(prob)[-1])
        remaining[c] -= 1
        owner[pools[c][remaining[c]]] = k
        if remaining[c] == 0:
            avail[c] = 0.0
        capacity[k] -= 1
        if capacity[k] == 0:
            open_clients[j] = open_clients[-1]
            open_clients.pop()
    order = np.argsort(owner, kind="stable")
    return _split_by_sizes(order, np.bincount(owner, minlength=K))


def _class_split(y: np.ndarray, num_classes: int, p: dict, rng: np.random.Generator) -> list[np.ndarray]:
    n, K, alpha, sigma, min_size = len(y), p["num_clients"], p["alpha"], p["sigma"], p["min_size"]
    if K > n:
        raise ValueError(f"num_clients={K} exceeds the {n} train samples: lower num_clients to at most {n}")
    if K * min_size > n:
        raise ValueError(
            f"min_size={min_size} with num_clients={K} needs {K * min_size} samples but there are {n}: "
            f"lower min_size or num_clients"
        )
    by_class = [np.flatnonzero(y == c) for c in range(num_classes) if (y == c).any()]
    for _ in range(MAX_TRIES):
        s = rng.lognormal(0.0, sigma, K) if sigma > 0 else np.ones(K)
        cuts = []
        for idx in by_class:
            q = _dirichlet(rng, alpha, K) * s
            cuts.append((np.cumsum(q / q.sum()) * len(idx)).astype(np.int64)[:-1])
        sizes = sum(np.diff(np.concatenate([[0], c, [len(idx)]])) for c, idx in zip(cuts, by_class))
        if sizes.min() >= min_size:  # accepted: now shuffle each class and cut it
            parts: list[list[np.ndarray]] = [[] for _ in range(K)]
            for c, idx in zip(cuts, by_class):
                for k, piece in enumerate(np.split(rng.permutation(idx), c)):
                    parts[k].append(piece)
            return [np.concatenate(ps) for ps in parts]
    raise ValueError(
        f"dirichlet class_split: in {MAX_TRIES} draws with alpha={alpha}, num_clients={K} some client always had "
        f"fewer than min_size={min_size} train samples: raise alpha, or lower num_clients or min_size"
    )


def _shard_counts(class_sizes: np.ndarray, total: int) -> np.ndarray:
    """D'Hondt apportionment of ``total`` shards over classes: m_c >= 1 for each non-empty class."""
    m = (class_sizes > 0).astype(np.int64)
    for _ in range(total - int(m.sum())):
        per_shard = np.where(m > 0, class_sizes / np.maximum(m, 1), -1.0)
        m[int(np.argmax(per_shard))] += 1
    return m


def _shards(y: np.ndarray, num_classes: int, p: dict, rng: np.random.Generator) -> list[np.ndarray]:
    n, K, k = len(y), p["num_clients"], p["shards_per_client"]
    total = K * k
    if total > n:
        raise ValueError(
            f"num_clients·shards_per_client = {K}·{k} = {total} shards exceed the {n} train samples: "
            f"lower num_clients or shards_per_client"
        )
    class_sizes = np.bincount(y, minlength=num_classes)
    present = int((class_sizes > 0).sum())
    if total < present:
        raise ValueError(
            f"num_clients·shards_per_client = {total} shards cannot cover the {present} classes present "
            f"(each shard holds one class): raise shards_per_client or num_clients to at least {present} shards"
        )
    m = _shard_counts(class_sizes, total)
    shards = []
    for c in range(num_classes):
        if m[c]:
            shards.extend(np.array_split(rng.permutation(np.flatnonzero(y == c)), m[c]))
    perm = rng.permutation(total)
    return [np.concatenate([shards[s] for s in perm[i * k:(i + 1) * k]]) for i in range(K)]


def _natural(ds: Dataset, p: dict, rng: np.random.Generator) -> tuple[list[np.ndarray], list[np.ndarray]]:
    if ds.client_train is None:
        raise ValueError(
            f"partition scheme 'natural': dataset {ds.name!r} has no natural clients (no client_train); "
            f"use scheme iid, dirichlet or shards"
        )
    ctr = np.asarray(ds.client_train)
    ids = np.unique(ctr)
    K = p["num_clients"]
    if K is not None:
        if K > len(ids):
            raise ValueError(
                f"partition scheme 'natural': num_clients={K} but dataset {ds.name!r} has {len(ids)} natural clients "
                f"with train data: lower num_clients to at most {len(ids)} or set it to null"
            )
        ids = np.sort(rng.choice(ids, size=K, replace=False))
    train = _group(ctr, ids)
    if ds.client_test is None:
        test = [np.empty(0, dtype=np.int64) for _ in ids]
    else:
        test = _group(np.asarray(ds.client_test), ids)
    return train, test


def _group(owner: np.ndarray, ids: np.ndarray) -> list[np.ndarray]:
    """For each id, the ascending row indices where ``owner == id`` (one sort, not one scan per id)."""
    order = np.argsort(owner, kind="stable")
    sorted_owner = owner[order]
    lo = np.searchsorted(sorted_owner, ids, side="left")
    hi = np.searchsorted(sorted_owner, ids, side="right")
    return [order[a:b].astype(np.int64) for a, b in zip(lo, hi)]


def _draw(weights: np.ndarray, avail: np.ndarray, u: float) -> int:
    """Index drawn ∝ weights·avail (uniform over avail when that is all zero), with uniform u."""
    w = weights * avail
    cum = np.cumsum(w)
    if cum[-1] <= 0:
        cum = np.cumsum(avail)
    i = int(np.searchsorted(cum, u * cum[-1], side="right"))
    if i >= len(w) or (avail[i] <= 0):
        i = int(np.flatnonzero(avail)[-1])
    return i


def _pachinko(ds: Dataset, p: dict, rng: np.random.Generator) -> list[np.ndarray]:
    if ds.y_coarse_train is None:
        raise ValueError(
            f"partition scheme 'pachinko' needs coarse labels, but dataset {ds.name!r} has no y_coarse_train: "
            f"use dataset source cifar100 (or fed_cifar100), or another scheme"
        )
    y = np.asarray(ds.y_train, dtype=np.int64)
    yc = np.asarray(ds.y_coarse_train, dtype=np.int64)
    n, K, m = len(y), p["num_clients"], p["samples_per_client"]
    if K * m > n:
        raise ValueError(
            f"partition scheme 'pachinko': num_clients·samples_per_client = {K}·{m} = {K * m} exceeds the {n} train "
            f"samples: lower num_clients or samples_per_client"
        )
    fines = np.unique(y)
    coarse_of = {}
    for f in fines:
        cs = np.unique(yc[y == f])
        if len(cs) != 1:
            raise ValueError(f"partition scheme 'pachinko': fine label {f} has coarse labels {cs.tolist()}; "
                             f"each fine label must belong to exactly one coarse label")
        coarse_of[int(f)] = int(cs[0])
    coarses = sorted(set(coarse_of.values()))
    children = [[f for f in map(int, fines) if coarse_of[f] == c] for c in coarses]
    pools = {f: rng.permutation(np.flatnonzero(y == f)) for f in map(int, fines)}
    remaining = {f: len(v) for f, v in pools.items()}
    fine_avail = [np.ones(len(ch)) for ch in children]
    coarse_avail = np.ones(len(coarses))
    clients = []
    for _ in range(K):
        pc = _dirichlet(rng, p["coarse_alpha"], len(coarses))
        pf = [_dirichlet(rng, p["fine_alpha"], len(ch)) for ch in children]
        u = rng.random((m, 2))
        mine = np.empty(m, dtype=np.int64)
        for t in range(m):
            ci = _draw(pc, coarse_avail, u[t, 0])
            fi = _draw(pf[ci], fine_avail[ci], u[t, 1])
            f = children[ci][fi]
            remaining[f] -= 1
            mine[t] = pools[f][remaining[f]]
            if remaining[f] == 0:
                fine_avail[ci][fi] = 0.0
                if not fine_avail[ci].any():
                    coarse_avail[ci] = 0.0
        clients.append(mine)
    return clients


# --------------------------------------------------------------------------- public API


def _json_default(o):
    return o.item() if isinstance(o, np.generic) else str(o)


def make_partition(dataset: Dataset, cfg: dict, seed: int) -> pa.Table:
    """Partition ``dataset``'s train split among clients.

    Args:
        dataset: any labelled Dataset (``y_train`` int labels in [0, num_classes)).
        cfg: ``{"scheme": "iid" | "dirichlet" | "shards" | "natural" | "pachinko" | "shared", **params}``; see
            :data:`SCHEMES` and the module docstring for each scheme's source and parameters.
        seed: partition seed (>= 0); draws come from ``generator(seed, 0, -1, "partition")``.

    Returns:
        A pyarrow Table with columns client_id (int64), sample_index (int64), split (string),
        sorted by split (train first), client_id, sample_index. Same arguments, same table.
        ``shared``: the n train rows once, client_id :data:`SHARED_CLIENT`, K in the metadata
        (O(n) whatever K).

    Raises:
        ValueError: unknown scheme or parameter, a value out of range (alpha <= 0, …), more clients
            than samples, a client that would be left empty, ``natural`` on a dataset without
            natural clients, or ``pachinko`` on a dataset without coarse labels. The message names the
            config key and the fix.
    """
    p = resolve_partition_params(cfg)
    scheme = cfg["scheme"]
    rng = generator(int(seed), 0, -1, "partition")
    y = np.asarray(dataset.y_train, dtype=np.int64)
    C = int(dataset.num_classes)
    test: list[np.ndarray] = []
    if scheme == "shared":
        return _shared_table(dataset, p, seed)
    if scheme == "iid":
        train = _iid(y, p, rng)
    elif scheme == "dirichlet":
        train = (_client_prior if p["form"] == "client_prior" else _class_split)(y, C, p, rng)
    elif scheme == "shards":
        train = _shards(y, C, p, rng)
    elif scheme == "pachinko":
        train = _pachinko(dataset, p, rng)
    else:
        train, test = _natural(dataset, p, rng)
    for k, idx in enumerate(train):
        if len(idx) == 0:  # guarded above; kept as a last check of the "no empty client" contract
            raise ValueError(f"partition scheme {scheme!r}: client {k} got no train sample: lower num_clients")

    cid, sidx, split = [], [], []
    for name, groups in (("train", train), ("test", test)):
        for k, idx in enumerate(groups):
            cid.append(np.full(len(idx), k, dtype=np.int64))
            sidx.append(np.sort(np.asarray(idx, dtype=np.int64)))
            split.append(np.full(len(idx), name, dtype=object))
    meta = {"dataset": dataset.name, "scheme": scheme, "params": p, "seed": int(seed), "num_clients": len(train)}
    return pa.table(
        {
            "client_id": pa.array(np.concatenate(cid), pa.int64()),
            "sample_index": pa.array(np.concatenate(sidx), pa.int64()),
            "split": pa.array(np.concatenate(split), pa.string()),
        },
        schema=SCHEMA.with_metadata({"fedbench": json.dumps(meta, sort_keys=True, default=_json_default)}),
    )


def _shared_table(dataset: Dataset, p: dict, seed: int) -> pa.Table:
    """The ``shared`` partition: each train row once, client_id :data:`SHARED_CLIENT`; K in the metadata."""
    n = len(dataset.y_train)
    if n < 1:
        raise ValueError(f"partition scheme 'shared': dataset {dataset.name!r} has no train sample")
    meta = {"dataset": dataset.name, "scheme": "shared", "params": p, "seed": int(seed),
            "num_clients": int(p["num_clients"]), "shared": True}
    return pa.table(
        {
            "client_id": pa.array(np.full(n, SHARED_CLIENT, dtype=np.int64), pa.int64()),
            "sample_index": pa.array(np.arange(n, dtype=np.int64), pa.int64()),
            "split": pa.array(np.full(n, "train", dtype=object), pa.string()),
        },
        schema=SCHEMA.with_metadata({"fedbench": json.dumps(meta, sort_keys=True, default=_json_default)}),
    )


def shared_clients(table: pa.Table) -> int | None:
    """K if ``table`` is a ``shared`` partition (every client holds every listed train row), else None.

    Raises:
        ValueError: rows with client_id -1 but no ``shared`` metadata holding K (a table not
            written by :func:`make_partition`).
    """
    raw = (table.schema.metadata or {}).get(b"fedbench")
    meta = json.loads(raw) if raw else {}
    if meta.get("shared"):
        return int(meta["num_clients"])
    ids = table.column("client_id").to_numpy()
    if len(ids) and ids.min() < 0:
        raise ValueError("partition table has client_id -1 (shared rows) but its metadata does not say how many "
                         "clients share them: rebuild it with make_partition (scheme 'shared')")
    return None


def num_clients(table: pa.Table) -> int:
    """K: one more than the largest client_id in the partition table (0 for an empty table);
    for a ``shared`` partition, the K of its metadata."""
    shared = shared_clients(table)
    if shared is not None:
        return shared
    ids = table.column("client_id").to_numpy()
    return int(ids.max()) + 1 if len(ids) else 0


def client_indices(table: pa.Table, split: str = "train") -> list[np.ndarray]:
    """Each client's sample indices into ``x_<split>``.

    Returns:
        A list of K int64 arrays (client 0..K-1), each sorted ascending; a client with no row
        of that split gets an empty array (e.g. ``split="test"`` outside the natural scheme).
        ``shared``: K references to *one* array (the rows of that split, ascending), O(n) memory
        whatever K; do not modify it in place.

    Raises:
        ValueError: split is not "train" or "test".
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    K = num_clients(table)
    if shared_clients(table) is not None:
        mask = (table.column("split").to_numpy(zero_copy_only=False) == split)
        return [np.sort(table.column("sample_index").to_numpy()[mask].astype(np.int64))] * K
    mask = (table.column("split").to_numpy(zero_copy_only=False) == split)
    cid = table.column("client_id").to_numpy()[mask]
    idx = table.column("sample_index").to_numpy()[mask]
    order = np.lexsort((idx, cid))
    counts = np.bincount(cid, minlength=K)
    return [a.astype(np.int64) for a in np.split(idx[order], np.cumsum(counts)[:-1])] if K else []


def train_rows(table: pa.Table) -> np.ndarray:
    """The train rows some client holds, ascending and each once: an int64 array [n_used] (the
    union of :func:`client_indices`, in O(n) also for ``shared``, where concatenating the K
    clients' rows would take O(K·n))."""
    mask = table.column("split").to_numpy(zero_copy_only=False) == "train"
    return np.unique(table.column("sample_index").to_numpy()[mask].astype(np.int64))


def class_counts(table: pa.Table, dataset: Dataset) -> pa.Table:
    """Per-client, per-class counts of the train split (wide format).

    Returns:
        A Table with one row per client 0..K-1 and columns client_id (int64), num_samples
        (int64), class_0 … class_{C-1} (int64). ``shared``: K equal rows (O(K·C)).
    """
    K, C = num_clients(table), int(dataset.num_classes)
    mask = table.column("split").to_numpy(zero_copy_only=False) == "train"
    cid = table.column("client_id").to_numpy()[mask]
    labels = np.asarray(dataset.y_train, dtype=np.int64)[table.column("sample_index").to_numpy()[mask]]
    if shared_clients(table) is not None:
        counts = np.tile(np.bincount(labels, minlength=C).astype(np.int64), (K, 1))
    else:
        counts = np.bincount(cid * C + labels, minlength=K * C).reshape(K, C).astype(np.int64)
    cols = {"client_id": np.arange(K, dtype=np.int64), "num_samples": counts.sum(axis=1)}
    cols.update({f"class_{c}": counts[:, c] for c in range(C)})
    return pa.table({k: pa.array(v, pa.int64()) for k, v in cols.items()})


#: The record :func:`write_partition` keeps beside a partition's files: ``{"files": {name: {"size":
#: bytes, "sha256": hex}}}``, against which :mod:`fedbench.integrity` checks and repairs them.
SIDECAR = "partition.json"
PARTITION_FILES = ("class_counts.parquet", "partition.parquet")


#: What a message about a damaged partition file advises.
REMAKE_FIX = ("rerun the same snakemake command: before any job it re-makes the partition's damaged files "
              "(fedbench.integrity.verify_folder)")


def _sidecar_entry(path: Path) -> dict:
    """The :data:`SIDECAR` record of one partition file (``{"size", "sha256"}``), ``{}`` when none."""
    try:
        return json.loads((path.parent / SIDECAR).read_text())["files"].get(path.name, {})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def write_partition(table: pa.Table, dataset: Dataset, out_dir: str | os.PathLike) -> None:
    """Write ``out_dir/partition.parquet``, ``out_dir/class_counts.parquet`` and their record
    :data:`SIDECAR` (``partition.json``: each file's size in bytes and sha256).

    Each file is written to a temporary sibling and renamed into place (``os.replace``), so a
    reader never sees a half-written file. ``out_dir`` is created if needed.
    """
    from fedbench.filecheck import sha256_of

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    record = {}
    for name, t in zip(PARTITION_FILES, (class_counts(table, dataset), table)):
        with atomic_write(out / name) as tmp:
            pq.write_table(t, tmp)
        record[name] = {"size": (out / name).stat().st_size, "sha256": sha256_of(out / name)}
    with atomic_write(out / SIDECAR) as tmp:
        tmp.write_text(json.dumps({"files": record}, indent=2, sort_keys=True) + "\n")


def read_partition(path: str | os.PathLike) -> pa.Table:
    """Read a partition written by :func:`write_partition`.

    Args:
        path: the ``partition.parquet`` file, or the directory holding it.

    Raises:
        FileNotFoundError: no such file (run the partition step first).
        fedbench.data.errors.DamagedFileError (a ValueError): the file is truncated (a cheap check
            of its ends and of the size :data:`SIDECAR` records), or cannot be read and its sha256
            differs from the record's (it is then set aside as ``partition.parquet.damaged``); the
            message names the file and the fix.
        ValueError: the file lacks the columns client_id, sample_index, split.
    """
    from fedbench.data.errors import damaged
    from fedbench.filecheck import parquet_problem, set_aside, sha256_of

    path = Path(path)
    if path.is_dir():
        path = path / "partition.parquet"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: run the partition step first")
    record = _sidecar_entry(path)
    problem = parquet_problem(path, record.get("size"), SIDECAR)
    if problem is not None:
        raise damaged(path, problem, f"fix: {REMAKE_FIX}")
    # One file, read as one: pq.read_table goes through pyarrow.dataset, an import (~0.1 s) that
    # every training job would pay. (pandas, which it also imports, comes anyway: pyarrow's
    # Array.to_numpy imports it.)
    try:
        table = pq.ParquetFile(path).read()
    except (OSError, ValueError, pa.ArrowException) as e:
        if "sha256" not in record or sha256_of(path) == record["sha256"]:
            raise
        aside = set_aside(path)
        raise damaged(path, f"cannot be read ({type(e).__name__}: {e}) and its sha256 differs from {SIDECAR}'s "
                      f"(changed bytes); set aside as {aside.name}", f"fix: {REMAKE_FIX}") from None
    missing = [c for c in SCHEMA.names if c not in table.column_names]
    if missing:
        raise ValueError(f"{path} is not a partition table: missing columns {', '.join(missing)}")
    return table
