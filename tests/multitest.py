"""statsmodels' multiple-test adjustments, the reference the tests hold ours to.

Its Holm runs ``gc.collect()`` on every call, which changes nothing it returns and took
0.3-0.6 s a call in the full suite's heap: skipped here."""

from __future__ import annotations

import gc
from unittest import mock

import numpy as np
from statsmodels.stats.multitest import multipletests


def adjusted(p: np.ndarray, method: str) -> np.ndarray:
    """``multipletests(p, method=method)``'s adjusted p-values."""
    return _multipletests(p, method)[1]


def rejected(p: np.ndarray, method: str, alpha: float) -> np.ndarray:
    """``multipletests(p, alpha=alpha, method=method)``'s verdicts (True: rejected)."""
    return _multipletests(p, method, alpha)[0]


def _multipletests(p: np.ndarray, method: str, alpha: float = 0.05) -> tuple[np.ndarray, ...]:
    with mock.patch.object(gc, "collect", lambda generation=2: 0):
        reject, adjusted_p, *_ = multipletests(p, alpha=alpha, method=method)
    return np.asarray(reject), np.asarray(adjusted_p)
