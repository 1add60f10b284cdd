from __future__ import annotations

from pathlib import Path

import pytest

from aeromq.client import Credentials
from tests.security._certs import Certs, make_certs

ROOT = Credentials("root", "root-secret")
APP = Credentials("app", "app-secret")
READER = Credentials("reader", "reader-secret")


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


ACL_TOML = """
[[acl.users]]
name = "root"
secret = "root-secret"
rules = [{ resource = "*", permissions = ["pub", "sub", "admin"] }]

[[acl.users]]
name = "app"
secret = "app-secret"
rules = [
  { resource = "topic:Orders*", permissions = ["pub", "sub"] },
  { resource = "group:orders", permissions = ["sub"] },
]

[[acl.users]]
name = "reader"
secret = "reader-secret"
rules = [
  { resource = "topic:Orders", permissions = ["sub"] },
  { resource = "group:readers", permissions = ["sub"] },
]
"""


@pytest.fixture
def acl_file(tmp_path: Path) -> Path:
    path = tmp_path / "acl.toml"
    path.write_text(ACL_TOML)
    return path
