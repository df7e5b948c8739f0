"""Fitting models to stored runs: Wu et al.'s k-means + MLP, Wang & Chu's least-squares fit and
its microbenchmark calibration."""
