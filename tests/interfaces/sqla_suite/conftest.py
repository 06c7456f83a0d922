"""SQLAlchemy's dialect compliance suite, run against sqlkv (see test_interfaces_sqlalchemy.py).

This directory is not collected by the main test run (tests/interfaces/conftest.py ignores it):
SQLAlchemy's pytest plugin takes over collection and fixtures, so the suite runs in its own
pytest process, configured by pytest.ini and test.cfg here.
"""

import pytest

pytest.register_assert_rewrite("sqlalchemy.testing.assertions")

from sqlalchemy.testing.plugin.pytestplugin import *  # noqa: E402,F401,F403 - the plugin's hooks

from sqlalchemy.testing.provision import generate_driver_url  # noqa: E402


@generate_driver_url.for_db("sqlkv")
def _one_driver(url, driver, query_str):
    """sqlkv has one driver: the URL is used as given (no ``sqlkv+sqlkv://`` variant)."""
    return url


from sqlalchemy.testing.provision import upsert  # noqa: E402

from sqlkv.sqlalchemy import insert  # noqa: E402


@upsert.for_db("sqlkv")
def _upsert(cfg, table, returning, *, set_lambda=None, sort_by_parameter_order=False, index_elements=None):
    stmt = insert(table)
    if set_lambda:
        stmt = stmt.on_conflict_do_update(index_elements=index_elements or table.primary_key,
                                          set_=set_lambda(stmt.excluded))
    else:
        stmt = stmt.on_conflict_do_nothing()
    return stmt.returning(*returning, sort_by_parameter_order=sort_by_parameter_order)


# Tests no requirement switches off, that exercise a documented sqlkv difference: each is skipped
# with its reason (counted among the skips in README), never left failing.
FLOAT_LITERALS = ("sqlkv reads a bare 5.52 as FLOAT (SQLite's rule, grammar-notes/expressions.md); "
                  "the test divides NUMERIC literals written that way")
KNOWN_DIFFERENCES = {
    "ComponentReflectionTestExtra::*[True*": "use_schema_fixture asks for test_schema whatever requirements.schemas "
                                             "says; sqlkv has one unnamed schema",
    "ComponentReflectionTest::test_metadata[*-True]": "reflects schema test_schema whatever requirements.schemas says",
    "ComponentReflectionTest::test_get_indexes_quoted_name[ix.with.dots]": "sqlkv refuses '.' in created names "
                                                                           "(dotted names resolve to virtual tables)",
    "TrueDivTest::test_truediv_numeric*": FLOAT_LITERALS,
    "ComponentReflectionTestExtra::test_reflect_expression_based_indexes": (
        "sqlkv gives an index expression back as it normalised it, LOWER(x); the test wants the text lower(x)"),
    "IdentityReflectionTest::*": "its fixture declares Identity(cache=4): sqlkv sequences do not cache, so CACHE > 1 "
                                 "is refused (identity reflection: test_interfaces_sqlalchemy.py)",
    "TrueDivTest::test_truediv_divisor[numeric_many_decimals*": FLOAT_LITERALS,
}


def pytest_collection_modifyitems(session, config, items):
    import fnmatch

    for item in items:
        name = item.nodeid.split("::", 1)[1].replace("_sqlkv+sqlkv_0_1_0", "")
        for pattern, reason in KNOWN_DIFFERENCES.items():
            if fnmatch.fnmatchcase(name, pattern.replace("[", "[[]")):
                item.add_marker(pytest.mark.skip(reason=reason))
