"""Build helpers for the course site: lessons, widgets, browser assets, serving and checks.

`site_build.py` at the repository root is the entry point; `hooks.py` is what mkdocs loads.
"""
