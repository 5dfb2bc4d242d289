"""Measure a late-interaction rerank of the ranker's first pages, before building it: each page's closest entry
compared with the question word piece by word piece (MaxSim over MiniLM's token states), not as one pooled vector.

    python tools/late_interaction.py --corpus ../shared/corpus/origin --vectors-cache /tmp/vectors \
        --learn ../shared/evals/dev-set.json tools/evals/holdout-set.json tools/evals/blind-set.json \
            tools/evals/blind-set-{2..14}.json \
        --check tools/evals/blind-set-15.json tools/evals/blind-set-16.json

Every question is ranked as the service ranks it (`tools/tune.py`'s signals and score); the first `--pages` pages are
then ordered by `score / best score + weight * (maxsim - best maxsim)`, where `maxsim` is the mean, over the
question's word pieces, of each one's best cosine with a word piece of the page's closest entry (its highest cosine
with the question), the entry embedded as the warm-up embeds it (heading and start, 128 word pieces) and only its
first `--pieces` word pieces' states kept: as floats, or as their signs (what storing 48 bytes a word piece would
keep). Printed per variant: hit@1 on the learning sets for each weight, the weight chosen leaving one site out and
one set out (and what it scores on what was left out), and the check sets at the weight chosen on all learning
sets. Nothing is learned but that one weight. The model runs here on every question and entry it compares (about
18 ms per entry on two cores: far too slow for a query, hence states stored by the warm-up if it is built).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from shared.embedding import MAX_TOKENS, QUERY_TOKENS, MiniLM, _clipped  # noqa: E402
from shared.providers.mkdocs.scoring.parameters import DEFAULT  # noqa: E402
from shared.providers.mkdocs.scoring.vectors import entry_text  # noqa: E402
from tools.eval import parse_eval_set  # noqa: E402
from tools.tune import Corpus, Signals, prepare, scores  # noqa: E402

SPECIAL = (0, 101, 102)
"""Padding, [CLS] and [SEP]: left out of both sides."""
WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)


@dataclass
class Row:
    """One question's first pages: their scores, each page's MaxSim per variant, and which are right."""

    site: str
    set_name: str
    scores: list[float]
    maxsim: dict[str, list[float]]
    good: list[bool]


def states(encoder: MiniLM, text: str, limit: int) -> npt.NDArray[np.float32]:
    """The text's word pieces' unit token states (special pieces left out), from one run of at most `limit`."""
    ids = _clipped(encoder._tokenizer.encode(text).ids, limit)
    batch = np.array([ids], dtype=np.int64)
    feeds = {"input_ids": batch, "attention_mask": np.ones_like(batch), "token_type_ids": np.zeros_like(batch)}
    found = encoder._session.run(None, feeds)[0][0][[n for n, piece in enumerate(ids) if piece not in SPECIAL]]
    unit: npt.NDArray[np.float32] = found / np.maximum(np.linalg.norm(found, axis=1, keepdims=True), 1e-12)
    return unit


def rows(corpus: Corpus, questions: Sequence[Signals], encoder: MiniLM, pages: int, pieces: list[int]) -> list[Row]:
    federation = corpus.federation
    offsets = np.cumsum([0] + [len(ranker.entries) for ranker in federation.rankers])
    ends = [*federation.starts[1:].tolist(), len(federation.order)]
    cached: dict[int, npt.NDArray[np.float32]] = {}
    found = []
    for q in questions:
        score = scores(corpus, q, DEFAULT)
        top = [int(page) for page in np.argsort(-score)[:pages] if np.isfinite(score[page])]
        asked = states(encoder, q.case.query, QUERY_TOKENS)
        maxsim: dict[str, list[float]] = {}
        for page in top:
            numbers = federation.order[federation.starts[page] : ends[page]]
            best = int(numbers[np.argmax(q.raw[numbers])])
            if best not in cached:
                site = int(np.searchsorted(offsets, best, side="right") - 1)
                entry = federation.rankers[site].entries[best - int(offsets[site])]
                cached[best] = states(encoder, entry_text(entry), MAX_TOKENS)
            held = cached[best]
            for kept in pieces:
                part = held[:kept]
                signs = np.sign(part) / np.sqrt(part.shape[1])
                maxsim.setdefault(f"float {kept}", []).append(float((asked @ part.T).max(axis=1).mean()))
                maxsim.setdefault(f"signs {kept}", []).append(float((asked @ signs.T).max(axis=1).mean()))
        found.append(
            Row(q.site, q.set_name, [float(score[page]) for page in top], maxsim, [bool(q.good[p]) for p in top])
        )
    return found


def hit1(found: Sequence[Row], variant: str, weight: float) -> float:
    hits = 0
    for row in found:
        if not row.scores:
            continue
        score, maxsim = np.array(row.scores), np.array(row.maxsim[variant])
        hits += row.good[int(np.argmax(score / score.max() + weight * (maxsim - maxsim.max())))]
    return hits / max(1, len(found))


def chosen(found: Sequence[Row], variant: str) -> float:
    return max(WEIGHTS, key=lambda weight: hit1(found, variant, weight))


def held_out(found: Sequence[Row], variant: str, key: str) -> tuple[float, float, list[str]]:
    """Today and reranked hit@1 over every question, each scored at the weight chosen without its site (or set)."""
    today = learned = 0.0
    shown = []
    for group in sorted({getattr(row, key) for row in found}):
        held = [row for row in found if getattr(row, key) == group]
        weight = chosen([row for row in found if getattr(row, key) != group], variant)
        before, after = hit1(held, variant, 0.0), hit1(held, variant, weight)
        today, learned = today + before * len(held), learned + after * len(held)
        shown.append(f"{group} {len(held)}: {before:.3f} -> {after:.3f} (weight {weight})")
    return today / len(found), learned / len(found), shown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--learn", type=Path, nargs="+", required=True, help="sets the weight may be chosen on")
    parser.add_argument("--check", type=Path, nargs="*", default=[], help="sets only scored, at the chosen weight")
    parser.add_argument("--vectors-cache", type=Path, help="where tools/tune.py keeps the corpus's vectors")
    parser.add_argument("--pages", type=int, default=5)
    parser.add_argument("--pieces", type=int, nargs="+", default=[32, 64, 128])
    args = parser.parse_args(argv)
    paths = [*args.learn, *args.check]
    sets = {path.name: parse_eval_set(path.read_text(encoding="utf-8")).cases for path in paths}
    cache = args.vectors_cache / f"t{MAX_TOKENS}" if args.vectors_cache else None
    corpus = prepare(args.corpus, sets, cache)
    found = rows(corpus, corpus.questions, MiniLM.load(), args.pages, args.pieces)
    learning = {path.name for path in args.learn}
    learn = [row for row in found if row.set_name in learning]
    check = [row for row in found if row.set_name not in learning]
    print(f"{len(learn)} learning questions, {len(check)} checked; the first {args.pages} pages reranked; hit@1")
    for variant in found[0].maxsim if found else []:
        grid = ", ".join(f"{weight}: {hit1(learn, variant, weight):.3f}" for weight in WEIGHTS)
        print(f"\n{variant}: learning sets by weight {grid}")
        for key, label in (("site", "leave one site out"), ("set_name", "leave one set out")):
            today, learned, shown = held_out(learn, variant, key)
            print(f"  {label}: {today:.3f} -> {learned:.3f}")
            for line in shown if key == "site" else []:
                print(f"    {line}")
        weight = chosen(learn, variant)
        for name in sorted({row.set_name for row in check}):
            held = [row for row in check if row.set_name == name]
            print(f"  {name} at weight {weight}: {hit1(held, variant, 0.0):.3f} -> {hit1(held, variant, weight):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
