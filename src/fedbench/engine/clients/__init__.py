"""Step 2 of a round: the local training of the sampled clients, by a client engine.

Two engines, one interface (:mod:`~.interface`), the same results to float rounding:
:mod:`~.sequential` trains one client at a time (:mod:`~.local`), written to be obviously right;
:mod:`~.vectorized` trains every sampled client of every stacked cell at once, and hands linear
models to the compiled fast path (:mod:`fedbench.engine.linear_fast`) when it qualifies. Both draw
from the same keyed inputs: the sampled clients (:mod:`~.sampling`), minibatch indices
(:mod:`~.batches`), held-out subsets (:mod:`~.holdout`) and image augmentation (:mod:`~.augment`).
"""
