"""minigpt_np."""
