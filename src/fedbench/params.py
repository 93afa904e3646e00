"""Resolving a ``{<kind key>: name, **params}`` config against a registry of defaults.

Shared by dataset sources (:data:`fedbench.data.registry.SOURCES`, key ``source``), partition
schemes (:data:`fedbench.data.partition.SCHEMES`, key ``scheme``) and models
(:data:`fedbench.models.MODELS`, key ``name``).
"""

from __future__ import annotations


def resolve_params(cfg, key: str, registry: dict[str, dict], what: str) -> tuple[str, dict]:
    """(name, params with defaults filled in) for ``cfg = {key: name, **params}``.

    Args:
        cfg: the config mapping, e.g. ``{"scheme": "dirichlet", "alpha": 0.3}``.
        key: the key naming the entry, e.g. ``"scheme"`` or ``"source"``.
        registry: name → {parameter: default}.
        what: the noun for messages, e.g. ``"partition"`` or ``"dataset"``.

    Raises:
        ValueError: ``key`` missing, an unknown name, or a parameter the entry does not take;
            the message names the key and lists the allowed values.
    """
    if not isinstance(cfg, dict) or key not in cfg:
        raise ValueError(f"{what} config needs a '{key}' key, one of: {', '.join(registry)} (got {cfg!r})")
    name = cfg[key]
    if name not in registry:
        raise ValueError(f"unknown {what} {key} {name!r}; allowed {key}s: {', '.join(registry)}")
    allowed = registry[name]
    given = {k: v for k, v in cfg.items() if k != key}
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ValueError(
            f"{what} {key} {name!r} has no parameter {', '.join(map(repr, unknown))}; "
            f"allowed parameters: {', '.join(allowed) or 'none'}"
        )
    return name, {k: given.get(k, d) for k, d in allowed.items()}
