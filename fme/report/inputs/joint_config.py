"""The ``joint_regions:`` key of a report config: its effect ids and tree settings, checked before anything runs.

:func:`check_joint_regions` is called by :func:`fme.report.inputs.config.load_config` once every effect has its
id. Each error names the key, its line, what is allowed and the fix in the config's words, as every config
error does (:func:`~fme.report.inputs.config_errors.located_error`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .config_errors import ConfigError, located_error
from .schema import COUNTERPART, PARTITION_PARAMS

__all__ = ["check_joint_regions", "JOINT_MAX_LEAVES"]

#: Largest number of regions of a joint tree by default, as for one effect's cAME tree (paper §5.5).
JOINT_MAX_LEAVES = 8

_KEY = "joint_regions"


def _error(file: str, lines: dict, path: tuple, message: str) -> ConfigError:
    return located_error(file, lines, (_KEY, *path), message)


def check_joint_regions(file: str, lines: dict, spec: Mapping[str, Any], effects: list[dict]) -> dict[str, Any]:
    """The ``joint_regions`` mapping with its defaults filled in (``method: ctree``, ``max_leaves: 8`` unless
    ``n_partitions`` is given), or a :class:`ConfigError`.

    Parameters
    ----------
    file, lines
        The config file as messages name it and the line of every key path.
    spec : mapping
        ``joint_regions`` as the file gives it (already valid against the JSON Schema).
    effects : list of dict
        The resolved effects (their ``id`` and ``steps``), in the config's order.
    """
    ids = [str(e["id"]) for e in effects]
    known = ", ".join(ids)
    chosen = list(spec["effects"])
    if len(chosen) < 2:
        raise _error(
            file,
            lines,
            ("effects",),
            f"{len(chosen)} effect given; joint regions partition two or more effects at once: list at least two "
            f"ids of effects ({known}), e.g. effects: [{', '.join(ids[:2]) if len(ids) > 1 else 'a, b'}]",
        )
    for j, eid in enumerate(chosen):
        if eid not in ids:
            raise _error(
                file,
                lines,
                ("effects", j),
                f"{eid!r} is not the id of an effect; allowed: the ids of effects ({known}); an effect without "
                "id: its steps' features joined by '-'",
            )
        if chosen.index(eid) != j:
            raise _error(file, lines, ("effects", j), f"{eid!r} is listed twice; list each effect once")
        steps = effects[ids.index(eid)]["steps"]
        if len(steps) == 1 and any(v == "all" or isinstance(v, list) for v in steps.values()):
            raise _error(
                file,
                lines,
                ("effects", j),
                f"effect {eid!r} is one effect per level of a categorical step; joint regions need one fME per "
                "row: give that effect a single level (steps: {feature: level}) or leave it out",
            )
    out = dict(spec)
    method = out.get("method", "ctree")
    other = "cart" if method == "ctree" else "ctree"
    for key in out:
        if key in PARTITION_PARAMS[other]:
            hint = COUNTERPART.get(key)
            fix = f"use {hint} with method: {method}" if hint else f"set method: {other} or remove it"
            name = "a CART" if other == "cart" else "a CTree"
            raise _error(
                file,
                lines,
                (key,),
                f"{key!r} is {name} parameter, not one of method {method}'s ({', '.join(PARTITION_PARAMS[method])});"
                f" {fix}",
            )
    if "n_partitions" in out:
        if out.get("max_leaves") is not None:
            raise _error(
                file,
                lines,
                ("max_leaves",),
                "give either n_partitions (exactly that many regions) or max_leaves (at most), not both",
            )
        return {"method": method, **out, "max_leaves": None}
    return {"method": method, "max_leaves": JOINT_MAX_LEAVES, **out}
