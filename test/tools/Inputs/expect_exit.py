"""Run a command; fail unless it exits with the given code.

usage: expect_exit.py CODE COMMAND [ARGS...]   (output passes through)
"""

import subprocess
import sys

code = int(sys.argv[1])
status = subprocess.run(sys.argv[2:]).returncode
if status != code:
    sys.exit(f"expect_exit.py: expected exit code {code}, got {status}")
