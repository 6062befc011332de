"""Sources and sinks: ``connectors.memory`` (embedded default), ``connectors.kafka``
(aiokafka) and ``connectors.spark`` (the PySpark side of failure replay)."""
