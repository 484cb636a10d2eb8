"""Draws layers.svg: the package's floors, as the import-linter contract in pyproject.toml
holds them (each floor imports only from the floors below it).

Read from pyproject.toml's [tool.importlinter] layers (each entry a floor; `|` between
modules that must not import each other, `:` between modules that may; the comment above an
entry is its caption), so the picture is the contract. Standard library only.
`make diagrams` runs it: python3 layers.py > layers.svg
"""
import re
from html import escape
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
WIDTH, ROW, GAP, LEFT = 1200, 46, 14, 24
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"
CHAR = 7.4  # width of a 12px monospace character


def floors() -> list[tuple[str, list[str], bool]]:
    """(caption, modules, independent) per floor, top first."""
    text = PYPROJECT.read_text()
    block = re.search(r"^layers = \[\n(.*?)^\]", text, re.M | re.S).group(1)
    out, caption = [], []
    for line in block.splitlines():
        line = line.strip()
        if line.startswith("#"):
            caption.append(line.lstrip("# "))
        elif line.startswith('"'):
            spec = line.strip('",')
            independent = "|" in spec or ":" not in spec
            modules = [m.strip() for m in re.split(r"[|:]", spec)]
            out.append((" ".join(caption), modules, independent))
            caption = []
    return out


def svg() -> str:
    rows = floors()
    height = 70 + len(rows) * (ROW + GAP) + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="{FONT}">',
        f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="30" font-size="18" font-weight="bold" fill="#111827">'
        "django_pg_jobqueue: each floor imports only from the floors below it</text>",
        f'<text x="{LEFT}" y="52" font-size="12" fill="#4b5563">Solid boxes on a floor must not '
        "import each other; dashed ones may. Held by `make lint` (import-linter) and "
        "tests/contracts/test_layers.py (no import cycle).</text>",
    ]
    y = 70
    for caption, modules, independent in rows:
        parts.append(f'<rect x="{LEFT - 10}" y="{y - 4}" width="{WIDTH - 2 * LEFT + 20}" '
                     f'height="{ROW + 8}" rx="6" fill="#f3f4f6"/>')
        x = LEFT
        dash = "" if independent else ' stroke-dasharray="5 3"'
        for module in modules:
            w = 16 + CHAR * len(module)
            parts.append(f'<rect x="{x:.0f}" y="{y}" width="{w:.0f}" height="26" rx="4" '
                         f'fill="#dbeafe" stroke="#2563eb"{dash}/>')
            parts.append(f'<text x="{x + 8:.0f}" y="{y + 17}" font-size="12" font-family="{MONO}" '
                         f'fill="#1e3a8a">{escape(module)}</text>')
            x += w + 8
        if caption:
            parts.append(f'<text x="{LEFT}" y="{y + ROW - 4}" font-size="11" '
                         f'fill="#4b5563">{escape(caption)}</text>')
        y += ROW + GAP
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    print(svg(), end="")
