"""Snakemake shim for rule delta_histogram_plot: FedElasticNet's Figure 2 for one experiment."""

import sys

sys.stdout = sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821 (snakemake is injected)

from fedbench.analysis.paper_figures import plot_delta_histograms  # noqa: E402

plot_delta_histograms(list(snakemake.input), list(snakemake.params.cells),  # noqa: F821
                      snakemake.output.plot, title=snakemake.wildcards.experiment)  # noqa: F821
