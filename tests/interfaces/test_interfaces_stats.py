"""``.stats`` in the REPL is a view over the sqlkv_internal figure tables."""

from __future__ import annotations

from sqlkv.cli.main import open_session
from tests.interfaces.test_interfaces_repl import EOF_KEY, drive, lines


def test_dot_stats_shows_the_figure_tables() -> None:
    session = open_session(":memory:")
    session.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    for k in range(3):
        session.execute("INSERT INTO t VALUES (?)", (k,))
    out, err = drive(lines(".stats", ".stats statements", ".stats tables", ".stats nonsense") + EOF_KEY, session)
    assert "usage: .stats [engine|latencies|compactions|statements|tables|transactions|hot]" in err
    assert "-- engine" in out and "-- latencies" in out
    engine = dict(session.execute("SELECT name, value FROM sqlkv_internal.engine_stats WHERE value IS NOT NULL"))
    assert f"| txn.commits              | {int(engine['txn.commits'])} " in out  # whole floats shown as integers
    statement_line = next(line for line in out.splitlines() if "INSERT INTO t VALUES (?)" in line)
    assert statement_line.split("|")[2].strip() == "3"  # count
    table_line = next(line for line in out.splitlines() if line.startswith("| t "))
    assert "/t/t_pkey" in table_line
