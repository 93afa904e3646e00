"""Fig. 1 of Sharma, Panda & Joshi (TMLR 2023) on our two-client quadratic saddle (τ = (2, 5)):
the real modules' trajectories reach the closed-form fixed points, the distances to the mismatched
and the true saddle shrink linearly with the lr, and the figure and table are written."""

import numpy as np

from fedbench.analysis import minimax_toy as toy
from fedbench.theory import minimax as theory


def test_real_modules_reach_the_closed_form_fixed_points():
    problems = toy.toy_problem()
    for name, normalized in (("local_sgda", False), ("fed_norm_sgda", True)):
        traj = toy.run_rounds(name, problems, toy.P, toy.TAUS, 0.1, 400, (0.0, 3.0))
        fp = theory.fixed_point(problems, toy.P, toy.TAUS, 0.1, 0.1, normalized)
        assert np.abs(traj[-1] - fp).max() <= 1e-8
        one = toy.run_rounds(name, problems, toy.P, toy.TAUS, 0.1, 1, fp)
        assert np.abs(one[1] - fp).max() <= 1e-12


def test_distances_shrink_linearly_and_the_mismatch_stays():
    rows = toy.distance_table(0.1 / 2.0 ** np.arange(7))
    lr = np.array([r["lr"] for r in rows])
    for key in ("local_to_mismatch", "fednorm_to_true", "grad_phi_fednorm"):
        d = np.array([r[key] for r in rows])
        slopes = np.diff(np.log(d)) / np.diff(np.log(lr))
        assert np.all(np.abs(slopes[-3:] - 1.0) < 0.02), (key, slopes)
    gap = np.linalg.norm(theory.saddle(toy.toy_problem(), toy.P * np.array(toy.TAUS))
                         - theory.saddle(toy.toy_problem(), toy.P))
    assert gap > 1.0 and abs(rows[-1]["local_to_true"] - gap) < 0.01
    assert rows[-1]["grad_phi_local"] > 0.9  # Local SGDA's limit is not stationary for Σ p_i f_i
    assert "| 0.1 |" in toy.table_markdown(rows)


def test_cli_writes_figure_and_table(tmp_path, capsys):
    toy.main(["--plot", str(tmp_path / "p" / "toy.png"), "--table", str(tmp_path / "t" / "toy.md"), "--rounds", "5"])
    assert (tmp_path / "p" / "toy.png").stat().st_size > 10_000
    text = (tmp_path / "t" / "toy.md").read_text()
    assert text.count("\n") == 11 and text == capsys.readouterr().out
