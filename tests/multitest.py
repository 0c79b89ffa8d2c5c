"""statsmodels' multiple-test adjustments, the reference the tests hold ours to."""

from __future__ import annotations

import gc
from unittest import mock

import numpy as np
from statsmodels.stats.multitest import multipletests


def adjusted(p: np.ndarray, method: str) -> np.ndarray:
    """``multipletests(p, method=method)``'s adjusted p-values. Its Holm runs
    ``gc.collect()`` on every call, which changes nothing it returns and took 0.3-0.6 s a call
    in the full suite's heap: skipped."""
    with mock.patch.object(gc, "collect", lambda generation=2: 0):
        return np.asarray(multipletests(p, method=method)[1])
