"""Small helpers shared across stages (no torch, no networkx): ``gc`` (the GC pause), ``stats`` (statistics),
``text`` (byte formatting), ``interrupts`` (Ctrl-C held back during a restore), ``dicts`` (dicts that share one
key table), ``fds`` (torch's C-level log lines kept out of the user's output), ``intervals`` (an order-statistic
interval for a median), ``keywords`` (a keyword that is both an entry point's option and a parameter of the user's
function, refused)."""
