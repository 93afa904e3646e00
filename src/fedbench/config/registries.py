"""The library's registries a config names entries of: dataset sources, partition schemes and
models. Imported lazily: importing them pulls in torch."""

from __future__ import annotations


def _sources() -> dict:
    from fedbench.data.registry import SOURCES

    return SOURCES


def _schemes() -> dict:
    from fedbench.data.partition import SCHEMES

    return SCHEMES


def _models() -> dict:
    from fedbench.models import MODELS

    return MODELS


# What a missing registry key may name (listed in the "missing" message).
_REGISTRY_OF_KEY = {"source": _sources, "scheme": _schemes, "name": _models}
