"""pycep-parser's lexer, made linear on Bicep strings with interpolations, for every BicepParser the infra tests build.

pycep 0.7's QUOTED_INTERPOLATION terminal allows a nested string inside `${...}` with `(?R)`. Lark joins every
terminal into one alternation and compiles that, so `(?R)` recurses into the whole alternation instead of the string:
inside each `${`, any token matches, and the match runs to the end of the file before it backs off. Each interpolated
string then costs a scan of everything after it, nested; infra/main.bicep took a minute to parse, and a few more
interpolations after its settings made it take more than fifteen. A named group that the recursion calls instead of
`(?R)` is what the pattern meant: on every Bicep file under infra/ the parse is identical, in milliseconds.
"""

from __future__ import annotations

import pycep.main

_RECURSES_INTO_EVERYTHING = r"""QUOTED_INTERPOLATION: /(?!.*''')'(\${(?:[^}'{]+|(?R))*+}|\\'|[^'])*'/"""
_RECURSES_INTO_A_STRING = r"""QUOTED_INTERPOLATION: /(?P<quoted>(?!.*''')'(\${(?:[^}'{]+|(?&quoted))*+}|\\'|[^'])*')/"""

if _RECURSES_INTO_EVERYTHING not in pycep.main.LARK_GRAMMAR:
    raise RuntimeError("pycep's string terminal changed: see whether tests/infra/conftest.py is still needed")
# BicepParser() builds its Lark from this module global when it is created.
pycep.main.LARK_GRAMMAR = pycep.main.LARK_GRAMMAR.replace(_RECURSES_INTO_EVERYTHING, _RECURSES_INTO_A_STRING)
