"""Where a report config's key is and what its error says: the line map, the message, the YAML loader.

:func:`line_map` maps every key path of the composed YAML to the line of its key (refusing a key given twice,
:class:`DuplicateKey`); :func:`located_error` is the :class:`ConfigError` ``<file>:<line>: <key>: <message>``
for a key path; :func:`schema_message` turns a JSON Schema error into the key path and a message in the config's
own words (what is allowed, and the fix); :class:`UniqueKeyLoader` reads the values, refusing duplicate keys.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from .schema import DEFAULTS, EFFECT_DEFAULTS

__all__ = [
    "ConfigError",
    "DuplicateKey",
    "line_map",
    "key_text",
    "located_error",
    "schema_message",
    "UniqueKeyLoader",
]


class ConfigError(ValueError):
    """A report config is invalid; the message names the file, line and key."""


class DuplicateKey(Exception):
    def __init__(self, path: tuple, line: int, first: int) -> None:
        super().__init__(path, line, first)
        self.path, self.line, self.first = path, line, first


def line_map(node: yaml.Node, path: tuple = (), out: dict | None = None) -> dict[tuple, int]:
    """Key path -> 1-based line of its key (mappings) or item (sequences).

    Raises ``DuplicateKey`` for a key given twice in one mapping (YAML would keep the last silently).
    """
    out = {} if out is None else out
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen:
                raise DuplicateKey(path + (key,), line, seen[key])
            seen[key] = line
            out[path + (key,)] = line
            line_map(value_node, path + (key,), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out[path + (i,)] = item.start_mark.line + 1
            line_map(item, path + (i,), out)
    return out


def key_text(path: tuple) -> str:
    text = ""
    for p in path:
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else str(p))
    return text or "(top level)"


def located_error(file: str, lines: dict[tuple, int], path: tuple, message: str) -> ConfigError:
    p = tuple(path)
    while p not in lines and p:
        p = p[:-1]
    return ConfigError(f"{file}:{lines.get(p, 1)}: {key_text(tuple(path))}: {message}")


def _allowed(schema: dict) -> str:
    """The values a schema allows, in words ('a number greater than 0 and less than 1')."""
    kind = schema.get("type")
    kinds = {
        "number": "a number",
        "integer": "a whole number",
        "string": "a text",
        "boolean": "true or false",
        "object": "a mapping of keys",
        "array": "a list",
    }
    text = kinds.get(kind, " or ".join(kinds.get(k, str(k)) for k in kind) if isinstance(kind, list) else "a value")
    bounds = [
        (k, w)
        for k, w in (
            ("exclusiveMinimum", "greater than"),
            ("minimum", "at least"),
            ("exclusiveMaximum", "less than"),
            ("maximum", "at most"),
        )
        if k in schema
    ]
    if bounds:
        text += " " + " and ".join(f"{w} {schema[k]:g}" for k, w in bounds)
    if "enum" in schema:
        text = "one of " + ", ".join(repr(v) for v in schema["enum"])
    return text


def _example(path: tuple, schema: dict) -> str:
    """'conf_level: 0.95': the key with an allowed value (its default when it has one), for the fix."""
    key = next((p for p in reversed(path) if isinstance(p, str)), None)
    if key is None:
        return ""
    value = DEFAULTS.get(key) if len(path) == 1 else None
    if value is None and "exclusiveMinimum" in schema and "exclusiveMaximum" in schema:
        value = (schema["exclusiveMinimum"] + schema["exclusiveMaximum"]) * 0.95
    if value is None or isinstance(value, (dict, list)):
        return ""
    return f"; write it as, e.g., {key}: {json.dumps(value)}"


def _flow(value: Any) -> str:
    """A value as a YAML flow writes it in a config ('{step: sd, extrapolation: envelope}')."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    return value if isinstance(value, str) else json.dumps(value)


def _false_or_settings(err: Any) -> tuple[tuple, str] | None:
    """(key path, message) when ``err`` is of a key that takes ``false`` or a mapping of its settings
    (``overview``, an effect's ``partition`` and ``stability``) and was given neither: what it takes, in the
    config's words, and the key with its default settings as the fix. jsonschema's own words ('False was
    expected' for ``overview: true``) name neither. None for any other error."""
    for e in (err, getattr(err, "parent", None)):
        if e is None or e.validator != "oneOf" or isinstance(e.instance, dict):
            continue
        branches = e.schema["oneOf"]
        settings = [b for b in branches if b.get("type") == "object"]
        if not settings or not any(b.get("const") is False for b in branches):
            continue
        path = tuple(e.absolute_path)
        key = str(path[-1]) if path else ""
        defaults = (EFFECT_DEFAULTS if len(path) > 1 and path[0] == "effects" else DEFAULTS).get(key)
        props = settings[0].get("properties", {})
        named = [
            f"{k} ({' or '.join(map(repr, props[k]['enum']))})" if "enum" in props[k] else k for k in sorted(props)
        ]
        keys = ", ".join(named[:6]) + (f" and {len(named) - 6} more" if len(named) > 6 else "")
        given = (
            json.dumps(e.instance)
            if isinstance(e.instance, (bool, int, float)) or e.instance is None
            else repr(e.instance)
        )
        fix = f"; write, e.g., {key}: {_flow(defaults)} (its default settings)" if isinstance(defaults, dict) else ""
        return path, (
            f"{given} is not allowed: {key} takes a mapping of its settings (keys: {keys}) or false to leave it "
            f"out{fix}"
        )
    return None


def schema_message(err: Any) -> tuple[tuple, str]:
    path = tuple(err.absolute_path)
    choice = _false_or_settings(err)
    if choice is not None:
        return choice
    if err.validator in ("type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        # what was given, what is allowed, and the fix in the config's own words
        return path, f"{err.message}; allowed: {_allowed(err.schema)}{_example(path, err.schema)}"
    if err.validator == "additionalProperties":
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        if extra:
            allowed = ", ".join(sorted(err.schema.get("properties", {})))
            return path + (extra[0],), f"unknown key {extra[0]!r}; allowed keys here: {allowed}"
    if err.validator == "required":
        return path, err.message.replace("is a required property", "is missing (required)")
    if err.validator == "anyOf" and not isinstance(err.instance, dict):
        # a name where a name or a mapping is allowed (extrapolation, inference): name the valid names
        enums = [s["enum"] for s in err.schema["anyOf"] if "enum" in s]
        if enums:
            return path, f"{err.instance!r} is not one of {enums[0]!r}"
    if err.validator == "oneOf" and isinstance(err.instance, dict):
        options = [s.get("required", [None])[0] for s in err.schema["oneOf"] if "required" in s]
        if options:
            return path, f"give exactly one of {', '.join(options)}"
    return path, err.message


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (``steps: {x1: 1, x1: -1}``)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if isinstance(key, (str, int, float, bool)) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first given on line {seen[key]})", key_node.start_mark
                )
            if isinstance(key, (str, int, float, bool)):
                seen[key] = line
        return super().construct_mapping(node, deep=deep)
