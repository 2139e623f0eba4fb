"""The cAME partition of an effect as the report shows it: leaf rows, hyperrectangles, where each cAME holds,
the honest-subspace sentence, the leaf-difference tests and the split-stability sentence (display strings
only; the numbers come from results.json)."""

from __future__ import annotations

from typing import Any

from ..._utils.numfmt import count, fmt_est, fmt_int, fmt_num, fmt_p
from ..inputs import measures
from ..inputs.claims import p_cell
from ..inputs.quantities import RowSet, at_rounding_level, written, written_bounds
from ..inputs.specs import FLAG_DEFAULTS as FLAG_THRESHOLDS
from ..inputs.verdicts import global_test_claim, global_test_record
from ..inputs.wording import count_words

#: Most leaf differences the report's table shows (the rest are in results.json).
MAX_TESTS_SHOWN = 10


def honesty_sentence(p: dict) -> str:
    """Which rows grew the tree and which estimated its leaves, in the report's words."""
    if p.get("honest") is None:  # a results.json written before honest cAMEs
        return ""
    if p["honest"]:
        return (
            f"Honest subspaces: the tree was grown on {fmt_int(p['n_grown'])} of the evaluated rows and every "
            f"leaf's cAME, interval and test uses only the other {fmt_int(p['n_estimated'])} (chosen by a "
            "seeded hash of the row labels), so the intervals hold for the subspaces the tree chose. The "
            "leaves' n counts those estimation rows."
        )
    return (
        "Not honest (partition: honest: false): the tree was grown and its leaves estimated on the same rows, "
        "so the leaf intervals and tests are not adjusted for the tree's choice of splits and are too narrow."
    )


def leaf_test_cells(tests: dict, conf_level: float, table: int, leaves: list[dict] | None = None) -> dict:
    """The leaf-difference tests (Holm-adjusted) as display rows and the global test as a sentence (its claim:
    never a verdict for a test that is not valid). A difference whose standard error is at rounding level next
    to its leaves' cAMEs shows no p-value: its statistic would be rounding noise."""
    rows = []
    # at most MAX_TESTS_SHOWN differences, the smallest adjusted p-values first (8 leaves have 28 pairs); all are in
    # results.json (partition.tests)
    ordered = sorted(tests["rows"], key=lambda r: (r["p_value_adj"] is None, r["p_value_adj"] or 0.0))
    record = global_test_record(tests, leaves)
    for r in ordered[:MAX_TESTS_SHOWN]:
        est, lo, hi = fmt_est(r["estimate"], r["conf_low"], r["conf_high"])
        size = max(record.magnitude, abs(float(r["estimate"] or 0.0)))
        valid = r.get("std_error") is not None and not at_rounding_level(r["std_error"], size)
        rows.append(
            {
                "hypothesis": r["hypothesis"],
                "estimate": est,
                "ci": f"[{lo}, {hi}]",
                "p": p_cell(r["p_value"], valid)
                if valid or r.get("std_error") is None
                else "not valid: SE at rounding level",
                "p_adj": p_cell(r["p_value_adj"], valid),
            }
        )
    claim = global_test_claim(tests, conf_level, leaves)
    glob = claim.text[0].upper() + claim.text[1:] + "."
    if tests.get("left_out"):  # leaves of fewer than 2 estimation rows: no interval, no difference
        glob += (
            f" Not tested: {', '.join(f'leaf {x}' for x in tests['left_out'])} (fewer than 2 rows to estimate "
            "the cAME from: no interval)."
        )
    more = len(tests["rows"]) - len(rows)
    if more > 0:
        glob = (
            f"The table shows the {len(rows)} differences with the smallest adjusted p-values; the other {more} "
            "are in results.json (partition.tests). "
        ) + glob
    return {
        "rows": rows,
        "global": glob,
        "table": table,
        "claim": claim.to_dict(),
        "basis": "estimation rows only (honest)"
        if tests.get("honest")
        else "the rows that grew the tree (not adjusted for the tree's selection)",
        "inference": tests.get("inference", ""),
    }


