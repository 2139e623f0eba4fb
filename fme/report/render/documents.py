"""Render the report: Jinja -> ``report.qmd`` -> HTML (pandoc) and PDF (pandoc -> typst).

Two Jinja environments:

* the *markdown* environment renders ``report.qmd.j2``. Every ``{{ value }}`` is
  escaped for pandoc markdown by default (a ``finalize`` hook backslash-escapes
  all ASCII punctuation, so ``<script>``, ``|``, ``*``, ``$`` or quotes in
  feature names, labels or titles stay literal text); ``|attr`` escapes for a
  quoted attribute value and ``|raw`` marks trusted markdown;
* the *HTML* environment (``autoescape=True``) renders the HTML partials.

Renderers (``renderer=``): ``'auto'`` (default) uses ``quarto render`` when
Quarto is on PATH and otherwise pandoc; ``'quarto'`` and ``'pandoc'`` force one. The pandoc route is
pandoc from the ``pypandoc-binary`` wheel (self-contained HTML,
``--embed-resources --standalone``, no network) and typst from the ``typst``
wheel for the PDF.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jinja2

__all__ = [
    "md_escape",
    "attr_escape",
    "render_qmd",
    "render_html",
    "render_pdf",
    "render_documents",
    "pandoc_path",
    "tool_versions",
    "RENDERERS",
]

RENDERERS = ("auto", "pandoc", "quarto")


def _default_templates() -> Path:
    """The checkout's ``templates/`` (so edits apply at once), else the copy shipped in the wheel."""
    checkout = Path(__file__).resolve().parents[3] / "templates"
    if (checkout / "report.qmd.j2").is_file():
        return checkout
    return Path(__file__).resolve().parents[2] / "_templates"


TEMPLATES = _default_templates()
_MD_SPECIAL = frozenset("\\`*_{}[]()<>#+-.!|$~^\"'@&=:;%")


class MdSafe(str):
    """A string that is already markdown (not escaped again)."""


def md_escape(value: Any) -> str:
    """Literal text in pandoc markdown: every ASCII punctuation character is backslash-escaped."""
    if isinstance(value, MdSafe):
        return value
    text = "" if value is None else str(value)
    text = " ".join(text.split("\n")) if "\n" in text else text
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in text)


def attr_escape(value: Any) -> MdSafe:
    """Text for a double-quoted pandoc attribute value (e.g. ``fig-alt="..."``)."""
    text = " ".join(str(value).split())
    return MdSafe(text.replace("\\", "\\\\").replace('"', '\\"'))


def md_yaml(value: Any) -> MdSafe:
    """Markdown-escaped text inside a double-quoted YAML scalar (front matter is read as markdown)."""
    import json

    return MdSafe(json.dumps(md_escape(value), ensure_ascii=False)[1:-1])


def _finalize(value: Any) -> Any:
    return md_escape(value)


def _templates_dir(templates: Path | None) -> Path:
    return Path(templates) if templates is not None else TEMPLATES


def markdown_env(templates: Path | None = None) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_templates_dir(templates))),
        autoescape=False,  # markdown escaping happens in finalize
        comment_start_string="<#",  # "{#" starts pandoc attributes such as {#fig-x}
        comment_end_string="#>",
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["attr"] = attr_escape
    env.filters["raw"] = MdSafe
    env.filters["md_yaml"] = md_yaml
    return env


def html_env(templates: Path | None = None) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_templates_dir(templates))),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )


def render_qmd(context: dict, out_dir: Path, templates: Path | None = None) -> Path:
    text = markdown_env(templates).get_template("report.qmd.j2").render(**context).lstrip()
    path = Path(out_dir) / "report.qmd"
    path.write_text(text, encoding="utf-8")
    return path


def pandoc_path() -> str:
    import pypandoc

    return pypandoc.get_pandoc_path()


def tool_versions() -> dict[str, str]:
    import pypandoc
    import typst

    return {"pandoc": str(pypandoc.get_pandoc_version()), "typst (python)": getattr(typst, "__version__", "?")}


def _run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=str(cwd), capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{Path(cmd[0]).name} failed ({proc.returncode}): {proc.stderr.strip()[:2000]}")


