"""The workaround in tests/infra/conftest.py: the string terminal it rewrites reads every string as pycep's own did."""

from __future__ import annotations

from typing import Any

from lark import Lark
from pycep import BicepParser
from pycep.transformer import BicepToJson

from tests.infra import conftest

SAMPLE = """var zone = 'privatelink${replace(environment().suffixes.keyvaultDns, '.vault.', '.vaultcore.')}'
var reference = '@Microsoft.KeyVault(SecretUri=https://${name}${environment().suffixes.keyvaultDns}/secrets/${secret})'
var escaped = 'the app\\'s ${name}'
var nested = '${empty(a) ? '${b}-x' : 'y'}'
var plain = 'no interpolation'
"""


def as_pycep_parses(text: str, grammar: str) -> Any:
    tree = Lark(grammar=grammar, parser="lalr", propagate_positions=True, regex=True).parse(text)
    return BicepToJson(add_line_numbers=False).transform(tree)


def test_the_rewritten_string_terminal_parses_as_pyceps_own() -> None:
    import pycep.main

    original = pycep.main.LARK_GRAMMAR.replace(conftest._RECURSES_INTO_A_STRING, conftest._RECURSES_INTO_EVERYTHING)
    assert original != pycep.main.LARK_GRAMMAR, "the workaround is in place for every BicepParser the tests build"
    assert BicepParser().parse(text=SAMPLE) == as_pycep_parses(SAMPLE, original)
