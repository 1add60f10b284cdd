"""The Java check: a clear, typed error before any JVM starts when Java is missing or old.

The runtimes here are real executables: the machine's Java, and small scripts that print what
an old or broken Java prints."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aeromq.pipeline import (
    JavaNotFoundError,
    JavaVersionError,
    check_java,
    parse_java_version,
    spark_session,
)


@pytest.mark.parametrize(
    ("text", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('openjdk version "21" 2023-09-19', 21),
        ('java version "1.8.0_392"', 8),
        ('openjdk version "11.0.2" 2019-01-15', 11),
        ("no version here", None),
    ],
)
def test_should_parse_the_major_java_release(text: str, major: int | None) -> None:
    assert parse_java_version(text) == major


def _fake_java_home(root: Path, script: str) -> Path:
    java = root / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n" + script)
    java.chmod(0o755)
    return root


def test_should_accept_the_machine_java() -> None:
    runtime = check_java()
    assert runtime.major >= 17 and os.path.exists(runtime.path)


def test_should_name_the_fix_when_java_is_too_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _fake_java_home(tmp_path, "echo 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    monkeypatch.setenv("JAVA_HOME", str(home))
    with pytest.raises(JavaVersionError, match=r"Java 11 is too old.*openjdk-17-jre-headless"):
        check_java()


def test_should_name_the_fix_when_java_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaNotFoundError, match=r"no java on PATH.*openjdk-17-jre-headless"):
        check_java()
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    with pytest.raises(JavaNotFoundError, match="JAVA_HOME has no bin/java"):
        check_java()


def test_should_report_a_java_that_does_not_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(_fake_java_home(tmp_path, "exit 3\n")))
    with pytest.raises(JavaNotFoundError, match=r"java -version failed.*exit_code=3"):
        check_java()


def test_should_check_java_before_starting_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _fake_java_home(tmp_path, "echo 'java version \"1.8.0_392\"' >&2\n")
    monkeypatch.setenv("JAVA_HOME", str(home))
    with pytest.raises(JavaVersionError, match="Java 8 is too old"):
        spark_session(app_name="never-started")
