"""Learn how the ranking's signals combine, from labelled questions, and check it holds on sites it was not learned on.

    python tools/fusion.py --corpus ../shared/corpus/origin --eval ../shared/evals/dev-set.json \
        tools/evals/holdout-set.json tools/evals/blind-set.json tools/evals/blind-set-{2..14}.json

For every question, every candidate page (what the service ranks: pages with a term score or a similarity past the
threshold, and the closest pages by meaning below it) gets the signals the service's score is made of
(`Federation.lexical`, `Federation.scan`): the BM25F section and page scores, title coverage, site fit, the page's
boost and page-kind weight, its similarity by meaning (best entry, corrected for hubness, and outline), the query's
semantic say. A linear score over a fixed set of those signals and their products (`FEATURES`) is learned with a
pairwise logistic loss (the right page above each wrong one), L2-regularised, by plain gradient descent: no weights
learned from any page, only a dozen numbers from the questions' labels.

It prints the service's current ranking and the learned one: on all the questions (fit and scored on the same:
optimistic), leave-one-site-out (learned on the questions answered on three sites, scored on the fourth), and
leave-one-set-out. Nothing here runs on blind-set-15 or later unless given: keep them out of `--eval`. Like
`tools/tune.py`, it scores the ranking before the late-interaction rerank of the first pages; a learned rerank on
top of it is `tools/rerank_variants.py`'s listwise variant.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from shared.providers.mkdocs.indexes.index import SiteIndex, parse_index  # noqa: E402
from shared.providers.mkdocs.indexes.kinds import DEFAULT as DEFAULT_KINDS  # noqa: E402
from shared.providers.mkdocs.indexes.kinds import PathWeights  # noqa: E402
from shared.providers.mkdocs.scoring.blend import lexical_score, section_blend, semantic_credit, similarity  # noqa: E402
from shared.providers.mkdocs.scoring.federation import Federation  # noqa: E402
from shared.providers.mkdocs.scoring.ranking import Ranker  # noqa: E402
from shared.providers.mkdocs.scoring.semantics import semantic_say  # noqa: E402
from shared.providers.mkdocs.scoring.text import analyze_query  # noqa: E402
from shared.providers.mkdocs.scoring.vectors import SiteVectors  # noqa: E402
from tools.bench import DEFAULT_SITE, SITES, qualify  # noqa: E402
from tools.eval import Case, normalize, parse_eval_set  # noqa: E402

CLOSEST = 30
"""Pages closest by meaning kept as candidates even below the similarity threshold."""
NEGATIVES = 40
"""Wrong pages per question the loss compares the right one with (the best-scored by today's ranking)."""


@dataclass
class Question:
    case: Case
    set_name: str
    site: str
    """Where its answer is (the first acceptable location's site)."""
    locations: list[str]
    features: npt.NDArray[np.float64]
    """One row per candidate page."""
    baseline: npt.NDArray[np.float64]
    """Today's score of each candidate."""
    good: npt.NDArray[np.bool_]


def site_of(location: str) -> str:
    head = location.strip("/").partition("/")[0]
    return head if head in SITES else DEFAULT_SITE


def load(corpus: Path, vectors_cache: Path | None) -> tuple[Federation, list[str], Any]:
    from shared.embedding import MiniLM, load_bulk

    indexes: dict[str, SiteIndex] = {
        site: parse_index(site, (corpus / path).read_bytes()) for site, path in SITES.items()
    }
    kinds = PathWeights.parse(DEFAULT_KINDS)
    rankers = []
    bulk = None
    for site, index in indexes.items():
        ranker = Ranker.build(index, kinds)
        cached = vectors_cache / f"{site}.npz" if vectors_cache else None
        if cached is not None and cached.is_file():
            stored = np.load(cached)
            vectors = SiteVectors(stored["matrix"], tuple(str(key) for key in stored["keys"]))
        else:
            bulk = bulk or load_bulk()
            vectors = SiteVectors.compute(bulk, index.entries, code=index.code)
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                np.savez(cached, matrix=vectors.matrix, keys=np.array(vectors.keys))
        ranker.attach(vectors)
        rankers.append(ranker)
    return Federation.of(rankers), list(indexes), MiniLM.load()


FEATURES = (
    "today",
    "lexical*fit*prior",
    "lexical",
    "page lexical",
    "coverage",
    "log fit",
    "log boost",
    "credit",
    "similarity",
    "similarity*say",
    "outline*say",
    "lexical*similarity",
    "lexical rank 1/(5+r)",
    "meaning rank 1/(5+r)",
    "lexical rank 1/(60+r)",
    "meaning rank 1/(60+r)",
)


def signals(federation: Federation, query: str, vector: Any) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """The candidate pages of one question and their signals (`FEATURES`), all sites end to end."""
    parameters = federation.parameters
    wanted = analyze_query(query)
    say = semantic_say(query, wanted, parameters)
    lexical = federation.lexical(wanted)
    pages = federation.page_base[-1]
    if lexical is None:
        zeros = np.zeros(pages)
        scores = best = coverage = zeros
        boosts = federation.weighted
        fits = np.zeros(len(federation.rankers))
    else:
        scores, boosts, prior, _, best, fits = lexical
        coverage = prior / np.where(boosts > 0, boosts, 1.0) - 1.0
    products = federation.scan(vector)
    assert products is not None and federation.correction is not None
    raw = np.concatenate([part[: len(r.entries)] for part, r in zip(products, federation.rankers, strict=True)])
    outlines = np.concatenate(
        [part[len(r.entries) :] for part, r in zip(products, federation.rankers, strict=True)]
    ).astype(np.float64)
    threshold = parameters.threshold
    blended, _ = similarity(raw, outlines, federation.correction, federation.order, federation.starts, parameters)
    fit = fits[federation.site_of_page] if len(fits) else np.zeros(pages)
    prior_all = boosts * (1 + coverage)
    lexical_core = section_blend(best, scores, parameters)
    credit = semantic_credit(blended, max(say, 0.0), boosts, federation.credit_scale, parameters)
    today = lexical_score(best, scores, fit, prior_all, parameters) + credit
    chosen = scores != 0
    chosen[np.flatnonzero(blended > threshold)] = True
    chosen[np.argsort(-blended)[:CLOSEST]] = True
    candidates = np.flatnonzero(chosen)
    c = candidates
    lexical_rank = np.empty(pages)
    lexical_rank[np.argsort(-(lexical_core * fit * prior_all), kind="stable")] = np.arange(1, pages + 1)
    meaning_rank = np.empty(pages)
    meaning_rank[np.argsort(-blended, kind="stable")] = np.arange(1, pages + 1)
    positive_say = max(say, 0.0)
    rows = np.column_stack(
        [
            today[c],
            (lexical_core * fit * prior_all)[c],
            lexical_core[c],
            scores[c],
            coverage[c],
            np.log(np.maximum(fit[c], 1e-3)),
            np.log(np.maximum(boosts[c], 1e-3)),
            credit[c],
            blended[c],
            blended[c] * positive_say,
            outlines[c] * positive_say,
            lexical_core[c] * blended[c],
            1 / (5 + lexical_rank[c]),
            1 / (5 + meaning_rank[c]),
            1 / (60 + lexical_rank[c]),
            1 / (60 + meaning_rank[c]),
        ]
    )
    return candidates, rows


def prepare(federation: Federation, sites: list[str], encoder: Any, sets: dict[str, list[Case]]) -> list[Question]:
    questions = []
    for set_name, cases in sets.items():
        vectors = encoder.encode([case.query for case in cases], query=True)
        for case, vector in zip(cases, vectors, strict=True):
            candidates, rows = signals(federation, case.query, vector)
            locations = []
            for page in candidates.tolist():
                site = int(federation.site_of_page[page])
                local = page - federation.page_base[site]
                locations.append(qualify(sites[site], federation.rankers[site].pages[local].entry.location))
            wanted = {normalize(location) for location in case.acceptable}
            good = np.array([normalize(location) in wanted for location in locations], dtype=bool)
            questions.append(
                Question(case, set_name, site_of(case.acceptable[0]), locations, rows, rows[:, 0].copy(), good)
            )
    return questions


def standardiser(questions: Sequence[Question]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    rows = np.concatenate([q.features for q in questions])
    return rows.mean(axis=0), rows.std(axis=0) + 1e-9


def learn(questions: Sequence[Question], l2: float = 0.01, iterations: int = 30) -> Any:
    """Weights over the standardised features: pairwise logistic loss (each question weighing the same), minimised
    by Newton's method (a dozen weights: the Hessian is tiny)."""
    mean, scale = standardiser(questions)
    lefts, rights, weights = [], [], []
    for q in questions:
        if not q.good.any():
            continue
        x = (q.features - mean) / scale
        negatives = np.flatnonzero(~q.good)
        negatives = negatives[np.argsort(-q.baseline[negatives])][:NEGATIVES]
        positives = np.flatnonzero(q.good)
        for p in positives:
            lefts.append(np.repeat(x[p][None, :], len(negatives), axis=0))
            rights.append(x[negatives])
            weights.append(np.full(len(negatives), 1.0 / (len(positives) * max(1, len(negatives)))))
    difference = np.concatenate(lefts) - np.concatenate(rights)
    pair_weight = np.concatenate(weights)
    pair_weight = pair_weight / pair_weight.sum()
    w = np.zeros(difference.shape[1])
    w[0] = 1.0
    for _ in range(iterations):
        margin = difference @ w
        wrong = 1.0 / (1.0 + np.exp(np.clip(margin, -30, 30)))  # probability the pair is misordered
        gradient = -(difference.T @ (pair_weight * wrong)) + l2 * w
        hessian = (difference.T * (pair_weight * wrong * (1 - wrong))) @ difference + l2 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-6:
            break
    return mean, scale, w


def ranks(questions: Sequence[Question], model: Any | None) -> list[int | None]:
    found = []
    for q in questions:
        if model is None:
            score = q.baseline
        else:
            mean, scale, w = model
            score = ((q.features - mean) / scale) @ w
        order = np.argsort(-score, kind="stable")
        hits = np.flatnonzero(q.good[order])
        found.append(int(hits[0]) + 1 if len(hits) else None)
    return found


def metrics(found: Sequence[int | None]) -> str:
    count = len(found)
    h1 = sum(rank == 1 for rank in found) / count
    h5 = sum(rank is not None and rank <= 5 for rank in found) / count
    mrr = sum(1 / rank for rank in found if rank is not None and rank <= 10) / count
    return f"{h1:.3f} / {h5:.3f} / {mrr:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--eval", type=Path, nargs="+", action="extend", default=[])
    parser.add_argument("--vectors-cache", type=Path, help="keep computed vectors here between runs")
    parser.add_argument("--l2", type=float, default=0.01)
    parser.add_argument("--tokens", type=int, default=None, help="word pieces embedded per entry (the service's: 64)")
    args = parser.parse_args(argv)
    import shared.embedding

    if args.tokens:
        shared.embedding.MAX_TOKENS = args.tokens
    tokens = shared.embedding.MAX_TOKENS
    sets = {path.name: parse_eval_set(path.read_text(encoding="utf-8")).cases for path in args.eval}
    cache = args.vectors_cache / f"t{tokens}" if args.vectors_cache else None
    federation, sites, encoder = load(args.corpus, cache)
    questions = prepare(federation, sites, encoder, sets)
    print(f"{len(questions)} questions, {tokens} word pieces per entry; hit@1 / hit@5 / MRR@10")
    for number, name in enumerate(FEATURES):
        alone = [
            Question(q.case, q.set_name, q.site, q.locations, q.features, q.features[:, number], q.good)
            for q in questions
        ]
        print(f"  {name:<24} alone {metrics(ranks(alone, None))}")
    everything = learn(questions, args.l2)
    print(
        f"all (fit on all: optimistic)   today {metrics(ranks(questions, None))}  "
        f"learned {metrics(ranks(questions, everything))}"
    )
    print("weights:", json.dumps(dict(zip(FEATURES, np.round(everything[2], 3).tolist(), strict=True))))
    print("leave one site out:")
    for site in sites:
        held = [q for q in questions if q.site == site]
        model = learn([q for q in questions if q.site != site], args.l2)
        print(f"  {site:<18} {len(held):>4}  today {metrics(ranks(held, None))}  learned {metrics(ranks(held, model))}")
    print("leave one set out:")
    for name in sets:
        held = [q for q in questions if q.set_name == name]
        model = learn([q for q in questions if q.set_name != name], args.l2)
        print(f"  {name:<18} {len(held):>4}  today {metrics(ranks(held, None))}  learned {metrics(ranks(held, model))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
