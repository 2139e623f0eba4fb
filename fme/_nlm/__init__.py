"""The NLM's method choice and evaluation (paper §5.4): ``evaluate`` (which method, and running it on a
batch) and ``tree_paths`` (reading tree ensembles for the exact NLM).
"""
