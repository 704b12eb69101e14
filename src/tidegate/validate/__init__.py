"""tidegate.validate."""
