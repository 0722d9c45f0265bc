"""Problem definitions: one sub-package per problem (env, generator, I/O, solvers, plots)."""
