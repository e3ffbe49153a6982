"""Spans over OTLP/HTTP to a collector on loopback, through the ``otel`` extra's exporter.

Runs where the extra is installed (``pip install '.[otel]'``); skipped elsewhere, where
:mod:`tests.telemetry.test_setup` checks that the daemon refuses to start without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.channel import FakeChannel
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.otlp_collector import OtlpCollector
from tests.telemetry.conftest import SLACK, message, running, settings_for

TOKEN = "t0k-otlp-secret"


async def test_spans_reach_the_collector_with_the_headers_of_the_environment(
    fake: OpenAIFake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    monkeypatch.setenv("OTEL_TEST_HEADERS", f"authorization=Bearer%20{TOKEN}")
    fake.queue_text("hello back")
    async with OtlpCollector(required={"authorization": f"Bearer {TOKEN}"}) as collector:
        settings = settings_for(
            fake,
            tmp_path,
            telemetry={
                "enabled": True,
                "endpoint": collector.endpoint,
                "headers_env": "OTEL_TEST_HEADERS",
                "service_name": "hatchway-test",
            },
        )
        channel = FakeChannel(SLACK)
        async with running(settings, channel) as app:
            await app.host.deliver(message("hello", "m1"))
            await channel.wait_for("hello back")
        # the stop exported what was batched, on a thread, while the loop served the collector
    assert collector.refused == 0
    assert collector.requests
    names: set[str] = set()
    for export in collector.requests:
        assert export.content_type == "application/x-protobuf"
        request = ExportTraceServiceRequest.FromString(export.body)
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            assert resource["service.name"] == "hatchway-test"
            for scope_spans in resource_spans.scope_spans:
                names |= {span.name for span in scope_spans.spans}
    assert {"hatchway.turn", "hatchway.admission", "hatchway.model.call", "hatchway.send"} <= names
