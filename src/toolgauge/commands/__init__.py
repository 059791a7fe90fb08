"""CLI commands of the larger protocols, each in its own module; importing a module registers its commands."""