_TH = re.compile(r"<th(?=[\s>])(?![^>]*\bscope=)")
_IMG = re.compile(r'<img role="img" aria-label="([^"]*)"')


_TABLE = re.compile(r"<table\b.*?</table>", flags=re.S)
_CAPTION = re.compile(r"<caption>(.*?)</caption>", flags=re.S)


def _scroll_box(match: re.Match) -> str:
    """A table in its own horizontal scroll container (a focusable region named by the caption), so a wide
    table scrolls by itself on a narrow screen instead of the whole page."""
    table = match.group(0)
    cap = _CAPTION.search(table)
    name = " ".join(re.sub(r"<[^>]+>", " ", cap.group(1)).split()).replace('"', "&quot;") if cap else "table"
    return f'<div class="table-scroll" role="region" tabindex="0" aria-label="{name}">{table}</div>'


def _postprocess_html(html: str) -> str:
    """Header cells get ``scope="col"``; images get an ``alt`` equal to their accessible name; tables and
    figures scroll in their own container (keyboard-focusable) on narrow screens."""
    html = _TH.sub('<th scope="col"', html)
    html = re.sub(r"<pre(?![^>]*tabindex)", '<pre tabindex="0"', html)
    html = _TABLE.sub(_scroll_box, html)
    html = re.sub(r"<figure(?=[\s>])(?![^>]*tabindex)", '<figure tabindex="0"', html)
    return _IMG.sub(r'<img role="img" aria-label="\1" alt="\1"', html)


def render_html(qmd: Path, context: dict, templates: Path | None = None) -> Path:
    out_dir = qmd.parent
    tdir = _templates_dir(templates)
    env = html_env(templates)
    before = out_dir / "_before-body.html"
    after = out_dir / "_after-body.html"
    before.write_text(env.get_template("partials/before-body.html.j2").render(**context), encoding="utf-8")
    after.write_text(env.get_template("partials/after-body.html.j2").render(**context), encoding="utf-8")
    html = out_dir / "report.html"
    _run(
        [
            pandoc_path(),
            qmd.name,
            "--from",
            "markdown",
            "--to",
            "html5",
            "--standalone",
            "--embed-resources",
            "--syntax-highlighting=none",
            "--css",
            str(tdir / "report.css"),
            "--include-before-body",
            before.name,
            "--include-after-body",
            after.name,
            "--resource-path",
            ".",
            "--output",
            html.name,
        ],
        out_dir,
    )
    html.write_text(_postprocess_html(html.read_text(encoding="utf-8")), encoding="utf-8")
    before.unlink()
    after.unlink()
    return html


#: pandoc Lua filter for the typst route (kept here so the wheel, which ships only *.j2/*.typ templates, has it).
TYPST_ESCAPE_LUA = """-- fme report, PDF route: keep typst from reading text as markup.
-- pandoc's typst writer escapes list and heading markers only at the start of its own output lines; a
-- table cell or paragraph whose text starts with "+", "-", "=", "/" or "1." followed by a space (or
-- nothing) would become a numbered or bulleted list, a heading or a term. Escape that first marker.
local function is_marker(s)
  return s:match("^[%+%-=/]$") ~= nil or s:match("^%d+%.$") ~= nil
end

local function escape_first(block)
  local c = block.content
  if #c >= 1 and c[1].t == "Str" and is_marker(c[1].text)
      and (#c == 1 or c[2].t == "Space" or c[2].t == "SoftBreak") then
    local t = c[1].text
    local escaped
    if t:match("^%d") then
      escaped = t:sub(1, -2) .. "\\\\."
    else
      escaped = "\\\\" .. t
    end
    c[1] = pandoc.RawInline("typst", escaped)
    block.content = c
    return block
  end
end

-- PDF figures carry their alt text: pandoc's typst writer drops the image's alt attribute, so the image is
-- written as a typst call with `alt:` (tagged PDF: a Figure structure element with /Alt).
local function typst_string(s)
  local escaped = s:gsub('\\\\', '\\\\\\\\'):gsub('"', '\\\\"')
  return '"' .. escaped .. '"'
end

local function image_with_alt(img)
  local alt = img.attributes["alt"] or img.attributes["fig-alt"]
  if alt == nil or alt == "" then
    return nil
  end
  local width = ""
  if img.attributes["pdf-width"] then
    width = ", width: " .. img.attributes["pdf-width"]:gsub("[^%d%.in]", "")
  end
  return pandoc.RawInline("typst", "#image(" .. typst_string(img.src) .. width .. ", alt: " .. typst_string(alt) .. ")")
end

-- A wide figure (a large cAME tree) on its own landscape page when that shrinks its text less.
local function landscape(fig)
  local wide = false
  fig:walk({Image = function(img) if img.attributes["pdf-page"] == "landscape" then wide = true end end})
  if wide then
    return {pandoc.RawBlock("typst", "#page(flipped: true, margin: 0.75in)["), fig, pandoc.RawBlock("typst", "]")}
  end
end

-- One minus glyph per number: typst draws a hyphen before a digit as a minus sign (U+2212) unless pandoc
-- escaped it (at the start of a cell), so one interval printed both. Every hyphen that starts a number (not
-- one inside a word, a date or an exponent) becomes U+2212 here.
local function minus(s)
  local t = s.text:gsub("^%-(%d)", "\\u{2212}%1"):gsub("([^%w%.])%-(%d)", "%1\\u{2212}%2")
  if t ~= s.text then
    s.text = t
    return s
  end
end

return {{Plain = escape_first, Para = escape_first}, {Str = minus}, {Figure = landscape}, {Image = image_with_alt}}
"""


