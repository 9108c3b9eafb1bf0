"""minigpt_torch."""
