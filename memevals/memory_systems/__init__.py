"""The memory systems memevals ships, registered in the `memevals.memory_systems` entry-point
group like any vendor's (docs/memory_systems.md): `bm25`, `embedding`, `observations`,
`summaries` and `mem0` (extra `mem0`). They import only memevals.core."""
