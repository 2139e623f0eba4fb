"""Report configs: YAML -> a frozen, typed :class:`ReportConfig`, errors naming the key and the file line.

The file is read twice: ``yaml.safe_load`` for the values (never ``yaml.load``:
a config must not be able to construct Python objects) and ``yaml.compose``
for the node tree, which maps every key path to its line. Validation uses a
JSON Schema (:data:`~fme.report.inputs.schema.SCHEMA`, checked with ``jsonschema``)
plus a few checks a schema cannot express (e.g. exactly one model source).

The result is a :class:`ReportConfig` (one :class:`EffectConfig` per effect), with every default filled
in and what the stages need beside the values as typed attributes: the file (:attr:`ReportConfig.path`,
:attr:`~ReportConfig.directory`, :attr:`~ReportConfig.name`), the line of every key
(:attr:`~ReportConfig.lines`, for :func:`config_error`) and which keys the file set itself
(:attr:`~ReportConfig.given`, :attr:`EffectConfig.given`). :meth:`ReportConfig.to_dict` is the resolved
config as ``results.json`` records it; :func:`config_from_dict` reads it back (``fme render``).

Loading the *model* named in a config (a joblib/pickle file or a Python entry
point) executes code; only build reports from configs you trust.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .config_errors import (
    ConfigError,
    DuplicateKey,
    UniqueKeyLoader,
    key_text,
    line_map,
    located_error,
    schema_message,
)
from .schema import COUNTERPART, DEFAULTS, DETECTOR_NAMES, EFFECT_DEFAULTS, PARTITION_PARAMS, SCHEMA

__all__ = [
    "ConfigError",
    "ReportConfig",
    "EffectConfig",
    "SCHEMA",
    "load_config",
    "config_sha256",
    "config_error",
    "config_from_dict",
    "DETECTOR_NAMES",
    "PARTITION_PARAMS",
]


#: A Dask scheduler address: [protocol://]host[:port] (distributed's own forms).
_SCHEDULER = re.compile(
    r"^(?:(?:tcp|tls|inproc|ucx|ws|wss)://)?"
    r"(?:\[[0-9A-Fa-f:]+\]|[A-Za-z0-9_.-]+)(?::(\d{1,5}))?/?$"
)


def scheduler_address_ok(address: str) -> bool:
    """Whether ``address`` has the form of a Dask scheduler address (tcp://10.0.0.5:8786, localhost:8786)."""
    m = _SCHEDULER.match(address.strip())
    return bool(m) and (m.group(1) is None or 0 < int(m.group(1)) <= 65535)


# ------------------------------------------------------------------ the config object
@dataclass(frozen=True)
class EffectConfig:
    """One configured effect with its defaults filled in (``effects[i]``; keys in ``reports/README.md``).

    The parameter mappings (``steps``, ``extrapolation``, ``inference``, ``partition``, ``stability``,
    ``expect``) are passed on to fme as keyword arguments and are never modified.

    Attributes
    ----------
    id, steps, why, nlm, nlm_method, extrapolation, inference, on_extrapolation, partition, stability,
    learner, data_level, conf_level, title, expected_sign, expect
        The effect's keys (``extrapolation``: ``{"method": name, **parameters}``; ``inference``:
        ``{"method": ..., ...}``; ``partition``/``stability``: a mapping or False; ``learner``/``data_level``:
        False or their settings with the ``train_data`` they refit on).
    index : int
        Position of the effect in the config's ``effects`` (the key path of its errors).
    given : frozenset of str
        The keys the config file set for this effect (errors point at them, else at ``steps``).
    level : object or None
        For one level of ``steps: {feature: all}`` or a list of levels: that level (a *variant*,
        :meth:`variant`); None for the effect as configured.
    """

    id: str
    steps: Mapping[str, Any]
    conf_level: float
    inference: Mapping[str, Any]
    extrapolation: Mapping[str, Any]
    why: str = ""
    nlm: bool = True
    nlm_method: str = "auto"
    on_extrapolation: str = "exclude"
    partition: Mapping[str, Any] | bool = False
    stability: Mapping[str, Any] | bool = False
    learner: Mapping[str, Any] | bool = False
    data_level: Mapping[str, Any] | bool = False
    title: str | None = None
    expected_sign: str | None = None
    expect: Mapping[str, Any] | None = None
    index: int = 0
    given: frozenset[str] = frozenset()
    level: Any = None

    def variant(self, feature: str, level: Any) -> EffectConfig:
        """The effect for one level of a categorical step (``{feature: all}`` or a list of levels)."""
        return dataclasses.replace(self, steps={feature: level}, level=level)

    def to_dict(self) -> dict[str, Any]:
        """The effect as the resolved config records it (defaults filled in; ``title``, ``expected_sign``,
        ``expect``, ``learner`` and ``data_level`` only when given)."""
        out = {
            "id": self.id,
            "steps": copy.deepcopy(dict(self.steps)),
            "why": self.why,
            "nlm": self.nlm,
            "nlm_method": self.nlm_method,
            "extrapolation": copy.deepcopy(dict(self.extrapolation)),
            "inference": copy.deepcopy(dict(self.inference)),
            "on_extrapolation": self.on_extrapolation,
            "partition": copy.deepcopy(self.partition),
            "stability": copy.deepcopy(self.stability),
            "conf_level": self.conf_level,
        }
        for key in ("title", "expected_sign", "expect", "learner", "data_level"):
            if key in self.given:
                out[key] = copy.deepcopy(getattr(self, key))
        return out


@dataclass(frozen=True)
class ReportConfig:
    """A report config, validated, with every default filled in (:func:`load_config`).

    Attributes
    ----------
    title, owner, intended_use, model, data, target, effects, ...
        The config's keys (``reports/README.md``); an optional key that is not given is None (``challenger``,
        ``reference_data``, ``test_data``, ``interactions``, ``scheduler``, ``sample_size``, ``previous``,
        ``joint_regions``: the effect ids and tree settings of the joint-regions section, defaults filled in).
        ``model``, ``data`` and the other data sources, ``inference``, ``flags``, ``overview`` and ``figures``
        are mappings, resolved (``flags``: every threshold; ``inference``: ``{"method": ..., ...}``).
    path : Path
        The config file, resolved.
    directory : Path
        Its folder: relative paths in the config are relative to it.
    name : str
        The file's stem (``boston-svm``): the report folder's and the report ID's name.
    lines : Mapping[str, int]
        Key text (``effects[0].steps.x1``) -> 1-based line in the file (:func:`config_error`).
    given : frozenset of str
        The top-level keys the file set (the others are defaults).
    shown : str
        The config's path as the caller gave it (relative or absolute): every message names the file so.
    """

    title: str
    owner: str
    intended_use: str
    model: Mapping[str, Any]
    data: Mapping[str, Any]
    target: str
    effects: tuple[EffectConfig, ...]
    path: Path
    directory: Path
    name: str
    lines: Mapping[str, int] = field(default_factory=dict, repr=False)
    given: frozenset[str] = frozenset()
    shown: str = ""
    out_of_scope: str = ""
    status: str = "Draft"
    signoff: tuple[Mapping[str, str], ...] = ()
    interactions: Any = None
    challenger: Mapping[str, Any] | None = None
    reference_data: Mapping[str, Any] | None = None
    test_data: Mapping[str, Any] | None = None
    target_unit: str = ""
    units: Mapping[str, str] = field(default_factory=dict)
    descriptions: Mapping[str, str] = field(default_factory=dict)
    inference: Mapping[str, Any] = field(default_factory=lambda: {"method": "auto"})
    flags: Mapping[str, float] = field(default_factory=dict)
    overview: Mapping[str, Any] | bool = False
    conf_level: float = 0.95
    seed: int = 0
    timestamp: bool = False
    model_card: bool = False
    observations: str = "observations"
    figures: Mapping[str, Any] = field(default_factory=dict)
    pdf: bool = True
    engine: str = "pandas"
    scheduler: str | None = None
    sample_size: int | None = None
    previous: str | None = None
    joint_regions: Mapping[str, Any] | None = None

    def resolve_path(self, rel: str | Path) -> Path:
        """``rel`` as the config means it: absolute, or relative to the config's folder."""
        p = Path(rel)
        return p if p.is_absolute() else self.directory / p

    def with_target_unit(self, unit: str) -> ReportConfig:
        """The same config with another ``target_unit`` (a classifier's figures: percentage points)."""
        return dataclasses.replace(self, target_unit=unit)

    def to_dict(self) -> dict[str, Any]:
        """The resolved config (defaults filled in), as ``results.json`` and the build cache record it: the
        defaulted keys and the keys the file gave, nothing else."""
        out: dict[str, Any] = {}
        for key in sorted(set(DEFAULTS) | self.given):
            value = getattr(self, key)
            if key == "effects":
                value = [e.to_dict() for e in value]
            elif key == "signoff":
                value = [dict(row) for row in value]
            else:
                value = copy.deepcopy(value if not isinstance(value, Mapping) else dict(value))
            out[key] = value
        return out


def config_error(cfg: ReportConfig, path: tuple, message: str) -> ConfigError:
    """A :class:`ConfigError` ``<file>:<line>: <key>: <message>`` for a key path of a loaded config.

    The line is that of the key (or of its nearest parent given in the file; defaults have none).
    """
    lines = cfg.lines
    p = tuple(path)
    while p and key_text(p) not in lines:
        p = p[:-1]
    return ConfigError(f"{cfg.shown or cfg.path}:{lines.get(key_text(p), 1)}: {key_text(tuple(path))}: {message}")


def _check_partition(file: str, lines: dict, i: int, part: dict) -> None:
    method = part.get("method", "ctree")
    other = "cart" if method == "ctree" else "ctree"
    for key in part:
        if key in PARTITION_PARAMS[other]:
            hint = COUNTERPART.get(key)
            fix = f"use {hint} with method: {method}" if hint else f"set method: {other} or remove it"
            raise located_error(
                file,
                lines,
                ("effects", i, "partition", key),
                f"{key!r} is a {other.upper() if other == 'cart' else 'CTree'} parameter, not one of "
                f"method {method}'s ({', '.join(PARTITION_PARAMS[method])}); {fix}",
            )


#: Largest number of subspaces of a cAME tree by default (a readable tree, paper §5.5).
MAX_LEAVES = 8


def _partition_defaults(file: str, lines: dict, i: int, part: dict) -> dict:
    """The partition with ``max_leaves`` filled in (8) unless ``n_partitions`` fixes the number of subspaces."""
    if "n_partitions" in part:
        if part.get("max_leaves") is not None:
            raise located_error(
                file,
                lines,
                ("effects", i, "partition", "max_leaves"),
                "give either n_partitions (exactly that many subspaces) or max_leaves (at most), not both",
            )
        return {**part, "max_leaves": None}
    return {"method": "ctree", "max_leaves": MAX_LEAVES, **part}


# ------------------------------------------------------------------ public API
def config_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_config(path: str | Path) -> ReportConfig:
    """Read, validate and complete (defaults) a report config.

    Returns a :class:`ReportConfig` with the defaults filled in, the resolved file (``path``,
    ``directory``, ``name``), the line of every key and which keys the file set.

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
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}:{line}: (encoding): the config is not UTF-8 text (byte 0x{data[exc.start]:02x} "
            f"at offset {exc.start}); save the file as UTF-8"
        ) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        lines = line_map(node) if node is not None else {}  # refuses duplicate keys, naming their path
        raw = yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = str(getattr(exc, "problem", None) or exc)
        rows = text.splitlines()
        tab = "\t" in problem or "tab" in problem.lower() or (line <= len(rows) and "\t" in rows[line - 1])
        fix = "; the line contains a tab: YAML does not allow tabs for indentation, indent with spaces" if tab else ""
        if not fix:  # what to do, in the config's words: the opening bracket or quote named by its line
            ctx = getattr(exc, "context_mark", None)
            opened = (
                f" (the {exc.context.split()[-1] if getattr(exc, 'context', None) else 'value'} opened on line "
                f"{ctx.line + 1})"
                if ctx is not None
                else ""
            )
            fix = (
                f"; fix: close every '[' and '{{' with its ']' or '}}'{opened}, put quotes around a value that "
                "contains ': ' or ' #', and indent nested keys with spaces, as in reports/boston-svm.yaml"
            )
        raise ConfigError(f"{path}:{line}: (YAML): invalid YAML: {problem}{fix}") from None
    except DuplicateKey as dup:
        raise ConfigError(
            f"{path}:{dup.line}: {key_text(dup.path)}: duplicate key (first given on line "
            f"{dup.first}); give each key once"
        ) from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}:1: (top level): the config must be a mapping of keys (title:, model:, ...)")
    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(raw), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        key_path, message = schema_message(best)
        raise located_error(str(path), lines, key_path, message)
    cfg = copy.deepcopy(DEFAULTS)
    for key, value in raw.items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            cfg[key] = {**cfg[key], **value}
        else:
            cfg[key] = copy.deepcopy(value)  # never the raw effects themselves (EffectConfig.given)
    from .specs import FLAG_DEFAULTS, engine_problem, normalise_detector, normalise_inference, normalise_level

    address = raw.get("scheduler")
    if isinstance(address, str) and not scheduler_address_ok(address):  # before any computation, not in Dask
        raise located_error(
            str(path),
            lines,
            ("scheduler",),
            f"{address!r} is not a Dask scheduler address; write it as <protocol>://<host>:<port>, e.g. "
            "scheduler: tcp://10.0.0.5:8786 (or remove the key to start a local cluster)",
        )
    problem = engine_problem(raw)
    if problem:
        raise located_error(str(path), lines, problem[0], problem[1])

    cfg["flags"] = {**FLAG_DEFAULTS, **cfg["flags"]}
    cfg["inference"], problem = normalise_inference(raw.get("inference", "auto"))
    if problem:
        raise located_error(str(path), lines, ("inference",), problem)
    if cfg["overview"] is not False:
        cfg["overview"] = {"step": "sd", "extrapolation": "envelope", **cfg["overview"]}
        cfg["overview"]["extrapolation"], bad = normalise_detector(cfg["overview"]["extrapolation"])
        if bad:
            raise located_error(str(path), lines, ("overview", "extrapolation", bad[0]), bad[1])
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
            raise located_error(str(path), lines, key, bad[1])
        full["inference"], problem = normalise_inference(eff.get("inference", cfg["inference"]), cfg["inference"])
        if problem:
            raise located_error(str(path), lines, ("effects", i, "inference"), problem)
        for level_key in ("learner", "data_level"):
            full[level_key], problem = normalise_level(
                level_key, eff.get(level_key, False), full["inference"], cfg["inference"]
            )
            if problem:
                raise located_error(str(path), lines, ("effects", i, level_key), problem)
        if full["extrapolation"]["method"] == "none" and "on_extrapolation" in eff:
            raise located_error(
                str(path),
                lines,
                ("effects", i, "on_extrapolation"),
                "a policy needs a detector; remove it or set extrapolation: envelope",
            )
        lists = [f for f, v in full["steps"].items() if isinstance(v, list)]
        if lists and len(full["steps"]) > 1:
            raise located_error(
                str(path),
                lines,
                ("effects", i, "steps", lists[0]),
                "a list of levels (one effect per level) is allowed only for a single categorical step",
            )
        if isinstance(full["partition"], dict):
            _check_partition(str(path), lines, i, full["partition"])
            full["partition"] = _partition_defaults(str(path), lines, i, full["partition"])
        if (
            "expected_sign" in eff
            and len(full["steps"]) == 1
            and (lists or next(iter(full["steps"].values())) == "all")
        ):
            raise located_error(
                str(path),
                lines,
                ("effects", i, "expected_sign"),
                "an expected sign is ambiguous for one effect per level; give a single level instead",
            )
        _check_expect(str(path), lines, i, full)
        cfg["effects"][i] = full
    cfg["signoff"] = [{"name": "", **row} for row in cfg["signoff"]]
    if "joint_regions" in raw:  # after the effects: their ids are known
        from .joint_config import check_joint_regions

        cfg["joint_regions"] = check_joint_regions(str(path), lines, raw["joint_regions"], cfg["effects"])
    return dataclasses.replace(
        _config_object(cfg, raw, path.resolve(), {key_text(k): v for k, v in lines.items()}), shown=str(path)
    )


def _check_expect(path: str, lines: dict, i: int, full: dict) -> None:
    """Contracts that could never be tested or never hold are config errors (before any computation): one on the
    ANLM of an effect without NLMs, an empty band."""
    expect = full.get("expect") or {}
    if not full.get("nlm", True):
        for key in ("nlm_at_least", "share_linear_at_least"):
            if key in expect:
                raise located_error(
                    path,
                    lines,
                    ("effects", i, "expect", key),
                    "a contract on the NLM of an effect computed without NLMs (nlm: false) can never be "
                    "tested; set nlm: true or remove it",
                )
    if "within" in expect:
        low, high = (float(b) for b in expect["within"])
        if low > high:
            raise located_error(
                path,
                lines,
                ("effects", i, "expect", "within"),
                f"an empty band [{low:g}, {high:g}]: give [low, high] with low <= high",
            )


#: Top-level keys of the schema that are attributes of :class:`ReportConfig` under the same name.
_FIELDS = tuple(SCHEMA["properties"])


def _config_object(cfg: dict[str, Any], raw: dict[str, Any], path: Path, lines: dict[str, int]) -> ReportConfig:
    """The :class:`ReportConfig` of a resolved config mapping (``raw``: the keys the file set)."""
    effects = tuple(
        EffectConfig(
            **{k: v for k, v in eff.items() if k in _EFFECT_FIELDS}, index=i, given=frozenset(raw["effects"][i])
        )
        for i, eff in enumerate(cfg["effects"])
    )
    values = {k: v for k, v in cfg.items() if k in _FIELDS and k != "effects"}
    values["signoff"] = tuple(values.get("signoff", ()))
    return ReportConfig(
        **values, effects=effects, path=path, directory=path.parent, name=path.stem, lines=lines, given=frozenset(raw)
    )


_EFFECT_FIELDS = tuple(f.name for f in dataclasses.fields(EffectConfig) if f.name not in ("index", "given", "level"))


def config_from_dict(resolved: Mapping[str, Any], name: str, path: str | Path = "<results.json>") -> ReportConfig:
    """The :class:`ReportConfig` of a resolved config as :meth:`ReportConfig.to_dict` wrote it (``results.json``).

    ``fme render`` re-renders a built report from it; there is no file, so :attr:`ReportConfig.lines` is
    empty and the effects' ``given`` keys are the optional keys they record.
    """
    cfg = copy.deepcopy(dict(resolved))
    raw = {**cfg, "effects": [{k: None for k in eff} for eff in cfg["effects"]]}
    p = Path(path)
    obj = _config_object(cfg, raw, p, {})
    return dataclasses.replace(obj, name=name)
