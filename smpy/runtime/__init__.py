"""MPI semantics on the models: communicators, groups, matching and protocols, requests, datatypes, ops, RMA, I/O."""
