"""The domain: catalogues, the cost model and its engine profiles, memory accounting, layouts.

Nothing here imports the engine, a benchmark, a simulator or a widget field."""
