"""The broker id kept in the data directory (``broker/broker_id.py``): made once, the same on
every later start (a restart), refused when the file holds something else."""

from __future__ import annotations

from pathlib import Path

import pytest

from aeromq.broker import StoreError
from aeromq.broker.broker_id import BROKER_ID_FILE, load_or_create_broker_id


def test_should_make_an_id_once_and_give_the_same_on_every_later_start(tmp_path: Path) -> None:
    made = load_or_create_broker_id(tmp_path, 0o600)
    assert len(made) == 32 and int(made, 16) >= 0
    assert load_or_create_broker_id(tmp_path, 0o600) == made
    assert (tmp_path / BROKER_ID_FILE).read_text().strip() == made
    assert sorted(p.name for p in tmp_path.iterdir()) == [BROKER_ID_FILE]  # no temporary left


def test_should_give_another_store_another_id(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert load_or_create_broker_id(tmp_path / "a", 0o600) != load_or_create_broker_id(
        tmp_path / "b", 0o600
    )


def test_should_refuse_a_file_that_holds_no_id(tmp_path: Path) -> None:
    (tmp_path / BROKER_ID_FILE).write_text("not an id\n")
    with pytest.raises(StoreError, match="holds no id"):
        load_or_create_broker_id(tmp_path, 0o600)
