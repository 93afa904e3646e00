"""The whole-rounds tensor path (:mod:`fedbench.engine.linear_fast.tensor_rounds`, CUDA's whole rounds, run here
on the CPU through ``VectorizedClients.tensor_rounds``), in both its versions (the Triton kernels of
:mod:`fedbench.engine.linear_fast.round_kernels`, which Triton interprets on a machine without a GPU, and the
torch operations): the generic path's rows and server states,
float64, 1e-10, for every algorithm of FedAc's protocol, on sparse and dense rows; it stops at a
diverged cell where the generic path records it; segments do not change its bits. On a GPU the
same checks run on CUDA, where the path is taken without being asked for. The evaluation of many
cells at once (``TensorRounds.evaluate``) is checked against the generic evaluation directly and
through every row of these runs."""

from __future__ import annotations

import math

import pytest
import torch
from test_linear_steps import _assert_rows_equal, _dataset, _round_specs, _run_rounds_spy

from fedbench.engine.linear_fast.tensor_rounds import TensorRounds
from fedbench.engine.rounds.evaluate import evaluate
from fedbench.models import binary_logreg

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                                reason="no CUDA GPU visible"))]


@pytest.fixture(params=["kernels", "torch"])
def version(request, monkeypatch):
    """The tensor path's two versions of a round: the Triton kernels (interpreted on the CPU) and
    the torch operations (wide rows, no Triton)."""
    if request.param == "kernels":
        pytest.importorskip("triton")
    monkeypatch.setattr("fedbench.engine.linear_fast.tensor_rounds.KERNELS", request.param == "kernels")
    return request.param


def _run(specs, ds, monkeypatch, tensor: bool, device: str = "cpu", **kw):
    """train_seeds with the tensor path (``tensor``) or round by round on the generic path; returns
    (results with the server states on the host, the (t0, t1, ran) of every train_rounds call)."""
    out, calls = _run_rounds_spy(specs, ds, tensor, monkeypatch, device=device, tensor=tensor, **kw)
    for _, info in out:  # the server states on the host, to compare with the CPU's
        info["server_state"] = {k: {n: v.cpu() for n, v in leaf.items()} if isinstance(leaf, dict) else leaf
                                for k, leaf in info["server_state"].items()}
        info["params"] = {n: v.cpu() for n, v in info["params"].items()}
    return out, calls


ALGORITHMS = [("fedavg", None), ("fedac", "I"), ("fedac", "II"), ("fedac", "vanilla"), ("mb_sgd", None),
              ("mb_ac_sgd", None)]
SHAPES = [(1, 1), (3, 1), (2, 3)]  # (steps, batch_size)


def _equal_cases():
    """(algorithm, variant, steps, batch_size, sparse, device, version): every combination, but for
    the Triton kernels on the CPU (interpreted, 20-40 s a case on 2 cores) a covering set: each
    algorithm at each (steps, batch_size) once, on sparse rows where i + j is even, so that every
    algorithm and every shape runs on sparse and on dense rows (18 of the 36)."""
    cases = []
    for device in DEVICES:
        dev, marks = (device.values[0], device.marks) if hasattr(device, "values") else (device, ())
        for version in ("kernels", "torch"):
            for i, (algorithm, variant) in enumerate(ALGORITHMS):
                for j, (steps, batch_size) in enumerate(SHAPES):
                    for sparse in (True, False):
                        if version == "kernels" and dev == "cpu" and sparse != ((i + j) % 2 == 0):
                            continue
                        cases.append(pytest.param(algorithm, variant, steps, batch_size, sparse, dev, version,
                                                  marks=marks, id=f"{version}-{sparse}-{steps}-{batch_size}-"
                                                                  f"{algorithm}-{variant}-{dev}"))
    return cases


@pytest.mark.parametrize("algorithm,variant,steps,batch_size,sparse,device,version", _equal_cases(),
                         indirect=["version"])
