"""Token table parsing and matching."""

from __future__ import annotations

import pytest

from runjournal_server.api.auth import (
    PermissionDeniedError,
    TokenFileError,
    TokenTable,
    UnauthenticatedError,
    token_sha256,
)


def table(tmp_path, text: str) -> TokenTable:
    path = tmp_path / "tokens.toml"
    path.write_text(text)
    return TokenTable.from_file(path)


def test_a_token_maps_to_its_prefixes(tmp_path):
    tokens = table(
        tmp_path,
        f'[[tokens]]\nname = "a"\nsha256 = "{token_sha256("s3cret")}"\nrun_id_prefixes = ["a-", "shared-"]\n',
    )
    access = tokens.authenticate([("authorization", "Bearer s3cret")])
    assert access.name == "a" and access.allows("a-1") and access.allows("shared-x") and not access.allows("b-1")
    with pytest.raises(PermissionDeniedError):
        access.check_run("b-1")
    for metadata in ([], [("authorization", "Bearer nope")], [("authorization", "s3cret")]):
        with pytest.raises(UnauthenticatedError):
            tokens.authenticate(metadata)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[[tokens]]\nname = 'a'\n",
        "[[tokens]]\nname = 'a'\nsha256 = 'xyz'\nrun_id_prefixes = ['a-']\n",
        f"[[tokens]]\nname = 'a'\nsha256 = '{'0' * 64}'\nrun_id_prefixes = []\n",
        f"[[tokens]]\nname = 'a'\nsha256 = '{'0' * 64}'\nrun_id_prefixes = ['a-']\ntoken = 'plain'\n",
        "not toml [",
    ],
)
def test_malformed_token_files_are_refused(tmp_path, text):
    with pytest.raises(TokenFileError):
        table(tmp_path, text)
