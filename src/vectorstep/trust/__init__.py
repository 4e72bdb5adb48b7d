"""The trust vector, pure: the one decision, the trust report, and explaining both in plain words."""
