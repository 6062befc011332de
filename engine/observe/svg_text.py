"""Text that fits its box in the SVG drawing, measured without a browser.

Widths are estimated per character class for a sans-serif font, on the wide side (the
metrics of DejaVu Sans, the widest of the usual defaults), so that an estimate that fits
also fits when drawn. Text that does not fit is cut and ends in an ellipsis; the drawing
keeps the whole text in the node's ``<title>``.
"""

from __future__ import annotations

__all__ = ["fit", "text_width"]

# Advance widths in em, by character class (DejaVu Sans, rounded up; Arial-like fonts
# come out about a fifth narrower).
_NARROW = frozenset("il.,:;'|!jtf()[] ")
_WIDE = frozenset("mwMW@%")
_BOLD = 1.1


def _em(ch: str) -> float:
    if ch in _NARROW:
        return 0.36
    if ch in _WIDE:
        return 0.92
    if ch.isupper():
        return 0.7
    return 0.6


def text_width(text: str, font_px: float, bold: bool = False) -> float:
    """The estimated drawn width of ``text`` in pixels (at least the true one, usually)."""
    return sum(_em(ch) for ch in text) * font_px * (_BOLD if bold else 1.0)


def fit(text: str, width: float, font_px: float, bold: bool = False) -> str:
    """``text`` if it fits ``width`` pixels, else its longest prefix that fits with ``…``."""
    if text_width(text, font_px, bold) <= width:
        return text
    room = width - text_width("…", font_px, bold)
    used = 0.0
    for cut, ch in enumerate(text):
        used += text_width(ch, font_px, bold)
        if used > room:
            return text[:cut].rstrip() + "…"
    return text
