"""Page-kind weights: path rules that rank design proposals, upgrade notes, release notes and the like below the
guide on the same topic, unless the query asks for that kind of page, and command-line reference pages above it
when the query asks about the command line (pure: no I/O).

Documentation sites mix guides with pages *about* a feature's history (the proposal that introduced it, the upgrade
notes that changed its default, the release notes that announced it): they share the guide's words, and a reader
asking how to use the feature wants the guide. The other way round, a generated command reference shares few words
with a question put in the reader's terms, so the guide wins even when the reader asked for the command. The spec's
only knob is the per-page `boost` a page author sets; these rules are the site-wide knob a docs owner sets once in
`Forge__Documentation__Search__PathWeights`:

    [{"pattern": "proposals/", "weight": 0.5, "unless": ["proposal", "design"]},
     {"pattern": "*commands/*", "weight": 2, "when": ["cli", "command", "flag"]}]

A rule matches a page's decoded, lower-cased path within its site (a glob when it has `*`, `?` or `[`, whose `*`
crosses `/`; else a prefix), on every site or on its `site`. Its `weight` multiplies the page's score like a boost,
and its semantic credit too (`parameters.py`). A query containing one of its `unless` words or phrases (compared
after the ranker's stemming) switches it off; a `when` rule is on only for a query containing one of its own. The
first matching rule claims a page even while it is off. `[]` restores the spec's ranking; `docs/configuration.md`
is the full reference.

`DEFAULT` stays here, not with the ranking parameters: it is the setting's default, which a deployment replaces.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import unquote

from shared.errors import ConfigurationError
from shared.providers.mkdocs.indexes.index import MAX_BOOST
from shared.providers.mkdocs.scoring.text import analyze
from shared.site_key import SiteKey

MAX_RULES = 100
"""More rules than any docs owner writes by hand; a bound, so a setting cannot make every page load slow."""

_PROPOSAL = ["proposal", "proposed", "design", "enhancement", "rationale", "motivation"]
_UPGRADE = ["upgrade", "upgrading", "migrate", "migration", "release"]
_RELEASE = ["release notes", "released", "changelog"]
_COMMAND_LINE = ["cli", "command", "subcommand", "flag"]
DEFAULT = json.dumps(
    [
        {"pattern": "proposals/", "weight": 0.5, "unless": _PROPOSAL},
        {"pattern": "proposal/", "weight": 0.5, "unless": _PROPOSAL},
        {"pattern": "enhancements/", "weight": 0.5, "unless": _PROPOSAL},
        {"pattern": "*/upgrading/*", "weight": 0.5, "unless": _UPGRADE},
        {"pattern": "upgrading/", "weight": 0.5, "unless": _UPGRADE},
        {"pattern": "*release-notes*", "weight": 0.5, "unless": _RELEASE},
        {"pattern": "*changelog*", "weight": 0.5, "unless": _RELEASE},
        {"pattern": "blog/", "weight": 0.5, "unless": ["blog", "announcement", "announced"]},
        {"pattern": "archive/", "weight": 0.5, "unless": ["archive", "archived", "deprecated", "old"]},
        {"pattern": "*commands/*", "weight": 2, "when": _COMMAND_LINE},
        {"pattern": "*cli/*", "weight": 2, "when": _COMMAND_LINE},
    ],
    separators=(",", ":"),
)
"""The documented starting point: the usual homes of proposals, upgrade notes, release notes, blogs and archives
in MkDocs sites, at half weight, each waived by the words that ask for that kind; and command-line reference
pages at double weight for a question that asks about the command line."""


@dataclass(frozen=True, slots=True)
class PathRule:
    pattern: str
    weight: float
    unless: tuple[frozenset[str], ...]
    """Words or phrases (analyzed) that switch the rule off when the query has all of one's terms."""
    site: str | None = None
    when: tuple[frozenset[str], ...] = ()
    """Words or phrases (analyzed) without one of which in the query the rule is off; empty: always on."""

    def on(self, asked: AbstractSet[str]) -> bool:
        """Whether the rule weighs pages for a query with these analyzed terms."""
        if any(phrase <= asked for phrase in self.unless):
            return False
        return not self.when or any(phrase <= asked for phrase in self.when)

    def matches(self, site: str, path: str) -> bool:
        """Whether the rule claims this page (`PathWeights.rule_for` asks every rule at once)."""
        site, path = _site_of(site), unquote(path).lower()
        if self.site is not None and self.site != site:
            return False
        if _is_glob(self.pattern):
            return fnmatch.fnmatchcase(path, self.pattern)
        return path.startswith(self.pattern)


_GLOB = re.compile(r"[*?\[]")


@lru_cache(maxsize=MAX_RULES)
def _is_glob(pattern: str) -> bool:
    return _GLOB.search(pattern) is not None


_REMEMBERED = 256
"""Queries whose toggled rules `PathWeights.toggled` keeps (a query's terms and a few numbers each)."""


