"""The package version, in one place (the CLI, the SAM @PG lines and the text reports print it)."""

__version__ = "0.1.0"
