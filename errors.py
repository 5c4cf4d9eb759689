"""The errors geir reports to users: one clear message, never a traceback."""


class GeirError(Exception):
    """Base of every error a geir tool turns into `tool: error: message`, exit 1."""


class OnnxImportError(GeirError):
    """The ONNX model cannot be imported (unsupported op, bad file, shape mismatch)."""


class InterpreterError(GeirError):
    """A program cannot be executed (missing input, wrong input shape, no data)."""


class GraphBuildError(GeirError):
    """A graph built in Python (frontend/builder.py, geir.models) is not well formed: mismatched
    shapes or dtypes on an edge, an unknown attribute, a value of another builder, a name given
    twice, an output never set, a bad model configuration."""
