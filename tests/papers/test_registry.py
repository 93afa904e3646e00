"""The registry of papers (fedbench.papers): the papers' keys and the outputs each declares; the
check of an experiment's ``paper``; the reference CSVs hold the papers' numbers; one paper's code
version does not depend on the other papers."""

from __future__ import annotations

import polars as pl
import pytest

from fedbench import papers
from fedbench.papers.base import REFERENCE_DIR as REF
from fedbench.papers.fedelasticnet import load_reference


def _cell(experiment, paper, algorithm="fedavg", algorithm_name=None, participation=0.1, seed=0, **kw):
    return {"experiment": experiment, "dataset": "digits", "partition": "iid", "algorithm": algorithm,
            "algorithm_name": algorithm_name or algorithm, "hparams": kw.pop("hparams", {}), "seed": seed,
            "sampling": {"participation": participation}, "paper": paper, **kw}


def test_paper_keys_and_tables():
    assert papers.keys()[:2] == ["fedelasticnet", "elastic_aggregation"]
    assert {"local_update", "fed_minimax"} <= set(papers.keys())
    assert papers.get("fedelasticnet").KEY == "fedelasticnet"
    with pytest.raises(KeyError, match="known papers: fedelasticnet, elastic_aggregation"):
        papers.get("FedProx (Li et al. 2020)")
    assert list(papers.tables([_cell("a", "fedelasticnet"), _cell("b", None)])) == [
        "fedelasticnet_table2", "fedelasticnet_table3", "fedelasticnet_table4"]
    assert list(papers.tables([_cell("a", "elastic_aggregation")])) == ["elastic_aggregation_table1"]
    assert papers.tables([_cell("b", None)]) == {} and papers.figures([_cell("b", None)]) == {}


def test_check_paper_names_the_key_path_and_the_known_papers():
    papers.check_paper("fedelasticnet", "experiments.x.paper")
    papers.check_paper(None, "experiments.x.paper")  # no paper: fine
    for bad in ("FedElasticNet (Kim et al.)", 3):
        with pytest.raises(ValueError, match=r"experiments\.x\.paper: unknown paper .*known papers: fedelasticnet, "
                                             r"elastic_aggregation"):
            papers.check_paper(bad, "experiments.x.paper")

    class MyError(Exception):
        pass

    with pytest.raises(MyError):
        papers.check_paper("nope", "experiments.x.paper", MyError)


def test_each_paper_declares_its_outputs_from_its_own_cells():
    cells = [_cell("p10", "fedelasticnet", "feddyn", delta_histogram={"rounds": [1]}, seed=s) for s in (0, 1)]
    cells += [_cell("sweep", "fedelasticnet", f"a3_{l1:g}", "fedelasticnet_feddyn", hparams={"lambda1": l1})
              for l1 in (1e-2, 1e-4)]
    cells += [_cell("ea", "elastic_aggregation", "elastic_fedavg", hparams={"sensitivity": "momentum"}),
              _cell("ea", "elastic_aggregation", "fedavg"),
              _cell("other", None, "elastic_fedavg", hparams={"sensitivity": "momentum"})]
    tables = papers.tables(cells)
    assert {t.paper for t in tables.values()} == {"fedelasticnet", "elastic_aggregation"}
    t1 = tables["elastic_aggregation_table1"]
    assert t1.cells == [{"experiment": "ea", "dataset": "digits", "partition": "iid", "algorithm": a,
                         "participation": 0.1} for a in ("elastic_fedavg", "fedavg")]
    assert t1.reference.is_file() and t1.reference.parent == REF
    assert len(tables["fedelasticnet_table2"].cells) == 3  # one per (experiment, ..., algorithm), not per seed
    figs = papers.figures(cells)
    assert sorted(figs) == ["elastic_aggregation_boosted", "fedelasticnet_accuracy", "fedelasticnet_lambda1_sweep",
                            "p10_delta_histogram"]
    assert [c["experiment"] for c in figs["elastic_aggregation_boosted"].cells] == ["ea"]  # not "other"
    assert [c["lambda1"] for c in figs["fedelasticnet_lambda1_sweep"].cells] == [1e-2, 1e-4]
    hist = figs["p10_delta_histogram"]
    assert hist.cell_file == "delta_histogram.parquet" and [c["seed"] for c in hist.file_cells] == [0, 1]
    assert hist.cells == [{"experiment": "p10", "dataset": "digits", "partition": "iid", "algorithm": "feddyn",
                           "algorithm_name": "feddyn"}]
    assert figs["fedelasticnet_lambda1_sweep"].cell_file is None  # reads metrics.parquet


