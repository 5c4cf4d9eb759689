"""Frontends: models into the graph dialect (ONNX)."""
