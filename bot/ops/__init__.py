"""Operating the daemon: the process lifecycle (:mod:`.daemon`), the HTTP server
(:mod:`.web`) with health and readiness (:mod:`.health`) and Prometheus metrics
(:mod:`.metrics`), systemd notification (:mod:`.notify`) and structured logs (:mod:`.logs`).

Nothing is imported here: adapters import :mod:`.web` alone, and start-up time counts.
"""
