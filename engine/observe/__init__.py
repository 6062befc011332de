"""Seeing inside running topologies: figures, Prometheus metrics, a JSON API, a status page.

``figures`` reads a running topology's counters into plain data (``LocalCluster.stats``);
``server`` serves them over HTTP on the topology's own loop. Importing this package does
not import aiohttp: only ``engine.observe.server`` does.
"""
