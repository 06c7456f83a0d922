"""sqlkv on an etcd v3 cluster: ``sqlkv.connect("etcd://host:2379,host2:2379/shop")``.

Modules: `client` (the JSON-gateway client with endpoint failover), `engine` (snapshots as
revisions, paged scans, tombstones), `commit` (a WriteBatch as one etcd txn with read-span
compares; limits; unknown outcomes). grammar-notes/etcd.md is the design.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl

from sqlkv.errors import NotSupportedError, OperationalError, ProgrammingError
from sqlkv.storage.etcd.client import EtcdClient
from sqlkv.storage.etcd.commit import CommitLimits
from sqlkv.storage.etcd.engine import EtcdEngine

SCHEME = "etcd://"
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,200}")
_INT_OPTIONS = {"max_txn_ops", "max_request_bytes", "page_size"}
_FLOAT_OPTIONS = {"timeout", "deadline"}
# connect() options that mean nothing for a remote store, accepted so the same call works
_IGNORED = {"durability", "cache_size", "create"}


def is_etcd_url(database: str) -> bool:
    return database.startswith(SCHEME)


def parse_etcd_url(url: str) -> tuple[list[tuple[str, int]], str, dict[str, Any]]:
    """``etcd://h1:p1,h2:p2/name?max_txn_ops=1024`` -> (endpoints, name, options)."""
    rest = url[len(SCHEME):]
    query = ""
    if "?" in rest:
        rest, query = rest.split("?", 1)
    hosts, sep, name = rest.partition("/")
    if not sep or not _NAME.fullmatch(name):
        raise ProgrammingError(
            f"etcd URL {url!r} needs a database name: etcd://host:port[,host:port...]/name "
            "(letters, digits, _ . -)"
        )
    if "@" in hosts:
        raise NotSupportedError(
            f"etcd URL {url!r}: user names, passwords and TLS are not supported (plain HTTP to "
            "the cluster's client URLs only)"
        )
    endpoints = []
    for part in hosts.split(","):
        part = part.strip()
        host, colon, port = part.rpartition(":")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ProgrammingError(f"etcd URL {url!r}: endpoint {part!r} is not host:port")
        endpoints.append((host.strip("[]"), int(port)))
    options: dict[str, Any] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        try:
            if key in _INT_OPTIONS:
                options[key] = int(value)
            elif key in _FLOAT_OPTIONS:
                options[key] = float(value)
            else:
                raise ProgrammingError(
                    f"etcd URL {url!r}: unknown option {key!r} (known: "
                    f"{', '.join(sorted(_INT_OPTIONS | _FLOAT_OPTIONS))})"
                )
        except ValueError:
            raise ProgrammingError(f"etcd URL {url!r}: option {key}={value!r} is not a number") from None
        if options[key] <= 0:
            raise ProgrammingError(f"etcd URL {url!r}: option {key} must be positive")
    return endpoints, name, options


def open_etcd(url: str, **options: Any) -> EtcdEngine:
    """Connect to the cluster of ``url`` (one round trip checks it answers)."""
    endpoints, name, url_options = parse_etcd_url(url)
    if options.get("read_only"):
        raise OperationalError("read_only is not supported on etcd databases")
    unknown = set(options) - _IGNORED - {"read_only"}
    if unknown:
        raise ProgrammingError(f"option(s) {', '.join(sorted(unknown))} do not apply to etcd databases")
    client = EtcdClient(
        endpoints, timeout=url_options.get("timeout", 5.0), deadline=url_options.get("deadline", 20.0)
    )
    limits = CommitLimits(
        max_txn_ops=url_options.get("max_txn_ops", CommitLimits.max_txn_ops),
        max_request_bytes=url_options.get("max_request_bytes", CommitLimits.max_request_bytes),
    )
    engine = EtcdEngine(client, name, limits, page_size=url_options.get("page_size", 512))
    try:
        engine.current_revision()
    except BaseException:
        client.close()
        raise
    return engine


__all__ = ["EtcdEngine", "EtcdClient", "CommitLimits", "open_etcd", "parse_etcd_url", "is_etcd_url"]
