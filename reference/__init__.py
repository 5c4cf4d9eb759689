"""Reference (numpy) semantics of the dialects: what every op computes, op by op."""
