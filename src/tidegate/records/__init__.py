"""tidegate.records."""
