"""What sqlkv supports, for SQLAlchemy's compliance suite: every feature turned off says why.

A requirement left to SuiteRequirements' default is one sqlkv meets (the suite runs its tests);
the ones below either open a feature the default keeps closed, or close one with the reason.
"""

from sqlalchemy.testing import exclusions
from sqlalchemy.testing.requirements import SuiteRequirements

NO_SCHEMAS = "sqlkv has one unnamed schema: schema-qualified names are refused"
NO_TEMP = "sqlkv has no TEMPORARY tables or views"
NO_COMMENTS = "sqlkv stores no table/column comments"
NO_TIME_TZ = "sqlkv's TIME is without time zone"
NO_FETCH = "FETCH FIRST is not supported: use LIMIT"

# Features sqlkv has (several of them SuiteRequirements keeps closed by default). Notes: sqlkv
# keeps UNIQUE constraints as unique indexes, so both unique_*_reflect_as_* are true;
# index_reflects_included_columns: STORING columns; foreign keys are created and enforced.
SUPPORTED = [
    "table_ddl_if_exists", "index_ddl_if_exists", "views", "create_or_replace_view",
    "index_reflects_included_columns", "check_constraint_reflection", "inline_check_constraint_reflection",
    "server_defaults", "expression_server_defaults", "unique_index_reflect_as_unique_constraints",
    "unique_constraints_reflect_as_index", "reflects_pk_names", "foreign_key_ddl", "datetime_historic",
    "date_historic", "timestamp_microseconds", "infinity_floats", "precision_numerics_many_significant_digits",
    "precision_numerics_retains_significant_digits", "ctes", "intersect", "except_", "window_functions",
    "nullsordering", "table_value_constructor", "mod_operator_as_percent_sign", "savepoints", "autocommit",
    "boolean_col_expressions", "window_range", "ctes_with_values", "dbapi_lastrowid",
    "indexes_check_column_order", "unicode_ddl", "nvarchar_types", "datetime_literals",
    "precision_numerics_enotation_small", "aggregate_order_by", "percent_schema_names",
    "order_by_label_with_expression", "float_or_double_precision_behaves_generically", "supports_bitwise_and",
    "supports_bitwise_or", "supports_bitwise_not", "supports_bitwise_xor", "supports_bitwise_shift",
    "skip_autocommit_rollback", "datetime_timezone_historic", "time", "time_microseconds", "time_implicit_bound", "uuid_data_type",
    "datetime_interval", "computed_columns", "computed_columns_stored", "computed_columns_virtual",
    "computed_columns_reflect_persisted", "identity_columns", "identity_columns_standard", "tuple_in",
    "supports_distinct_on", "regexp_match", "regexp_replace", "update_from", "delete_from",
    "indexes_with_expressions", "reflect_indexes_with_expressions", "create_table_as", "sequences",
    "sequences_optional", "foreign_key_constraint_option_reflection_ondelete",
    "foreign_key_constraint_option_reflection_onupdate", "fk_constraint_option_reflection_ondelete_restrict",
    "fk_constraint_option_reflection_onupdate_restrict", "fk_constraint_option_reflection_ondelete_noaction",
    "json_type", "json_array_indexes", "json_index_supplementary_unicode_element",
    "legacy_unconditional_json_extract",
]

# Features sqlkv lacks, each with the reason.
OFF = {
    "create_temp_table_as": NO_TEMP,
    "temporary_tables": NO_TEMP,
    "temp_table_reflection": NO_TEMP,
    "temp_table_names": NO_TEMP,
    "has_temp_table": NO_TEMP,
    "temporary_views": NO_TEMP,
    "schemas": NO_SCHEMAS,
    "schema_create_delete": NO_SCHEMAS,
    "cross_schema_fk_reflection": NO_SCHEMAS,
    "implicit_default_schema": NO_SCHEMAS,
    "default_schema_name_switch": NO_SCHEMAS,
    "comment_reflection": NO_COMMENTS,
    "comment_reflection_full_unicode": NO_COMMENTS,
    "constraint_comment_reflection": NO_COMMENTS,
    "date_coerces_from_datetime": (
        "strict types: a datetime is not assignable to a DATE column (no silent truncation)"),
    "array_type": "the suite's ARRAY tables are two-dimensional; sqlkv arrays have one dimension",
    "ctes_on_dml": "a WITH clause may not hold INSERT/UPDATE/DELETE",
    "fetch_first": NO_FETCH,
    "isolation_level": (
        "one isolation level (SERIALIZABLE): no other level to switch to and restore (AUTOCOMMIT is tested)"),
    "two_phase_transactions": "sqlkv has no two-phase commit",
    "ctes_with_update_delete": "WITH before UPDATE/DELETE is refused",
    "window_range_numeric": "RANGE frame offsets must be integer constants",
    "window_range_non_numeric": "RANGE frame offsets must be integer constants",
    "reflect_tables_no_columns": "a table must have at least one column",
    "fetch_no_order_by": NO_FETCH,
    "fetch_percent": NO_FETCH,
    "fetch_ties": NO_FETCH,
    "fetch_offset_with_options": NO_FETCH,
    "fetch_expression": NO_FETCH,
    "repeated_column_foreign_keys": "a FOREIGN KEY may not list a column twice (refused, as PostgreSQL does)",
    "repeated_remote_col_foreign_keys": "a FOREIGN KEY's referenced columns must match a key (no column twice)",
    "order_by_collation": "text compares by code point: no collations",
    "deferrable_fks": "foreign keys are never DEFERRABLE (grammar-notes/constraints.md)",
    "emulated_lastrowid": "lastrowid is the driver's (dbapi_lastrowid), not emulated",
    "emulated_lastrowid_even_with_sequences": "lastrowid is the driver's (dbapi_lastrowid), not emulated",
    "temp_table_comment_reflection": NO_TEMP,
    "column_collation_reflection": "text compares by code point: no collations",
    "reflect_indexes_with_ascdesc_as_expression": (
        "DESC index columns reflect as column_sorting, not expressions"),
    "datetime_timezone": ("TIMESTAMPTZ columns round-trip aware values, but a parameter selected "
                          "back bare (SELECT ?) has no type and returns naive UTC"),
    "time_timezone": NO_TIME_TZ,
    "json_deserializer_binary": "the driver hands JSONB to SQLAlchemy as text (str), not bytes",
    "async_dialect": "the driver is synchronous (PEP 249)",
    "computed_columns_default_persisted": "a generated column without STORED is VIRTUAL (SQLite's rule)",
    "reflect_table_options": "sqlkv has no table options",
    "materialized_views": "sqlkv has no materialized views",
    "materialized_views_reflect_pk": "sqlkv has no materialized views",
}


class Requirements(SuiteRequirements):
    def get_isolation_levels(self, config):
        return {"default": "SERIALIZABLE", "supported": ["SERIALIZABLE", "AUTOCOMMIT"]}


for _name in SUPPORTED:
    setattr(Requirements, _name, property(lambda self: exclusions.open()))
for _name, _reason in OFF.items():
    setattr(Requirements, _name, property(lambda self, reason=_reason: exclusions.closed(reason)))
