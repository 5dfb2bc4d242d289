"""Code blocks cut out of an index, their languages from fences, classes or a guess, and their ranking."""

from __future__ import annotations

import json
import time

import pytest

from shared.code_samples import CUT_MARK, MAX_CODE_CHARS, cut, guess
from shared.errors import InvalidRequestError
from shared.models import SearchKind
from shared.providers.mkdocs.codeblocks import prebuilt
from shared.providers.mkdocs.codeblocks.code import (
    CodeColumns,
    CodeNotRead,
    Fence,
    blocks_of,
    code_key,
    fenced_languages,
    fences,
    named,
)
from shared.providers.mkdocs.codeblocks.coderank import PER_PAGE, CodeRanker, rank_code
from shared.providers.mkdocs.indexes.index import parse_index
from shared.providers.mkdocs.scoring import artifact
from shared.providers.mkdocs.scoring.ranking import Ranker
from shared.providers.mkdocs.scoring.text import analyze_query
from shared.validation import check_kind, check_language
from tests.support.ranking import fit

WHERE = {"location": "guide/#deploy", "page": "guide/", "anchor": "deploy", "title": "Deploy", "page_title": "Guide"}


def blocks(raw: str) -> list:
    return blocks_of(raw, trail="", **WHERE)


def test_each_pre_block_is_an_entry_with_the_prose_just_before_it() -> None:
    raw = (
        "<p>Install the CLI first.</p><pre><code>brew install gamma\ngamma --version\n</code></pre>"
        "<p>Then point it at your cluster:</p><pre><code>gamma login --server https://x.test</code></pre>"
    )
    found = blocks(raw)
    assert [block.code for block in found] == [
        "brew install gamma\ngamma --version",
        "gamma login --server https://x.test",
    ]
    assert found[0].prose == "Install the CLI first."
    assert found[1].prose == "Then point it at your cluster:"  # only what follows the block before it
    assert {(block.location, block.anchor, block.title, block.page_title) for block in found} == {
        ("guide/#deploy", "deploy", "Deploy", "Guide")
    }


def test_entities_and_highlighting_spans_are_undone_and_lines_kept() -> None:
    raw = '<pre><code><span class="k">if</span> a &lt; b &amp;&amp; c:\n    <span>run()</span></code></pre>'
    assert blocks(raw)[0].code == "if a < b && c:\n    run()"


def test_tiny_blocks_and_lone_words_are_not_entries() -> None:
    assert blocks("<pre><code>argocd</code></pre><pre><code>$ ls</code></pre><pre><code>kubectl</code></pre>") == []
    assert len(blocks("<pre><code>kubectl get pods -A</code></pre>")) == 1


def test_the_html_class_names_the_language_canonically() -> None:
    found = blocks('<pre><code class="language-yml">a: 1\nb: 2</code></pre><pre class="language-sh">ls -la /</pre>')
    assert [block.language for block in found] == ["yaml", "bash"]


def test_an_unclosed_pre_ends_the_blocks_and_parsing_stays_linear() -> None:
    assert blocks("<pre><code>never closed") == []
    hostile = "<pre>" * 50_000 + "x y z"
    started = time.process_time()
    assert blocks(hostile) == []
    assert time.process_time() - started < 2  # quadratic would take minutes


FENCED = """\
# Page

```bash
kubectl apply -f app.yaml
```

!!! example
    ```yml title="app.yaml"
    kind: Application
    ```

~~~ {.hcl}
resource "x" "y" {}
~~~

```
plain fence
```
"""


def test_fences_at_any_indentation_with_info_strings() -> None:
    found = fences(FENCED)
    assert [fence.language for fence in found] == ["bash", "yaml", "terraform", ""]
    assert found[1].key == code_key("kind: Application")
    assert found[0].key == code_key("kubectl apply -f app.yaml")


def test_blocks_take_their_fence_by_text_else_by_place() -> None:
    page = blocks(
        "<pre><code>kind: Application</code></pre><pre><code>kubectl apply -f app.yaml</code></pre>"
        "<pre><code>something else entirely</code></pre>"
    )
    by_text = fences(FENCED)
    assert fenced_languages(page, by_text) == ["yaml", "bash", ""]
    aligned = [Fence("nope1", "json"), Fence("nope2", "go"), Fence("nope3", "lua")]
    assert fenced_languages(page, aligned) == ["json", "go", "lua"]  # as many fences as blocks: by place
    assert fenced_languages(page, aligned[:2]) == ["", "", ""]  # not lined up: nothing assumed


def test_without_a_fence_or_class_the_language_is_guessed_and_marked() -> None:
    page = blocks(
        '<pre><code>{"a": 1, "b": [2]}</code></pre><pre><code class="language-go">package x\nfunc f()</code></pre>'
    )
    assert list(named(page, ["", ""])) == [("json", True), ("go", False)]
    assert list(named(page, ["javascript", ""])) == [("javascript", False), ("go", False)]


@pytest.mark.parametrize(
    ("code", "language"),
    [
        ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x", "yaml"),
        ("# install\nkubectl create namespace argocd\nkubectl apply -f x", "bash"),
        ('resource "okta_group" "g" {\n  name = "x"\n}', "terraform"),
        ("param location string = 'westeurope'\nmodule hub './hub.bicep' = {}", "bicep"),
        ("$rg = 'x'\nNew-AzResourceGroup -Name $rg", "powershell"),
        ("import os\ndef main():\n    pass", "python"),
        ("just some words here", "text"),
    ],
)
def test_guesses(code: str, language: str) -> None:
    assert guess(code) == language


