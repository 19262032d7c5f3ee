"""An OTLP/HTTP endpoint that reads every export and answers 200: the collector
stand-in for measuring Arbiter with tracing on (bench/RESULTS.md, "Tracing").

    .venv/bin/python -m bench.observability.otlp_sink --port 4318
"""

from __future__ import annotations

import argparse
from http.server import ThreadingHTTPServer

from bench.observability.tracing import _Sink


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=4318)
    args = parser.parse_args()
    ThreadingHTTPServer(("127.0.0.1", args.port), _Sink).serve_forever()


if __name__ == "__main__":
    main()
