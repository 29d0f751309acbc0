"""Simulators for the course "What makes LLM inference fast".

Standard library only: the same code runs in CPython (tests, CLI, build-time pre-rendering) and
in Pyodide in the reader's browser. Entry points: `simulators.api.run_json` and
`python -m simulators`.
"""
