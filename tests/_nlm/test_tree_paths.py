def test_default_threads_honour_omp_num_threads(monkeypatch):
    # Dask workers set OMP_NUM_THREADS=1: the traversal must not start more threads than that
    from fme._nlm import tree_paths as _tree_paths

    monkeypatch.setattr(_tree_paths, "_cpu_count", lambda: 8)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert _tree_paths._default_threads() == 4
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert _tree_paths._default_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert _tree_paths._default_threads() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "junk")
    assert _tree_paths._default_threads() == 4
