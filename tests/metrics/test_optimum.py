"""fedbench.metrics.optimum: F* of ℓ2-regularised logistic regression to ‖∇F‖ ≤ 1e-12."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from fedbench.metrics import optimum as opt
from fedbench.metrics.optimum import (
    LogisticProblem,
    OptimumNotReached,
    logistic_gradient,
    logistic_hessp,
    logistic_objective,
    read_optimum,
    solve_optimum,
    weights_path,
    write_optimum,
)


def _problem(n=400, d=30, seed=0, density=None, shift=0.3):
    """Features (dense, or CSR of binary features like a9a when density is set) and ±1 labels, not separable."""
    rng = np.random.default_rng(seed)
    if density is None:
        x = rng.normal(size=(n, d))
    else:
        x = (rng.random((n, d)) < density).astype(np.float64)
    w = rng.normal(size=d)
    p = 1.0 / (1.0 + np.exp(-(x @ w - shift)))
    y = np.where(rng.random(n) < p, 1.0, -1.0)
    return x, y


def _dense_reference(w, x, y, lam):
    """F, ∇F, ∇²F by the textbook formulas on a dense x (independent of the module's code)."""
    n = x.shape[0]
    m = y * (x @ w)
    f = np.mean(np.log1p(np.exp(-m))) + lam / 2 * w @ w
    sig = 1.0 / (1.0 + np.exp(m))  # σ(−m)
    g = -(x * (y * sig)[:, None]).sum(axis=0) / n + lam * w
    s = sig * (1.0 - sig)
    h = (x * s[:, None]).T @ x / n + lam * np.eye(x.shape[1])
    return f, g, h


@pytest.mark.parametrize("lam", [1e-2, 1e-4])
@pytest.mark.parametrize("sparse", [False, True])
def test_solution_has_gradient_below_tol_and_is_a_minimum(lam, sparse):
    x, y = _problem(density=0.2 if sparse else None)
    xin = sp.csr_matrix(x) if sparse else x
    r = solve_optimum(xin, y, lam)
    assert r.grad_norm <= 1e-12
    assert np.linalg.norm(logistic_gradient(r.w, xin, y, lam)) == r.grad_norm
    f, g, _ = _dense_reference(r.w, x, y, lam)
    assert np.linalg.norm(g) <= 2e-12  # the textbook formula agrees: rounding differs only
    assert abs(f - r.value) <= 1e-15
    assert r.value == logistic_objective(r.w, xin, y, lam)
    assert (r.lam, r.n, r.d, r.tol) == (lam, 400, 30, 1e-12)
    assert "trust-ncg" in r.method and "gtol=1e-12" in r.method
    # strong convexity: F(w* + δ) − F* ≥ (λ/2)‖δ‖² − ‖∇F(w*)‖‖δ‖, for any δ
    rng = np.random.default_rng(1)
    for scale in (1e-3, 1e-2, 1e-1, 1.0):
        for _ in range(5):
            delta = scale * rng.normal(size=r.d) / np.sqrt(r.d)
            gap = logistic_objective(r.w + delta, xin, y, lam) - r.value
            assert gap > 0
            assert gap >= lam / 2 * delta @ delta - r.grad_norm * np.linalg.norm(delta) - 1e-16


@pytest.mark.parametrize("lam", [1e-2, 1e-4])
def test_agrees_with_scikit_learn(lam):
    from sklearn.linear_model import LogisticRegression

    x, y = _problem(n=300, d=20, seed=2)
    r = solve_optimum(x, y, lam)
    # sklearn minimises C Σ loss + ½‖w‖² = F / λ for C = 1/(λN)
    clf = LogisticRegression(fit_intercept=False, C=1.0 / (lam * len(y)), tol=1e-14, solver="newton-cg",
                             max_iter=1000).fit(x, y)
    w_sk = clf.coef_.ravel()
    gap = logistic_objective(w_sk, x, y, lam) - r.value
    assert -1e-15 <= gap <= 1e-8
    assert np.linalg.norm(w_sk - r.w) <= 1e-4 * max(1.0, np.linalg.norm(r.w))


@pytest.mark.parametrize("lam", [1e-2, 1e-3, 1e-4])
def test_agrees_with_an_independent_newton_solver_to_1e_10(lam):
    """F* against plain damped Newton on the textbook formulas (:func:`_dense_reference`, from
    w = 0 with backtracking, until the step is below 1e-15): the values agree to 1e-10."""
    x, y = _problem(n=500, d=25, seed=4, density=0.2)
    w = np.zeros(x.shape[1])
    for _ in range(100):
        f, g, h = _dense_reference(w, x, y, lam)
        step = np.linalg.solve(h, g)
        t = 1.0
        while _dense_reference(w - t * step, x, y, lam)[0] > f - 1e-4 * t * g @ step and t > 1e-8:
            t /= 2
        w = w - t * step
        if np.linalg.norm(t * step) < 1e-15:
            break
    f_newton = _dense_reference(w, x, y, lam)[0]
    r = solve_optimum(x, y, lam)
    assert abs(r.value - f_newton) <= 1e-10
    assert np.linalg.norm(r.w - w) <= 1e-8 * max(1.0, np.linalg.norm(w))


def test_objective_gradient_hessp_match_finite_differences_and_dense_formulas():
    x, y = _problem(n=200, d=12, seed=3)
    lam = 1e-3
    rng = np.random.default_rng(4)
    w = rng.normal(size=12)
    v = rng.normal(size=12)
    f, g, h = _dense_reference(w, x, y, lam)
    prob = LogisticProblem(x, y, lam)
    assert prob.value(w) == pytest.approx(f, rel=1e-14)
    np.testing.assert_allclose(prob.gradient(w), g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(prob.hessp(w, v), h @ v, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(prob.hessian(w), h, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(logistic_hessp(w, v, x, y, lam), h @ v, rtol=1e-12, atol=1e-15)
    eps = 1e-6
    fd = np.array([(prob.value(w + eps * e) - prob.value(w - eps * e)) / (2 * eps) for e in np.eye(12)])
    np.testing.assert_allclose(fd, prob.gradient(w), rtol=0, atol=1e-9)
    fd_hv = (prob.gradient(w + eps * v) - prob.gradient(w - eps * v)) / (2 * eps)
    np.testing.assert_allclose(fd_hv, prob.hessp(w, v), rtol=0, atol=1e-8)


def test_huge_margins_are_stable():
    x = np.array([[1.0], [-1.0], [2.0]])
    y = np.array([1, 1, -1])
    lam = 0.5
    w = np.array([1e4])  # margins 1e4, −1e4, −2e4: exp would overflow
    f = logistic_objective(w, x, y, lam)
    assert f == pytest.approx((0.0 + 1e4 + 2e4) / 3 + lam / 2 * 1e8, rel=1e-15)
    g = logistic_gradient(w, x, y, lam)
    # −y σ(−m) x per row: 0 (σ(−1e4) underflows), −1·1·(−1) = 1, −(−1)·1·2 = 2
    assert g == pytest.approx([(0.0 + 1.0 + 2.0) / 3 + lam * 1e4], rel=1e-15)
    assert np.isfinite(logistic_hessp(w, np.ones(1), x, y, lam)).all()


def test_dense_sparse_and_float32_give_the_same_optimum(monkeypatch):
    x, y = _problem(n=500, d=40, seed=5, density=0.15)
    lam = 1e-4
    dense = solve_optimum(x, y, lam)
    csr = solve_optimum(sp.csr_matrix(x), y, lam)
    csc = solve_optimum(sp.csc_matrix(x), y, lam)  # converted to CSR
    monkeypatch.setattr(opt, "CHUNK_BYTES", 8 * 40 * 64)  # float32 input: converted 64 rows at a time
    f32 = solve_optimum(x.astype(np.float32), y, lam)  # binary features: float32 is exact
    f32s = solve_optimum(sp.csr_matrix(x.astype(np.float32)), y, lam)
    for other in (csr, csc, f32, f32s):
        assert abs(other.value - dense.value) <= 1e-13
        np.testing.assert_allclose(other.w, dense.w, rtol=0, atol=1e-9)
        assert other.grad_norm <= 1e-12


def test_deterministic():
    x, y = _problem(n=300, d=25, seed=6)
    a = solve_optimum(x, y, 1e-4)
    b = solve_optimum(x, y, 1e-4)
    assert a.value == b.value and a.grad_norm == b.grad_norm and a.iterations == b.iterations
    assert a.w.tobytes() == b.w.tobytes()


def test_labels_zero_one_map_to_minus_one_and_bad_labels_raise():
    x, y = _problem(n=100, d=5, seed=7)
    a = solve_optimum(x, y, 1e-2)
    b = solve_optimum(x, (y > 0).astype(np.int64), 1e-2)
    assert a.value == b.value
    for bad in (np.where(y > 0, 2, 1), np.r_[y[:-1], 0.0], y + 0.5):
        with pytest.raises(ValueError, match=r"labels must be in \{-1, \+1\} or in \{0, 1\}"):
            solve_optimum(x, bad, 1e-2)
    with pytest.raises(ValueError, match="lam must be a positive"):
        solve_optimum(x, y, 0.0)
    with pytest.raises(ValueError, match="rows"):
        solve_optimum(x[:-1], y, 1e-2)
    xn = x.copy()
    xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        solve_optimum(xn, y, 1e-2)
    with pytest.raises(ValueError, match="tol must be"):
        solve_optimum(x, y, 1e-2, tol=0.0)


def test_separable_data_with_tiny_lambda_converges():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(300, 10))
    y = np.sign(x @ rng.normal(size=10))  # linearly separable: without λ there is no minimiser
    r = solve_optimum(x, y, 1e-8)
    assert r.grad_norm <= 1e-12
    assert np.all(y * (x @ r.w) > 0)  # w* separates the data


@pytest.mark.parametrize("dense_max", [opt.DENSE_HESSIAN_MAX_DIM, 0])
def test_newton_polishing_cholesky_and_cg(dense_max):
    x, y = _problem(n=400, d=30, seed=9)
    full = solve_optimum(x, y, 1e-3)
    r = solve_optimum(x, y, 1e-3, max_iter=3, dense_hessian_max_dim=dense_max)  # trust region stops early
    assert r.info["trust_ncg_iterations"] == 3 and r.info["newton_steps"] >= 1
    assert r.info["newton_solver"] == ("CG" if dense_max == 0 else "Cholesky")
    assert r.grad_norm <= 1e-12 and "Newton step" in r.method
    assert abs(r.value - full.value) <= 1e-14


def test_unreachable_tolerance_raises():
    x, y = _problem(n=100, d=5, seed=10)
    with pytest.raises(OptimumNotReached, match=r"\|\|grad F\|\| = .* > tol = 1.0e-30"):
        solve_optimum(x, y, 1e-2, tol=1e-30)


def test_json_round_trip(tmp_path):
    x, y = _problem(n=100, d=8, seed=11)
    r = solve_optimum(x, y, 1e-3)
    path = tmp_path / "optimum" / "a9a_lam1e-3.json"
    write_optimum(r, path)
    assert weights_path(path).name == "a9a_lam1e-3.w.npy" and weights_path(path).exists()
    back = read_optimum(path)
    assert back.value == r.value and back.grad_norm == r.grad_norm  # repr floats: bit for bit
    assert back.w.tobytes() == r.w.tobytes()
    assert (back.method, back.lam, back.n, back.d, back.tol, back.iterations, back.info) == \
        (r.method, r.lam, r.n, r.d, r.tol, r.iterations, r.info)
    assert sorted(p.name for p in path.parent.iterdir()) == ["a9a_lam1e-3.json", "a9a_lam1e-3.w.npy"]
    write_optimum(r, tmp_path / "no_w.json", save_w=False)
    assert read_optimum(tmp_path / "no_w.json").w is None
    assert not weights_path(tmp_path / "no_w.json").exists()
    (tmp_path / "bad.json").write_text(json.dumps({"value": 1.0}))
    with pytest.raises(ValueError, match="not an optimum record"):
        read_optimum(tmp_path / "bad.json")


# F* hard-coded in the FedAc authors' plotting notebook (Yuan & Ma, NeurIPS 2020, Sec. 5; not in the paper text).
PAPER_A9A = {1e-2: 0.3727237615595949, 1e-3: 0.3333407530091771, 1e-4: 0.3245069255709821}


@pytest.mark.parametrize("lam", sorted(PAPER_A9A))
def test_a9a_matches_the_papers_optimum(lam, real_a9a_dir):
    """On the real a9a (tests/conftest.py: real_a9a_dir; skips, saying where it looked, without it)."""
    from sklearn.datasets import load_svmlight_file
    from sklearn.linear_model import LogisticRegression

    x, y = load_svmlight_file(str(real_a9a_dir / "a9a"), n_features=123)  # CSR float64
    assert x.shape == (32561, 123) and x.nnz == 451_592
    r = solve_optimum(x, y, lam)
    # An independent solver on the real data: scikit-learn's Newton-Cholesky, whose objective
    # C Σ log(1 + exp(−y xᵀw)) + ½‖w‖² has the same minimiser for C = 1/(λN).
    sk = LogisticRegression(C=1 / (lam * x.shape[0]), fit_intercept=False, solver="newton-cholesky", tol=1e-15,
                            max_iter=100).fit(x, y)
    assert LogisticProblem(x, y, lam).value(sk.coef_.ravel().astype(np.float64)) == pytest.approx(r.value, abs=1e-14)
    # Ours is certified (‖∇F‖ ≤ 1e-12, so F(w) − F* ≤ ‖∇F‖²/(2λ) ≤ 5e-21); any inexact solution lies above F*,
    # so the authors' value may only be higher. Measured on the real a9a (2026-11-25): higher by 8.6e-10
    # (λ = 1e-4), 9.4e-10 (1e-3) and 1.5e-8 (1e-2): their solver stopped that far short, which shifts
    # their plotted suboptimalities by less than 1.5% of the smallest shown (1e-6, λ = 1e-2).
    assert -1e-14 <= PAPER_A9A[lam] - r.value <= 2e-8, (lam, repr(r.value), PAPER_A9A[lam])
