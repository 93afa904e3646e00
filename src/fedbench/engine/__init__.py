"""fedbench.engine: training cells, round by round.

- :mod:`.loop`: the round loop (:func:`.loop.train`, :func:`.loop.train_seeds`) and the drivers
  that read a cell's inputs and write its files (:func:`.loop.run_cell`, :func:`.loop.run_cells`);
- :mod:`.cell`: one cell through a run (identity, sampling, server update, metrics rows,
  divergence, checkpoint hook); :mod:`.checkpoint`: resume checkpoints; :mod:`.output`: its files;
- the client engines, one interface (:mod:`.interface`): :mod:`.sequential`, the reference, one
  client at a time (:mod:`.local` trains one client), and :mod:`.vectorized`, the default, all
  sampled clients at once (its docstring says how a new algorithm gets vectorized for free;
  :mod:`.graphs`: its CUDA graphs);
- what both engines draw and use: :mod:`.sampling` (which clients), :mod:`.batches` (minibatch
  indices), :mod:`.augment` (image augmentation), :mod:`.holdout` (held-out subsets),
  :mod:`.evaluate` (loss and accuracy), :mod:`.allocator` (glibc memory settings).
"""
