"""One look for every figure and table: the colour of each algorithm, the axis of each metric,
titles that fit, numbers with their significant digits.

Every plot of :mod:`fedbench.analysis` and of the paper modules (:mod:`fedbench.papers`) takes
its colours, axes and number formats from here, so that one algorithm has one colour in every
figure and one metric one kind of axis.

- :func:`algorithm_colors`: a colour per algorithm name. The names the shipped configs and
  papers use have a fixed colour (:data:`ALGORITHM_COLORS`); any other name a colour from its
  hash (the same in every figure), moved to a free colour only when two names of one figure
  would share it. A swept cell's name ``label,axis=value,…`` takes its label's hue, darker or
  lighter per value, so the points of one sweep read as one family.
- :func:`metric_axis`: what a metric's axis is: accuracies (fractions in [0, 1]) shown in %,
  limited to [0, 100]; suboptimality and other gaps to an optimum on a log axis; losses linear
  unless positive and spread over two decades or more; counts (floats sent, non-zeros) log.
- :func:`wrap_title`: a title wrapped to the width of its figure.
- :func:`format_sig` / :func:`format_mean_sd`: a number with a fixed count of significant
  digits (``4.1e-04 ± 1.2e-04``, ``2.0922 ± 0.0015``), for metrics on a log scale or whose size
  is not known in advance; accuracies keep their fixed decimals (in %).
"""

from __future__ import annotations

import colorsys
import hashlib
import math
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["ALGORITHM_COLORS", "EXTRA_COLORS", "algorithm_colors", "algorithm_color", "base_label", "MetricAxis",
           "metric_axis", "apply_metric_axis", "wrap_title", "format_sig", "format_mean_sd", "seeds_phrase"]

#: Fixed colours of the algorithm names used by the shipped configs and the papers' figures
#: (FedAc's keys included). Names that appear together in one experiment have distinct colours
#: (tests/analysis/test_style.py checks every shipped config).
ALGORITHM_COLORS = {
    # the default suite and the common baselines
    "fedavg": "#1f77b4", "fedavgm": "#ff7f0e", "fedprox": "#2ca02c", "scaffold": "#d62728", "feddyn": "#9467bd",
    "fedadam": "#e377c2", "fedyogi": "#7570b3", "fedadagrad": "#7f7f7f", "fednova": "#bcbd22",
    # Elastic Aggregation: a darker shade of the base algorithm's hue; elastic (average) cyan
    "elastic_fedavg": "#0b3d6e", "elastic_fedavg_average": "#17becf", "elastic_fedavgm": "#a84a00",
    "elastic_fedprox": "#145214",
    # FedElasticNet: the base's hue, darker
    "fedelasticnet_prox": "#66a61e", "fedelasticnet_scaffold": "#8b0000", "fedelasticnet_feddyn": "#4b2a7b",
    # FedAc (the algorithm keys of fedbench.papers.fedac)
    "fedac": "#e7298a", "fedac_vanilla": "#bcbd22", "fedac_ii": "#7f7f7f", "fedac_ii_code": "#a6761d",
    "mb_sgd": "#1b9e77", "mb_ac_sgd": "#e6ab02",
    # federated minimax
    "local_sgda": "#1f77b4", "local_sgda_m": "#ff7f0e", "fed_norm_sgda": "#2ca02c",
    "local_sgda_plus": "#0b3d6e", "local_sgda_plus_m": "#a84a00", "fed_norm_sgda_plus": "#145214",
    # LocalUpdate
    # (the LocalUpdate members: the darker shade of the named algorithm they generalize)
    "theta_all": "#1f77b4", "theta_last": "#d62728", "lu_all_gd": "#0b3d6e", "lu_last_gd": "#8b0000",
    "lu_all_prox": "#145214", "lu_all_heavy_ball": "#a84a00", "lu_all_nesterov": "#8c564b", "reptile": "#e7298a",
    "maml": "#7f7f7f", "gd": "#1f77b4", "heavy_ball": "#ff7f0e", "nesterov": "#8c564b",
}
#: The colours a name without a fixed one is hashed into (distinct from each other).
EXTRA_COLORS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#0b3d6e", "#a84a00", "#145214",
    "#8b0000", "#4b2a7b", "#000000", "#6a3d9a",
)


def base_label(name: str) -> str:
    """The configured label of a cell's algorithm name: ``theta_all,lr=0.03`` -> ``theta_all``."""
    return name.split(",", 1)[0]