def test_kind_and_language_are_checked_and_aliases_fold() -> None:
    assert check_kind(None) is SearchKind.PAGE and check_kind("CODE") is SearchKind.CODE
    with pytest.raises(InvalidRequestError, match="page, code") as refused:
        check_kind("snippet")
    assert refused.value.argument == "kind"
    assert [check_language(name) for name in ("sh", "Shell", "zsh", "yml", "tf", "HCL", "pwsh", "py", "c++")] == [
        "bash",
        "bash",
        "bash",
        "yaml",
        "terraform",
        "terraform",
        "powershell",
        "python",
        "c++",
    ]
    assert check_language("  ") is None
    for bad in ("rm -rf", "a" * 33, "bash;", "../x"):
        with pytest.raises(InvalidRequestError, match="short name"):
            check_language(bad)
    with pytest.raises(InvalidRequestError, match="kind=code"):
        check_language("bash", SearchKind.PAGE)


def test_a_long_block_is_cut_at_a_line_with_a_mark_and_its_length() -> None:
    whole = "\n".join(f"line {n} " + "x" * 50 for n in range(200))
    text, total = cut(whole)
    assert total == len(whole) and len(text) <= MAX_CODE_CHARS and text.endswith(CUT_MARK)
    assert whole.startswith(text[: -len(CUT_MARK)]) and text[: -len(CUT_MARK)].endswith("x" * 50)
    assert cut("short") == ("short", None)


def index_json(docs: list[dict[str, str]]) -> bytes:
    return json.dumps({"docs": docs}).encode()


SITE = index_json(
    [
        {"location": "deploy/", "title": "Deploy", "text": ""},
        {
            "location": "deploy/#helm",
            "title": "With Helm",
            "text": "<p>Install the chart:</p><pre><code>helm install gamma gamma/gamma --namespace ops</code></pre>"
            "<p>Upgrade it later:</p><pre><code>helm upgrade gamma gamma/gamma --reuse-values</code></pre>"
            "<p>Roll back:</p><pre><code>helm rollback gamma 1 --wait</code></pre>"
            "<p>Remove it:</p><pre><code>helm uninstall gamma --namespace ops</code></pre>",
        },
        {"location": "receivers/", "title": "Receivers", "text": ""},
        {
            "location": "receivers/#terraform",
            "title": "Terraform",
            "text": "<p>Declare the pager receiver:</p>"
            '<pre><code>resource "gamma_receiver" "pager" {\n  name = "pager"\n}</code></pre>',
        },
    ]
)


def test_code_ranking_finds_the_block_and_keeps_a_few_per_page() -> None:
    index = parse_index("gamma", SITE)
    assert len(index.code) == 5
    code = CodeRanker.build(index)
    ranker = Ranker.build(index)
    wanted = analyze_query("terraform resource for the pager receiver")
    hits = rank_code(
        [code], wanted, fits=[fit(ranker, wanted)], page_scores=[{}], similarities=[None], say=0, language=None,
        limit=5,
    )  # fmt: skip
    assert code.blocks[hits[0].number].code.startswith('resource "gamma_receiver"')
    assert code.languages[hits[0].number] == "terraform" and code.guessed[hits[0].number]
    helm = analyze_query("helm gamma")
    every = rank_code([code], helm, fits=[1.0], page_scores=[{}], similarities=[None], say=0, language=None, limit=10)
    assert sum(1 for hit in every if code.pages[hit.number] == "deploy/") == PER_PAGE
    only = rank_code([code], helm, fits=[1.0], page_scores=[{}], similarities=[None], say=0, language="yaml", limit=9)
    assert only == []  # a language no block has: nothing, not an error


def test_fences_relabel_the_blocks_as_their_authors_named_them() -> None:
    code = CodeRanker.build(parse_index("gamma", SITE))
    fenced = code.relabel({"receivers/": [Fence(code_key(code.blocks[4].code), "hcl")]})
    assert fenced.languages[4] == "terraform" and not fenced.guessed[4]
    assert fenced.guessed[:4] == code.guessed[:4]


def test_a_prebuilt_ranker_counts_the_code_blocks_and_its_code_part_carries_them_with_their_view() -> None:
    """The page ranker holds the blocks' count only; its code part, read by the first code search, holds the blocks
    and their view, which rank as one built from the index does. A part of another index, or of another count, is
    refused."""
    index = parse_index("gamma", SITE)
    payload = artifact.dumps(Ranker.build(index), index, index_digest="d" * 64, code="c")
    loaded, _ = artifact.loads(payload, site="gamma", index_digest="d" * 64, code="c", kinds=None)
    assert isinstance(loaded.code, CodeColumns) and len(loaded.code) == 5 and not loaded.code.read
    with pytest.raises(CodeNotRead):
        loaded.code[0]
    part = prebuilt.code_dumps(index, index_digest="d" * 64, code="c")
    blocks, view = prebuilt.code_loads(part, site="gamma", index_digest="d" * 64, code="c", count=5)
    loaded.code.fill(blocks, view)
    assert list(loaded.code) == list(index.code) and loaded.code.view is view
    stored, built = CodeRanker.build(loaded, view=view), CodeRanker.build(index)
    assert stored.view is view
    for question in ("helm upgrade gamma", "terraform pager receiver", "nothing here"):
        wanted = analyze_query(question)
        assert stored.lexical(wanted).tolist() == built.lexical(wanted).tolist()  # the very floats
    for digest, count, page in (("e" * 64, 5, part), ("d" * 64, 4, part), ("d" * 64, 5, payload)):
        with pytest.raises(artifact.ArtifactError):
            prebuilt.code_loads(page, site="gamma", index_digest=digest, code="c", count=count)
