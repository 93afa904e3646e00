import hashlib
import json

import numpy as np
import pyarrow as pa
import pytest

from fedbench.data.partition import (
    SCHEMES,
    class_counts,
    client_indices,
    client_sizes,
    make_partition,
    read_partition,
    resolve_partition_params,
    write_partition,
)
from fedbench.data.store import Dataset
from fedbench.rng import generator


def _dataset(n=1000, C=10, natural=False, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(C), n // C)
    rng.shuffle(y)
    return Dataset(
        name="toy",
        x_train=rng.normal(size=(len(y), 3)).astype(np.float32),
        y_train=y.astype(np.int64),
        x_test=rng.normal(size=(200, 3)).astype(np.float32),
        y_test=rng.integers(0, C, 200),
        num_classes=C,
        # natural ids are sparse and unordered on purpose: 7, 3, 42, 11
        client_train=np.array([7, 3, 42, 11])[np.arange(len(y)) % 4] if natural else None,
        client_test=np.array([7, 3, 42, 11, 99])[np.arange(200) % 5] if natural else None,
    )


@pytest.fixture(scope="module")
def ds():
    return _dataset()


@pytest.fixture(scope="module")
def natural_ds():
    return _dataset(natural=True)


def _max_share(table, ds):
    cc = class_counts(table, ds)
    m = np.stack([cc.column(f"class_{c}").to_numpy() for c in range(ds.num_classes)], axis=1)
    return (m.max(axis=1) / m.sum(axis=1)).mean()


def _entropy(table, ds):
    cc = class_counts(table, ds)
    m = np.stack([cc.column(f"class_{c}").to_numpy() for c in range(ds.num_classes)], axis=1).astype(float)
    p = m / m.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.nansum(-p * np.log(p), axis=1).mean())


ALL_TRAIN_CFGS = [
    {"scheme": "iid", "num_clients": 7},
    {"scheme": "iid", "num_clients": 7, "sigma": 0.8},
    {"scheme": "dirichlet", "num_clients": 20, "alpha": 0.1},
    {"scheme": "dirichlet", "num_clients": 20, "alpha": 0.5, "sigma": 0.5},
    {"scheme": "dirichlet", "num_clients": 20, "alpha": 0.5, "form": "class_split"},
    {"scheme": "dirichlet", "num_clients": 20, "alpha": 0.5, "form": "class_split", "sigma": 0.5, "min_size": 5},
    {"scheme": "shards", "num_clients": 30, "shards_per_client": 2},
    {"scheme": "shards", "num_clients": 7, "shards_per_client": 3},
]


