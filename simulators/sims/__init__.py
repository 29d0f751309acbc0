"""One module per simulator (registered in simulators/api.py): Params, run, figure, summary."""
