"""Benchmarks: datasets, runners, run folders and plots. Nothing in the pipeline imports this package."""
