"""Small helpers shared across stages (no torch, no networkx): ``gc`` (the GC pause), ``stats`` (statistics),
``text`` (byte formatting), ``interrupts`` (Ctrl-C held back during a restore), ``dicts`` (dicts that share one
key table)."""
