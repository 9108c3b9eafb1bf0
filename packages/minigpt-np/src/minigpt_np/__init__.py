"""minigpt_np: the grammar MiniGPT in NumPy.

A seeded English-like grammar corpus (`grammar`, `lexicon`, `corpus`), a word tokenizer
(`tokenizer`), a pre-LayerNorm transformer with a hand-written backward (`layers`,
`attention`, `model`), AdamW training (`optim`, `train`), .npz checkpoints
(`checkpoint`) and sampling (`sample`). Import the modules themselves; this file imports
nothing, so `minigpt_np.cli` can configure BLAS threads before NumPy loads.
"""
