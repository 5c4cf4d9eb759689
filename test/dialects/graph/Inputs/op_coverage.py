"""Check that every registered graph op appears in a round-trip test of this directory.

usage: op_coverage.py TEST_DIR
"""

import pathlib
import re
import sys

from geir.dialects.graph import OPS

test_dir = pathlib.Path(sys.argv[1])
text = "\n".join(
    p.read_text() for p in sorted(test_dir.glob("*.mlir")) if not p.stem.endswith("invalid")
)
used = set(re.findall(r"\bgraph\.\w+", text))
missing = sorted(set(OPS) - used)
if missing:
    sys.exit(f"graph ops without a round-trip test in {test_dir}: {', '.join(missing)}")
print(f"all {len(OPS)} graph ops have a round-trip test")
