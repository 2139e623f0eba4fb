"""Change log against a previous report (checklist §1.7 "a diff against the previous report").

``previous: path/to/results.json`` in a config: at build time :func:`load_previous` reads that file and keeps
a compact record of it in ``build.json`` (so ``fme render`` needs only the report folder); :func:`changelog`
compares it with the new results: ΔAME and whether the two CIs overlap, Δ share of extrapolation points,
changed first splits of the cAME trees, and effects added or removed (matched by effect id, and level).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..inputs.comparison_measures import change_log_quantities
from ..inputs.comparison_measures import compact as compact_record
from ..inputs.config import ReportConfig, config_error
from ..inputs.quantities import Quantity, Unit, model_units, percentage_points, written, written_bounds
from ..inputs.specs import ci_short
from .display import effect_title

__all__ = ["load_previous", "compact", "changelog"]


def _kind(inference: str) -> tuple[str, bool]:
    """(method, whether its covariance was scaled): two delta intervals scaled by different dispersions are
    of one kind; a scaled and an unscaled one are not."""
    method, _, rest = inference.partition(" (")
    return method, bool(rest)


def compact(results: dict) -> dict[str, Any]:
    """The numbers of a results.json the change log compares, per effect variant id, each effect named as the
    report names it (:func:`fme.report.inputs.comparison_measures.compact`)."""
    return compact_record(results, effect_title)


def load_previous(cfg: ReportConfig) -> dict | None:
    """Read ``cfg.previous`` (relative to the config file): its sha256 and :func:`compact` record.

    Raises :class:`~fme.report.inputs.config.ConfigError` naming the key when the file is missing or not a
    results.json of fme.
    """
    rel = cfg.previous
    if not rel:
        return None
    path = cfg.resolve_path(rel)
    if not path.is_file():
        raise config_error(
            cfg,
            ("previous",),
            f"file {rel!r} not found; give the results.json of an earlier "
            "build (e.g. a copy of reports/<name>/results.json)",
        )
    raw = path.read_bytes()
    try:
        results = json.loads(raw.decode("utf-8"))
        record = compact(results)
    except (ValueError, KeyError, TypeError) as exc:
        raise config_error(
            cfg, ("previous",), f"{rel!r} is not a results.json written by fme report ({type(exc).__name__}: {exc})"
        ) from None
    return {"path": str(rel), "sha256": hashlib.sha256(raw).hexdigest(), **record}


def _overlap(a: dict, b: dict, lo: str = "ci_low", hi: str = "ci_high") -> str:
    if None in (a.get(lo), a.get(hi), b.get(lo), b.get(hi)):
        return "-"
    return "yes" if a[lo] <= b[hi] and b[lo] <= a[hi] else "no"


def _interval_cells(new: dict, old: dict) -> tuple[str, str]:
    """(which interval, whether the CIs overlap): the primary intervals when both builds computed the same
    kind; otherwise the fixed-model intervals, which every build has, and the cell says so."""
    a, b = old.get("inference", "sample"), new.get("inference", "sample")
    if _kind(a) == _kind(b):
        return (ci_short(b) if a == b else f"{ci_short(a)} to {ci_short(b)}"), _overlap(new, old)
    fixed = _overlap(new, old, "fixed_ci_low", "fixed_ci_high")
    return f"{ci_short(a)} to {ci_short(b)}", f"{fixed} (fixed-model intervals; the primary ones differ in kind)"


def _signed(q: Quantity | None) -> str:
    """A difference with its sign ("+0.12", "-0.12"; "0.00" when exactly zero)."""
    text = "-" if q is None else written(q)
    return "+" + text if q is not None and (q.value or 0) > 0 and text[0].isdigit() else text


def _ame_cell(q: Quantity) -> str:
    """'2.039 [2.005, 2.074]': an AME and its primary interval with the row's shared decimals."""
    lo, hi = written_bounds(q)
    return f"{written(q)} [{lo}, {hi}]"


def _split(rec: dict, q: Quantity | None) -> str | None:
    """The first split's rule, its threshold written from its quantity."""
    if q is None or rec.get("first_split_feature") is None:
        return rec["first_split"]
    return f"{rec['first_split_feature']} <= {written(q)}"


def identity_rows(now: dict, before: dict) -> list[dict[str, str]]:
    """What the two builds rest on, side by side: the model version, the model's and the data's SHA-256, each
    'changed' or 'unchanged' (or 'not recorded' when a build lacks it: a results.json of an older fme)."""
    rows = []
    for key, name in (
        ("model version", "Model version"),
        ("model sha256", "Model SHA-256"),
        ("data sha256", "Data SHA-256"),
    ):
        a, b = before.get(key), now.get(key)
        state = "not recorded" if a is None or b is None else ("unchanged" if a == b else "changed")
        rows.append({"what": name, "previous": a or "not recorded", "now": b or "not recorded", "state": state})
    return rows


def changelog(results: dict, previous: dict | None, unit: Unit | None = None) -> dict[str, Any] | None:
    """Display rows of the change log (None without a previous report); every number is written from its
    quantity (:func:`fme.report.inputs.comparison_measures.change_quantities`, as results.json types it) in
    ``unit``, the report's (default: a class probability's percentage points, else the model's scale)."""
    if previous is None:
        return None
    if unit is None:
        cls = results.get("target_class")
        unit = percentage_points(f"P({cls})") if cls is not None else model_units("")
    now = compact(results)["effects"]
    before = previous["effects"]
    typed = change_log_quantities(now, before, unit)
    rows = []
    for vid, new in now.items():
        old = before.get(vid)
        if old is None:
            continue
        qs = typed[vid]
        interval, overlap = _interval_cells(new, old)
        ep = "-"
        if "ep_share_difference" in qs:
            ep = (
                f"{written(qs['ep_share_difference'])} pp "
                f"({written(qs['previous_ep_share'])} to {written(qs['ep_share'])})"
            )
        split = "-"
        if new["first_split"] is not None or old["first_split"] is not None:
            a = _split(old, qs.get("previous_split")) or "no tree"
            b = _split(new, qs.get("split")) or "no tree"
            split = f"unchanged: {b}" if a == b else f"changed: {a} to {b}"
        rows.append(
            {
                "label": new["label"],
                "step": new["step"] if new["step"] == old["step"] else f"{old['step']} to {new['step']}",
                "previous": _ame_cell(qs["previous_ame"]),
                "now": _ame_cell(qs["ame"]),
                "delta": _signed(qs.get("ame_difference")),
                "interval": interval,
                "overlap": overlap,
                "ep_share": ep,
                "first_split": split,
            }
        )
    return {
        "path": previous["path"],
        "sha256": previous["sha256"],
        "identity": identity_rows(compact(results).get("identity") or {}, previous.get("identity") or {}),
        "previous_id": f"{previous.get('config_name')}-{(previous.get('config_sha256') or '')[:12]}",
        "rows": rows,
        "added": [now[k]["label"] for k in now if k not in before],
        "removed": [before[k]["label"] for k in before if k not in now],
    }
