"""Shared by the engine tests: their helpers (clients/test_vectorized._spec, _compare,
rounds/test_loop._dataset, ...) importable under --import-mode=importlib, and one torch thread
per test (tiny tensors: intra-op threads only add overhead)."""

import sys
from pathlib import Path

import pytest
import torch

for _sub in ("rounds", "clients", "linear_fast"):
    sys.path.insert(0, str(Path(__file__).parent / _sub))


@pytest.fixture(autouse=True)
def _single_thread():
    """One torch thread for each engine test, the caller's count restored after it."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
