"""With auth on for every request, the page itself loads but the API needs a sign-in; the token
stays in the page's memory and carries the client's role."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from gateway.demo.robot import Robot
from tests.conftest import free_port
from tests.e2e.browser import Browser
from tests.harness import Gateway, assert_error
from tests.integration.test_security_helpers import SecureGateway

pytestmark = [pytest.mark.integration, pytest.mark.browser]

SECRET = "dashboard-test-secret-0123456789abcdef"


@pytest.fixture(scope="module")
def robot(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Robot]:
    with Robot.start(domain, nodes=("calibration",),
                     log_dir=tmp_path_factory.mktemp("dash-auth-robot")) as r:
        yield r


def secure_gateway(domain: int, logs: Path, mode: str) -> SecureGateway:
    return SecureGateway(free_port(), domain, [
        "auth.enabled=true", f"auth.require_auth_for={mode}", f"auth.jwt_secret={SECRET}",
        "auth.clients=[dash:dash-pass:operator]", f"state_dir={logs / 'state'}"],
        logs / "gw.log").start(timeout=60)


@pytest.fixture(scope="module")
def secured(domain: int, robot: Robot, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Gateway]:
    gw = secure_gateway(domain, tmp_path_factory.mktemp("dash-auth-all"), "all")
    try:
        yield gw
    finally:
        gw.stop()


@pytest.fixture(scope="module")
def write_secured(domain: int, robot: Robot, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[Gateway]:
    gw = secure_gateway(domain, tmp_path_factory.mktemp("dash-auth-write"), "write")
    try:
        gw.wait_for("/apps", lambda b: [a["id"] for a in b["items"]] == ["calibration"], 60)
        yield gw
    finally:
        gw.stop()


def page(gw: Gateway, path: str) -> int:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    finally:
        conn.close()


def sign_in(browser: Browser, client: str, secret: str) -> None:
    dialog = browser.css("dialog#signin", "the sign-in form")
    for name, value in (("client-id", client), ("client-secret", secret)):
        field = dialog.find_element(By.ID, name)
        field.clear()
        field.send_keys(value)
    dialog.find_element(By.ID, "signin-submit").click()


def test_page_is_public_while_the_api_needs_a_token(secured: Gateway) -> None:
    assert page(secured, "/") == 200
    assert page(secured, "/dashboard/js/main.js") == 200
    assert_error(secured.get("/apps"), 401)


def test_sign_in_is_required_and_a_wrong_secret_is_refused(browser: Browser,
                                                           secured: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{secured.port}/")
    browser.css("dialog#signin", "the sign-in form")
    assert not browser.driver.find_elements(By.CSS_SELECTOR, "#tree a[data-entity]")
    sign_in(browser, "dash", "wrong")
    browser.text_in("#signin-error", "Sign-in failed")


def test_signed_in_the_page_works_with_the_role_of_the_client(browser: Browser,
                                                               secured: Gateway) -> None:
    sign_in(browser, "dash", "dash-pass")
    browser.css('#tree a[data-entity="apps/calibration"]', "the tree after sign-in")
    browser.text_in("#who", "signed in as dash (operator)")
    storage = browser.driver.execute_script(
        "return [localStorage.length, sessionStorage.length, document.cookie]")
    assert storage == [0, 0, ""]
    browser.driver.execute_script("location.hash = '#/e/apps/calibration/operations'")
    browser.css('.op[data-op="calibrate"] button[type=submit]', "the service").click()
    browser.text_in('.op[data-op="calibrate"] .result', "engine calibrated")
    # an operator may not change parameters: the 403 is shown with its message
    browser.driver.execute_script("location.hash = '#/e/apps/calibration/configurations'")
    row = browser.css('tr[data-param="calibration_offset"]', "the parameter")
    row.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    err = browser.text_in('tr[data-param="calibration_offset"] .error', "403")
    assert "configurator" in err.text


def test_token_lives_in_memory_only(browser: Browser, secured: Gateway) -> None:
    browser.driver.refresh()
    browser.css("dialog#signin", "the sign-in form after a reload")
    assert browser.driver.find_element(By.ID, "who").text == ""


def test_write_mode_reads_freely_and_asks_for_sign_in_at_the_first_write(
        browser: Browser, write_secured: Gateway) -> None:
    browser.open(f"http://127.0.0.1:{write_secured.port}/#/e/apps/calibration/operations")
    browser.css('#tree a[data-entity="apps/calibration"]', "the tree without a token")
    assert browser.css("#signin-btn").is_displayed()
    browser.css('.op[data-op="calibrate"] button[type=submit]', "the service").click()
    sign_in(browser, "dash", "dash-pass")
    # the refused call is sent again with the token once signed in
    browser.text_in('.op[data-op="calibrate"] .result', "engine calibrated")
    browser.text_in("#who", "signed in as dash (operator)")
    assert not browser.css("#signout-btn").get_attribute("hidden")
