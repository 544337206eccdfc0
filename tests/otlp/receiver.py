#!/usr/bin/env python3
"""A minimal OTLP/HTTP trace receiver for the tests.

Listens on 127.0.0.1 (port 0: the port chosen is printed as `listening PORT`
on stdout), accepts POST /v1/traces with an ExportTraceServiceRequest in
protobuf (decoded with the official opentelemetry-proto definitions), and
appends each span as one JSON line to the file given as its argument:
trace_id, span_id, parent_span_id (hex), name, kind (SERVER, CLIENT,
INTERNAL), start/end times, status, attributes and the resource's attributes.

    receiver.py SPANS.jsonl [--status CODE] [--discard]

With --status, every export is answered with that HTTP status (and nothing
recorded), to test failed exports; with --discard, exports are read and
answered 200 without decoding (a sink for benchmarks).
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

OUT = sys.argv[1]
DISCARD = "--discard" in sys.argv
STATUS = int(sys.argv[sys.argv.index("--status") + 1]) if "--status" in sys.argv else 200
# An export larger than this is refused (413): the gateway batches far below.
MAX_BODY = 16 * 1024 * 1024


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def attributes(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if self.path != "/v1/traces" or length > MAX_BODY:
            self.send_response(404 if self.path != "/v1/traces" else 413)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = self.rfile.read(length)
        if STATUS != 200 or DISCARD:
            self.send_response(STATUS)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        lines = []
        for rs in request.resource_spans:
            resource = attributes(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    lines.append(json.dumps({
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent_span_id": s.parent_span_id.hex(),
                        "trace_state": s.trace_state,
                        "name": s.name,
                        "kind": trace_pb2.Span.SpanKind.Name(s.kind).removeprefix("SPAN_KIND_"),
                        "start": s.start_time_unix_nano,
                        "end": s.end_time_unix_nano,
                        "status": trace_pb2.Status.StatusCode.Name(s.status.code).removeprefix("STATUS_CODE_"),
                        "attributes": attributes(s.attributes),
                        "resource": resource,
                        "scope": ss.scope.name,
                        "content_type": self.headers.get("Content-Type"),
                    }))
        with open(OUT, "a", encoding="utf-8") as f:
            for line in lines:
                f.write(line + "\n")
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
