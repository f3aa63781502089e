"""The recorded program as a graph: nodes and their builder, the one lowering from a
recording, and graph queries (pruning, keys)."""
