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

from ..._utils.numfmt import decimals_for, fmt_g, fmt_num, fmt_percent
from ..inputs.config import ReportConfig, config_error
from ..inputs.quantities import fixed_bounds
from ..inputs.specs import ci_short
from .display import effect_title

__all__ = ["load_previous", "compact", "changelog"]


def _ep_share(v: dict) -> float | None:
    """Share of the evaluated rows left out as extrapolation points (None: not checked or not excluded)."""
    if v.get("detector") is None or v.get("policy") != "exclude" or v.get("n_extrapolation") is None:
        return None
    total = v["n"] + v["n_extrapolation"]
    return v["n_extrapolation"] / total if total else None


def _split_text(split: dict | None) -> str:
    if split is None:
        return "no split"
    if split.get("levels"):
        left = sorted(k for k, side in split["levels"].items() if side == 1)
        return f"{split['feature']} in {{{', '.join(left)}}}"
    return f"{split['feature']} <= {fmt_g(split['value'], 5)}"


def _primary(v: dict) -> tuple[str, Any, Any]:
    """(inference, conf_low, conf_high) of the report's primary interval: the model-uncertainty interval
    when it was computed, else the fixed-model one (also for results.json files written by an older fme).
    A delta interval computed with a scaled covariance is labelled ``delta (<covariance>)``."""
    mc = v.get("model_ci")
    if mc and mc.get("conf_low") is not None:
        method = v.get("inference", "sample")
        covariance = mc.get("covariance") if method == "delta" else None
        return (method if covariance is None else f"delta ({covariance})"), mc["conf_low"], mc["conf_high"]
    return ("sample", *fixed_bounds(v))


def _kind(inference: str) -> tuple[str, bool]:
    """(method, whether its covariance was scaled): two delta intervals scaled by different dispersions are
    of one kind; a scaled and an unscaled one are not."""
    method, _, rest = inference.partition(" (")
    return method, bool(rest)


def compact(results: dict) -> dict[str, Any]:
    """The numbers of a results.json the change log compares, per effect variant id.

    ``inference``/``ci_low``/``ci_high``: the report's primary interval; ``fixed_ci_low``/
    ``fixed_ci_high``: the fixed-model interval over the rows, present in every build.
    """
    out = {}
    # on the scale the report shows its AMEs (a class probability's percentage points), as the table says
    scale = 100.0 if results.get("target_class") is not None else 1.0
    times = lambda x: None if x is None else x * scale  # noqa: E731
    for g in results["effects"]:
        for v in g["variants"]:
            p = v.get("partition")
            method, lo, hi = _primary(v)
            fixed_lo, fixed_hi = fixed_bounds(v)
            lo, hi, fixed_lo, fixed_hi = times(lo), times(hi), times(fixed_lo), times(fixed_hi)
            out[v["id"]] = {
                "label": effect_title(g) + (f": to level {v['level']}" if v.get("level") is not None else ""),
                "step": v["step_label"],
                "ame": times(v["ame"]),
                "inference": method,
                "ci_low": lo,
                "ci_high": hi,
                "fixed_ci_low": fixed_lo,
                "fixed_ci_high": fixed_hi,
                "ep_share": _ep_share(v),
                "first_split": None if not p else _split_text(p.get("root_split")),
            }
    model = results.get("model") or {}
    version = ((results.get("config") or {}).get("model") or {}).get("version")
    return {
        "config_name": results.get("config_name"),
        "config_sha256": results.get("config_sha256"),
        "effects": out,
        "identity": {
            "model version": None if version in (None, "") else str(version),
            "model sha256": model.get("sha256"),
            "data sha256": (results.get("data") or {}).get("sha256"),
        },
    }


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


def _signed(x: float | None, d: int) -> str:
    """A difference with its sign ("+0.12", "-0.12"; "0.00" when exactly zero)."""
    text = fmt_num(x, d)
    return "+" + text if x is not None and x > 0 and text[0].isdigit() else text


def _decimals(*rows: dict) -> int:
    halves = [(r["ci_high"] - r["ci_low"]) / 2 for r in rows if r["ci_low"] is not None and r["ci_high"] is not None]
    return max((decimals_for(h) for h in halves), default=3)


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


def changelog(results: dict, previous: dict | None) -> dict[str, Any] | None:
    """Display rows of the change log (None without a previous report)."""
    if previous is None:
        return None
    now = compact(results)["effects"]
    before = previous["effects"]
    rows = []
    for vid, new in now.items():
        old = before.get(vid)
        if old is None:
            continue
        d = _decimals(new, old)
        interval, overlap = _interval_cells(new, old)
        delta = None if new["ame"] is None or old["ame"] is None else new["ame"] - old["ame"]
        if new["ep_share"] is None or old["ep_share"] is None:
            ep = "-"
        else:
            ep = (
                f"{fmt_percent(new['ep_share'] - old['ep_share'], sign=True, suffix=' pp')} "
                f"({fmt_percent(old['ep_share'])} to {fmt_percent(new['ep_share'])})"
            )
        split = "-"
        if new["first_split"] is not None or old["first_split"] is not None:
            a, b = old["first_split"] or "no tree", new["first_split"] or "no tree"
            split = f"unchanged: {b}" if a == b else f"changed: {a} to {b}"
        rows.append(
            {
                "label": new["label"],
                "step": new["step"] if new["step"] == old["step"] else f"{old['step']} to {new['step']}",
                "previous": f"{fmt_num(old['ame'], d)} [{fmt_num(old['ci_low'], d)}, {fmt_num(old['ci_high'], d)}]",
                "now": f"{fmt_num(new['ame'], d)} [{fmt_num(new['ci_low'], d)}, {fmt_num(new['ci_high'], d)}]",
                "delta": _signed(delta, d),
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