def splits_sentence(s: dict | None) -> str | None:
    if not s:
        return None
    return (
        f"Across {count_words(s['n_splits'], 'honest splits')} (seeded), the first split was on "
        f"{s['root_split']} in "
        f"{fmt_num(100 * s['share_same_root_split'], 0)}% of them, the trees had {fmt_int(s['n_leaves_min'])} to "
        f"{count_words(s['n_leaves_max'], 'leaves')}, the leaf cAMEs ranged from {fmt_num(s['came_min'], 4)} to "
        f"{fmt_num(s['came_max'], 4)}, and the median p-value of the global test was "
        f"{fmt_p(s['median_global_p_value'])} (twice it, {fmt_p(s['global_p_value_split_adjusted'])}, is a valid "
        "p-value over the splits)."
    )


def head_rows(part: dict) -> tuple[list[dict], str]:
    """The leaf table's rows above the leaves and the caption's sentence on them: all evaluated rows (the AME,
    marked *, as fmeffects' summary marks its root); of an honest partition, then, the rows that estimate the
    leaves (marked +: the leaves' n add up to it and their shares are of it), so the leaves are counted against
    one set of rows and the table says why the two AMEs differ."""
    root = {**part["root"], "label": "all rows *"}
    est = part.get("estimation_root")
    if not part.get("honest") or not est:  # not honest, or a results.json written before
        return [root], "The row marked * is all rows (the AME)."
    n_est, n_grown = int(est["n"]), int(part["root"]["n"]) - int(est["n"])
    return (
        [root, {**est, "label": "estimation rows +"}],
        f"The row marked * is all {fmt_int(part['root']['n'])} evaluated rows (the AME). The row marked + is the "
        f"{count_words(n_est, 'rows')} that estimate the leaves (honest; the tree grew on the other "
        f"{fmt_int(n_grown)}, "
        "so its AME differs): the leaves' n add up to it and every share is of it.",
    )


def leaf_rows(
    part: dict, n_all: int, leaf_n: int = FLAG_THRESHOLDS["leaf_n"], vid: str = "effect", conf_level: float = 0.95
) -> list[dict[str, str]]:
    """The leaf table's rows, those of :func:`head_rows` first; the shares are of its last head row's n (of an
    honest partition the estimation rows; the all-rows row then has none). Shares, CoVs and cANLMs are printed
    from the quantities results.json carries for them (``vid``: the effect variant's id)."""
    rows = []
    heads = head_rows(part)[0]
    honest = len(heads) > 1
    n_all = int(heads[-1]["n"]) if honest else n_all
    total = RowSet("estimation rows" if honest else "evaluated rows", n_all)
    keys = ["root", "estimation_root"][: len(heads)] + [None] * len(part["leaves"])
    for key, leaf in zip(keys, heads + part["leaves"]):
        est, lo, hi = fmt_est(leaf["came"], leaf["came_ci_low"], leaf["came_ci_high"])
        share = "-" if honest and leaf is heads[0] else written(measures.leaf_share(vid, leaf, total, key))
        cov = measures.leaf_cov(vid, leaf, key)
        row = {
            "node": leaf.get("label", str(leaf["node"])),
            "rule": leaf["rule"],
            "n": fmt_int(leaf["n"]),
            "share": share,
            "came": est,
            "ci": f"[{lo}, {hi}]",
            "cov": "-" if cov is None else written(cov),
            "small": int(leaf["n"]) < leaf_n,
        }
        if int(leaf["n"]) < 2:  # no spread to estimate from: no interval (and no test), whatever the method
            row["ci"] = "- (fewer than 2 rows)"
        row.update(canlm="-", canlm_ci="-")
        canlm = measures.leaf_canlm(vid, leaf, conf_level, key)
        if canlm is not None:
            clo, chi = written_bounds(canlm)
            row.update(canlm=written(canlm), canlm_ci=f"[{clo}, {chi}]")
        elif "canlm" in leaf:  # computed for no row of the leaf
            row.update(canlm="-", canlm_ci="[-, -]")
        rows.append(row)
    return rows


#: Most subspaces the leaf tables, hyperrectangles and where-sentences show (a tree of
#: ``max_leaves: null`` may have hundreds; the rest are in ``tables/<effect>-leaves.csv`` and results.json).
MAX_LEAVES_SHOWN = 16  # = fme.report.analysis.figures.MAX_TREE_LEAVES: the dot plot draws the same leaves


