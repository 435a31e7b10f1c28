"""doit.eval: per-ability evaluation (predict, then score) and public benchmarks."""
