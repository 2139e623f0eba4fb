"""Trees and cAMEs (paper §5.5): CTREE as partykit implements it (``ctree``, ``ctree_stats``), CART
(``cart``), tree arguments (``args``), growing and pruning for cAMEs (``grow``), the partition result
(``partition``) and the report's support helpers (``support``).
"""
