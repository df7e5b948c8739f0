"""Read-only evaluations of stored runs: accuracy, control savings, statistics over seeds.
Never simulates and never writes runs."""
