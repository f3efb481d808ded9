"""Fixtures for the dashboard tests: the API on a fresh Postgres database, and
Debian's Chromium driven by Playwright (never a downloaded browser)."""
from __future__ import annotations

import pytest

from tests.dashboard.stack import CHROMIUM_ARGS, Api, postgres_database


@pytest.fixture(scope="session")
def api(tmp_path_factory):
    """The API on a fresh Postgres database, shared by the test modules (starting it is the
    slow part); each module seeds runs under its own names."""
    url, drop = postgres_database()
    server = Api(url, tmp_path_factory.mktemp("api"))
    yield server
    server.stop()
    drop()


@pytest.fixture(scope="module")
def browser():
    """Module-scoped: Playwright's sync API keeps an event loop running in this thread until it
    stops, which would break later tests that call asyncio.run()."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1366, "height": 900}, accept_downloads=True)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.set_default_timeout(15_000)
    yield tab
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"
