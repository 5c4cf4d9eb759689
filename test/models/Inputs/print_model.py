"""Print a geir.models program (shape-only weights, f16) as graph-level MLIR for FileCheck.

    python print_model.py llama CONFIG prefill|decode SEQ
    python print_model.py block BATCH SEQ HIDDEN FFN HEADS

A named LLaMA config is built with two layers and RoPE tables of 256 rows (the checks read
the first layers' ops; a whole 8B model's 32 layers and 8192-row tables only make it slow).
"""

import dataclasses
import sys

import geir
from geir.errors import GeirError
from geir.ir.text import print_module

kind, *args = sys.argv[1:]
try:
    if kind == "llama":
        name, program, seq = args
        config = geir.models.CONFIGS.get(name)
        config = dataclasses.replace(config, layers=min(config.layers, 2), max_seq=min(config.max_seq, 256)) \
            if config else name
        module = getattr(geir.models.llama(config, batch=1, seq=int(seq), weights="shape-only"), program)
    else:
        module = geir.models.transformer_block(*map(int, args), weights="shape-only")
except GeirError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
print(print_module(module))