def _hashed(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big") % len(EXTRA_COLORS)


def _shade(color: str, t: float) -> str:
    """``color`` darker (t < 0) or lighter (t > 0) by |t| in [0, 1) of its lightness range."""
    r, g, b = (int(color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, lum, s = colorsys.rgb_to_hls(r, g, b)
    lum = lum + t * (0.85 - lum) if t > 0 else lum * (1 + t)
    r, g, b = colorsys.hls_to_rgb(h, min(max(lum, 0.0), 1.0), s)
    return "#{:02x}{:02x}{:02x}".format(*(round(255 * v) for v in (r, g, b)))


def algorithm_color(name: str) -> str:
    """The colour of one algorithm name on its own (as :func:`algorithm_colors` gives it when no
    other name of the figure claims it)."""
    base = base_label(name)
    return ALGORITHM_COLORS.get(base, EXTRA_COLORS[_hashed(base)])


def algorithm_colors(names: Iterable[str]) -> dict[str, str]:
    """{name: colour} for the algorithm names of one figure (hex strings).

    A fixed name keeps its colour (:data:`ALGORITHM_COLORS`); another name its hashed colour,
    unless a fixed name or an earlier name of ``names`` holds it, then the next free one of
    :data:`EXTRA_COLORS`. Names ``label,…`` of one label (the points of a sweep) share the
    label's hue, from dark to light in the order given.
    """
    names = list(dict.fromkeys(names))
    bases = list(dict.fromkeys(base_label(n) for n in names))
    taken: set[str] = set()
    hue = {}
    for fixed in (True, False):  # the fixed names first, so that a hashed one never takes their colour
        for b in bases:
            if (b in ALGORITHM_COLORS) != fixed:
                continue
            want = ALGORITHM_COLORS[b] if fixed else EXTRA_COLORS[_hashed(b)]
            if want in taken:  # two names of this figure on one colour: the later one moves
                start = EXTRA_COLORS.index(want) if want in EXTRA_COLORS else _hashed(b)
                free = [EXTRA_COLORS[(start + k) % len(EXTRA_COLORS)] for k in range(1, len(EXTRA_COLORS))]
                want = next((c for c in free if c not in taken), want)
            hue[b] = want
            taken.add(want)
    out = {}
    for b in bases:
        members = [n for n in names if base_label(n) == b]
        if len(members) == 1 and members[0] == b:
            out[b] = hue[b]
            continue
        k = len(members)
        for j, n in enumerate(members):
            t = 0.0 if k == 1 else -0.45 + 0.95 * j / (k - 1)  # dark ... light
            out[n] = _shade(hue[b], t)
    return out


# ----------------------------------------------------------------------------------------------
# Axes chosen from the metric


@dataclass(frozen=True)
class MetricAxis:
    """How a metric is drawn: ``label`` (with its unit), ``scale`` (the factor applied to the
    stored value: 100 for a fraction shown in %), ``kind`` (accuracy, gap, loss, count, other),
    ``log`` (None: decided from the values, :meth:`is_log`), ``limits`` (the axis' bounds in
    shown units, None: free)."""

    label: str
    scale: float
    kind: str
    log: bool | None
    limits: tuple[float, float] | None

    def is_log(self, values: Sequence[float]) -> bool:
        """Log axis for these (shown) values: fixed by the kind, else (losses) when every value is
        > 0 and they span a factor of 100 or more."""
        if self.log is not None:
            return self.log
        vals = [v for v in values if v is not None and math.isfinite(v)]
        return bool(vals) and min(vals) > 0 and max(vals) / min(vals) >= 100


_WORDS = {
    "test_accuracy": "test accuracy", "train_accuracy": "train accuracy",
    "test_worst_class_accuracy": "worst-class test accuracy", "suboptimality": "suboptimality F(w) − F*",
    "train_loss": "train loss", "test_loss": "test loss", "train_objective": "train objective",
    "uplink_floats": "cumulative uplink floats (client → server)", "uplink_nonzeros": "cumulative uplink non-zeros",
    "uplink_entropy_bits": "cumulative uplink entropy (bits)", "boosted_pct": "parameters boosted (%)",
}


def metric_axis(metric: str) -> MetricAxis:
    """The axis of ``metric`` (a metrics column): see the module docstring."""
    words = _WORDS.get(metric, metric.replace("_", " "))
    if metric.endswith("accuracy"):
        return MetricAxis(f"{words} (%)", 100.0, "accuracy", False, (0.0, 100.0))
    if metric.endswith("_pct"):
        return MetricAxis(words, 1.0, "accuracy", False, (0.0, 100.0))
    if metric == "suboptimality" or metric.endswith(("_gap", "suboptimality")) or "dist" in metric:
        return MetricAxis(words, 1.0, "gap", True, None)
    if metric.startswith(("uplink_", "downlink_")):
        return MetricAxis(words, 1.0, "count", True, None)
    if "loss" in metric or "objective" in metric:
        return MetricAxis(words, 1.0, "loss", None, None)
    return MetricAxis(words, 1.0, "other", False, None)


def apply_metric_axis(ax, axis: MetricAxis, values: Sequence[float], which: str = "y",
                      log: bool | None = None) -> None:
    """Set ``ax``'s ``which`` axis (``"y"`` or ``"x"``) for ``axis`` and the shown ``values``:
    log or linear (``log`` given: as the figure decided for all its panels), and for a percentage
    limits inside [0, 100] around the data (never past 100)."""
    set_scale = ax.set_yscale if which == "y" else ax.set_xscale
    if (axis.is_log(values) if log is None else log):
        set_scale("log")
        return
    if axis.limits is not None:
        vals = [v for v in values if v is not None and math.isfinite(v)]
        lo_lim, hi_lim = axis.limits
        if vals:
            lo, hi = min(vals), max(vals)
            pad = max(1.0, 0.05 * (hi - lo))
            lo, hi = max(lo_lim, lo - pad), min(hi_lim, hi + pad)
        else:
            lo, hi = lo_lim, hi_lim
        (ax.set_ylim if which == "y" else ax.set_xlim)(lo, hi)


def wrap_title(text: str, fig_width_in: float, fontsize: float = 11.0) -> str:
    """``text`` wrapped into lines that fit a figure ``fig_width_in`` inches wide at ``fontsize``
    points (about 0.55 × fontsize points per character)."""
    chars = max(20, int(fig_width_in * 72 / (0.55 * fontsize)))
    return "\n".join(textwrap.wrap(text, chars, break_on_hyphens=False))


# ----------------------------------------------------------------------------------------------
# Numbers


def format_sig(x: float | None, digits: int = 2, missing: str = "—") -> str:
    """``x`` with ``digits`` significant digits: scientific below 1e-3 and from 1e5 on
    (``4.1e-04``), else positional (``2.1``, ``0.0041``, ``1234``)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return missing
    if x == 0:
        return "0"
    if math.isinf(x):
        return "inf" if x > 0 else "−inf"
    mag = math.floor(math.log10(abs(x)))
    if mag < -3 or mag >= 5:
        return f"{x:.{digits - 1}e}"
    decimals = max(0, digits - 1 - mag)
    return f"{x:.{decimals}f}"


def format_mean_sd(mean: float | None, sd: float | None, digits: int = 2, missing: str = "—",
                   alone: int = 5, sci: bool = False) -> str:
    """``mean ± sd`` with the sd to ``digits`` significant digits and the mean to the same last
    decimal place (at least ``digits`` significant digits of its own): ``4.1e-04 ± 1.2e-04``,
    ``2.0922 ± 0.0015``; the mean alone, to ``alone`` significant digits (``alone`` − 2 in
    scientific notation), when there is no sd (one seed). ``sci``: always scientific (a metric
    on a log scale, e.g. suboptimality: ``5.9e-03 ± 1.8e-03``)."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return missing
    if sci and mean != 0 and math.isfinite(mean):
        if sd is None or (isinstance(sd, float) and not math.isfinite(sd)) or sd == 0:
            return f"{mean:.{max(digits, alone - 2) - 1}e}" + (" ± 0" if sd == 0 else "")
        mdig = max(digits, digits + math.floor(math.log10(abs(mean))) - math.floor(math.log10(sd)))
        return f"{mean:.{mdig - 1}e} ± {sd:.{digits - 1}e}"
    if mean != 0 and not (-3 <= math.floor(math.log10(abs(mean))) < 5):
        alone = max(digits, alone - 2)
    if sd is None or (isinstance(sd, float) and (math.isnan(sd) or math.isinf(sd))):
        return format_sig(mean, alone, missing)
    if sd == 0:
        return f"{format_sig(mean, alone)} ± 0"
    m_mag = math.floor(math.log10(abs(mean))) if mean != 0 else math.floor(math.log10(sd))
    s_mag = math.floor(math.log10(sd))
    if m_mag < -3 or m_mag >= 5:  # scientific, one exponent per number
        mdig = max(digits, digits + m_mag - s_mag)
        return f"{mean:.{mdig - 1}e} ± {sd:.{digits - 1}e}"
    decimals = max(0, digits - 1 - s_mag)
    return f"{mean:.{decimals}f} ± {sd:.{decimals}f}"


def seeds_phrase(n_seeds: int | Iterable[int]) -> str:
    """"one seed" or "mean ± sd over n seeds" (n the largest count, or "over seeds" for mixed)."""
    counts = {int(n_seeds)} if isinstance(n_seeds, int) else {int(n) for n in n_seeds}
    counts.discard(0)
    if not counts or counts == {1}:
        return "one seed"
    if len(counts) == 1:
        return f"mean ± sd over {counts.pop()} seeds"
    return f"mean ± sd over seeds (1 to {max(counts)})"
