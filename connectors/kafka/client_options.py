"""Options for aiokafka clients, built in one place for every Kafka client of the project.

The spout's consumer and failed-topic producer, ``KafkaBolt``'s producer, the transactional
Kafka spouts' consumers and the replay job's readers and writers all reach the same
cluster with the same connection and security settings. Users give those settings once,
as ``AIOKafkaConsumer``/``AIOKafkaProducer`` keywords; ``shared`` picks the ones every
client takes, and ``build`` lays a client's defaults under the user's options.

Besides aiokafka's own ``ssl_context``, the file-path options ``ssl_cafile``,
``ssl_certfile``, ``ssl_keyfile`` (and ``ssl_password``) are accepted and turned into an
``ssl_context`` here: plain strings travel to Spark executors, an ``SSLContext`` does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "CONNECTION_OPTIONS",
    "SECURITY_OPTIONS",
    "SSL_FILE_OPTIONS",
    "build",
    "shared",
]

CONNECTION_OPTIONS = (
    "client_id", "api_version", "request_timeout_ms", "retry_backoff_ms", "metadata_max_age_ms",
    "connections_max_idle_ms",
)
"""Options every aiokafka client takes that shape how it connects."""

SECURITY_OPTIONS = (
    "security_protocol", "ssl_context", "sasl_mechanism", "sasl_plain_username",
    "sasl_plain_password", "sasl_kerberos_service_name", "sasl_kerberos_domain_name",
    "sasl_oauth_token_provider",
)
"""Authentication and encryption options every aiokafka client takes."""

SSL_FILE_OPTIONS = ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_password")
"""File-path forms of ``ssl_context`` (see the module docstring)."""

_SHARED = frozenset(CONNECTION_OPTIONS + SECURITY_OPTIONS + SSL_FILE_OPTIONS)


def shared(options: Mapping[str, Any]) -> dict[str, Any]:
    """The connection and security options among ``options`` (for a sibling client)."""
    return {k: v for k, v in options.items() if k in _SHARED and v is not None}


def _resolve_ssl(options: dict[str, Any], who: str) -> dict[str, Any]:
    files = {k: options.pop(k) for k in SSL_FILE_OPTIONS if k in options}
    files = {k: v for k, v in files.items() if v is not None}
    if not files:
        return options
    if options.get("ssl_context") is not None:
        raise ValueError(f"{who}: give either ssl_context or {sorted(files)}, not both")
    from aiokafka.helpers import create_ssl_context

    options["ssl_context"] = create_ssl_context(
        cafile=files.get("ssl_cafile"), certfile=files.get("ssl_certfile"),
        keyfile=files.get("ssl_keyfile"), password=files.get("ssl_password"))
    if options.get("security_protocol", "PLAINTEXT") == "PLAINTEXT":
        options["security_protocol"] = "SSL"
    return options


def build(options: Mapping[str, Any], defaults: Mapping[str, Any] | None = None,
          who: str = "Kafka client") -> dict[str, Any]:
    """Keywords for an aiokafka client: ``defaults`` overlaid with ``options`` (theirs win),
    SSL file paths turned into an ``ssl_context``."""
    return _resolve_ssl({**(defaults or {}), **options}, who)
