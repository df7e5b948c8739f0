"""The database file: connect, trust checks, migrations, the one writer of runs, stored queries,
merge and export. Imports no simulator, no click and no layer above it."""