@pytest.mark.parametrize("cfg", ALL_TRAIN_CFGS, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_every_train_sample_exactly_once_and_no_empty_client(ds, cfg):
    t = make_partition(ds, cfg, seed=1)
    assert t.schema.names == ["client_id", "sample_index", "split"]
    assert t.schema.field("client_id").type == pa.int64() and t.schema.field("sample_index").type == pa.int64()
    assert set(t.column("split").to_pylist()) == {"train"}
    idx = t.column("sample_index").to_numpy()
    np.testing.assert_array_equal(np.sort(idx), np.arange(len(ds.y_train)))  # coverage + disjointness
    per_client = client_indices(t)
    assert len(per_client) == cfg["num_clients"]
    assert all(len(a) > 0 and np.all(np.diff(a) > 0) for a in per_client)
    assert sum(len(a) for a in per_client) == len(ds.y_train)
    assert client_indices(t, "test") == [] or all(len(a) == 0 for a in client_indices(t, "test"))


@pytest.mark.parametrize("cfg", ALL_TRAIN_CFGS[:1] + ALL_TRAIN_CFGS[2:3] + ALL_TRAIN_CFGS[4:5] + ALL_TRAIN_CFGS[6:7])
def test_same_seed_same_table_other_seed_other_table(ds, cfg):
    a, b, c = (make_partition(ds, cfg, s) for s in (3, 3, 4))
    assert a.equals(b) and a.schema.metadata == b.schema.metadata
    assert not a.equals(c)


@pytest.mark.parametrize("form", ["client_prior", "class_split"])
def test_small_alpha_is_far_more_skewed(ds, form):
    share, ent = {}, {}
    for alpha in (0.05, 1.0, 100.0):
        t = make_partition(ds, {"scheme": "dirichlet", "num_clients": 10, "alpha": alpha, "form": form}, 0)
        share[alpha], ent[alpha] = _max_share(t, ds), _entropy(t, ds)
    assert share[0.05] > share[1.0] > share[100.0]
    assert ent[0.05] < ent[1.0] < ent[100.0]
    assert share[0.05] > 0.5 and share[100.0] < 0.2 and ent[100.0] > 0.95 * np.log(10)


def test_iid_is_label_balanced(ds):
    t = make_partition(ds, {"scheme": "iid", "num_clients": 5}, 0)
    assert _max_share(t, ds) < 0.2


@pytest.mark.parametrize("scheme", ["iid", "dirichlet"])
def test_lognormal_sizes_vary_with_sigma_and_are_equal_at_zero(ds, scheme):
    def sizes(sigma):
        t = make_partition(ds, {"scheme": scheme, "num_clients": 20, "sigma": sigma}, 0)
        return np.array([len(a) for a in client_indices(t)])

    s0, s_small, s_big = sizes(0.0), sizes(0.3), sizes(1.0)
    assert s0.max() - s0.min() == 0 and s0.sum() == 1000  # 1000 / 20 = 50 each
    assert 0 < s_small.std() < s_big.std()
    assert s_small.sum() == s_big.sum() == 1000


def test_equal_sizes_spread_the_remainder():
    sizes = client_sizes(103, 10, 0.0, generator(0, 0, -1, "partition"))
    assert sizes.sum() == 103 and set(sizes) == {10, 11} and list(sizes[:3]) == [11, 11, 11]


def test_class_split_sigma_skews_sizes(ds):
    def cv(sigma):
        out = []
        for s in range(3):
            t = make_partition(ds, {"scheme": "dirichlet", "num_clients": 20, "alpha": 100.0,
                                    "form": "class_split", "sigma": sigma}, s)
            n = np.array([len(a) for a in client_indices(t)])
            out.append(n.std() / n.mean())
        return np.mean(out)

    assert cv(0.0) < 0.1 < cv(1.0)


@pytest.mark.parametrize("K,k", [(10, 1), (30, 2), (50, 3)])
def test_shards_give_at_most_k_classes(ds, K, k):
    t = make_partition(ds, {"scheme": "shards", "num_clients": K, "shards_per_client": k}, 0)
    for idx in client_indices(t):
        assert len(np.unique(ds.y_train[idx])) <= k
    n = np.array([len(a) for a in client_indices(t)])
    assert n.max() - n.min() <= k  # shards of (near) equal size: 1000 samples, 100 per class
    if k == 1:
        assert _max_share(t, ds) == 1.0


def test_shards_not_dividing_still_uses_every_sample():
    odd = _dataset(n=997, C=7)
    t = make_partition(odd, {"scheme": "shards", "num_clients": 9, "shards_per_client": 2}, 0)
    assert np.array_equal(np.sort(t.column("sample_index").to_numpy()), np.arange(len(odd.y_train)))
    for idx in client_indices(t):
        assert len(np.unique(odd.y_train[idx])) <= 2


def test_natural_respects_the_dataset_clients(natural_ds):
    t = make_partition(natural_ds, {"scheme": "natural"}, 0)
    order = [3, 7, 11, 42]  # remapped to 0..3 in increasing order of the original id
    train, test = client_indices(t, "train"), client_indices(t, "test")
    assert len(train) == len(test) == 4
    for new, orig in enumerate(order):
        np.testing.assert_array_equal(train[new], np.flatnonzero(natural_ds.client_train == orig))
        np.testing.assert_array_equal(test[new], np.flatnonzero(natural_ds.client_test == orig))
    # client 99 only has test samples: it is dropped with them
    assert 99 not in order and sum(map(len, test)) == int((natural_ds.client_test != 99).sum())
    assert t.column("split").to_pylist()[: len(natural_ds.y_train)] == ["train"] * len(natural_ds.y_train)


def test_natural_subset_is_seeded(natural_ds):
    a = make_partition(natural_ds, {"scheme": "natural", "num_clients": 2}, 0)
    assert len(client_indices(a)) == 2
    assert a.equals(make_partition(natural_ds, {"scheme": "natural", "num_clients": 2}, 0))
    firsts = {int(client_indices(make_partition(natural_ds, {"scheme": "natural", "num_clients": 2}, s))[0][0])
              for s in range(8)}
    assert len(firsts) > 1  # different seeds pick different clients


def test_class_counts_table(ds):
    t = make_partition(ds, {"scheme": "dirichlet", "num_clients": 6, "alpha": 0.3}, 0)
    cc = class_counts(t, ds)
    assert cc.column_names == ["client_id", "num_samples"] + [f"class_{c}" for c in range(10)]
    m = np.stack([cc.column(f"class_{c}").to_numpy() for c in range(10)], axis=1)
    np.testing.assert_array_equal(m.sum(axis=1), cc.column("num_samples").to_numpy())
    np.testing.assert_array_equal(m.sum(axis=0), np.bincount(ds.y_train, minlength=10))
    idx0 = client_indices(t)[0]
    np.testing.assert_array_equal(m[0], np.bincount(ds.y_train[idx0], minlength=10))


def test_write_and_read_roundtrip(tmp_path, ds):
    t = make_partition(ds, {"scheme": "iid", "num_clients": 4}, 0)
    write_partition(t, ds, tmp_path / "p")
    assert sorted(f.name for f in (tmp_path / "p").iterdir()) == ["class_counts.parquet", "partition.json",
                                                                  "partition.parquet"]
    record = json.loads((tmp_path / "p" / "partition.json").read_text())["files"]
    for name in ("class_counts.parquet", "partition.parquet"):
        data = (tmp_path / "p" / name).read_bytes()
        assert record[name] == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    back = read_partition(tmp_path / "p")
    assert back.equals(t) and read_partition(tmp_path / "p" / "partition.parquet").equals(t)
    assert b"fedbench" in back.schema.metadata
    with pytest.raises(FileNotFoundError, match="partition"):
        read_partition(tmp_path / "missing")


def test_schemes_table_and_defaults():
    assert set(SCHEMES) == {"iid", "dirichlet", "shards", "natural", "pachinko", "shared"}
    assert resolve_partition_params({"scheme": "dirichlet"})["form"] == "client_prior"
    shards = resolve_partition_params({"scheme": "shards", "num_clients": 3})
    assert shards == {"num_clients": 3, "shards_per_client": 2}


@pytest.mark.parametrize("cfg,match", [
    ({"scheme": "dirichlet", "alpha": 0}, "alpha"),
    ({"scheme": "dirichlet", "alpha": -1.0}, "alpha"),
    ({"scheme": "dirichlet", "form": "pachinko"}, "form"),
    ({"scheme": "iid", "sigma": -0.1}, "sigma"),
    ({"scheme": "iid", "num_clients": 0}, "num_clients"),
    ({"scheme": "iid", "num_clients": 1001}, "num_clients"),
    ({"scheme": "iid", "alpha": 0.5}, "'alpha'.*allowed parameters: num_clients, sigma, min_size"),
    ({"scheme": "quantity"}, "unknown partition scheme 'quantity'"),
    ({"num_clients": 3}, "scheme"),
    ({"scheme": "shards", "num_clients": 600, "shards_per_client": 2}, "shards_per_client"),
    ({"scheme": "shards", "num_clients": 2, "shards_per_client": 2}, "shards_per_client"),
    ({"scheme": "dirichlet", "num_clients": 100, "min_size": 20}, "min_size"),
    ({"scheme": "dirichlet", "form": "class_split", "num_clients": 50, "alpha": 0.01, "min_size": 15}, "min_size"),
    ({"scheme": "natural"}, "natural clients"),
    ({"scheme": "natural", "sigma": 0.3}, "sigma"),
])
def test_impossible_requests_name_the_parameter(ds, cfg, match):
    with pytest.raises(ValueError, match=match):
        make_partition(ds, cfg, 0)


def test_natural_too_many_clients(natural_ds):
    with pytest.raises(ValueError, match="num_clients"):
        make_partition(natural_ds, {"scheme": "natural", "num_clients": 5}, 0)


def test_digits_dirichlet_end_to_end(tmp_path):
    from fedbench.data.digits import load_digits

    digits = load_digits()
    t = make_partition(digits, {"scheme": "dirichlet", "num_clients": 10, "alpha": 0.3}, 0)
    assert np.array_equal(np.sort(t.column("sample_index").to_numpy()), np.arange(1437))
    sizes = [len(a) for a in client_indices(t)]
    assert sorted(set(sizes)) == [143, 144]  # 1437 = 7·144 + 3·143
    write_partition(t, digits, tmp_path)
    cc = read_partition(tmp_path).num_rows, class_counts(t, digits).num_rows
    assert cc == (1437, 10)


@pytest.mark.parametrize("cfg", [
    {"scheme": "iid", "num_clients": 1001}, {"scheme": "iid", "num_clients": 1000},
    {"scheme": "dirichlet", "num_clients": 10, "min_size": 101},
    {"scheme": "dirichlet", "num_clients": 10, "min_size": 100},
    {"scheme": "shards", "num_clients": 100, "shards_per_client": 11},
    {"scheme": "shards", "num_clients": 100, "shards_per_client": 10},
    {"scheme": "natural", "num_clients": 5}, {"scheme": "natural", "num_clients": 4},
    {"scheme": "shards", "num_clients": 3, "shards_per_client": 3},
    {"scheme": "shards", "num_clients": 5, "shards_per_client": 2},
    {"scheme": "shards", "num_clients": 1, "shards_per_client": 9},
])
def test_size_problem_is_what_the_partitioner_rejects(ds, natural_ds, cfg):
    """size_problem (checked by fedbench.config before any job) flags exactly the sizes that make
    the partitioner raise, naming the parameter; it changes no partition."""
    from fedbench.data.partition import resolve_partition_params, size_problem

    p = resolve_partition_params(cfg)
    data = natural_ds if cfg["scheme"] == "natural" else ds
    problem = size_problem(cfg["scheme"], p, len(data.y_train), 4 if cfg["scheme"] == "natural" else None,
                           len(np.unique(data.y_train)))
    if problem is None:
        make_partition(data, cfg, seed=0)
    else:
        key, message = problem
        assert key in cfg and key in message
        with pytest.raises(ValueError):
            make_partition(data, cfg, seed=0)


def test_size_problem_skips_unknown_sizes():
    from fedbench.data.partition import size_problem

    assert size_problem("iid", {"num_clients": 10**9, "min_size": 1, "sigma": 0.0}, None) is None
    assert size_problem("natural", {"num_clients": 10**9}, 10, None) is None


# --------------------------------------------------------------------------- shared


def test_shared_every_client_holds_every_train_row(ds, tmp_path):
    """``shared``: K clients, each the whole train split; the table lists each row once."""
    from fedbench.data.partition import SHARED_CLIENT, num_clients, shared_clients, train_rows

    t = make_partition(ds, {"scheme": "shared", "num_clients": 7}, seed=3)
    assert t.num_rows == len(ds.y_train)  # O(n), not K·n
    assert set(t.column("client_id").to_numpy().tolist()) == {SHARED_CLIENT}
    write_partition(t, ds, tmp_path / "p")
    back = read_partition(tmp_path / "p")
    assert back.equals(t) and shared_clients(back) == 7 and num_clients(back) == 7
    clients = client_indices(back)
    assert len(clients) == 7 and all(c is clients[0] for c in clients)  # one array, not K copies
    np.testing.assert_array_equal(clients[0], np.arange(len(ds.y_train)))
    np.testing.assert_array_equal(train_rows(back), np.arange(len(ds.y_train)))
    test = client_indices(back, "test")
    assert len(test) == 7 and all(len(c) == 0 for c in test)
    counts = class_counts(back, ds)
    assert counts.num_rows == 7
    want = np.bincount(ds.y_train, minlength=ds.num_classes)
    for c in range(ds.num_classes):
        assert counts.column(f"class_{c}").to_pylist() == [int(want[c])] * 7
    assert counts.column("num_samples").to_pylist() == [len(ds.y_train)] * 7  # equal weights n_k = n
    assert make_partition(ds, {"scheme": "shared", "num_clients": 7}, seed=3).equals(t)


def test_shared_scales_to_thousands_of_clients():
    """M = 8,192 workers over a9a's 32,561 rows (FedAc, Yuan & Ma 2020): the table, the clients'
    rows and the class counts are O(n + M·C) in memory (traced; no timing: the speed is a
    benchmark's business, not a test's)."""
    import tracemalloc

    from fedbench.data.partition import train_rows

    big = _dataset(n=32_560, C=2)
    tracemalloc.start()
    t = make_partition(big, {"scheme": "shared", "num_clients": 8192}, seed=0)
    clients = client_indices(t)
    used = train_rows(t)
    counts = class_counts(t, big)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert t.num_rows == 32_560 and len(clients) == 8192 and len(used) == 32_560 and counts.num_rows == 8192
    assert len({id(c) for c in clients}) == 1
    assert peak < 20 * 2**20, peak  # M·n int64 would be 2.1 GB


def test_shared_allows_more_clients_than_rows(ds):
    from fedbench.data.partition import size_problem

    p = resolve_partition_params({"scheme": "shared", "num_clients": 5000})
    assert p == {"num_clients": 5000}
    assert size_problem("shared", p, len(ds.y_train), None, 10) is None
    assert len(client_indices(make_partition(ds, {"scheme": "shared", "num_clients": 5000}, 0))) == 5000


@pytest.mark.parametrize("cfg,match", [
    ({"scheme": "shared", "num_clients": 0}, "num_clients must be an integer >= 1"),
    ({"scheme": "shared", "alpha": 0.5}, "alpha"),
])
def test_shared_bad_parameters(ds, cfg, match):
    with pytest.raises(ValueError, match=match):
        make_partition(ds, cfg, 0)


def test_minus_one_client_without_shared_metadata_is_refused(ds):
    from fedbench.data.partition import num_clients

    t = make_partition(ds, {"scheme": "shared", "num_clients": 3}, 0).replace_schema_metadata(None)
    with pytest.raises(ValueError, match="shared"):
        num_clients(t)


@pytest.mark.parametrize("cfg", [{"scheme": "iid", "num_clients": 7},
                                 {"scheme": "dirichlet", "num_clients": 5, "alpha": 0.3},
                                 {"scheme": "shared", "num_clients": 4}])
def test_train_rows_is_the_sorted_union_of_the_clients_rows(ds, natural_ds, cfg):
    from fedbench.data.partition import train_rows

    for data in (ds, natural_ds):
        t = make_partition(data, cfg, seed=1)
        np.testing.assert_array_equal(train_rows(t), np.unique(np.concatenate(client_indices(t))))
    t = make_partition(natural_ds, {"scheme": "natural", "num_clients": 2}, seed=0)
    np.testing.assert_array_equal(train_rows(t), np.sort(np.concatenate(client_indices(t))))
