"""fme._utils.jit: the kernels' decorator caches on disk where it can and compiles in memory where it cannot."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba.core import caching

from fme._utils.jit import njit


def _total(x):
    s = 0.0
    for v in x:
        s += v
    return s


def test_cached_where_a_cache_can_be_written():
    f = njit(nogil=True)(_total)
    assert f(np.arange(5.0)) == 10.0
    assert f._cache is not None and type(f._cache).__name__ == "FunctionCache"


def test_no_writable_cache_location_compiles_in_memory(monkeypatch):
    """A read-only installation without a writable home: numba's njit(cache=True) raises when the function is
    decorated (so at ``import fme``); fme's decorator compiles without the disk cache instead."""
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # the name before numba 0.61
    monkeypatch.setattr(impl, "_locator_classes", [])  # no place to write, as numba sees it
    with pytest.raises(RuntimeError, match="cannot cache"):
        numba.njit(cache=True)(_total)
    f = njit(nogil=True)(_total)
    assert f(np.arange(5.0)) == 10.0
    assert type(f._cache).__name__ == "NullCache"


def test_other_errors_are_not_hidden(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("something else")

    monkeypatch.setattr(numba, "njit", broken)
    with pytest.raises(RuntimeError, match="something else"):
        njit()(_total)


@pytest.mark.slow
def test_fme_imports_and_runs_where_numba_cannot_cache():
    """End to end, in a fresh process whose only cache locator finds no place (as a read-only installation
    without a writable home): fme imports, the exact NLM runs, the kernel compiled in memory."""
    import os
    import subprocess
    import sys

    code = (
        "import warnings; warnings.simplefilter('ignore')\n"
        "import numpy as np, pandas as pd, fme\n"
        "from sklearn.tree import DecisionTreeRegressor\n"
        "X = pd.DataFrame(np.random.default_rng(0).normal(size=(200, 2)), columns=['a', 'b'])\n"
        "m = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, X.a ** 2)\n"
        "r = fme.fme(m, X, {'a': 1.0}, nlm=True, nlm_method='exact', inference='sample')\n"
        "from fme._nlm import tree_kernel\n"
        "print(r.nlm_method, type(tree_kernel._walk_block._cache).__name__, r.results['nlm'].notna().sum())\n"
    )
    env = {**os.environ, "NUMBA_CACHE_LOCATOR_CLASSES": "numba.core.caching.IPythonCacheLocator"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    method, cache, defined = out.stdout.split()
    assert (method, cache) == ("exact", "NullCache") and int(defined) > 100
