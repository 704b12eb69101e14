"""tidegate.feedback."""
