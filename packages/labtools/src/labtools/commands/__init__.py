"""One module per `lab` subcommand; see labtools.cli."""
