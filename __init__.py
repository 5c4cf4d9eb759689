"""geir: a graph compiler for Ascend-style NPUs, built on xDSL."""
