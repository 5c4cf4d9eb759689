"""The compiler driver: the pass registry, the pipelines per opt level, the offline model file and the stage-by-stage comparison with onnxruntime."""
