"""rules/aggregate.smk: the Snakemake report opens on the formatted tables (categories sort by name)."""

import re
from pathlib import Path

SMK = (Path(__file__).resolve().parents[2] / "rules" / "aggregate.smk").read_text()


def _categories(ext):
    return re.findall(r'"results/[^"]*\.' + ext + r'",\s*caption=[^,]+,\s*category="([^"]+)"', SMK)


def test_the_html_tables_sort_first_and_the_plots_next():
    html, png, csv = _categories("html"), _categories("png"), _categories("csv")
    assert html and html[0] == "1. Tables"
    everything = set(html) | set(png) | set(csv)
    assert sorted(everything)[0] == "1. Tables"
    assert "2. Plots" in png and all(c > "1. Tables" for c in png + csv)
    for name in ("accuracy_vs_uplink", "train_loss", "comparison"):
        assert f"{name}.png" in SMK


def test_no_functions_in_the_rules_file():
    assert not re.search(r"^def ", SMK, re.M) and "_re" not in SMK