def test_tensor_rounds_equal_the_generic_path(algorithm, variant, steps, batch_size, sparse, device, version,
                                              monkeypatch):
    """Every row column (losses, accuracies, objective, uplink floats and non-zeros, the initial
    row) and the final server states (``params``, FedAc's ``w``) of stacked cells that differ in lr
    and seed, against the generic path on the CPU."""
    ds = _dataset(sparse)
    specs = _round_specs(algorithm, steps=steps, batch_size=batch_size, variant=variant)
    fused, calls = _run(specs, ds, monkeypatch, True, device)
    assert calls == [(1, 3, True), (4, 6, True), (7, 7, True)]  # segments end at the evaluations
    generic, calls = _run(specs, ds, monkeypatch, False)
    assert not any(ran for *_, ran in calls)
    _assert_rows_equal(fused, generic)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")  # the interpreter's numpy, blowing up
@pytest.mark.parametrize("device", DEVICES)
def test_tensor_rounds_stop_at_a_diverged_cell(device, version, monkeypatch):
    """FedAc at η far above 1/L blows up: recorded diverged at the generic path's round, with the
    same rows; the other cell goes on to the end."""
    ds = _dataset(True)
    specs = _round_specs("fedac", steps=2, lrs=(0.05, 3e3), seeds=(0,), rounds=120, eval_every=60)
    for s in specs:
        s["collapse"] = False  # NaN/inf, not the collapse rule
    fused, calls = _run(specs, ds, monkeypatch, True, device)
    generic, _ = _run(specs, ds, monkeypatch, False)
    assert [info["status"] for _, info in fused] == ["ok", "diverged"]
    stop = fused[1][0][-1]["round"]
    assert 60 < stop < 120 and (stop + 1, 120, True) in calls and fused[0][0][-1]["round"] == 120
    _assert_rows_equal(fused, generic)


@pytest.mark.parametrize("blocks,chunk,shape", [(2, 16, (2, 16, 2, 2)), (3, 2, (2, 16, 1, 3))])
@pytest.mark.parametrize("algorithm,variant", [("fedac", "I"), ("mb_sgd", None), ("fedavg", None)])
def test_kernels_with_several_tiles_a_block(algorithm, variant, blocks, chunk, shape, monkeypatch):
    """The clients kernel's loop over the tiles of a block, a last tile with one client and a tile
    with none (5 clients, 2 a tile, at most 2 blocks: 2 tiles a block), and the server kernel's sum
    over the blocks in chunks (3 blocks, 2 a chunk): the generic path's rows, 1e-10."""
    pytest.importorskip("triton")
    from fedbench.engine.linear_fast import round_kernels

    monkeypatch.setattr(round_kernels, "TILE", 32)  # d = 9: BLOCK_D = 16, BLOCK_M = 2
    monkeypatch.setattr(round_kernels, "MAX_BLOCKS", blocks)
    monkeypatch.setattr(round_kernels, "SUM_CHUNK", chunk)
    assert round_kernels.shape(5, 9) == shape
    ds = _dataset(True)
    specs = _round_specs(algorithm, steps=3, variant=variant)
    fused, calls = _run(specs, ds, monkeypatch, True)
    assert all(ran for *_, ran in calls)
    generic, _ = _run(specs, ds, monkeypatch, False)
    _assert_rows_equal(fused, generic)


def test_tile_shapes_cover_the_clients():
    """round_kernels.shape: BLOCK_D the power of two ≥ d, NBLK ≤ MAX_BLOCKS blocks of TILES tiles of
    BLOCK_M clients covering every client, with no block left empty."""
    pytest.importorskip("triton")
    from fedbench.engine.linear_fast import round_kernels

    for clients in (1, 4, 5, 255, 256, 1000, 8192, 100_000):
        for d in (1, 9, 123, 128, 129, 256):
            block_m, block_d, tiles, nblk = round_kernels.shape(clients, d)
            assert block_d >= d and block_d & (block_d - 1) == 0 and block_d < 2 * max(d, 1)
            assert nblk <= round_kernels.MAX_BLOCKS and block_m * tiles * nblk >= clients
            assert block_m * tiles * (nblk - 1) < clients
    assert not round_kernels.supported(2000, 2, 2, 2) and round_kernels.supported(123, 2, 2, 2)
    assert not round_kernels.supported(123, 3, 2, 2)