@dataclass(frozen=True, slots=True)
class PathWeights:
    """An ordered list of path rules; the first that matches a page weighs it."""

    rules: tuple[PathRule, ...] = ()
    source: str = field(default="[]", compare=False)
    """The setting's text, as given."""
    _toggled: dict[frozenset[str], frozenset[int]] = field(default_factory=dict, compare=False, repr=False)
    _matchers: dict[str, re.Pattern[str]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def parse(cls, text: str) -> PathWeights:
        """Rules from the setting's JSON; a ValueError names what is wrong and what is accepted."""
        try:
            document = json.loads(text) if text.strip() else []
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"PathWeights must be a JSON list of rules: {exc}") from None
        if not isinstance(document, list):
            raise ValueError('PathWeights must be a JSON list of rules such as [{"pattern": "blog/", "weight": 0.5}]')
        if len(document) > MAX_RULES:
            raise ValueError(f"PathWeights has {len(document)} rules; at most {MAX_RULES} are accepted")
        return cls(tuple(_rule(number, raw) for number, raw in enumerate(document)), text)

    def rule_for(self, site: str, path: str) -> int | None:
        """The number of the first rule matching this page, or None."""
        (number,) = self.rules_for(site, [path])
        return None if number < 0 else number

    def rules_for(self, site: str, paths: Iterable[str]) -> list[int]:
        """`rule_for` of each of the site's pages, -1 for none: the site's matcher found once for all of them."""
        site = _site_of(site)
        matcher = self._matchers.get(site)
        if matcher is None:
            matcher = self._matchers[site] = _matcher(self.rules, site)
        found = (matcher.match(unquote(path).lower()) for path in paths)
        return [-1 if match is None or match.lastgroup is None else int(match.lastgroup[1:]) for match in found]

    def toggled(self, terms: Sequence[str]) -> frozenset[int]:
        """The rules a query with these analyzed terms turns from their usual state: an `unless` rule it switches
        off, a `when` rule it switches on.

        Remembered for the last queries: every site searched asks the same rules about the same query."""
        asked = frozenset(terms)
        found = self._toggled.get(asked)
        if found is None:
            if len(self._toggled) >= _REMEMBERED:
                self._toggled.clear()
            found = frozenset(number for number, rule in enumerate(self.rules) if rule.on(asked) != (not rule.when))
            self._toggled[asked] = found
        return found


def _site_of(site: str) -> str:
    """The configured site a ranker's site is, lower-cased: a versioned site's version (`vdocs@2.1`, see
    `shared.site_key.SiteKey`) follows its site's rules."""
    return SiteKey.parse(site.lower()).site


def _matcher(rules: Sequence[PathRule], site: str) -> re.Pattern[str]:
    """One pattern for the rules that apply on `site`, each an alternative named after its number: alternatives are
    tried in order, so a match names the first rule that `matches` (the same predicate, one regex call a page)."""
    alternatives = [
        f"(?P<r{number}>{fnmatch.translate(rule.pattern) if _is_glob(rule.pattern) else re.escape(rule.pattern)})"
        for number, rule in enumerate(rules)
        if rule.site is None or rule.site == site
    ]
    return re.compile("|".join(alternatives) or "(?!)")


def _rule(number: int, raw: object) -> PathRule:
    where = f"PathWeights rule {number}"
    if not isinstance(raw, dict):
        raise ValueError(f'{where} must be an object such as {{"pattern": "blog/", "weight": 0.5}}')
    unknown = set(raw) - {"pattern", "weight", "unless", "when", "site"}
    if unknown:
        raise ValueError(f"{where} has unknown keys {sorted(unknown)}; accepted: pattern, weight, unless, when, site")
    pattern, weight, site = raw.get("pattern"), raw.get("weight"), raw.get("site")
    if not isinstance(pattern, str) or not pattern.strip():
        raise ValueError(f"{where} needs a non-empty string 'pattern' (a path prefix or a glob)")
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight <= MAX_BOOST:
        raise ValueError(f"{where} needs a numeric 'weight' from 0 to {MAX_BOOST:g}")
    if site is not None and (not isinstance(site, str) or not site.strip()):
        raise ValueError(f"{where}: 'site' must be a site name")
    if "when" in raw and "unless" in raw:
        raise ValueError(f"{where} has both 'unless' and 'when'; write two rules")
    site = site.strip().lower() if site else None
    unless, when = _phrases(where, "unless", raw.get("unless", [])), _phrases(where, "when", raw.get("when", []))
    if "when" in raw and not when:
        raise ValueError(f"{where}: 'when' needs at least one word (leave it out for a rule that always applies)")
    return PathRule(unquote(pattern.strip()).lstrip("/").lower(), float(weight), unless, site, when)


def _phrases(where: str, key: str, raw: object) -> tuple[frozenset[str], ...]:
    """A rule's `unless` or `when` words and phrases, analyzed as a query is."""
    if not isinstance(raw, list) or not all(isinstance(words, str) for words in raw):
        raise ValueError(f"{where}: '{key}' must be a list of words")
    phrases = tuple(frozenset(analyze(words)) for words in raw)
    if not all(phrases):
        raise ValueError(f"{where}: every '{key}' entry needs a word a query can contain (not only stop words)")
    return phrases


SETTING = "Forge__Documentation__Search__PathWeights"


@lru_cache(maxsize=8)
def configured(text: str | None, sites: tuple[str, ...]) -> PathWeights:
    """The page-kind rules the `Search__PathWeights` setting gives (None or empty: `DEFAULT`), each rule's `site`
    one of `sites`; ConfigurationError names the setting and what is wrong. Parsed once per text: the hosts call it
    right after reading the settings, so a bad value stops start-up, and the registry and warm-up again for theirs."""
    try:
        weights = PathWeights.parse(text or DEFAULT)
    except ValueError as exc:
        raise ConfigurationError(SETTING, str(exc)) from None
    known = {site.lower() for site in sites}
    for number, rule in enumerate(weights.rules):
        if rule.site is not None and rule.site.lower() not in known:
            raise ConfigurationError(f"{SETTING} rule {number}", f"{rule.site!r} is not a configured site")
    return weights
