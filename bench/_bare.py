"""Baseline server: a bare aiohttp + orjson handler serving one fixed JSON document."""

from __future__ import annotations

import sys

import orjson
from aiohttp import web


def main() -> None:
    """`python bench/_bare.py PORT FILE` serves FILE's JSON at every GET path."""
    port, path = int(sys.argv[1]), sys.argv[2]
    with open(path, "rb") as f:
        doc = orjson.loads(f.read())

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=orjson.dumps(doc), content_type="application/json")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


if __name__ == "__main__":
    main()
