"""Print a geir.models program (shape-only weights, f16) as graph-level MLIR for FileCheck.

    python print_model.py llama CONFIG prefill|decode SEQ
    python print_model.py block BATCH SEQ HIDDEN FFN HEADS
"""

import sys

import geir
from geir.errors import GeirError
from geir.ir.text import print_module

kind, *args = sys.argv[1:]
try:
    if kind == "llama":
        name, program, seq = args
        module = getattr(geir.models.llama(name, batch=1, seq=int(seq), weights="shape-only"), program)
    else:
        module = geir.models.transformer_block(*map(int, args), weights="shape-only")
except GeirError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
print(print_module(module))
