"""The child side of ``--engine process``: ``python -m coding_framework.serving.worker_main MODEL_DIR PORT``
serves one model directory on the local engine, on loopback, for the parent server that started it."""

from __future__ import annotations

import sys


def main() -> None:
    from coding_framework.config.model_ref import ModelRef
    from coding_framework.config.serving import LimitsConfig, PoolConfig, ServingConfig
    from coding_framework.serving.server import run_server

    model, port = ModelRef.directory(sys.argv[1], engine="local"), int(sys.argv[2])
    # The parent server admits, queues and rate-limits; the worker only answers what it is sent.
    config = ServingConfig(
        model=model,
        port=port,
        engine="local",
        limits=LimitsConfig(rate_per_s=1e9, rate_burst=1 << 30),
        pool=PoolConfig(max_concurrency=1024, queue_size=4096),
        persist_state=False,
    )
    run_server(config)


if __name__ == "__main__":
    main()
