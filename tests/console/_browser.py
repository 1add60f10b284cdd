"""Headless Chromium for the console tests: Debian's ``chromium`` driven by its
``chromium-driver`` through Selenium (never a browser a tool downloads by itself)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1000",
)
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"
"""Where screenshots go (git-ignored; CI keeps the directory as the job's artefacts)."""


def chromium(profile_dir: Path) -> webdriver.Chrome:
    """A headless Chromium with a fresh profile in ``profile_dir``; fails naming the Debian
    packages when they are missing (``bash scripts/install-system-packages`` installs them)."""
    binary = shutil.which("chromium")
    driver = shutil.which("chromedriver")
    if binary is None or driver is None:
        pytest.fail(
            "the console tests need Debian's chromium and chromium-driver: "
            f"chromium={binary} chromedriver={driver}; run bash scripts/install-system-packages"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile_dir}")
    browser = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    browser.set_page_load_timeout(30)
    return browser


def screenshot(browser: webdriver.Chrome, name: str) -> Path:
    """Save the page as ``test-artifacts/console/<name>.png``; returns the path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    assert browser.save_screenshot(str(path)), path
    return path
