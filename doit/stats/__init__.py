"""Statistics both the grid (planning) and the analysis (measuring) use: the power of a design
(`power`) and the variance model of the analysis's estimands (`variance`). It imports neither
doit.grid nor doit.analysis (tests/test_import_graph.py)."""
