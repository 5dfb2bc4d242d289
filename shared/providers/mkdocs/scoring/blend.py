"""The one scoring formula: how a page's BM25F, its site's fit, its prior and its similarity to the query's meaning
make its score (pure). `Federation.ranked` scores with it, and so do the tools that tune or study the ranking
(`tools/tune.py`, `fusion.py`, `rerank_variants.py`), never with a copy of their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shared.providers.mkdocs.scoring.parameters import RankingParameters

if TYPE_CHECKING:  # numpy is imported where it is used: a cold start loads it only for the first search
    import numpy as np
    import numpy.typing as npt


def similarity(
    raw: npt.NDArray[np.float32],
    outlines: npt.NDArray[Any],
    correction: npt.NDArray[Any],
    order: npt.NDArray[np.intp],
    starts: npt.NDArray[np.intp],
    parameters: RankingParameters,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float32]]:
    """Each page's similarity to the query: its best entry's corrected cosine blended with its outline's
    (`outline_share`); and every entry's corrected cosine. `raw` holds the entries' cosines, `order`/`starts` group
    them by page. Only an entry whose own cosine is above the threshold is corrected: the threshold is what keeps
    off-topic questions out, and the correction only reorders what passes it (raising an unusually specific entry
    over it would let any question reach a small site's odd page). The one formula: `tools/` call it."""
    import numpy as np

    threshold, share = parameters.threshold, parameters.outline_share
    cosines = np.where(raw > threshold, raw - correction, raw)
    best = np.maximum.reduceat(cosines[order], starts).astype(np.float64)
    return (1 - share) * best + share * outlines.astype(np.float64), cosines


def semantic_credit(
    similarities: npt.NDArray[np.float64],
    say: float,
    boosts: npt.NDArray[np.float64],
    credit_scale: npt.NDArray[np.float64],
    parameters: RankingParameters,
) -> npt.NDArray[np.float64]:
    """What meaning adds to each page's score: `weight` times how far its similarity is above the threshold (0 at or
    below it), times how much the query's words leave to meaning (`say`), the page's boost and its site's scale."""
    import numpy as np

    threshold = parameters.threshold
    closeness = np.where(similarities > threshold, parameters.weight * (similarities - threshold), 0.0)
    return closeness * say * boosts * credit_scale


def lexical_score(
    best: npt.NDArray[np.float64],
    pages: npt.NDArray[np.float64],
    fits: npt.NDArray[np.float64],
    prior: npt.NDArray[np.float64],
    parameters: RankingParameters,
) -> npt.NDArray[np.float64]:
    """What the words give each page: its BM25F (`section_blend`), times its site's fit to the query
    (`ranking.site_fit`) and its prior (boost and title coverage)."""
    return section_blend(best, pages, parameters) * (fits * prior)


def section_blend(
    best: npt.NDArray[np.float64], pages: npt.NDArray[np.float64], parameters: RankingParameters
) -> npt.NDArray[np.float64]:
    """A page's best section's BM25F and its own, blended (`section_share`)."""
    share = parameters.section_share
    return share * best + (1 - share) * pages
