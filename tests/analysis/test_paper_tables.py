"""fedbench.analysis.paper_tables: what a communication number was bought with stands beside it;
a one-seed table says so."""

from __future__ import annotations

import polars as pl

from fedbench.analysis.paper_tables import load_reference, markdown_paper_table, paper_table

SPEC = {"title": "T2", "number": 2, "metrics": ["uplink_nonzeros"], "scale": 1e7, "participation": "partial",
        "columns": [("feddyn", "FedDyn"), ("fedelasticnet_feddyn", "Alg. 3")],
        "beside": ("test_accuracy", "acc.", 0.01), "notes": []}


def _reference(tmp_path):
    path = tmp_path / "t2.csv"
    path.write_text("table,dataset,partition,participation,rounds,algorithm,paper_algorithm,metric,value,unit\n"
                    "2,cifar10,iid,0.1,200,feddyn,FedDyn,uplink_nonzeros,163.82,1e7\n")
    return load_reference(path)


def test_accuracy_stands_beside_every_communication_number(tmp_path, mr):
    rows = (mr.run_rows([0.5, 0.697], experiment="x", dataset="digits", partition="iid", algorithm="feddyn",
                        uplink_per_round=5_000_000)
            + mr.run_rows([0.2, 0.236], experiment="x", dataset="digits", partition="iid",
                          algorithm="fedelasticnet_feddyn", uplink_per_round=35_000))
    cells = [{"experiment": "x", "dataset": "digits", "partition": "iid", "algorithm": a, "participation": 0.1}
             for a in ("feddyn", "fedelasticnet_feddyn")]
    long = paper_table(mr.frame(rows), _reference(tmp_path), cells, "t2", SPEC)
    md = markdown_paper_table(long, SPEC)
    line = next(x for x in md.splitlines() if "| digits" in x)
    assert "acc. 69.7%" in line and "acc. 23.6%" in line  # FedDyn's and Alg. 3's accuracies, each beside its count
    assert "— / 163.82" in md and "acc. —" not in md.split("— / 163.82")[1].split("|")[0]  # paper-only: no acc.
    assert "one seed" in md and "mean over the seeds" not in md
    assert long.filter(pl.col("metric") == "test_accuracy").height == 2
