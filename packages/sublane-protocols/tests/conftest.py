"""The protocol tests' shared helpers live in ``protocol_fixtures.py`` beside them.

pytest runs with ``--import-mode=importlib``, so this folder is not on ``sys.path`` by itself; the
helper module's name is unique to this package's tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
