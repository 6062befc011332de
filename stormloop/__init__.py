"""The ``stormloop`` command: one entry point for the engine's, the replay job's and the
test broker's command lines (see ``stormloop.cli``)."""
