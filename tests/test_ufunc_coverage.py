"""Every ufunc NumPy has is in ember.numpy, except those written out here with the reason."""

from __future__ import annotations

import numpy as np

import ember.numpy as enp

# ufuncs ember leaves out on purpose, and why.
EXCLUDED = {
    "isnat": "tests for 'not a time' in datetime64/timedelta64 arrays; ember has no datetime dtypes",
}


def numpy_ufuncs() -> set[str]:
    return {name for name in dir(np) if isinstance(getattr(np, name), np.ufunc)}


def test_every_numpy_ufunc_is_in_enp():
    missing = sorted(n for n in numpy_ufuncs() - EXCLUDED.keys() if not callable(getattr(enp, n, None)))
    assert not missing, f"NumPy ufuncs missing from ember.numpy (add them or list them in EXCLUDED with a reason): {missing}"


def test_exclusions_are_still_needed():
    stale = sorted(n for n in EXCLUDED if n not in numpy_ufuncs() or hasattr(enp, n))
    assert not stale, f"EXCLUDED lists names that NumPy lacks or that ember now has: {stale}"
