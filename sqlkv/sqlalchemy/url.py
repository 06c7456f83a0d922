"""SQLAlchemy URL -> ``sqlkv.connect()`` arguments (one function, so every engine kind maps here).

    sqlkv://                        memory database
    sqlkv:///shop.db                relative directory
    sqlkv:////var/db/shop           absolute directory
    sqlkv:///shop.db?durability=normal&cache_size=1048576&read_only=true
    sqlkv+etcd://h1:2379/db?host=h2:2379&max_txn_ops=512
                                    etcd://h1:2379,h2:2379/db?max_txn_ops=512 (sqlkv.storage.etcd)

SQLAlchemy's URL parser takes one port (``sqlkv+etcd://h1:2379,h2:2379/db`` fails in it); more
hosts come as repeated ``host=`` query parameters, as SQLAlchemy's PostgreSQL dialects accept
them, or without ports (``sqlkv+etcd://h1,h2/db``: etcd's 2379). For etcd, the options of ``connect()`` itself
stay keywords and the others (the etcd engine's: timeouts, transaction limits) stay in its URL.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError

_BOOL_OPTIONS = {"autocommit", "read_only", "create", "check_same_thread", "background_threads",
                 "background_processes"}
_CONNECT_OPTIONS = _BOOL_OPTIONS | {"durability", "cache_size"}  # sqlkv.connect()'s own keywords
ETCD_PORT = 2379  # etcd's client port, for a host written without one
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def connect_arguments(url: URL) -> tuple[str, dict[str, Any]]:
    """The ``database`` argument and keyword options of ``sqlkv.connect`` for ``url``."""
    options = {name: _option_value(name, value) for name, value in url.query.items() if name != "host"}
    if url.get_driver_name() == "etcd":
        engine_options = {k: v for k, v in url.query.items() if k != "host" and k not in _CONNECT_OPTIONS}
        query = "&".join(f"{k}={v}" for k, v in engine_options.items())
        address = _etcd_address(url) + (f"?{query}" if query else "")
        return address, {k: v for k, v in options.items() if k in _CONNECT_OPTIONS}
    if url.host or url.port or url.username or url.password:
        raise ArgumentError(
            f"sqlkv URLs name a directory, not a server: sqlkv:///relative/path or sqlkv:////absolute/path "
            f"(got {url.render_as_string(hide_password=True)!r})"
        )
    if "host" in url.query:
        raise ArgumentError("the host= parameter is for sqlkv+etcd:// URLs only")
    return url.database or ":memory:", options


def _etcd_address(url: URL) -> str:
    """``etcd://h1:p1,h2:p2/db``. SQLAlchemy's parser gives ``sqlkv+etcd://h1,h2:2380/db`` as host
    ``h1,h2`` and port 2380 (the last host's); a host written without a port is on 2379."""
    hosts = url.host.split(",") if url.host else []
    if hosts and url.port:
        hosts[-1] += f":{url.port}"
    extra = url.query.get("host", ())
    hosts += [extra] if isinstance(extra, str) else list(extra)
    if not hosts:
        raise ArgumentError("sqlkv+etcd:// needs a host: sqlkv+etcd://host:port/db")
    return f"etcd://{','.join(_with_port(h.strip()) for h in hosts)}/{url.database or ''}"


def _with_port(host: str) -> str:
    _name, colon, port = host.rpartition(":")  # "[::1]" ends in "1]": no port
    return host if colon and port.isdigit() else f"{host}:{ETCD_PORT}"


def _option_value(name: str, value: str | tuple[str, ...]) -> Any:
    """Query strings are text: booleans and numbers become what ``connect()`` expects."""
    if not isinstance(value, str):
        raise ArgumentError(f"URL parameter {name!r} is given more than once")
    lower = value.lower()
    if name in _BOOL_OPTIONS:
        if lower in _TRUE:
            return True
        if lower in _FALSE:
            return False
        raise ArgumentError(f"URL parameter {name}={value!r} must be true or false")
    if value.lstrip("-").isdigit():
        return int(value)
    return value
