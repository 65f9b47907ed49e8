"""lazygrad.engine: what runs the graph (the Jit)."""
