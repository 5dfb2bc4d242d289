"""Free text scrubbed before it is kept (`shared.scrubbing`): addresses, ids, credentials and long numbers become
placeholders, the topic stays, and no generated address, GUID or key survives whatever text surrounds it."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.scrubbing import MAX_CHARS, scrub


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("how do I rotate the gateway certificate for ops.team+prod@example.com", "for <email>"),
        ("sync fails for app 3f2b8c1e-9d4a-4e6b-8f0a-1c2d3e4f5a6b in argocd", "app <guid> in argocd"),
        ("connect with password=hunter2 to the db", "password=<secret> to the db"),
        ("login with password s3cretpw fails", "password <secret> fails"),
        ('set api_key: "abc def" in the values', "api_key: <secret> in the values"),
        ("AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq", "AccountKey=<secret>"),
        ("token ghp_16C7e42F292c6912E7710c838347Ae178B4a in the header", "token <secret> in the header"),
        ("auth eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0", "auth <secret>"),
        ("see https://u:pw@docs.example.com/guide/install?sig=abc#top now", "https://docs.example.com/guide/install<query>"),
        ("node 10.0.12.7 and fe80::1ff:fe23:4567:890a are down", "node <ip> and <ip> are down"),
        ("card 4111 1111 1111 1111 and ticket 12345678", "card <number> and ticket <number>"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY----- fails", "<secret> fails"),
    ],
    ids=["email", "guid", "password", "spaced", "quoted", "account key", "token", "jwt", "url", "ip", "digits", "pem"],
)  # fmt: skip
def test_what_identifies_or_opens_becomes_a_placeholder(text: str, kept: str) -> None:
    assert kept in scrub(text)


@pytest.mark.parametrize(
    "text",
    [
        "how to configure the ingress controller for argo cd 2.8",
        "terraform okta_app_oauth resource grant types",
        "kubectl get pods -n argocd",
        "error 404 on /api/v1/applications",
        "sha256 of the image",
        "argocd app sync --timeout 300 at 10:30:45",
        "how to rotate the token for the gateway and reset a password",
    ],
)
def test_the_topic_is_kept_as_written(text: str) -> None:
    assert scrub(text) == text


def test_one_line_at_most_the_limit() -> None:
    assert scrub("line one\n\n  line\ttwo ") == "line one line two"
    assert len(scrub("word " * 2_000)) <= MAX_CHARS


@given(
    before=st.text(max_size=40),
    after=st.text(max_size=40),
    user=st.from_regex(r"[a-z][a-z0-9.]{0,15}", fullmatch=True),
    id_=st.uuids(),
    key=st.from_regex(r"[a-z]{5}[A-Z]{5}[0-9]{10}[A-Za-z0-9]{10}", fullmatch=True),
)
def test_no_address_guid_or_key_survives_whatever_surrounds_it(
    before: str, after: str, user: str, id_: uuid.UUID, key: str
) -> None:
    email = f"{user}@corp.example.com"
    said = scrub(f"{before} {email} {id_} {key} {after}")
    assert email not in said and str(id_) not in said and key not in said
