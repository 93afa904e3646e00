"""Hyperparameters of an algorithm module: its defaults and their ranges, side by side.

Every algorithm module defines ``HPARAMS`` (name -> default) and ``BOUNDS`` (name -> the
interval a number must lie in, written as in mathematics: ``"[0, inf)"``, ``"(0, 1]"``; a name
without an entry is not range-checked). The config check (:mod:`fedbench.config`) reads both;
the module reads a value with :func:`hparam`.

Inside ``client_step`` and ``client_holdout_step`` a numeric hyperparameter may arrive as a 0-d
tensor (one value per client under vmap: the vectorized engine stacking cells that differ in it,
:mod:`fedbench.engine.rounds.stacking`); those functions read it with :func:`number`, which keeps a
tensor as it is, and compute with it by arithmetic (no ``float()``, ``bool()`` or ``if x != 0``).
Everything else (``client_init``, ``client_final``, ``server_*``) always gets Python numbers.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["hparam", "number"]


def hparam(hparams: dict, defaults: dict, key: str) -> Any:
    """``hparams[key]``, else the module's default ``defaults[key]`` (its ``HPARAMS``)."""
    return hparams.get(key, defaults[key])


def number(value):
    """``float(value)`` for a Python number; a tensor (a 0-d per-client value under vmap) unchanged."""
    return value if torch.is_tensor(value) else float(value)
