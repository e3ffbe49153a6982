"""Which hosts a Slack file download may touch, and which of them get the bot token: the
rules judged against the configured ``api_base_url`` (the loopback tests cover a fake's
single host; these cover Slack's own names)."""

from __future__ import annotations

import pytest

from channels.slack.file_hosts import FileHosts, FileRef, host_of, same_origin

SLACK = FileHosts.for_api("https://slack.com/api/")


@pytest.mark.parametrize(
    "url",
    [
        "https://files.slack.com/files-pri/T1-F1/download/a.png",
        "https://files-origin.slack.com/files-pri/T1-F1/a.png?t=xoxe-secret",
        "https://slack.com/files-pri/T1-F1/a.png",
        "https://a.slack-edge.com/x/a.png",
        "https://slack-files.com/T1-F1-abc",
        "https://FILES.SLACK.COM/files-pri/T1-F1/a.png",
        "https://files.slack.com:443/files-pri/T1-F1/a.png",
    ],
)
def test_slacks_file_hosts_are_allowed(url: str) -> None:
    assert SLACK.allows(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://files.slack.com/files-pri/T1-F1/a.png",  # not https
        "https://files.slack.com:8443/a.png",  # another port
        "https://evil.example/files.slack.com/a.png",
        "https://files.slack.com.evil.example/a.png",
        "https://notslack.com/a.png",
        "https://slack.com@evil.example/a.png",
        "https://user:pw@files.slack.com/a.png",  # credentials in the URL
        "https://127.0.0.1/a.png",
        "ftp://files.slack.com/a.png",
        "file:///etc/passwd",
        "https://[::1/a.png",  # unparsable
        "",
    ],
)
def test_other_hosts_are_refused(url: str) -> None:
    assert not SLACK.allows(url)


def test_an_enterprise_api_host_allows_slacks_file_hosts() -> None:
    grid = FileHosts.for_api("https://acme.enterprise.slack.com/api/")
    assert grid.allows("https://files.slack.com/files-pri/T1-F1/a.png")
    assert grid.allows("https://a.slack-edge.com/a.png")


def test_another_slack_allows_only_its_own_domain() -> None:
    gov = FileHosts.for_api("https://slack-gov.com/api/")
    assert gov.allows("https://files.slack-gov.com/files-pri/T1-F1/a.png")
    assert not gov.allows("https://files.slack.com/files-pri/T1-F1/a.png")


def test_a_loopback_fake_allows_exactly_its_host_and_port() -> None:
    fake = FileHosts.for_api("http://127.0.0.1:8123/api/")
    assert fake.allows("http://127.0.0.1:8123/files-pri/T1-F1/a.png")
    assert not fake.allows("http://127.0.0.1:8124/files-pri/T1-F1/a.png")
    assert not fake.allows("http://localhost:8123/files-pri/T1-F1/a.png")
    assert not fake.allows("https://127.0.0.1:8123/files-pri/T1-F1/a.png")


def test_the_token_goes_only_to_the_first_origin() -> None:
    first = "https://files.slack.com/files-pri/T1-F1/download/a.png"
    assert same_origin("https://files.slack.com/other?x=1", first)
    assert not same_origin("https://files-origin.slack.com/files-pri/T1-F1/a.png", first)
    assert not same_origin("https://a.slack-edge.com/a.png", first)
    assert not same_origin("http://files.slack.com/a.png", first)
    assert not same_origin("https://files.slack.com:8443/a.png", first)


def test_a_log_names_the_host_only() -> None:
    assert host_of("https://files-origin.slack.com/files-pri/T1-F1/a.png?t=xoxe-s") == (
        "files-origin.slack.com"
    )
    assert host_of("not a url") == ""


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        (
            '{"id":"F1","url":"https://files.slack.com/x"}',
            FileRef(file_id="F1", url="https://files.slack.com/x"),
        ),
        ('{"id":"F2","url":""}', FileRef(file_id="F2")),
        ("https://files.slack.com/x", FileRef(file_id="", url="https://files.slack.com/x")),
        ("F3", FileRef(file_id="F3")),
        ("[1, 2]", FileRef(file_id="[1, 2]")),
    ],
)
def test_refs_from_this_and_older_envelopes(ref: str, expected: FileRef) -> None:
    assert FileRef.decode(ref) == expected
    assert FileRef.decode(expected.encode()) == expected
