"""lit configuration for geir's IR tests: `lit -sv test` from the repository root.

The tools and FileCheck are the console scripts of the Python environment that
runs lit (next to sys.executable), so no site configuration is needed.
"""

import os
import sys

import lit.formats

config.name = "geir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")
config.excludes = ["python", "Inputs", "Output"]

bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bin_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
# Keep the tools' output independent of the caller's terminal and locale.
config.environment["PYTHONIOENCODING"] = "utf-8"
for var in ("PYTHONPATH", "PYTHONHOME"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

config.substitutions.append(("%PYTHON", sys.executable))
config.substitutions.append(("%python", sys.executable))
# A tool name as a whole word (not part of a path, an option or a %-substitution).
tools = {name: os.path.join(bin_dir, name) for name in ("geir-opt", "geir-translate", "geir-run", "filecheck")}
tools["python"] = sys.executable
for tool, path in tools.items():
    config.substitutions.append((rf"(?<![\w%./-]){tool}(?![\w./-])", path))
