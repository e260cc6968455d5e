"""The dashboard's static files: read once from the package, each with its type and ETag."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

STATIC_DIR = Path(__file__).with_name("static")

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".txt": "text/plain; charset=utf-8",
}


@dataclass(frozen=True)
class Asset:
    """One file: its URL path below the dashboard, body, media type and strong ETag."""

    path: str
    body: bytes
    content_type: str
    etag: str


def load(root: Path = STATIC_DIR) -> dict[str, Asset]:
    """Every servable file under root by its relative POSIX path (other suffixes skipped)."""
    assets: dict[str, Asset] = {}
    for file in sorted(root.rglob("*")):
        ctype = CONTENT_TYPES.get(file.suffix)
        if ctype is None or not file.is_file():
            continue
        body = file.read_bytes()
        rel = file.relative_to(root).as_posix()
        etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
        assets[rel] = Asset(rel, body, ctype, etag)
    return assets


def total_bytes(assets: dict[str, Asset]) -> int:
    """Bytes of every file together (the page weight before compression)."""
    return sum(len(a.body) for a in assets.values())


def not_modified(asset: Asset, if_none_match: str | None) -> bool:
    """True when the client's If-None-Match names this asset's ETag."""
    if not if_none_match:
        return False
    tags = {t.strip() for t in if_none_match.split(",")}
    return "*" in tags or asset.etag in tags or ("W/" + asset.etag) in tags
