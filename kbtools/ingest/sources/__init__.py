"""One module per agent, each with ``discover`` and ``load`` (see ``kbtools.ingest.model``)."""
