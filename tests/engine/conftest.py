"""Shared by the engine tests: their helpers (test_vectorized._spec, _compare) importable under
--import-mode=importlib, and one torch thread per test (tiny tensors: intra-op threads only add
overhead)."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _single_thread():
    """One torch thread for each engine test, the caller's count restored after it."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