def test_tensor_rounds_do_not_depend_on_segments(version, monkeypatch, tmp_path):
    """Bit for bit: checkpoints every 2 rounds (other segments) and a run resumed from one."""
    ds = _dataset(True)
    specs = _round_specs("fedac", steps=3, seeds=(0, 1, 2))
    base, _ = _run(specs, ds, monkeypatch, True)
    paths = [tmp_path / f"ckpt{i}.pt" for i in range(len(specs))]
    cut, calls = _run(specs, ds, monkeypatch, True, checkpoint_paths=paths, checkpoint_every=2)
    assert [(t0, t1) for t0, t1, _ in calls] == [(1, 2), (3, 3), (4, 4), (5, 6), (7, 7)]
    _assert_rows_equal(cut, base, rtol=0)
    resumed, calls = _run(specs, ds, monkeypatch, True, checkpoint_paths=paths)  # from round 6's checkpoint
    assert [(t0, t1) for t0, t1, _ in calls] == [(7, 7)]
    _assert_rows_equal(resumed, base, rtol=0)


def test_tensor_rounds_draw_in_parts(version, monkeypatch):
    """A segment longer than MAX_DRAWN client-steps is drawn in parts: the same bits."""
    ds = _dataset(True)
    specs = _round_specs("fedac", steps=2)
    base, _ = _run(specs, ds, monkeypatch, True)
    monkeypatch.setattr("fedbench.engine.linear_fast.tensor_rounds.MAX_DRAWN", 7)
    parts, _ = _run(specs, ds, monkeypatch, True)
    _assert_rows_equal(parts, base, rtol=0)


def test_softmax_logreg_runs_round_by_round(monkeypatch):
    """The tensor path serves ``binary_logreg`` only: ``logreg`` cells run round by round."""
    ds = _dataset(True, classes=3)
    specs = _round_specs("fedavg", "logreg", rounds=3, eval_every=2)
    out, calls = _run(specs, ds, monkeypatch, True)
    assert calls and not any(ran for *_, ran in calls)
    generic, _ = _run(specs, ds, monkeypatch, False)
    _assert_rows_equal(out, generic)


@pytest.mark.parametrize("device", DEVICES)
def test_evaluate_many_models_equals_the_generic_evaluation(device):
    """TensorRounds.evaluate: per model (loss, accuracy, worst-class accuracy) as
    fedbench.engine.rounds.evaluate.evaluate gives it, 1e-12, with logits far beyond softplus's linear
    threshold, a zero logit (a tie: class 0), a split with one class only, and an empty split."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(300, 7, generator=gen, dtype=torch.float64).to(device)
    x[0] = 0.0  # logit exactly 0 for every model
    y = (torch.rand(300, generator=gen) < 0.4).long().to(device)
    weights = [torch.randn(7, generator=gen, dtype=torch.float64) * s for s in (0.1, 1.0, 30.0)]
    params = [{"weight": w.to(device)} for w in weights]
    path = TensorRounds(x, y)
    for xs, ys in ((x, y), (x[y == 1], y[y == 1]), (x[:0], y[:0])):
        got = path.evaluate(params, xs, ys)
        for p, g in zip(params, got):
            want = evaluate(binary_logreg.apply, p, xs, ys, worst_class=True)
            for a, b in zip(g, want):
                assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12 * max(1.0, abs(b))
    assert path.evaluate([{"weight": weights[0].float().to(device)}], x.float(), y) is None


def test_out_of_device_memory_runs_round_by_round(version, monkeypatch):
    """Where the device cannot hold the state, the tensor path gives up before changing anything
    and the engine runs those rounds one by one: the same rows."""
    ds = _dataset(True)
    specs = _round_specs("fedac", steps=2)

    def no_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

    monkeypatch.setattr("fedbench.engine.linear_fast.tensor_rounds._round", no_memory)
    monkeypatch.setattr("fedbench.engine.linear_fast.tensor_rounds._KernelRounds.__call__", no_memory)
    out, calls = _run(specs, ds, monkeypatch, True)
    assert calls and not any(ran for *_, ran in calls)
    generic, _ = _run(specs, ds, monkeypatch, False)
    _assert_rows_equal(out, generic)
