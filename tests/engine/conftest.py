"""Make the engine tests' helpers (test_vectorized._spec, _compare) importable under --import-mode=importlib."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
