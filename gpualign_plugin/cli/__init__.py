"""The ``gpualign`` command line: one module per subcommand, shared options in :mod:`.common`."""