def test_a_papers_code_version_is_its_own():
    from fedbench.codeversion import module_closure

    v = {k: papers.code_version(k) for k in papers.keys()}
    assert len(set(v.values())) == len(v) and all(len(x) == 16 for x in v.values())
    # the scorecard's command line reads the registry, which code_version does not follow either
    closure = module_closure("fedbench.papers.fedelasticnet", "fedbench", papers.CODE_VERSION_REGISTRIES)
    assert "fedbench.analysis.scorecard" in closure
    assert "fedbench.papers.elastic_aggregation" not in closure and "fedbench.papers" not in closure


def test_display_name():
    assert papers.display_name("elastic_aggregation") == "Elastic Aggregation (Chen et al., CVPR 2023)"
    assert papers.display_name("paper-000") == "paper-000" and papers.display_name(None) is None


def test_reference_csvs_hold_the_papers_numbers():
    t2 = load_reference(REF / "fedelasticnet_table2.csv")
    assert t2.height == 14 * 6
    one = t2.filter((pl.col("dataset") == "mnist") & (pl.col("partition") == "iid")
                    & (pl.col("algorithm") == "fedprox"))
    assert one.get_column("value").to_list() == [20.3]
    assert set(t2.get_column("unit")) == {"1e7"} and set(t2.get_column("participation")) == {"0.1"}
    t3 = load_reference(REF / "fedelasticnet_table3.csv")
    dyn = t3.filter((pl.col("dataset") == "cifar10") & (pl.col("partition") == "iid")
                    & (pl.col("algorithm") == "feddyn"))
    assert dict(zip(dyn["metric"], dyn["value"])) == {"uplink_entropy_bits": 639.59,
                                                      "uplink_entropy_bits_delta": 221.64}
    t4 = load_reference(REF / "fedelasticnet_table4.csv")
    assert set(t4.get_column("participation")) == {"1.0"}
    sc = t4.filter((pl.col("dataset") == "mnist") & (pl.col("partition") == "dir0.6")
                   & (pl.col("algorithm") == "scaffold"))
    assert sc.get_column("value").to_list() == [530.72]
    t1 = load_reference(REF / "elastic_aggregation_table1.csv")
    acc = t1.filter(pl.col("metric") == "test_accuracy")
    assert dict(zip(acc["algorithm"], acc["value"])) == {"fedavg": 61.22, "elastic_fedavg_average": 61.11,
                                                          "elastic_fedavg": 61.45}


def test_every_table_has_a_reference_file():
    for paper in papers.PAPERS:
        for name, spec in getattr(paper, "TABLES", {}).items():
            assert name.startswith(paper.KEY) and (REF / spec["reference"]).is_file(), name
        if hasattr(paper, "REFERENCE"):  # papers that declare their tables from the cells
            assert paper.REFERENCE.is_file() and paper.REFERENCE.parent == REF
    assert {"fedelasticnet", "elastic_aggregation", "local_update", "fed_minimax"} <= {p.KEY for p in papers.PAPERS}


def test_the_reference_files_are_package_data():
    import tomllib
    from pathlib import Path

    cfg = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    globs = cfg["tool"]["setuptools"]["package-data"]["fedbench.papers"]
    for f in REF.iterdir():
        assert any(f.match(g) for g in globs), f.name
