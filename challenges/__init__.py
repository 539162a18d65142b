"""Puzzle folders: data plus workloads (see README.md here)."""
