"""Report configs: YAML -> validated dict, errors naming the key and the file line.

The file is read twice: ``yaml.safe_load`` for the values (never ``yaml.load``:
a config must not be able to construct Python objects) and ``yaml.compose``
for the node tree, which maps every key path to its line. Validation uses a
JSON Schema (:data:`SCHEMA`, checked with ``jsonschema``) plus a few checks a
schema cannot express (e.g. exactly one model source).

Loading the *model* named in a config (a joblib/pickle file or a Python entry
point) executes code; only build reports from configs you trust.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import yaml

__all__ = ["ConfigError", "SCHEMA", "load_config", "config_sha256", "config_error", "DETECTOR_NAMES",
           "PARTITION_PARAMS"]


class ConfigError(ValueError):
    """A report config is invalid; the message names the file, line and key."""


_NAME = {"type": "string", "minLength": 1}
_STEP_VALUE = {"anyOf": [{"type": "number"}, {"type": "string", "minLength": 1}, {"type": "boolean"},
                         {"type": "array", "minItems": 1, "items": {"type": ["string", "number", "boolean"]}}]}
_DATA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "path": {**_NAME, "description": "CSV or Parquet file, relative to the config file; with engine: dask "
                                         "also a Parquet dataset directory or a glob"},
        "dataset": {"enum": ["boston"], "description": "a bundled dataset"},
        "description": {"type": "string"},
        "date": {"type": "string", "description": "date (or period) the data describe"},
        "drop": {"type": "array", "items": _NAME},
    },
    "oneOf": [{"required": ["path"]}, {"required": ["dataset"]}],
}
#: Detector names a config may give (``fme.extrapolation.DETECTORS``) besides ``none``.
DETECTOR_NAMES = ("envelope", "hull", "mcec", "cert", "isolation_forest", "lof")
_CTREE_PARAMS = {
    "minbucket": {"type": "number", "exclusiveMinimum": 0},
    "minsplit": {"type": "number", "exclusiveMinimum": 0},
    "alpha": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    "maxdepth": {"type": "integer", "minimum": 1},
    "testtype": {"enum": ["Bonferroni", "Univariate", "Teststatistic", "teststatistic",
                          "bonferroni", "univariate"]},
    "mincriterion": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
}
_CART_PARAMS = {
    "min_samples_leaf": {"type": "integer", "minimum": 1},
    "min_samples_split": {"type": "integer", "minimum": 2},
    "max_depth": {"type": "integer", "minimum": 1},
    "max_leaf_nodes": {"type": "integer", "minimum": 2},
    "min_impurity_decrease": {"type": "number", "minimum": 0},
    "ccp_alpha": {"type": "number", "minimum": 0},
}
#: Tree parameters per partition method (partykit's names for CTree, scikit-learn's for CART).
PARTITION_PARAMS = {"ctree": tuple(_CTREE_PARAMS), "cart": tuple(_CART_PARAMS)}
#: A parameter of one method -> its counterpart in the other (for "did you mean" messages).
_COUNTERPART = {"minbucket": "min_samples_leaf", "minsplit": "min_samples_split", "maxdepth": "max_depth"}
_COUNTERPART.update({v: k for k, v in list(_COUNTERPART.items())})
_DETECTOR = {
    "anyOf": [
        {"enum": [*DETECTOR_NAMES, "none"]},
        {"type": "object", "required": ["method"],
         "properties": {"method": {"enum": [*DETECTOR_NAMES, "none"]}},
         "additionalProperties": {"type": ["number", "string", "boolean", "null"]},
         "description": "a detector with parameters (checked against its constructor)"},
    ],
}
_INFERENCE_METHODS = ["auto", "delta", "bootstrap", "sample"]
_INFERENCE = {
    "anyOf": [
        {"enum": _INFERENCE_METHODS},
        {"type": "object", "additionalProperties": False, "required": ["method"],
         "properties": {"method": {"enum": _INFERENCE_METHODS}, "train_data": _DATA,
                        "n_resamples": {"type": "integer", "minimum": 2, "maximum": 100000},
                        "ci": {"enum": ["percentile", "normal"]},
                        "n_jobs": {"type": "integer"}}},
    ],
}
#: A fitted model: a joblib file or an entry point (module:function), for ``model`` and ``challenger``.
_MODEL = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "entry_point": {"type": "string", "pattern": r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$"},
        "joblib": _NAME,
        "description": {"type": "string"},
        "prediction_scale": {"type": "string"},
        "version": {"type": ["string", "number"], "description": "the model's version (audit trail)"},
        "target_class": {"type": ["string", "integer", "boolean"],
                         "description": "class whose predicted probability is explained (classifiers)"},
    },
    "oneOf": [{"required": ["entry_point"]}, {"required": ["joblib"]}],
}
_PARTITION = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "method": {"enum": ["ctree", "cart"]},
        "features": {"type": "array", "items": _NAME, "minItems": 1},
        "n_partitions": {"type": "integer", "minimum": 2},
        "max_leaves": {"type": ["integer", "null"], "minimum": 2,
                       "description": "prune the grown tree to at most this many subspaces (default 8; null: the "
                                      "grown tree, unpruned, with the method's own defaults)"},
        "honest": {"type": "boolean",
                   "description": "grow the tree on a seeded part of the rows and estimate the leaves on the "
                                  "other (default true; false: the paper's procedure, intervals not adjusted)"},
        "honest_fraction": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1,
                            "description": "share of the evaluated rows that grow the tree (default 0.5)"},
        "n_splits": {"type": "integer", "minimum": 1, "maximum": 200,
                     "description": "repeat the honest split this many times and report its stability"},
        **_CTREE_PARAMS,
        **_CART_PARAMS,
    },
}
_STABILITY = {
    "type": "object",
    "additionalProperties": False,
    "description": "refit the partition on random subsamples (fme.partition_stability)",
    "properties": {
        "subsamples": {"type": "integer", "minimum": 2, "maximum": 1000},
        "fraction": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    },
}
_EFFECT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["steps"],
    "properties": {
        "id": {"type": "string", "pattern": "^[A-Za-z0-9_-]+$"},
        "title": _NAME,
        "steps": {"type": "object", "minProperties": 1, "additionalProperties": _STEP_VALUE},
        "why": {"type": "string"},
        "nlm": {"type": "boolean"},
        "nlm_method": {"enum": ["auto", "exact", "gauss-kronrod", "gauss-legendre", "simpson38"]},
        "extrapolation": _DETECTOR,
        "inference": _INFERENCE,
        "on_extrapolation": {"enum": ["exclude", "keep", "shrink"]},
        "partition": {"oneOf": [{"type": "boolean", "const": False}, _PARTITION]},
        "stability": {"oneOf": [{"type": "boolean", "const": False}, _STABILITY]},
        "conf_level": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "expected_sign": {"enum": ["+", "-"],
                          "description": "direction the domain owner expects for the AME (plausibility check)"},
        "expect": {"type": "object", "additionalProperties": False, "minProperties": 1,
                   "description": "effect contracts, tested (fme report --check exits 3 when one is not met)",
                   "properties": {
                       "sign": {"enum": ["+", "-"]},
                       "within": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
                       "at_least": {"type": "number"}, "at_most": {"type": "number"},
                       "nlm_at_least": {"type": "number", "maximum": 1},
                       "share_linear_at_least": {"type": "number", "minimum": 0, "maximum": 1},
                       "max_extrapolated": {"type": "number", "minimum": 0, "maximum": 1}}},
    },
}
_SIGNOFF = {
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["role"],
        "properties": {"role": _NAME, "name": {"type": "string"}},
    },
}
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "fme interpretation report config",
    "type": "object",
    "additionalProperties": False,
    "required": ["title", "owner", "intended_use", "model", "data", "target", "effects"],
    "properties": {
        "title": _NAME,
        "owner": _NAME,
        "intended_use": _NAME,
        "out_of_scope": {"type": "string"},
        "status": {"enum": ["Draft", "Final"]},
        "signoff": _SIGNOFF,
        "model": _MODEL,
        "interactions": {
            "description": "feature pairs whose interaction (second difference) the report estimates, or auto",
            "oneOf": [{"const": "auto"},
                      {"type": "object", "additionalProperties": False, "required": ["auto"],
                       "properties": {"auto": {"type": "integer", "minimum": 2, "maximum": 20}}},
                      {"type": "array", "minItems": 1, "items": {
                          "type": "object", "additionalProperties": False, "required": ["a", "b"],
                          "properties": {"a": {"type": "object", "minProperties": 1},
                                         "b": {"type": "object", "minProperties": 1}}}}]},
        "challenger": {**_MODEL, "description": "a second model compared effect by effect on the same rows "
                                                 "(champion and challenger)"},
        "data": _DATA,
        "reference_data": _DATA,
        "test_data": _DATA,
        "target": _NAME,
        "target_unit": {"type": "string"},
        "units": {"type": "object", "additionalProperties": {"type": "string"}},
        "descriptions": {"type": "object", "additionalProperties": {"type": "string"},
                         "description": "feature -> what it measures (feature dictionary)"},
        "inference": _INFERENCE,
        "flags": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "ep_share": {"type": "number", "minimum": 0, "maximum": 1},
                "anlm": {"type": "number", "maximum": 1},
                "leaf_anlm": {"type": "number", "maximum": 1},
                "leaf_n": {"type": "integer", "minimum": 1},
                "ari": {"type": "number", "minimum": -1, "maximum": 1},
                "dispersion": {"type": "number", "minimum": 0},
                "bootstrap_resamples": {"type": "integer", "minimum": 2},
            },
        },
        "overview": {"oneOf": [
            {"type": "boolean", "const": False},
            {"type": "object", "additionalProperties": False,
             "properties": {"step": {"enum": ["unit", "sd"]}, "extrapolation": _DETECTOR}},
        ]},
        "conf_level": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "seed": {"type": "integer", "minimum": 0},
        "timestamp": {"type": "boolean"},
        "model_card": {"type": "boolean",
                       "description": "also write model_card.json (Model Card Toolkit schema 0.0.2)"},
        "observations": _NAME,
        "effects": {"type": "array", "minItems": 1, "items": _EFFECT},
        "figures": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_points": {"type": "integer", "minimum": 10},
                "width": {"type": "number", "exclusiveMinimum": 0},
                "png_dpi": {"type": "integer", "minimum": 50, "maximum": 600},
            },
        },
        "pdf": {"type": "boolean"},
        "engine": {"enum": ["pandas", "dask"],
                   "description": "dask: data paths may be Parquet dataset directories or globs, read with Dask; "
                                  "the analysis runs out of core (summaries over all rows, per-row figures from "
                                  "a seeded sample of sample_size rows)"},
        "scheduler": {**_NAME, "description": "address of a Dask scheduler (engine: dask; default: a local "
                                              "cluster started and closed by the build)"},
        "sample_size": {"type": "integer", "minimum": 10,
                        "description": "engine: dask: rows of the seeded sample behind the per-row figures and "
                                       "tables (default 100000; the summaries are over all rows)"},
        "previous": {**_NAME, "description": "results.json of an earlier build: adds a change-log section"},
    },
}

DEFAULTS: dict[str, Any] = {
    "status": "Draft", "conf_level": 0.95, "seed": 0, "timestamp": False, "pdf": True,
    "out_of_scope": "", "units": {}, "target_unit": "", "descriptions": {}, "inference": "auto", "flags": {},
    "overview": {"step": "sd", "extrapolation": "envelope"},
    "figures": {"max_points": 2000, "width": 6.4, "png_dpi": 200},
    "signoff": [{"role": "Preparer", "name": ""}, {"role": "Independent reviewer", "name": ""},
                {"role": "Approver", "name": ""}],
}
EFFECT_DEFAULTS: dict[str, Any] = {
    "why": "", "nlm": True, "nlm_method": "auto", "extrapolation": "envelope",
    "on_extrapolation": "exclude", "partition": {"method": "ctree", "max_leaves": 8},
    "stability": {"subsamples": 20, "fraction": 0.5},
}


# ------------------------------------------------------------------ line numbers
class _DuplicateKey(Exception):
    def __init__(self, path: tuple, line: int, first: int) -> None:
        super().__init__(path, line, first)
        self.path, self.line, self.first = path, line, first


def _line_map(node: yaml.Node, path: tuple = (), out: dict | None = None) -> dict[tuple, int]:
    """Key path -> 1-based line of its key (mappings) or item (sequences).

    Raises ``_DuplicateKey`` for a key given twice in one mapping (YAML would keep the last silently).
    """
    out = {} if out is None else out
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen:
                raise _DuplicateKey(path + (key,), line, seen[key])
            seen[key] = line
            out[path + (key,)] = line
            _line_map(value_node, path + (key,), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out[path + (i,)] = item.start_mark.line + 1
            _line_map(item, path + (i,), out)
    return out


def _key_text(path: tuple) -> str:
    text = ""
    for p in path:
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else str(p))
    return text or "(top level)"


def _fail(file: str, lines: dict[tuple, int], path: tuple, message: str) -> ConfigError:
    p = tuple(path)
    while p not in lines and p:
        p = p[:-1]
    return ConfigError(f"{file}:{lines.get(p, 1)}: {_key_text(tuple(path))}: {message}")


def _schema_message(err: Any) -> tuple[tuple, str]:
    path = tuple(err.absolute_path)
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
                    None, None, f"duplicate key {key!r} (first given on line {seen[key]})", key_node.start_mark)
            if isinstance(key, (str, int, float, bool)):
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def config_error(cfg: dict, path: tuple, message: str) -> ConfigError:
    """A :class:`ConfigError` ``<file>:<line>: <key>: <message>`` for a key path of a loaded config.

    The line is that of the key (or of its nearest parent given in the file; defaults have none).
    """
    lines = cfg.get("_lines", {})
    p = tuple(path)
    while p and _key_text(p) not in lines:
        p = p[:-1]
    return ConfigError(f"{cfg.get('_path', '<config>')}:{lines.get(_key_text(p), 1)}: {_key_text(tuple(path))}: "
                       f"{message}")


def _check_partition(file: str, lines: dict, i: int, part: dict) -> None:
    method = part.get("method", "ctree")
    other = "cart" if method == "ctree" else "ctree"
    for key in part:
        if key in PARTITION_PARAMS[other]:
            hint = _COUNTERPART.get(key)
            fix = f"use {hint} with method: {method}" if hint else f"set method: {other} or remove it"
            raise _fail(file, lines, ("effects", i, "partition", key),
                        f"{key!r} is a {other.upper() if other == 'cart' else 'CTree'} parameter, not one of "
                        f"method {method}'s ({', '.join(PARTITION_PARAMS[method])}); {fix}")


#: Largest number of subspaces of a cAME tree by default (issue 22 item 2: a readable tree, paper §5.5).
MAX_LEAVES = 8


def _partition_defaults(file: str, lines: dict, i: int, part: dict) -> dict:
    """The partition with ``max_leaves`` filled in (8) unless ``n_partitions`` fixes the number of subspaces."""
    if "n_partitions" in part:
        if part.get("max_leaves") is not None:
            raise _fail(file, lines, ("effects", i, "partition", "max_leaves"),
                        "give either n_partitions (exactly that many subspaces) or max_leaves (at most), not both")
        return {**part, "max_leaves": None}
    return {"method": "ctree", "max_leaves": MAX_LEAVES, **part}


# ------------------------------------------------------------------ public API
def config_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_config(path: str | Path) -> dict[str, Any]:
    """Read, validate and complete (defaults) a report config.

    Returns a plain dict with the defaults filled in, plus ``_path`` (the
    resolved config file), ``_dir`` and ``_name`` (file stem).

    Raises
    ------
    ConfigError
        With ``<file>:<line>: <key>: <problem>``.
    """
    import jsonschema

    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}:1: (file): cannot read the config: {exc.strerror}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: (encoding): the config is not UTF-8 text (byte 0x{data[exc.start]:02x} "
                          f"at offset {exc.start}); save the file as UTF-8") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        lines = _line_map(node) if node is not None else {}  # refuses duplicate keys, naming their path
        raw = yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = str(getattr(exc, "problem", None) or exc)
        rows = text.splitlines()
        tab = "\t" in problem or "tab" in problem.lower() or (line <= len(rows) and "\t" in rows[line - 1])
        fix = "; the line contains a tab: YAML does not allow tabs for indentation, indent with spaces" if tab else ""
        raise ConfigError(f"{path}:{line}: (YAML): invalid YAML: {problem}{fix}") from None
    except _DuplicateKey as dup:
        raise ConfigError(f"{path}:{dup.line}: {_key_text(dup.path)}: duplicate key (first given on line "
                          f"{dup.first}); give each key once") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}:1: (top level): the config must be a mapping of keys (title:, model:, ...)")
    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(raw), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        key_path, message = _schema_message(best)
        raise _fail(str(path), lines, key_path, message)
    cfg = copy.deepcopy(DEFAULTS)
    for key, value in raw.items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            cfg[key] = {**cfg[key], **value}
        else:
            cfg[key] = copy.deepcopy(value)  # never the raw effects themselves (_raw_effects)
    from .specs import FLAG_DEFAULTS, engine_problem, normalise_detector, normalise_inference

    problem = engine_problem(raw)
    if problem:
        raise _fail(str(path), lines, problem[0], problem[1])

    cfg["flags"] = {**FLAG_DEFAULTS, **cfg["flags"]}
    cfg["inference"], problem = normalise_inference(raw.get("inference", "auto"))
    if problem:
        raise _fail(str(path), lines, ("inference",), problem)
    if cfg["overview"] is not False:
        cfg["overview"] = {"step": "sd", "extrapolation": "envelope", **cfg["overview"]}
        cfg["overview"]["extrapolation"], bad = normalise_detector(cfg["overview"]["extrapolation"])
        if bad:
            raise _fail(str(path), lines, ("overview", "extrapolation", bad[0]), bad[1])
    ids = set()
    for i, eff in enumerate(cfg["effects"]):
        full = {**copy.deepcopy(EFFECT_DEFAULTS), **eff}
        if isinstance(eff.get("stability"), dict):
            full["stability"] = {**EFFECT_DEFAULTS["stability"], **eff["stability"]}
        full.setdefault("conf_level", cfg["conf_level"])
        full.setdefault("id", "-".join(str(f) for f in eff["steps"]))
        full["id"] = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(full["id"]))
        if full["id"] in ids:
            full["id"] = f"{full['id']}-{i + 1}"
        ids.add(full["id"])
        full["extrapolation"], bad = normalise_detector(full["extrapolation"])
        if bad:
            key = ("effects", i, "extrapolation") + (() if isinstance(eff.get("extrapolation"), str) else (bad[0],))
            raise _fail(str(path), lines, key, bad[1])
        full["inference"], problem = normalise_inference(eff.get("inference", cfg["inference"]), cfg["inference"])
        if problem:
            raise _fail(str(path), lines, ("effects", i, "inference"), problem)
        if full["extrapolation"]["method"] == "none" and "on_extrapolation" in eff:
            raise _fail(str(path), lines, ("effects", i, "on_extrapolation"),
                        "a policy needs a detector; remove it or set extrapolation: envelope")
        lists = [f for f, v in full["steps"].items() if isinstance(v, list)]
        if lists and len(full["steps"]) > 1:
            raise _fail(str(path), lines, ("effects", i, "steps", lists[0]),
                        "a list of levels (one effect per level) is allowed only for a single categorical step")
        if isinstance(full["partition"], dict):
            _check_partition(str(path), lines, i, full["partition"])
            full["partition"] = _partition_defaults(str(path), lines, i, full["partition"])
        if "expected_sign" in eff and len(full["steps"]) == 1 and (
                lists or next(iter(full["steps"].values())) == "all"):
            raise _fail(str(path), lines, ("effects", i, "expected_sign"),
                        "an expected sign is ambiguous for one effect per level; give a single level instead")
        cfg["effects"][i] = full
    cfg["signoff"] = [{"name": "", **row} for row in cfg["signoff"]]
    cfg["_path"] = str(path.resolve())
    cfg["_dir"] = str(path.resolve().parent)
    cfg["_name"] = path.stem
    cfg["_lines"] = {_key_text(k): v for k, v in lines.items()}
    cfg["_raw_effects"] = copy.deepcopy(raw["effects"])  # which keys an effect set itself (error lines)
    return cfg
