"""tidegate.flow."""
