"""Small helpers shared across stages (no torch, no networkx): the GC pause, statistics, byte formatting."""
