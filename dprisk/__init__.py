"""The ``dprisk`` command line (the last layer: models <- inference <- validation <- dprisk)."""
