"""fme.report.analysis._svg: compacted matplotlib SVGs draw the same picture in fewer bytes."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from fme.report.analysis._svg import compact_svg

SVG_NS = "{http://www.w3.org/2000/svg}"


def _figure_svg(tmp_path: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fme.report.analysis.figures import RC, _t

    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 10, 400), rng.normal(0, 1, 400)
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(6.4, 3.4))
        ax.scatter(x, y, s=14, facecolors="none", edgecolors="#0072B2", linewidths=0.9, label="fME")
        ax.plot(x, np.zeros_like(x), "|", color="#6E6E6E", alpha=0.6, transform=ax.get_xaxis_transform())
        ax.axhline(float(y.mean()), color="#B35300", linestyle="--")
        ax.set_title(_t("fMEs of <b>a</b> & 'b' + 1 [$]"))
        ax.legend()
        fig.savefig(tmp_path / "f.svg", format="svg", metadata={"Date": None})
        plt.close(fig)
    return (tmp_path / "f.svg").read_text(encoding="utf-8")


def _uses(svg: str) -> list[tuple[str, float, float]]:
    """Every ``<use>`` as (the outline it draws, its x and y offsets): ``x``/``y`` plus a ``translate``."""
    root = ET.fromstring(svg.encode("utf-8"))
    outline = {e.get("id"): e.get("d", "") for e in root.iter() if e.get("id") is not None}
    out = []
    for u in root.iter(f"{SVG_NS}use"):
        href = u.get("{http://www.w3.org/1999/xlink}href")
        tx, ty = 0.0, 0.0
        m = re.fullmatch(r"translate\(([-\d.e]+)(?:[ ,]+([-\d.e]+))?\)", u.get("transform", "translate(0)"))
        if m:
            tx, ty = float(m.group(1)), float(m.group(2) or 0)
        out.append((_rounded(outline[href[1:]]), float(u.get("x", 0)) + tx, float(u.get("y", 0)) + ty))
    return out


def _rounded(d: str) -> str:
    """An outline's numbers to 0.01 (what the compaction keeps)."""
    text = re.sub(r"-?\d+(?:\.\d*)?(?:e-?\d+)?", lambda m: f"{float(m.group(0)):.2f}", " ".join(d.split()))
    return text.replace("-0.00", "0.00")


def test_same_elements_rounded_coordinates_fewer_bytes(tmp_path):
    raw = _figure_svg(tmp_path)
    small = compact_svg(raw)
    assert compact_svg(raw) == small  # deterministic
    assert len(small) < 0.7 * len(raw)
    before, after = _uses(raw), _uses(small)  # valid XML, every marker and glyph still drawn, in order
    assert [u[0] for u in after] == [u[0] for u in before] and len(after) > 800
    np.testing.assert_allclose([u[1:] for u in after], [u[1:] for u in before], rtol=0, atol=0.005 + 1e-9)
    assert "<metadata>" not in small and "<!--" not in small
    assert compact_svg(small) == small  # idempotent


def test_markers_share_one_group_and_style():
    one = '<g clip-path="url(#p1)"><use xlink:href="#m" x="{}" y="1" style="fill: none; stroke: #000"/></g>'
    other = '<g clip-path="url(#p2)"><use xlink:href="#m" x="9" y="9" style="stroke: #fff"/></g>'
    text = "<svg>" + one.format(1) + one.format(2.123456) + other + one.format(3) + "</svg>"
    assert compact_svg(text) == (
        '<svg><g clip-path="url(#p1)" style="fill: none; stroke: #000"><use xlink:href="#m" x="1" y="1"/>'
        '<use xlink:href="#m" x="2.12" y="1"/></g>'
        '<g clip-path="url(#p2)" style="stroke: #fff"><use xlink:href="#m" x="9" y="9"/></g>'
        '<g clip-path="url(#p1)" style="fill: none; stroke: #000"><use xlink:href="#m" x="3" y="1"/></g></svg>'
    )
    mixed = (
        '<svg><g><use xlink:href="#m" x="1" y="1" style="stroke: #000"/>'
        '<use xlink:href="#m" x="2" y="1" style="stroke: #fff"/></g></svg>'
    )
    # different styles stay on their elements; the group left without attributes goes
    assert compact_svg(mixed) == mixed.replace("<g>", "").replace("</g>", "")


def test_rasterised_pictures_agree(tmp_path):
    """Rendered by typst (the PDF's renderer) at 150 ppi, the two SVGs differ only where a 0.005 pt
    rounding moves an anti-aliased edge across a pixel boundary."""
    typst = pytest.importorskip("typst")
    from PIL import Image

    raw = _figure_svg(tmp_path)
    (tmp_path / "small.svg").write_text(compact_svg(raw), encoding="utf-8")

    def raster(name: str) -> np.ndarray:
        typ = tmp_path / f"{name}.typ"
        typ.write_text(f'#set page(width: 8in, height: auto, margin: 0pt)\n#image("{name}", width: 100%)\n')
        png = typst.compile(str(typ), format="png", ppi=150)
        return np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=int)

    a, b = raster("f.svg"), raster("small.svg")
    assert a.shape == b.shape and (a < 128).mean() > 0.01  # something dark was drawn
    diff = np.abs(a - b)
    assert diff.mean() < 0.25 and (diff > 32).mean() < 0.002, (diff.mean(), (diff > 32).mean())
    assert not re.search(r"\d\.\d{3,}", " ".join(re.findall(r' (?:x|y|d)="[^"]*"', compact_svg(raw))))


def test_glyph_offsets_short_ids_bare_groups_and_style_classes():
    style = "fill: #0072b2; stroke: #ffffff"
    text = (
        '<svg><defs><style type="text/css">*{stroke-linecap: butt}</style></defs>'
        '<g id="figure_1"><g id="text_1"><defs><path id="DejaVuSans-41" d="M 0 0 L 1 1"/></defs>'
        '<use xlink:href="#DejaVuSans-41"/><use xlink:href="#DejaVuSans-41" transform="translate(61.5 0)"/></g>'
        f'<g id="patch_1"><path d="M 0 0" style="{style}"/><path d="M 1 1" style="{style}"/>'
        f'<path d="M 2 2" style="{style}"/><path d="M 3 3" style="fill: none"/></g>'
        '<clipPath id="p0123456789"><rect x="0"/></clipPath><g clip-path="url(#p0123456789)"/></g></svg>'
    )
    assert compact_svg(text) == (
        '<svg><defs><style type="text/css">*{stroke-linecap: butt}'
        f".c0{{{style}}}</style></defs>"
        '<defs><path id="a0" d="M 0 0 L 1 1"/></defs><use xlink:href="#a0"/><use xlink:href="#a0" x="61.5"/>'
        '<path d="M 0 0" class="c0"/><path d="M 1 1" class="c0"/><path d="M 2 2" class="c0"/>'
        '<path d="M 3 3" style="fill: none"/>'
        '<clipPath id="a1"><rect x="0"/></clipPath><g clip-path="url(#a1)"/></svg>'
    )
    assert compact_svg(compact_svg(text)) == compact_svg(text)
