"""tidegate.text."""
