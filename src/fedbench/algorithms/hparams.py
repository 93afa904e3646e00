"""Hyperparameters of an algorithm module: its defaults and their ranges, side by side.

Every algorithm module defines ``HPARAMS`` (name -> default) and ``BOUNDS`` (name -> the
interval a number must lie in, written as in mathematics: ``"[0, inf)"``, ``"(0, 1]"``; a name
without an entry is not range-checked). The config check (:mod:`fedbench.config`) reads both;
the module reads a value with :func:`hparam`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["hparam"]


def hparam(hparams: dict, defaults: dict, key: str) -> Any:
    """``hparams[key]``, else the module's default ``defaults[key]`` (its ``HPARAMS``)."""
    return hparams.get(key, defaults[key])