def shown_leaves(part: dict, vid: str) -> tuple[dict, str | None]:
    """The partition with at most :data:`MAX_LEAVES_SHOWN` leaves (the largest by n, in node order) and the
    sentence saying what was left out and where it is (None when every leaf is shown)."""
    leaves = part["leaves"]
    if len(leaves) <= MAX_LEAVES_SHOWN:
        return part, None
    keep = sorted(
        sorted(leaves, key=lambda r: (-int(r["n"]), int(r["node"])))[:MAX_LEAVES_SHOWN], key=lambda r: int(r["node"])
    )
    n_left = sum(int(r["n"]) for r in leaves) - sum(int(r["n"]) for r in keep)
    note = (
        f"This partition has {count(len(leaves), 'subspace')}; the tables below show the "
        f"{MAX_LEAVES_SHOWN} with the most rows and leave out "
        f"{count(len(leaves) - MAX_LEAVES_SHOWN, 'subspace')} holding {count(n_left, 'row')}. Every subspace, "
        "with its rule, n, cAME and CI, is in "
        f"tables/{vid}-leaves.csv, and with its hyperrectangle in results.json (partition.leaves). "
        "The config key partition: max_leaves (default 8) prunes the tree to a readable size."
    )
    return {**part, "leaves": keep}, note


def _evaluated(b: dict) -> str | None:
    """'evaluated 5.09017 to 14.4383' for a numeric feature of a leaf (None: not numeric / older results)."""
    if b.get("kind", "numeric") != "numeric" or b.get("eval_min") is None:
        return None
    # the range's quantities as results.json types them (the rows do not change how they are written)
    q = measures.range_quantities(
        "", b["feature"], b["eval_min"], b["eval_max"], RowSet("rows of the leaf", 0), "r", measures.EVALUATED_FORM
    )
    return f"evaluated {written(q['r_min'])} to {written(q['r_max'])}"


def boxes(part: dict) -> dict[str, Any]:
    """Hyperrectangle of every leaf beside its evaluated range, plus EPs per leaf."""
    leaves = part["leaves"]
    feats = [b["feature"] for b in leaves[0]["box"]] if leaves else []
    rows = []
    for i, f in enumerate(feats):
        cells = []
        for leaf in leaves:
            b = leaf["box"][i]
            ev = _evaluated(b)
            cells.append({"text": b["range"], "evaluated": ev or "", "restricted": b["restricted"]})
        rows.append({"feature": f, "cells": cells})
    counts = [leaf.get("n_extrapolation") for leaf in leaves]
    eps = None if all(c is None for c in counts) else [fmt_int(c) for c in counts]
    return {
        "header": [f"leaf {leaf['node']}" for leaf in leaves],
        "rows": rows,
        "n_evaluated": [fmt_int(leaf["n"]) for leaf in leaves],
        "n_extrapolation": eps,
    }


def where_came_holds(part: dict, noun: str = "observations", sample: dict | None = None) -> list[str]:
    """One sentence per leaf: the cAME applies only to the evaluated range of the features split on. ``sample``
    (results.json's ``data.sample``, Dask data beyond ``sample_size``): the evaluated ranges are over the seeded
    sample's rows in the leaf, and the sentence says so beside the leaf's count over all rows."""
    sampled = bool(sample) and not sample.get("all_rows")
    out = []
    for leaf in part["leaves"]:
        split = [b for b in leaf["box"] if b["restricted"] and _evaluated(b)]
        ranges = "; ".join(f"{b['feature']} {_evaluated(b)} (hyperrectangle {b['range']})" for b in split)
        if ranges and sampled:
            ranges = (
                f"over the seeded sample's rows in it ({fmt_int(sample['rows'])} of all "
                f"{count(int(sample['of']), 'row')} drawn), {ranges}"
            )
        text = (
            f"The cAME of leaf {leaf['node']} ({leaf['rule']}) applies only where it was evaluated, "
            f"to its {count_words(leaf['n'], noun)}" + (f": {ranges}" if ranges else "")
        )
        n_ep = leaf.get("n_extrapolation")
        if n_ep:
            text += (
                f"; {count(n_ep, 'extrapolation point')} "
                f"{'falls' if int(n_ep) == 1 else 'fall'} inside this hyperrectangle and "
                f"{'is' if int(n_ep) == 1 else 'are'} not in its cAME"
            )
        out.append(text + ".")
    return out
