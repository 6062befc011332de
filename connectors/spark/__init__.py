"""The PySpark side of failure replay."""
