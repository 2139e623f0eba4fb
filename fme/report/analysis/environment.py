"""The locked environment: read ``requirements.lock``, compare it with what is installed.

``make test`` and ``make demo`` install exactly the lock (every package pinned,
with hashes; ``make lock`` writes it with ``uv pip compile --universal``). This
module is what the rest of the project knows of it:

* :func:`read_lock` parses the lock's ``name==version ; marker`` lines;
* :func:`locked_pins` keeps those whose environment marker holds here (the
  universal lock may pin, e.g., one numpy for Python 3.11 and another for 3.12);
* :func:`lock_record` is what a report records: the lock's sha256 and whether
  the running interpreter's packages equal its pins (and which do not);
* ``python -m fme.report.analysis.environment --conda LOCK`` writes ``environment.yml`` from the
  lock (Linux, CPython 3.11) and ``--diff LOCK`` lists the installed packages
  that differ from it (``make test-latest`` prints this).

Only the standard library and ``packaging`` are imported here, so the module
works in an environment that is not (yet) the locked one.
"""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

__all__ = [
    "Pin",
    "LOCK_NAME",
    "find_lock",
    "read_lock",
    "locked_pins",
    "lock_differences",
    "lock_record",
    "conda_environment",
]

LOCK_NAME = "requirements.lock"
#: The interpreter environment.yml is written for (conda pins ``python=3.11``).
CONDA_MARKER_ENV = {
    "python_version": "3.11",
    "python_full_version": "3.11.0",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "os_name": "posix",
    "platform_machine": "x86_64",
}
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)\s*(?:;\s*([^\\]+?))?\s*\\?\s*$")


@dataclass(frozen=True)
class Pin:
    """One locked requirement: ``name==version`` under an optional environment marker."""

    name: str
    version: str
    marker: str | None = None

    def applies(self, environment: dict[str, str] | None = None) -> bool:
        """Whether the marker holds in ``environment`` (default: this interpreter)."""
        if not self.marker:
            return True
        from packaging.markers import Marker

        return Marker(self.marker).evaluate(environment)


def canonical(name: str) -> str:
    """PEP 503 normalised name (``Scikit_Learn`` -> ``scikit-learn``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def find_lock(start: Path | None = None) -> Path | None:
    """The lock of the checkout fme runs from (None for an installed wheel)."""
    # this file is <checkout>/fme/report/analysis/environment.py: the lock sits beside the fme package
    root = Path(start) if start is not None else Path(__file__).resolve().parents[3]
    path = root / LOCK_NAME
    return path if path.is_file() else None


def read_lock(path: str | Path) -> list[Pin]:
    """Every ``name==version`` line of a pip-tools/uv lock, in file order."""
    pins = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        m = _PIN.match(line)
        if m:
            pins.append(Pin(canonical(m.group(1)), m.group(2), m.group(3)))
    return pins


def locked_pins(path: str | Path, environment: dict[str, str] | None = None) -> dict[str, str]:
    """``{name: version}`` of the pins whose markers hold in ``environment`` (default: here)."""
    return {p.name: p.version for p in read_lock(path) if p.applies(environment)}


def lock_differences(path: str | Path) -> list[dict[str, str | None]]:
    """Locked packages whose installed version differs (``installed`` None: not installed)."""
    out = []
    for name, version in sorted(locked_pins(path).items()):
        try:
            installed: str | None = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = None
        if installed != version:
            out.append({"name": name, "locked": version, "installed": installed})
    return out


def lock_record(path: str | Path | None = None) -> dict:
    """What a report records of the environment's lock.

    Returns ``{"file", "sha256", "matches", "differences"}``; without a lock (fme
    installed from a wheel) ``file`` and ``sha256`` are None and ``matches`` False,
    so a report never claims a locked environment it cannot show.
    """
    path = find_lock() if path is None else Path(path)
    if path is None or not Path(path).is_file():
        return {"file": None, "sha256": None, "matches": False, "differences": []}
    diff = lock_differences(path)
    return {
        "file": Path(path).name,
        "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
        "matches": not diff,
        "differences": diff,
    }


def conda_environment(path: str | Path) -> str:
    """environment.yml mirroring the lock: conda brings Python 3.11 and pip, pip the pinned packages."""
    pins = locked_pins(path, CONDA_MARKER_ENV)
    lines = [
        "# Conda environment for fme (forward-marginal-effects), generated from requirements.lock by `make lock`: "
        "do not edit by hand.",
        "# Every package is pinned as in the lock (Linux, CPython 3.11); tests/test_packaging.py checks this.",
        "name: fme",
        "channels:",
        "  - conda-forge",
        "dependencies:",
        "  - python=3.11",
        "  - pip",
        "  - pip:",
    ]
    lines += [f"      - {name}=={version}" for name, version in sorted(pins.items())]
    lines.append("      - -e .[test]")
    return "\n".join(lines) + "\n"


def _main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--conda":
        sys.stdout.write(conda_environment(argv[1]))
        return 0
    if len(argv) == 2 and argv[0] == "--diff":
        diff = lock_differences(argv[1])
        for d in diff:
            print(f"{d['name']}: locked {d['locked']}, installed {d['installed'] or 'nothing'}")
        print(f"{len(diff)} package(s) differ from {argv[1]}")
        return 0
    print("usage: python -m fme.report.analysis.environment (--conda | --diff) requirements.lock", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover - command line
    raise SystemExit(_main(sys.argv[1:]))
