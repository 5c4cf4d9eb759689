"""Shared pytest setup: the model suite's accounting in the run's summary; caches freed per module."""

import gc
import os
import shutil

import pytest

# Tests compile from scratch: a user's compile cache (driver/compile_cache.py) would turn their
# compiles into loads and hide every stage but the last.
os.environ.pop("GEIR_CACHE_DIR", None)


def require_tool(binary: str, package: str) -> str:
    """The path of an external tool a test needs. In CI (CI=true, where .ci/run installs it)
    a missing tool fails the test; elsewhere the test is skipped with the line to run."""
    path = shutil.which(binary)
    if path is None:
        message = f"{binary} not found: install it with `apt-get install {package}`"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def pytest_terminal_summary(terminalreporter):
    """Print how many backend cases ran and which were left out, and why."""
    passed = [r for r in terminalreporter.stats.get("passed", []) if "test_backend_case_matches" in r.nodeid]
    if not passed:
        return
    from test_onnx_suite import LEFT_OUT  # noqa: PLC0415 - only when that module ran

    terminalreporter.write_sep("-", "onnx backend suite")
    terminalreporter.write_line(f"{len(passed)} backend cases match their expected outputs; {len(LEFT_OUT)} left out:")
    for name, reason in sorted(LEFT_OUT.items()):
        terminalreporter.write_line(f"  {name}: unsupported {reason}")


@pytest.fixture(autouse=True, scope="module")
def _free_module_caches(request):
    """After a test module, drop what its functools caches hold (compiled models, imported
    weights): kept across modules they add up to more memory than CI machines have."""
    yield
    for value in vars(request.module).values():
        if callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", None) == request.module.__name__:
            value.cache_clear()
    from geir.testing import suite  # noqa: PLC0415

    suite.light_model.cache_clear()
    suite.reference_run.cache_clear()
    gc.collect()
