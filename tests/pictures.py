"""What the picture tests share (the browser's and JupyterLab's): reading the viewer's SVG pictures."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Set, Tuple


def shapes(root: ET.Element) -> Tuple[Set[int], Set[str]]:
    """The node ids and group ids that the picture's shapes carry (``data-node-id``, ``data-group-id``)."""
    nodes = {int(e.get("data-node-id")) for e in root.iter() if e.get("data-node-id") is not None}
    groups = {e.get("data-group-id") for e in root.iter() if e.get("data-group-id") is not None}
    return nodes, groups


def same_picture(a: str, b: str) -> bool:
    """Equal but for the ids svgcanvas draws at random (its clip paths)."""
    def norm(s: str) -> str:
        return re.sub(r'(id="|url\(#)[^")]*', r"\1", s)
    return norm(a) == norm(b)
