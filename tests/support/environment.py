"""What a test needs from the machine: missing under CI is a failure, elsewhere a skip."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def unavailable(message: str) -> NoReturn:
    """Stop the test because the machine lacks something it needs: fail under ``CI``, skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
