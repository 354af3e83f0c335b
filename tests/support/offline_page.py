"""A report page opened from file:// in a Playwright page: its console errors and every request
it makes are recorded, and a request that is not for a file is refused (the page must need
none)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def open_offline(page: Any, path: Path) -> tuple[list[str], list[str]]:
    """Open `path` in `page` and wait for the question browser to be drawn.

    Args:
        page: a Playwright page.
        path: the HTML file.

    Returns:
        The console errors and the requested URLs (both filled as the page goes on).
    """
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r: Any) -> None:
        requests.append(r.request.url)
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            r.abort()

    page.route("**/*", route)
    page.goto(path.as_uri())
    page.wait_for_selector("#q-count:not(:empty)")
    return errors, requests
