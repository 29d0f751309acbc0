"""Benchmarks: GuideLLM's load generation, searches and reports (read and written), published
measurements and the validation that scores the cost model against them, the sizing search and
the diagnosis of a reader's deployment. Built on the core and the engine; no simulator imports."""
