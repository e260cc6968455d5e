"""Headless Chromium for the dashboard tests: Debian's chromium and chromedriver via selenium."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1400,1000",
)
WAIT_S = 60.0  # generous: a busy two-core machine
SHOTS = os.environ.get("DASH_SCREENSHOTS")  # a directory: the tests save their views there


def chromium_paths() -> tuple[str, str] | None:
    """(chromium binary, chromedriver) when both are installed."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (binary, driver) if binary and driver else None


class Browser:
    """One headless Chromium with a fresh profile and a download directory."""

    def __init__(self) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        paths = chromium_paths()
        assert paths is not None, "chromium and chromedriver are required (make browser)"
        self.profile = Path(tempfile.mkdtemp(prefix="dash-profile-"))
        self.downloads = Path(tempfile.mkdtemp(prefix="dash-downloads-"))
        opts = webdriver.ChromeOptions()
        opts.binary_location = paths[0]
        for flag in CHROMIUM_FLAGS:
            opts.add_argument(flag)
        opts.add_argument(f"--user-data-dir={self.profile}")
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        opts.add_experimental_option("prefs", {
            "download.default_directory": str(self.downloads),
            "download.prompt_for_download": False,
            "safebrowsing.enabled": False,
        })
        self.driver = webdriver.Chrome(service=Service(paths[1]), options=opts)
        self.driver.execute_cdp_cmd("Browser.setDownloadBehavior", {
            "behavior": "allow", "downloadPath": str(self.downloads), "eventsEnabled": True})

    def open(self, url: str) -> None:
        """Navigate."""
        self.driver.get(url)

    def wait(self, condition: Callable[[Any], Any], what: str, timeout: float = WAIT_S) -> Any:
        """Wait for a condition on the driver; the message names what was awaited.

        A condition that reads an element the page redrew meanwhile (a live table) is asked
        again, not failed."""
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.driver, timeout, poll_frequency=0.2,
                             ignored_exceptions=(StaleElementReferenceException,)).until(
            condition, message=f"timed out waiting for {what}")

    def _first(self, selector: str, pick: Callable[[Any], Any], what: str,
               timeout: float) -> Any:
        """Wait for an element matching selector for which pick gives a truthy value (that
        value); an element the page redraws meanwhile is skipped and found again."""
        from selenium.webdriver.common.by import By

        def find(d: Any) -> Any:
            for el in d.find_elements(By.CSS_SELECTOR, selector):
                try:
                    value = pick(el)
                except Exception:  # stale while the page redraws (a live table or value)
                    continue
                if value:
                    return value
            return False

        return self.wait(find, what, timeout)

    def css(self, selector: str, what: str | None = None, timeout: float = WAIT_S) -> Any:
        """Wait for a visible element matching a CSS selector."""
        return self._first(selector, lambda el: el.is_displayed() and el, what or selector,
                           timeout)

    def click(self, selector: str, what: str | None = None, timeout: float = WAIT_S) -> Any:
        """Wait for a visible element and click it, finding it again if the page redrew it."""

        def press(el: Any) -> Any:
            if not el.is_displayed():
                return False
            el.click()
            return el

        return self._first(selector, press, what or selector, timeout)

    def text_of(self, selector: str, what: str | None = None, timeout: float = WAIT_S) -> str:
        """The (non-empty) text of a visible element, found again if the page redrew it."""
        return str(self._first(selector, lambda el: el.is_displayed() and el.text,
                               what or selector, timeout))

    def text_in(self, selector: str, text: str, timeout: float = WAIT_S) -> Any:
        """Wait for an element matching selector whose text contains text."""
        return self._first(selector, lambda el: text in el.text and el,
                           f"'{text}' in {selector}", timeout)

    def texts_in(self, selector: str, texts: tuple[str, ...], timeout: float = WAIT_S) -> Any:
        """Wait for an element matching selector whose text contains every one of texts,
        read at once (a live table redraws its rows: an element found earlier goes stale)."""
        return self._first(selector, lambda el: all(t in el.text for t in texts) and el,
                           f"{texts} in {selector}", timeout)

    def read_all(self, selector: str, attribute: str | None = None) -> list[str]:
        """The text (or an attribute, else the property of that name, as Selenium's
        get_attribute) of every element matching selector, read in one script call: a live
        table that redraws between finding its rows and reading them cannot hand back a
        stale element."""
        values = self.driver.execute_script(
            "const a = arguments[1]; return Array.from(document.querySelectorAll(arguments[0]),"
            " e => a ? (e.getAttribute(a) ?? e[a] ?? '') : e.innerText.trim());",
            selector, attribute)
        return [str(v) for v in values]

    def console_errors(self) -> list[dict[str, Any]]:
        """Console entries at SEVERE level since the last call."""
        return [e for e in self.driver.get_log("browser") if e.get("level") == "SEVERE"]

    def screenshot(self, path: Path) -> None:
        """A PNG of the viewport."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(path))

    def shot(self, name: str) -> None:
        """Save the view as dashboard-<name>.png when DASH_SCREENSHOTS names a directory."""
        if SHOTS:
            self.screenshot(Path(SHOTS) / f"dashboard-{name}.png")

    def close(self) -> None:
        """Quit the browser and remove its profile."""
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)
            shutil.rmtree(self.downloads, ignore_errors=True)
