"""Tools the tests use and maintainers run; not part of the installed package."""
