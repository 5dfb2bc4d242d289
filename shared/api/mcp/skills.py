"""Agent Skills served over MCP (the Skills extension, `io.modelcontextprotocol/skills`, SEP-2640): this server's
own skill, `skill://docs-retrieval/SKILL.md`, which tells an agent how to use the tools well.

A skill is a directory under `shared/data/skills/` in the Agent Skills format (a `SKILL.md` whose YAML front matter
names it and says what it is for), the same files a host that loads skills from disk can use. The extension is
declared in the server's capabilities (`capabilities.extensions`), and adds:

- `skills/list`: every skill's entry (its `SKILL.md` URI, its front matter as JSON, and each of its files with
  its SHA-256 digest and size), with the caching hints of a listing;
- `skills/get` `{uri}`: one skill's entry; a URI that names no skill is `-32602`, as an unknown resource is;
- the files themselves as resources (`resources/list`, `resources/read`), read by `DocsServer` with caching hints.

The files are read once, when the server is built; they change only with a deployment.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from mcp.server.context import ServerRequestContext
from mcp.server.extension import Extension, MethodBinding, ResourceBinding
from mcp.server.mcpserver.resources import TextResource
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from mcp_types import PaginatedRequestParams, RequestParams

from shared.api import caching

SKILLS_ROOT = Path(__file__).resolve().parents[2] / "data" / "skills"
EXTENSION_ID = "io.modelcontextprotocol/skills"
SCHEME = "skill://"
MIME_TYPES = {".md": "text/markdown", ".json": "application/json", ".yaml": "application/yaml", ".py": "text/x-python"}


@dataclass(frozen=True, slots=True)
class SkillFile:
    uri: str
    text: str
    mime_type: str

    @property
    def manifest(self) -> dict[str, Any]:
        raw = self.text.encode("utf-8")
        return {"uri": self.uri, "digest": f"sha256:{hashlib.sha256(raw).hexdigest()}", "size": len(raw)}


@dataclass(frozen=True, slots=True)
class Skill:
    uri: str
    frontmatter: dict[str, Any]
    files: tuple[SkillFile, ...]

    @property
    def entry(self) -> dict[str, Any]:
        """The skill's entry, as `skills/list` and `skills/get` give it."""
        return {"uri": self.uri, "frontmatter": self.frontmatter, "resources": [f.manifest for f in self.files]}


def load_skills(root: Path = SKILLS_ROOT) -> list[Skill]:
    """Every skill directory under `root` (one holding a `SKILL.md`); ValueError when one breaks the format (no
    front matter, no `name` or `description`, a `name` other than its directory's)."""
    skills = []
    for marker in sorted(root.glob("*/SKILL.md")):
        folder = marker.parent
        text = marker.read_text(encoding="utf-8")
        head, separator, _ = text.removeprefix("---\n").partition("\n---\n")
        front = yaml.safe_load(head) if text.startswith("---\n") and separator else None
        if not isinstance(front, dict) or not front.get("name") or not front.get("description"):
            raise ValueError(f"{marker}: SKILL.md must begin with front matter holding a name and a description")
        if front["name"] != folder.name:
            raise ValueError(f"{marker}: the skill's name must be its directory's ({folder.name})")
        files = tuple(
            SkillFile(
                f"{SCHEME}{folder.name}/{path.relative_to(folder).as_posix()}",
                path.read_text(encoding="utf-8"),
                MIME_TYPES.get(path.suffix, "text/plain"),
            )
            for path in sorted(folder.rglob("*"), key=lambda p: (p.name != "SKILL.md", p.as_posix()))
            if path.is_file()
        )
        skills.append(Skill(f"{SCHEME}{folder.name}/SKILL.md", front, files))
    return skills


class GetSkillParams(RequestParams):
    uri: str


class Skills(Extension):
    """The Skills extension over `skills`, hinted cacheable for a deployment's lifetime within `scope`."""

    identifier = EXTENSION_ID

    def __init__(self, skills: Sequence[Skill], *, scope: caching.Scope) -> None:
        self.skills = tuple(skills)
        self.files = {file.uri: file for skill in self.skills for file in skill.files}
        self._hints = {"ttlMs": caching.DEPLOYMENT_TTL_SECONDS * 1000, "cacheScope": scope}

    def resources(self) -> Sequence[ResourceBinding]:
        bound = []
        for skill in self.skills:
            for file in skill.files:
                described = file.uri == skill.uri
                resource = TextResource(
                    uri=file.uri,
                    name=str(skill.frontmatter["name"]) if described else file.uri.rsplit("/", 1)[-1],
                    description=str(skill.frontmatter["description"]) if described else None,
                    mime_type=file.mime_type,
                    text=file.text,
                )
                bound.append(ResourceBinding(resource))
        return bound

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("skills/list", PaginatedRequestParams, self._list),
            MethodBinding("skills/get", GetSkillParams, self._get),
        )

    async def _list(self, context: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        return {"resultType": "complete", "skills": [skill.entry for skill in self.skills], **self._hints}

    async def _get(self, context: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        uri = str(getattr(params, "uri", ""))
        skill = next((skill for skill in self.skills if skill.uri == uri), None)
        if skill is None:
            names = ", ".join(skill.uri for skill in self.skills)
            raise MCPError(INVALID_PARAMS, f"no skill at this URI; the skills are: {names}")
        return {"resultType": "complete", "skill": skill.entry, **self._hints}
