"""Where a report comes from: its id, the command that rebuilds it, the seeded-sample note and the environment
and cluster it was computed on.
"""

from __future__ import annotations

from pathlib import Path

from ..._utils.numfmt import count, fmt_int

__all__ = ["report_id", "rebuild_command", "sample_note", "cluster_phrase", "environment_line"]


def report_id(config_name: str, config_sha256: str) -> str:
    """'<config name>-<first 12 hex digits of the config's sha256>'."""
    return f"{config_name}-{config_sha256[:12]}"


def rebuild_command(results: dict, build_info: dict) -> str:
    """The command that rebuilds this report, run in the config's directory: the config's file name only, so a
    build through any path from any working directory prints the same line (and the report stays
    byte-identical)."""
    arg = build_info.get("config_arg") or f"{results['config_name']}.yaml"
    return f"fme report {Path(str(arg).replace(chr(92), '/')).name} --force"


def sample_note(data: dict) -> dict[str, str] | None:
    """engine: dask: which numbers are over all rows and which rest on the seeded sample (None otherwise).

    ``effect``: the sentence beside each effect's figures; ``appendix``: the reproducibility entry.
    """
    info = data.get("sample")
    if not info:
        return None
    tree = info.get("tree_sample_size")  # results.json of an older fme lack it
    at_most = f"at most {fmt_int(tree)} evaluated rows" if tree is not None else "evaluated rows"
    rows, k = count(int(info["of"]), "row"), fmt_int(info["rows"])
    drawn = (
        f"every one of the {rows} (the data have no more rows than sample_size {fmt_int(info['size'])})"
        if info["all_rows"]
        else f"a seeded sample of {k} of the {rows} (seed {info['seed']}, sample_size {fmt_int(info['size'])})"
    )
    effect = (
        f"Computed out of core (engine: dask). Over all {rows}: the row counts and exclusions, the AME with "
        "its CI and quartiles, the NLM summaries, the AME with extrapolation points, the step sensitivity "
        f"and the cAMEs of the subspaces. From {drawn}: the figures below, the per-row table, where the "
        "extrapolation points are, the evaluated ranges of the subspaces and the stability refits; the cAME "
        f"tree is grown on fme's own seeded sample of {at_most}."
    )
    appendix = (
        f"engine: dask; summaries over all {rows}, per-row figures and tables from {drawn}. Based on the "
        f"sample: {', '.join(info['based_on_sample'])}; the cAME tree's splits: fme's seeded sample of "
        f"{at_most}. Over all "
        f"rows: {', '.join(info['all_rows_items'])}."
    )
    return {"effect": effect, "appendix": appendix}


def cluster_phrase(c: dict | None) -> str:
    """' Cluster: <scheduler address or local> (2 workers, 1 thread per worker, 2 threads).' ('' without)."""
    if not c:
        return ""
    per = c.get("threads_per_worker")  # results.json of an older fme lack it
    each = (
        ""
        if not per
        else (
            f"{count(per[0], 'thread')} per worker, "
            if len(per) == 1
            else f"{fmt_int(per[0])} to {fmt_int(per[-1])} threads per worker, "
        )
    )
    return (
        f" Cluster: {c['scheduler']} ({count(c['workers'], 'worker')}, {each}{count(c['threads'], 'thread')} in all)."
    )


def environment_line(env: dict) -> str:
    """One sentence on where the report ran: OS, architecture and the lock (or its absence)."""
    where = f"{env.get('os', '?')} {env.get('os_release', '')} on {env.get('machine', '?')}".replace("  ", " ")
    lock = env.get("lock") or {}
    cluster = cluster_phrase(env.get("cluster"))
    if not lock.get("sha256"):
        return (
            f"{where}; no requirements.lock found (fme was installed from a wheel or an sdist), "
            "so the package versions listed are the only record of the environment." + cluster
        )
    text = f"{where}; {lock['file']} sha256 {lock['sha256']}"
    diff = lock.get("differences") or []
    if not diff:
        return text + "; every installed package equals its pin in the lock." + cluster
    shown = ", ".join(f"{d['name']} {d['installed'] or 'not installed'} (locked {d['locked']})" for d in diff[:5])
    more = f" and {len(diff) - 5} more" if len(diff) > 5 else ""
    return text + f"; {len(diff)} installed package(s) differ from the lock: {shown}{more}." + cluster
