"""Shared by the config tests: their configs and assertions (configs.py) importable under
--import-mode=importlib."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
