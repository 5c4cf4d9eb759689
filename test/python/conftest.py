"""Shared pytest setup: the model suite's accounting in the run's summary."""


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
