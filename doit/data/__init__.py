"""doit.data: the DoIT corpus model: registry, loading, validation, curation, splits, subsets, mixes and the micro corpus."""
