"""dynscalar's benchmarks: ``python -m benchmarks.<experiment>``; pages: ``benchmarks.render``."""
