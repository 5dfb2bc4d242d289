"""Code samples as answers carry them, whichever provider found them: a block's text within its size, and a best
guess at its language when nothing names it (pure, no I/O).

The guess is for blocks whose page names no language (a bare fence, a theme that writes no class): it looks for
what a language's first lines cannot do without (JSON that parses, Terraform's and Bicep's block headers, a shell
command, YAML keys, PowerShell cmdlets), in that order, and says `text` when nothing fits. On the sample corpus it
agrees with the authors' own fences on about five blocks in six; answers mark it as a guess (`languageGuessed`).
"""

from __future__ import annotations

import json
import re

from shared.models import CodeSample

MAX_CODE_CHARS = 4_000
"""The most of a block a result carries; a longer one is cut at a line, marked, with its `totalChars`."""

CUT_MARK = "\n… [cut: the block goes on; get the page's section for all of it]"

TEXT = "text"
"""The language of a block nothing names and no guess recognises."""


def sample(code: str, language: str) -> CodeSample:
    """A block as an answer carries it: whole when it fits `MAX_CODE_CHARS`, else cut (`cut`) with its length."""
    text, total = cut(code)
    return CodeSample(language=language, text=text, total_chars=total)


def cut(code: str, limit: int = MAX_CODE_CHARS) -> tuple[str, int | None]:
    """The block whole when it fits, else its first lines that fit with `CUT_MARK` after them, and its length."""
    if len(code) <= limit:
        return code, None
    room = limit - len(CUT_MARK)
    head = code[:room]
    line_end = head.rfind("\n")
    if line_end > 0:
        head = head[:line_end]
    return head.rstrip() + CUT_MARK, len(code)


_BICEP = re.compile(
    r"^\s*(?:targetScope\s*=|param\s+\w+\s+\w+|module\s+\w+\s+'|resource\s+\w+\s+'[\w.]+/[\w/]+@)", re.M
)
_TERRAFORM = re.compile(
    r'^\s*(?:resource|data|provider|variable|output|module|terraform|locals)\s*(?:"[^"\n]*"\s*)*\{', re.M
)
_POWERSHELL = re.compile(r"^\s*(?:\$\w+\s*=|[A-Z][a-z]+-[A-Z][A-Za-z]+\b|Import-Module|Set-|Get-|New-)", re.M)
_YAML_LINE = re.compile(r"""^\s*(?:-\s+)?(?:[\w.\-/"'$]+|"[^"]*")\s*:(?:\s|$)|^\s*-\s|^\s*#|^\s*$""")
_YAML_KEY = re.compile(r"""^\s*(?:-\s+)?[\w.\-/"']+\s*:(?:\s|$)""", re.M)
_SHELL_START = re.compile(
    r"^\s*(?:\$\s|#!/bin/|#!/usr/bin/env\s+(?:ba|z)?sh|(?:sudo\s+)?(?:kubectl|argocd|helm|curl|wget|git|docker|"
    r"podman|az|aws|gcloud|export|cd|mkdir|make|go|npm|npx|yarn|brew|apt|apt-get|yum|pip|pip3|terraform|echo|cat|"
    r"ssh|openssl|kustomize|kind|minikube|k3d|external-dns|okta|bash|sh|chmod|cp|mv|rm|ls|tar|unzip|jq|sed|grep|"
    r"set|source|envsubst|gpg|vault|eksctl|oc)\b|[A-Za-z_][A-Za-z0-9_]*=(?:\$\(|\"|\$|[\w./:-]))"
)
_PYTHON = re.compile(r"^\s*(?:def \w+\(|import \w+|from [\w.]+ import |class \w+[(:])", re.M)
_GO = re.compile(r"^\s*(?:package \w+|func \w*\(|import \()", re.M)


GUESS_CHARS = 1_500
"""What `guess` reads of a block: its start says its language (and a long block is read in linear time anyway)."""


def guess(code: str) -> str:
    """A best guess at a block's language from its text alone (its first `GUESS_CHARS`), canonical; `TEXT` when
    nothing fits."""
    whole = code.strip()
    if whole[:1] in "{[" and (_json(whole) if len(whole) <= 4 * GUESS_CHARS else _JSON_START.match(whole)):
        return "json"
    code = code[:GUESS_CHARS]
    stripped = code.strip()
    if _BICEP.search(code):
        return "bicep"
    if _TERRAFORM.search(code):
        return "terraform"
    if _GO.search(code):
        return "go"
    if _PYTHON.search(code):
        return "python"
    lines = [line for line in code.splitlines() if line.strip()]
    commands = [line for line in lines if not line.lstrip().startswith("#")]
    if commands and _SHELL_START.match(commands[0]):
        return "bash"
    if _POWERSHELL.search(code) and not _YAML_KEY.search(code):
        return "powershell"
    if lines and _YAML_KEY.search(code) and sum(bool(_YAML_LINE.match(line)) for line in lines) >= 0.8 * len(lines):
        return "yaml"
    if stripped.startswith("<"):
        return "xml"
    return TEXT


_JSON_START = re.compile(r'\s*[{\[]\s*(?:"[^"\n]*"\s*:|[{\["\d])')


def _json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


GUESSED = "language guessed from the text"
PENDING = "the site's code is still being read: ask again in a moment for the language its author wrote"
"""What text says of a code result whose language is a guess (`languageGuessed`), and one still being read
(`languagePending`)."""
