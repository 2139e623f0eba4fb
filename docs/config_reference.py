"""The report config reference, written from the config's JSON Schema at build time (docs/conf.py).

Every key of :data:`fme.report.inputs.schema.SCHEMA`, nested keys as dotted paths (``effects[].partition.method``),
with its type or allowed values, its default (:data:`~fme.report.inputs.schema.DEFAULTS`,
:data:`~fme.report.inputs.schema.EFFECT_DEFAULTS`, :data:`~fme.report.inputs.schema.LEVEL_DEFAULTS`) and the
schema's description. A key added to the schema appears here at the next ``make docs``.
"""

from __future__ import annotations

import json
from typing import Any

HEADER = """# Report config keys

% Written by docs/config_reference.py from fme.report.inputs.schema at build time: do not edit.

A report config is a YAML file (`reports/boston-svm.yaml` is the bundled example) that `fme report` validates
against a JSON Schema (`fme.report.inputs.schema.SCHEMA`) before anything runs. This page is generated from that
schema when the site is built, so it lists exactly the keys the loader accepts. Nested keys are written as
paths: `effects[].partition.method` is the key `method` of the `partition` mapping of an entry of the
`effects` list. A key marked *required* must be given; a default is what the loader fills in when the key is
left out. How the report is built: [Interpretation reports](../guide/reports.md).
"""


def _fmt(value: Any) -> str:
    return "`" + json.dumps(value, ensure_ascii=False) + "`"


def _type(schema: dict[str, Any]) -> str:
    """A short, readable statement of what a (sub)schema admits."""
    if "const" in schema:
        return "only " + _fmt(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(_fmt(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        alts = schema.get(key, [])
        if alts and all(set(alt) == {"required"} for alt in alts):  # exactly one of these keys
            continue
        if alts:
            return " or ".join(_type(alt) for alt in alts)
    kind = schema.get("type")
    if kind is None:
        return "any" if "properties" not in schema else "mapping"
    kinds = kind if isinstance(kind, list) else [kind]
    words = {"object": "mapping", "array": "list", "number": "number", "integer": "integer", "string": "text",
             "boolean": "true/false", "null": "null"}
    text = " or ".join(words.get(k, k) for k in kinds)
    for key in ("anyOf", "oneOf"):
        alts = schema.get(key, [])
        if alts and all(set(alt) == {"required"} for alt in alts):
            text += " with exactly one of " + ", ".join(f"`{alt['required'][0]}`" for alt in alts)
    if kind == "array" and isinstance(schema.get("items"), dict):
        inner = schema["items"]
        text += " of " + ("mappings" if "properties" in inner else _type(inner))
    bounds = []
    for key, sym in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<")):
        if key in schema:
            bounds.append(f"{sym} {schema[key]}")
    if "minLength" in schema:
        bounds.append("not empty")
    if "pattern" in schema:
        bounds.append(f"matching `{schema['pattern']}`")
    if "minItems" in schema:
        bounds.append(f"at least {schema['minItems']} item(s)")
    if "maxItems" in schema:
        bounds.append(f"at most {schema['maxItems']} item(s)")
    if bounds:
        text += " (" + ", ".join(bounds) + ")"
    return text


def _description(schema: dict[str, Any]) -> str:
    if "description" in schema:
        return schema["description"]
    for key in ("anyOf", "oneOf"):
        for alt in schema.get(key, []):
            if "description" in alt:
                return alt["description"]
    return ""


def _objects(schema: dict[str, Any], suffix: str = "") -> list[tuple[dict[str, Any], str]]:
    """The mapping forms of a schema (itself, its list items, its object alternatives), each with the path
    suffix that reaches it ("[]" through a list)."""
    found = []
    if "properties" in schema:
        found.append((schema, suffix))
    if isinstance(schema.get("items"), dict):
        found += _objects(schema["items"], suffix + "[]")
    for key in ("anyOf", "oneOf"):
        for alt in schema.get(key, []):
            found += _objects(alt, suffix)
    return found


def _rows(schema: dict[str, Any], path: str, defaults: dict[str, Any], out: list[tuple[str, ...]]) -> None:
    for obj, suffix in _objects(schema):
        required = set(obj.get("required", []))
        for name, sub in obj["properties"].items():
            key = f"{path}{suffix}.{name}" if path else name
            default = defaults.get(name, "") if isinstance(defaults, dict) else ""
            out.append((key, _type(sub), "" if default == "" else _fmt(default),
                        "required" if name in required else "", _description(sub)))
            _rows(sub, key, default if isinstance(default, dict) else {}, out)


def rows() -> list[tuple[str, ...]]:
    """(key, admits, default, required, description) for every key, depth first in the schema's order."""
    from fme.report.inputs.schema import DEFAULTS, EFFECT_DEFAULTS, LEVEL_DEFAULTS, SCHEMA

    out: list[tuple[str, ...]] = []
    top = dict(SCHEMA)
    _rows(top, "", DEFAULTS, out)
    # an effect's defaults live apart from the top level's; so do the learner/data-level settings
    effect_defaults = {**EFFECT_DEFAULTS, **LEVEL_DEFAULTS}
    fixed = []
    for key, kind, default, req, desc in out:
        if key.startswith("effects[]."):
            parts = key.replace("[]", "").split(".")[1:]
            value: Any = effect_defaults
            for part in parts:
                value = value.get(part, "") if isinstance(value, dict) else ""
            default = "" if value == "" or isinstance(value, dict) and not value else _fmt(value)
        fixed.append((key, kind, default, req, desc))
    # a key may appear under several alternatives of one schema: keep the first
    seen: set[str] = set()
    unique = []
    for row in fixed:
        if row[0] not in seen:
            seen.add(row[0])
            unique.append(row)
    return unique


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    lines = [HEADER, "| key | admits | default | | description |", "|---|---|---|---|---|"]
    for key, kind, default, req, desc in rows():
        lines.append(f"| `{key}` | {_cell(kind)} | {_cell(default)} | {req} | {_cell(desc)} |")
    return "\n".join(lines) + "\n"
