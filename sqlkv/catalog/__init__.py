"""The catalog: schema descriptors (`descriptors`) stored in system tables (`catalog`)."""

from sqlkv.catalog.catalog import Catalog, DescriptorCache
from sqlkv.catalog.descriptors import (
    CheckDescriptor,
    ColumnDescriptor,
    FamilyDescriptor,
    IndexDescriptor,
    TableDescriptor,
    ViewDescriptor,
)

__all__ = [
    "Catalog",
    "DescriptorCache",
    "CheckDescriptor",
    "ColumnDescriptor",
    "FamilyDescriptor",
    "IndexDescriptor",
    "TableDescriptor",
    "ViewDescriptor",
]
