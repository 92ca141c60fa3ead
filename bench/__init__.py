"""Experiments, submissions, leaderboard pages and performance benchmarks."""