def render_pdf(qmd: Path, templates: Path | None = None) -> Path:
    """pandoc -> report.typ -> typst.compile -> report.pdf (same document, same figures)."""
    import typst

    out_dir = qmd.parent
    tdir = _templates_dir(templates)
    typ = out_dir / "report.typ"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fme-typst-") as tmp:
        lua = Path(tmp) / "typst-escape.lua"
        lua.write_text(TYPST_ESCAPE_LUA, encoding="utf-8")
        _run(
            [
                pandoc_path(),
                qmd.name,
                "--from",
                "markdown",
                "--to",
                "typst",
                "--standalone",
                "--lua-filter",
                str(lua),
                "--include-in-header",
                str(tdir / "partials" / "typst-header.typ"),
                "--output",
                typ.name,
            ],
            out_dir,
        )
    pdf = out_dir / "report.pdf"
    typst.compile(str(typ), output=str(pdf), root=str(out_dir))
    return pdf


def quarto_available() -> bool:
    return shutil.which("quarto") is not None


def render_quarto(qmd: Path, pdf: bool = True) -> tuple[Path, Path | None]:
    """``quarto render`` to self-contained HTML and (via typst) PDF, from the same ``report.qmd``."""
    _run(["quarto", "render", qmd.name, "--to", "html", "-M", "embed-resources:true"], qmd.parent)
    html = qmd.with_suffix(".html")
    html.write_text(_postprocess_html(html.read_text(encoding="utf-8")), encoding="utf-8")
    if not pdf:
        return html, None
    _run(["quarto", "render", qmd.name, "--to", "typst"], qmd.parent)
    return html, qmd.with_suffix(".pdf")


def render_documents(
    qmd: Path,
    context: dict,
    templates: Path | None = None,
    *,
    pdf: bool = True,
    renderer: str = "auto",
    stage: Any = None,
) -> tuple[Path, Path | None, str]:
    """HTML and (optionally) PDF from ``report.qmd``; returns (html, pdf, renderer used).

    ``stage``: called with the name of each rendering stage as it starts (the build's progress display).
    """
    stage = stage or (lambda name: None)
    if renderer not in RENDERERS:
        raise ValueError(f"renderer must be one of {RENDERERS}, got {renderer!r}.")
    if renderer == "quarto" and not quarto_available():
        raise FileNotFoundError("renderer='quarto' but quarto is not on PATH; use renderer='auto' or 'pandoc'.")
    if renderer == "quarto" or (renderer == "auto" and quarto_available()):
        stage("render HTML and PDF (quarto)" if pdf else "render HTML (quarto)")
        html, pdf_path = render_quarto(qmd, pdf)
        return html, pdf_path, "quarto"
    stage("render HTML")
    html = render_html(qmd, context, templates)
    if pdf:
        stage("render PDF")
    return html, (render_pdf(qmd, templates) if pdf else None), "pandoc"
