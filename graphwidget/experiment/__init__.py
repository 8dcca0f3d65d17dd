"""The experiment stage: running code to answer a question about it (needs torch).

``compare`` (:func:`graphwidget.compare`: two implementations on copies of the same inputs: same maths? what
changed? which is faster?), ``equivalence`` (outputs and gradients, tensor by tensor), ``interleave`` (timing two
functions fairly, in interleaved rounds), ``layout_timing`` (one op in several operand layouts: the advisor's
memory-layout measurements), ``naming`` (which tensors get a gradient, their names and partners), ``state`` (what is
saved and put back), ``reference`` (the float64 runs), ``speed`` (plain interleaved runs: faster?), ``nway`` and
``nway_speed`` (N sides, and ``gw.compare``'s dispatch), ``ranks`` (``ranks=``: each rank's graph), ``peak``
(compare's measured peak), ``checkpointing`` (``gw.with_checkpoint``), ``gradients`` (a side's gradients;
``.backward()`` for reentrant checkpointing), ``values`` (per-node values for the divergence search), ``divergence``
(where two sides part), ``recording`` (:func:`graphwidget.record`: one side run once and kept, to compare across
processes). It runs the capture, attribution and profiling stages and hands graphs to the torch-free
analyses."""
